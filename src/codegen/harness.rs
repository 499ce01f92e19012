//! The generated `main()`: load weights, read (or generate) inputs, call `dm_run` (warm-up,
//! then timed repetitions), write outputs and per-repetition times, print a timing summary.
//!
//! Protocol (shared with `run.rs`): `prog WEIGHTS IODIR WARMUP REPS [--generate]`; input `k` is
//! read from `IODIR/in<k>.bin`, or with `--generate` filled with reproducible pseudo-random
//! values and written there; output `k` is written to `IODIR/out<k>.bin` (raw little-endian
//! elements), and `IODIR/times.txt` gets one line per repetition, the wall time of `dm_run`
//! alone in milliseconds (CLOCK_MONOTONIC), so process start-up and I/O never count; standard
//! output gets one line with their median, minimum and maximum. File names use positions,
//! never model names. Failures print a message and exit non-zero.

use super::expr::{ctype, from_compute};
use super::CArg;
use crate::ir::{DType, Precision};

/// Allocation and file helpers used by `dm_init` and `main` (see `helpers`).
pub(crate) const IO_HELPERS: &[(&str, &str)] = &[
    (
        "dm_die",
        r#"static void dm_die(const char* what, const char* path) {
    fprintf(stderr, "dmove harness: %s: %s\n", what, path);
    exit(3);
}
"#,
    ),
    (
        "dm_alloc",
        r#"static void* dm_alloc(size_t bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) dm_die("out of memory", "aligned_alloc");
    memset(p, 0, rounded ? rounded : 64);
    return p;
}
"#,
    ),
    (
        "dm_path",
        r#"static void dm_path(char* out, size_t cap, const char* dir, const char* file) {
    if ((size_t)snprintf(out, cap, "%s/%s", dir, file) >= cap) dm_die("path too long", dir);
}
"#,
    ),
    (
        "dm_load",
        r#"static unsigned char* dm_load(const char* path, size_t bytes) {
    unsigned char* p = (unsigned char*)dm_alloc(bytes);
    if (bytes == 0) return p;
    FILE* f = fopen(path, "rb");
    if (!f) dm_die("cannot open", path);
    if (fread(p, 1, bytes, f) != bytes || fgetc(f) != EOF) dm_die("wrong size", path);
    fclose(f);
    return p;
}
"#,
    ),
    (
        "dm_read",
        r#"static void* dm_read(const char* dir, const char* file, size_t bytes) {
    char path[4096];
    dm_path(path, sizeof path, dir, file);
    return dm_load(path, bytes);
}
"#,
    ),
    (
        "dm_write",
        r#"static void dm_write(const char* dir, const char* file, const void* p, size_t bytes) {
    char path[4096];
    dm_path(path, sizeof path, dir, file);
    FILE* f = fopen(path, "wb");
    if (!f) dm_die("cannot create", path);
    if (fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) dm_die("cannot write", path);
}
"#,
    ),
    (
        "dm_uniform",
        r#"static double dm_uniform(uint64_t* state, double lo, double hi) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return lo + (hi - lo) * ((double)(*state >> 11) * 0x1.0p-53);
}
"#,
    ),
    (
        "dm_cmp_double",
        r#"static int dm_cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}
"#,
    ),
];

/// The range generated values of `d` are drawn from (floored for non-floats): small values,
/// exactly representable in every type, so integer inputs stay valid sizes and indices in
/// most models and floats stay in the range activations usually have.
fn generated_range(d: DType) -> (f64, f64, bool) {
    match d.int_range() {
        Some((lo, hi)) => (lo.max(-8.0), (hi + 1.0).min(8.0), true),
        None if d == DType::Bool => (0.0, 2.0, true),
        None => (-1.0, 1.0, false),
    }
}

/// The statements that fill input `k` (`dm_in<k>`) with reproducible pseudo-random values and
/// write them to `IODIR/in<k>.bin`, so a generated run can be replayed or checked.
fn generate_input(k: usize, a: &CArg) -> String {
    let (lo, hi, floor) = generated_range(a.dtype);
    let v = if floor { "floor(v)" } else { "v" };
    format!(
        "        {{\n\
         \x20           uint64_t state = UINT64_C(0x9E3779B97F4A7C15) + {k};\n\
         \x20           for (size_t i = 0; i < {n}; i++) {{\n\
         \x20               double v = dm_uniform(&state, {lo:?}, {hi:?});\n\
         \x20               dm_in{k}[i] = {store};\n\
         \x20           }}\n\
         \x20           dm_write(dir, \"in{k}.bin\", dm_in{k}, {bytes});\n\
         \x20       }}\n",
        n = a.elements(),
        store = from_compute(v, a.dtype, Precision::F64),
        bytes = a.bytes(),
    )
}

