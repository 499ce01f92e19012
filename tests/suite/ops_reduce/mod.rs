//! Reductions, Instance / Group normalisation, ConvTranspose, Einsum, Mean, Mish and Dropout:
//! reference results against hand-computed values, shape-inference errors, expansions against
//! the reference on awkward shapes, and compiled C programs holding every operator (the list is
//! `c_tested`). This file holds the shared helpers and the C tests; each family has
//! its own module.

pub mod c_tested;
mod conv_transpose;
mod einsum;
mod groupnorm;
mod misc;
mod reduce;

use dmove::check::{compare_outputs, expansion_matches, random_inputs, single_op_program};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::ir::{Attr, DType, DataDesc, DataKind, LibraryNode, Program, SymExpr, Tensor};
use dmove::ops::{lookup, OpError, TensorType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Attributes keyed by name, as a library node holds them.
pub fn attrs(list: &[(&str, Attr)]) -> BTreeMap<String, Attr> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// An integer-list attribute.
pub fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

/// A static f32 tensor type.
pub fn ty(shape: &[usize]) -> TensorType {
    TensorType::new(
        DType::F32,
        shape.iter().map(|&d| SymExpr::from(d)).collect(),
    )
}

/// An f32 tensor with the given values.
pub fn t(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::f32(shape.to_vec(), data.to_vec())
}

/// An i64 tensor (axes inputs).
pub fn t64(data: &[i64]) -> Tensor {
    Tensor::i64(vec![data.len()], data.to_vec())
}

fn node(op: &str, a: &[(&str, Attr)]) -> LibraryNode {
    LibraryNode {
        op: op.into(),
        attrs: attrs(a),
    }
}

/// Runs the reference implementation of `op` and returns every output.
pub fn eval_all(op: &str, a: &[(&str, Attr)], inputs: &[Option<&Tensor>]) -> Vec<Tensor> {
    lookup(op)
        .expect("known operator")
        .eval(&node(op, a), inputs)
        .expect("evaluates")
}

/// Runs the reference implementation of `op` and returns its first output.
pub fn eval(op: &str, a: &[(&str, Attr)], inputs: &[Option<&Tensor>]) -> Tensor {
    eval_all(op, a, inputs).remove(0)
}

/// Shape inference of `op`'s first output; `consts[i]` is input `i`'s value when constant.
pub fn infer_with(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
    consts: &[Option<&Tensor>],
) -> Result<TensorType, OpError> {
    let mut all = consts.to_vec();
    all.resize(inputs.len(), None);
    lookup(op)
        .expect("known operator")
        .infer(&node(op, a), inputs, &all)
        .map(|mut v| v.remove(0))
}

/// Shape inference on non-constant inputs.
pub fn infer(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
) -> Result<TensorType, OpError> {
    infer_with(op, a, inputs, &[])
}

/// Asserts the shape and every element (to 1e-5) of a reference result.
pub fn assert_close(got: &Tensor, shape: &[usize], want: &[f64]) {
    assert_eq!(got.shape, shape);
    let got = got.to_f64_vec();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-5, "element {i}: got {g}, want {w}");
    }
}

/// Asserts a shape error whose message mentions `needle`.
pub fn shape_error(r: Result<TensorType, OpError>, needle: &str) {
    match r {
        Err(OpError::Shape { message, .. }) => assert!(
            message.contains(needle),
            "message `{message}` lacks `{needle}`"
        ),
        other => panic!("expected a shape error mentioning `{needle}`, got {other:?}"),
    }
}

/// Asserts an error on attribute `name`.
pub fn attr_error(r: Result<TensorType, OpError>, name: &str) {
    match r {
        Err(OpError::Attr { attr, .. }) => assert_eq!(attr, name),
        other => panic!("expected an error on attribute `{name}`, got {other:?}"),
    }
}

/// Expands a single application of `op` and compares it with the reference on random inputs;
/// `consts[i]` makes input `i` a constant.
pub fn expansion_agrees(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<&[usize]>],
    consts: &[Option<Tensor>],
) {
    let types: Vec<Option<TensorType>> = inputs
        .iter()
        .zip(consts.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(s, c)| match c.and_then(Option::as_ref) {
            Some(c) => Some(TensorType::new(
                c.dtype(),
                c.shape.iter().map(|&d| SymExpr::from(d)).collect(),
            )),
            None => s.map(ty),
        })
        .collect();
    let p = single_op_program(op, attrs(a), &types, consts).expect("infers");
    for seed in [1, 2] {
        if let Err(e) = expansion_matches(&p, seed) {
            panic!("{op} {a:?} on {inputs:?}: {e}");
        }
    }
}

