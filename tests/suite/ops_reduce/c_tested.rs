//! The operators whose expansions `ops_reduce` lowers fully, compiles to C, runs and compares
//! with the reference interpreter. `ops_reduce` asserts that its C programs hold exactly these
//! operators (`c_tested_list_is_what_the_c_programs_hold`), and `ops_codegen` takes them from
//! here for its every-operator coverage check, so the
//! list cannot claim an operator that no C test runs.

pub const C_TESTED: &[&str] = &[
    "ConvTranspose",
    "Dropout",
    "Einsum",
    "GroupNormalization",
    "InstanceNormalization",
    "Mean",
    "Mish",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
];