/// The text of `main()` for a program with these inputs and outputs (`dm_run` takes inputs
/// then outputs, in signature order), left out when the file is compiled with `DM_NO_MAIN`
/// (to link the program into another one).
pub(crate) fn main_fn(inputs: &[CArg], outputs: &[CArg]) -> String {
    let mut s = String::from(
        "#ifndef DM_NO_MAIN\n\
         int main(int argc, char** argv) {\n\
         \x20   int generate = argc == 6 && strcmp(argv[5], \"--generate\") == 0;\n\
         \x20   if (argc != 5 && !generate) {\n\
         \x20       fprintf(stderr, \"usage: %s WEIGHTS IODIR WARMUP REPS [--generate]\\n\", argv[0]);\n\
         \x20       return 2;\n\
         \x20   }\n\
         \x20   const char* dir = argv[2];\n\
         \x20   long warmup = strtol(argv[3], NULL, 10), reps = strtol(argv[4], NULL, 10);\n\
         \x20   if (warmup < 0 || reps < 0) dm_die(\"negative run count\", argv[3]);\n\
         \x20   dm_init(argv[1]);\n",
    );
    let mut args = Vec::new();
    for (k, a) in inputs.iter().enumerate() {
        let t = ctype(a.dtype);
        s.push_str(&format!(
            "    {t}* dm_in{k};\n\
             \x20   if (generate) {{\n\
             \x20       dm_in{k} = ({t}*)dm_alloc({bytes});\n\
             {fill}\
             \x20   }} else {{\n\
             \x20       dm_in{k} = ({t}*)dm_read(dir, \"in{k}.bin\", {bytes});\n\
             \x20   }}\n",
            bytes = a.bytes(),
            fill = generate_input(k, a),
        ));
        args.push(format!("dm_in{k}"));
    }
    for (k, a) in outputs.iter().enumerate() {
        let t = ctype(a.dtype);
        s.push_str(&format!(
            "    {t}* dm_out{k} = ({t}*)dm_alloc({});\n",
            a.bytes()
        ));
        args.push(format!("dm_out{k}"));
    }
    let call = format!("dm_run({});", args.join(", "));
    s.push_str(&format!(
        "    for (long r = 0; r < warmup; r++) {call}\n\
         \x20   char times_path[4096];\n\
         \x20   dm_path(times_path, sizeof times_path, dir, \"times.txt\");\n\
         \x20   FILE* times = fopen(times_path, \"w\");\n\
         \x20   if (!times) dm_die(\"cannot create\", times_path);\n\
         \x20   double* ms = (double*)dm_alloc((size_t)reps * sizeof(double));\n\
         \x20   for (long r = 0; r < reps; r++) {{\n\
         \x20       struct timespec t0, t1;\n\
         \x20       clock_gettime(CLOCK_MONOTONIC, &t0);\n\
         \x20       {call}\n\
         \x20       clock_gettime(CLOCK_MONOTONIC, &t1);\n\
         \x20       ms[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;\n\
         \x20       fprintf(times, \"%.6f\\n\", ms[r]);\n\
         \x20   }}\n\
         \x20   if (fclose(times) != 0) dm_die(\"cannot write\", times_path);\n\
         \x20   if (reps > 0) {{\n\
         \x20       qsort(ms, (size_t)reps, sizeof(double), dm_cmp_double);\n\
         \x20       printf(\"dm_run: %ld timed run(s), median %.4f ms, min %.4f ms, max %.4f ms\\n\", reps, ms[reps / 2], ms[0], ms[reps - 1]);\n\
         \x20   }}\n\
         \x20   free(ms);\n"
    ));
    for (k, a) in outputs.iter().enumerate() {
        s.push_str(&format!(
            "    dm_write(dir, \"out{k}.bin\", dm_out{k}, {});\n",
            a.bytes()
        ));
    }
    for arg in &args {
        s.push_str(&format!("    free({arg});\n"));
    }
    s.push_str("    dm_free();\n    return 0;\n}\n#endif\n");
    s
}