/// Deterministic uniform values in `lo..hi`.
pub fn random(shape: &[usize], seed: u64, lo: f32, hi: f32) -> Tensor {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = shape.iter().product();
    Tensor::f32(
        shape.to_vec(),
        (0..n).map(|_| rng.gen_range(lo..hi)).collect(),
    )
}

/// One application in a combined C program: operator, attributes, inputs (shape, or a
/// constant value) and the number of outputs it produces.
pub struct Case {
    pub op: &'static str,
    pub attrs: Vec<(&'static str, Attr)>,
    pub inputs: Vec<Operand>,
    pub outputs: usize,
}

pub enum Operand {
    /// A graph input with `random_inputs`' values (floats in [-2, 2)).
    Random(DType, Vec<usize>),
    /// An f32 graph input with values in [0.1, 2) (for logarithms of sums).
    Positive(Vec<usize>),
    Constant(Tensor),
}

pub fn case(op: &'static str, a: Vec<(&'static str, Attr)>, shapes: &[&[usize]]) -> Case {
    Case {
        op,
        attrs: a,
        inputs: shapes
            .iter()
            .map(|s| Operand::Random(DType::F32, s.to_vec()))
            .collect(),
        outputs: 1,
    }
}

/// The name of input `i` of case `k` in `combined`'s program.
fn input_name(k: usize, i: usize) -> String {
    format!("n{k}_x{i}")
}

/// A program with one independent library node per case, each with its own containers.
fn combined(cases: &[Case]) -> Program {
    let mut p = Program::new("ops_reduce");
    let mut wiring = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let mut ins = Vec::new();
        let mut types = Vec::new();
        let mut consts = Vec::new();
        for (i, operand) in c.inputs.iter().enumerate() {
            let name = input_name(k, i);
            let (dtype, shape, kind) = match operand {
                Operand::Random(d, s) => (*d, s.clone(), DataKind::Input),
                Operand::Positive(s) => (DType::F32, s.clone(), DataKind::Input),
                Operand::Constant(t) => (t.dtype(), t.shape.clone(), DataKind::Constant),
            };
            let shape: Vec<SymExpr> = shape.iter().map(|&d| SymExpr::from(d)).collect();
            types.push(Some(TensorType::new(dtype, shape.clone())));
            p.data
                .insert(name.clone(), DataDesc::new(dtype, shape, kind));
            match operand {
                Operand::Random(..) | Operand::Positive(..) => {
                    p.inputs.push(name.clone());
                    consts.push(None);
                }
                Operand::Constant(t) => {
                    p.constants.insert(name.clone(), t.clone().into());
                    consts.push(Some(t));
                }
            }
            ins.push(name);
        }
        let out_types = lookup(c.op)
            .expect("known operator")
            .infer(&node(c.op, &c.attrs), &types, &consts)
            .unwrap_or_else(|e| panic!("case {k} ({} {:?}): {e}", c.op, c.attrs));
        let mut outs = Vec::new();
        for (j, t) in out_types.iter().take(c.outputs).enumerate() {
            let name = format!("n{k}_y{j}");
            p.data.insert(
                name.clone(),
                DataDesc::new(t.dtype, t.shape.clone(), DataKind::Output),
            );
            p.outputs.push(name.clone());
            outs.push(name);
        }
        wiring.push((ins, outs));
    }
    p.build(|b| {
        for (c, (ins, outs)) in cases.iter().zip(&wiring) {
            let ins: Vec<Option<&str>> = ins.iter().map(|s| Some(s.as_str())).collect();
            let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
            b.library(c.op, c.op, attrs(&c.attrs), &ins, &outs);
        }
    });
    p
}

