//! Indexing (OneHot included), logic, generator (window functions included), scan, loss and quantization operators: hand-checked values, shape-inference errors,
//! expansions checked against the reference implementations on awkward shapes, and a few
//! expansions compiled to C and compared exactly.

mod bitwise;
mod c_backend;
mod diagonal;
mod gather;
mod generate;
mod logic;
mod loss;
mod onehot;
mod quantize;
mod reverse_sequence;
mod scan;
mod scatter;
mod signal_window;

use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, LibraryNode, NodeKind, Program, SymExpr, Tensor};
use dmove::ops::{lookup, OpError, TensorType};
use std::collections::BTreeMap;

/// A tensor type of static shape.
pub fn ty(dtype: DType, shape: &[i64]) -> TensorType {
    TensorType::new(dtype, shape.iter().map(|&d| SymExpr::Int(d)).collect())
}

/// The type of a concrete tensor.
pub fn type_of(t: &Tensor) -> TensorType {
    TensorType::new(
        t.dtype(),
        t.shape.iter().map(|&d| SymExpr::from(d)).collect(),
    )
}

pub fn f32s(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::f32(shape.to_vec(), data.to_vec())
}

pub fn i64s(shape: &[usize], data: &[i64]) -> Tensor {
    Tensor::i64(shape.to_vec(), data.to_vec())
}

pub fn bools(shape: &[usize], data: &[bool]) -> Tensor {
    let values: Vec<f64> = data.iter().map(|&b| f64::from(u8::from(b))).collect();
    Tensor::from_f64(DType::Bool, shape.to_vec(), &values)
}

fn attrs(list: &[(&str, Attr)]) -> BTreeMap<String, Attr> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn node(op: &str, a: &[(&str, Attr)]) -> LibraryNode {
    LibraryNode {
        op: op.to_string(),
        attrs: attrs(a),
    }
}

/// All outputs of the reference implementation.
pub fn eval(op: &str, a: &[(&str, Attr)], inputs: &[&Tensor]) -> Result<Vec<Tensor>, OpError> {
    let inputs: Vec<Option<&Tensor>> = inputs.iter().map(|t| Some(*t)).collect();
    lookup(op)
        .expect("operator exists")
        .eval(&node(op, a), &inputs)
}

/// Output 0 of the reference implementation.
pub fn eval1(op: &str, a: &[(&str, Attr)], inputs: &[&Tensor]) -> Tensor {
    eval(op, a, inputs)
        .unwrap_or_else(|e| panic!("{op} eval failed: {e}"))
        .remove(0)
}

/// Shape inference with constant values for some inputs.
pub fn infer(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[TensorType],
    consts: &[Option<&Tensor>],
) -> Result<Vec<TensorType>, OpError> {
    let inputs: Vec<Option<TensorType>> = inputs.iter().cloned().map(Some).collect();
    let consts: Vec<Option<&Tensor>> = (0..inputs.len())
        .map(|i| consts.get(i).copied().flatten())
        .collect();
    lookup(op)
        .expect("operator exists")
        .infer(&node(op, a), &inputs, &consts)
}

/// The message of a failing inference.
pub fn infer_err(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[TensorType],
    consts: &[Option<&Tensor>],
) -> String {
    match infer(op, a, inputs, consts) {
        Ok(t) => panic!("{op}: expected an error, inferred {t:?}"),
        Err(e) => e.to_string(),
    }
}

/// A one-operator program; `consts[i] = Some(t)` makes input `i` the constant `t`.
pub fn program(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[TensorType],
    consts: &[Option<Tensor>],
) -> Program {
    let types: Vec<Option<TensorType>> = inputs.iter().cloned().map(Some).collect();
    single_op_program(op, attrs(a), &types, consts)
        .unwrap_or_else(|e| panic!("{op} {inputs:?}: {e}"))
}

/// The default expansion matches the reference implementation on random inputs (floats in
/// [-2, 2), integers in [0, 4)) and leaves no library node; returns the lowered program.
pub fn check_expansion(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[TensorType],
    consts: &[Option<Tensor>],
) -> Program {
    let p = program(op, a, inputs, consts);
    let lowered =
        expansion_matches(&p, 11).unwrap_or_else(|e| panic!("{op} {a:?} {inputs:?}: {e}"));
    let mut libraries = 0;
    lowered
        .graph
        .walk(&mut |n| libraries += usize::from(matches!(n.kind, NodeKind::Library(_))));
    assert_eq!(libraries, 0, "{op}: library nodes left after expansion");
    lowered
}

/// Runs the expansion of `op` in the interpreter on `inputs` (the non-constant ones, in order).
pub fn run_expanded(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[&Tensor],
    consts: &[Option<Tensor>],
) -> Vec<Tensor> {
    let types: Vec<TensorType> = (0..inputs.len().max(consts.len()))
        .map(|i| match consts.get(i).and_then(|c| c.as_ref()) {
            Some(c) => type_of(c),
            None => type_of(inputs[i]),
        })
        .collect();
    let mut p = program(op, a, &types, consts);
    dmove::ops::expand::expand_all(&mut p).expect("expands");
    let feed: BTreeMap<String, Tensor> = p
        .inputs
        .iter()
        .map(|n| {
            let i: usize = n[1..].parse().expect("inputs are x<i>");
            (n.clone(), inputs[i].clone())
        })
        .collect();
    let out = dmove::interp::run(&p, &feed).unwrap_or_else(|e| panic!("{op}: {e}"));
    p.outputs.iter().map(|o| out[o].clone()).collect()
}
