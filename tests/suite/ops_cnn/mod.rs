//! Convolution (plain and quantized), batch normalisation, LRN, MeanVarianceNormalization,
//! pooling, the Fourier transforms, affine grids and grid sampling: reference results against
//! hand-computed values, shape-inference errors, and expansions against the reference on awkward
//! shapes.
//! This file holds the shared helpers; each operator family has its own module.

mod affine_grid;
mod batchnorm;
mod conv;
mod grid_sample;
mod lrn;
mod mvn;
mod pool;
mod qconv;
mod spectral;

use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, LibraryNode, SymExpr, Tensor};
use dmove::ops::{lookup, OpError, TensorType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Attributes as written in a test case.
pub type Attrs<'a> = Vec<(&'a str, Attr)>;

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

/// A string attribute.
pub fn s(v: &str) -> Attr {
    Attr::Str(v.to_string())
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

/// Runs the reference implementation of `op`; its first output.
pub fn eval(op: &str, a: &[(&str, Attr)], inputs: &[Option<&Tensor>]) -> Tensor {
    let node = LibraryNode {
        op: op.into(),
        attrs: attrs(a),
    };
    let mut out = lookup(op)
        .expect("known operator")
        .eval(&node, inputs)
        .expect("evaluates");
    assert!(!out.is_empty(), "{op} returned no output");
    out.remove(0)
}

/// Runs shape inference of `op` on non-constant inputs and returns its single output type.
pub fn infer(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
) -> Result<TensorType, OpError> {
    infer_consts(op, a, inputs, &vec![None; inputs.len()])
}

/// Shape inference of `op` with `consts[i]` the value of constant input `i`.
pub fn infer_consts(
    op: &str,
    a: &[(&str, Attr)],
    inputs: &[Option<TensorType>],
    consts: &[Option<&Tensor>],
) -> Result<TensorType, OpError> {
    let node = LibraryNode {
        op: op.into(),
        attrs: attrs(a),
    };
    lookup(op)
        .expect("known operator")
        .infer(&node, inputs, consts)
        .map(|mut v| v.remove(0))
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
        Err(OpError::Shape { message, .. }) => {
            assert!(
                message.contains(needle),
                "message `{message}` lacks `{needle}`"
            )
        }
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
    let types: Vec<Option<TensorType>> = inputs.iter().map(|s| s.map(ty)).collect();
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