/// Builds one program from `cases`, expands every library node, compiles the C once, runs it on
/// random inputs and compares every output with the interpreter running the unexpanded program
/// (the operators' reference `eval`).
pub fn c_matches_reference(cases: &[Case], seed: u64) {
    assert!(!cases.is_empty(), "no cases to compile");
    let original = combined(cases);
    dmove::ir::validate::validate(&original).expect("valid");
    let mut lowered = original.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    dmove::ir::validate::validate(&lowered).expect("valid after expansion");
    let mut left = Vec::new();
    lowered.graph.walk(&mut |n| {
        if let dmove::ir::NodeKind::Library(lib) = &n.kind {
            left.push(lib.op.clone());
        }
    });
    assert!(
        left.is_empty(),
        "library nodes left after expansion: {left:?}"
    );
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let compiled = Compiled::build_with(&lowered, &config).expect("compiles");
    let mut inputs = random_inputs(&original, seed).expect("inputs");
    for (k, c) in cases.iter().enumerate() {
        for (i, operand) in c.inputs.iter().enumerate() {
            if let Operand::Positive(shape) = operand {
                let values = random(shape, seed + (k * 16 + i) as u64, 0.1, 2.0);
                inputs.insert(input_name(k, i), values);
            }
        }
    }
    let want = dmove::interp::run(&original, &inputs).expect("reference runs");
    let got = compiled.run(&inputs).expect("C runs");
    // `compare_outputs` walks `want`: every case's outputs must be there, on both sides.
    let expected: usize = cases.iter().map(|c| c.outputs).sum();
    assert_eq!(want.len(), expected, "outputs of the reference");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "outputs of the C program"
    );
    for (name, t) in &want {
        assert!(
            t.to_f64_vec().iter().all(|v| v.is_finite()),
            "reference output {name} is not finite: {t:?}"
        );
    }
    compare_outputs(&got, &want).expect("C matches the reference");
}

/// An instance of every operator of this family except the three reductions that
/// `reduce::l1_logsum_sumsquare_cases` covers.
fn family_cases() -> Vec<Case> {
    let axes = |v: &[i64]| Operand::Constant(t64(v));
    let mut cases = vec![
        case("ReduceMean", vec![("axes", ints(&[1]))], &[&[2, 3, 4]]),
        case("ReduceMax", vec![("keepdims", Attr::Int(0))], &[&[3, 5]]),
        case("ReduceMin", vec![("axes", ints(&[-1, 0]))], &[&[2, 3, 4]]),
        case("ReduceProd", vec![("axes", ints(&[2]))], &[&[2, 2, 3]]),
        case("ReduceL2", vec![("axes", ints(&[0, 2]))], &[&[2, 3, 4]]),
        case("InstanceNormalization", vec![], &[&[2, 3, 5], &[3], &[3]]),
        case(
            "GroupNormalization",
            vec![("num_groups", Attr::Int(2))],
            &[&[2, 4, 3, 2], &[4], &[4]],
        ),
        case(
            "ConvTranspose",
            vec![
                ("strides", ints(&[2, 1])),
                ("pads", ints(&[1, 0, 0, 1])),
                ("group", Attr::Int(2)),
            ],
            &[&[1, 4, 3, 3], &[4, 3, 2, 3], &[6]],
        ),
        case(
            "Einsum",
            vec![("equation", Attr::Str("bij,bjk->bik".into()))],
            &[&[2, 3, 4], &[2, 4, 5]],
        ),
        case("Mean", vec![], &[&[2, 3], &[3], &[2, 1]]),
        case("Mish", vec![], &[&[7]]),
    ];
    cases.push(Case {
        op: "ReduceSum",
        attrs: vec![("keepdims", Attr::Int(0))],
        inputs: vec![Operand::Random(DType::F32, vec![3, 2, 4]), axes(&[1])],
        outputs: 1,
    });
    cases.push(Case {
        op: "ReduceMin",
        attrs: vec![("axes", ints(&[0]))],
        inputs: vec![Operand::Random(DType::Bool, vec![3, 4])],
        outputs: 1,
    });
    cases.push(Case {
        outputs: 2,
        ..case("Dropout", vec![], &[&[2, 3]])
    });
    cases
}

/// One C program with an instance of every operator of this family, compiled once, against
/// the interpreter running the unexpanded program (the operators' reference `eval`).
#[test]
fn every_operator_compiles_to_c_and_matches_the_reference() {
    c_matches_reference(&family_cases(), 5);
}

/// `c_tested::C_TESTED` (which `ops_codegen` counts as covered) names exactly the
/// operators the C programs of this file hold.
#[test]
fn c_tested_list_is_what_the_c_programs_hold() {
    let compiled: BTreeSet<&str> = family_cases()
        .iter()
        .chain(&reduce::l1_logsum_sumsquare_cases())
        .map(|c| c.op)
        .collect();
    let listed: BTreeSet<&str> = c_tested::C_TESTED.iter().copied().collect();
    assert_eq!(
        listed.len(),
        c_tested::C_TESTED.len(),
        "duplicates in C_TESTED"
    );
    assert_eq!(
        compiled, listed,
        "C_TESTED against the operators compiled to C"
    );
}
