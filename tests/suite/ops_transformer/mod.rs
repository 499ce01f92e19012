//! Transformer operators: hand-checked values, shape-inference errors, and expansions checked
//! against the reference implementations on awkward shapes.

mod activation;
mod attention;
mod causal_conv;
mod elementwise;
mod linear_attention;
mod math;
mod matmul;
mod norm;
mod rotary;
mod shape;
mod softmax;
mod swiglu;
mod symbolic;

use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, LibraryNode, NodeKind, SymExpr, Tensor};
use dmove::ops::{lookup, OpError, TensorType};
use std::collections::BTreeMap;

/// Attribute list of one test case.
pub type Attrs<'a> = Vec<(&'a str, Attr)>;

/// An f32 tensor type of static shape.
pub fn ty(shape: &[i64]) -> TensorType {
    TensorType::new(DType::F32, shape.iter().map(|&d| SymExpr::Int(d)).collect())
}

/// A tensor type with symbolic dimensions given as strings (`"B"`) or numbers (`"4"`).
pub fn sym_ty(shape: &[&str]) -> TensorType {
    let dims = shape
        .iter()
        .map(|d| match d.parse::<i64>() {
            Ok(v) => SymExpr::Int(v),
            Err(_) => SymExpr::sym(*d),
        })
        .collect();
    TensorType::new(DType::F32, dims)
}

pub fn t(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::f32(shape.to_vec(), data.to_vec())
}

pub fn ints(values: &[i64]) -> Tensor {
    Tensor::i64(vec![values.len()], values.to_vec())
}

pub fn attrs(list: &[(&str, Attr)]) -> BTreeMap<String, Attr> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn node(op: &str, a: &BTreeMap<String, Attr>) -> LibraryNode {
    LibraryNode {
        op: op.to_string(),
        attrs: a.clone(),
    }
}

/// Runs the reference implementation.
pub fn eval(op: &str, a: &[(&str, Attr)], inputs: &[Option<&Tensor>]) -> Vec<Tensor> {
    let operator = lookup(op).expect("operator exists");
    operator
        .eval(&node(op, &attrs(a)), inputs)
        .unwrap_or_else(|e| panic!("{op} eval failed: {e}"))
}

/// Output 0 of the reference implementation on present inputs.
pub fn eval1(op: &str, a: &[(&str, Attr)], inputs: &[&Tensor]) -> Tensor {
    let inputs: Vec<Option<&Tensor>> = inputs.iter().map(|t| Some(*t)).collect();
    eval(op, a, &inputs).remove(0)
}

/// Shape inference.
pub fn infer(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
    consts: &[Option<&Tensor>],
) -> Result<Vec<TensorType>, OpError> {
    let operator = lookup(op).expect("operator exists");
    let consts: Vec<Option<&Tensor>> = (0..inputs.len())
        .map(|i| consts.get(i).copied().flatten())
        .collect();
    operator.infer(&node(op, &attrs(a)), inputs, &consts)
}

/// The error message of a failing inference.
pub fn infer_err(op: &str, a: &[(&str, Attr)], inputs: &[Option<TensorType>]) -> String {
    match infer(op, a, inputs, &[]) {
        Ok(t) => panic!("{op}: expected an error, inferred {t:?}"),
        Err(e) => e.to_string(),
    }
}

/// Checks the default expansion against the reference implementation on random inputs and
/// that no library node is left.
pub fn check_expansion(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
    consts: &[Option<Tensor>],
) {
    let p = single_op_program(op, attrs(a), inputs, consts)
        .unwrap_or_else(|e| panic!("{op} {inputs:?}: {e}"));
    let lowered =
        expansion_matches(&p, 11).unwrap_or_else(|e| panic!("{op} {a:?} {inputs:?}: {e}"));
    let mut libraries = 0;
    lowered
        .graph
        .walk(&mut |n| libraries += usize::from(matches!(n.kind, NodeKind::Library(_))));
    assert_eq!(libraries, 0, "{op}: library nodes left after expansion");
}

/// [`check_expansion`] for operands with symbolic dimensions, bound to `binds` for the run.
pub fn check_symbolic_expansion(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
    consts: &[Option<Tensor>],
    binds: &[(&str, i64)],
) {
    let mut p = single_op_program(op, attrs(a), inputs, consts)
        .unwrap_or_else(|e| panic!("{op} {inputs:?}: {e}"));
    for (name, value) in binds {
        p.symbols.insert(name.to_string(), Some(*value));
    }
    expansion_matches(&p, 5).unwrap_or_else(|e| panic!("{op} {inputs:?}: {e}"));
}

/// Element-wise comparison with a tolerance for values computed in f64 and stored in f32.
pub fn assert_close(got: &Tensor, shape: &[usize], want: &[f64]) {
    assert_eq!(got.shape, shape, "shape");
    let values = got.to_f64_vec();
    assert_eq!(values.len(), want.len(), "element count");
    for (i, (g, w)) in values.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 + 1e-5 * w.abs(),
            "element {i}: got {g}, want {w} (all: {values:?})"
        );
    }
}
