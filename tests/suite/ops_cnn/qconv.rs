//! ConvInteger and QLinearConv.

use super::{attrs, infer, ints};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::TensorType;

fn q(dtype: DType, shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_f64(dtype, shape.to_vec(), values)
}

fn typed(dtype: DType, shape: &[i64]) -> Option<TensorType> {
    Some(TensorType::new(
        dtype,
        shape.iter().map(|&d| SymExpr::Int(d)).collect(),
    ))
}

fn eval(op: &str, a: &[(&str, Attr)], inputs: &[&Tensor]) -> Tensor {
    let inputs: Vec<Option<&Tensor>> = inputs.iter().copied().map(Some).collect();
    super::eval(op, a, &inputs)
}

fn infer_err(op: &str, inputs: &[Option<TensorType>]) -> String {
    match infer(op, &[], inputs) {
        Err(e) => e.to_string(),
        Ok(t) => panic!("{op}: expected an error, got {t:?}"),
    }
}

fn expands(op: &str, a: &[(&str, Attr)], inputs: &[Option<TensorType>]) {
    let p = single_op_program(op, attrs(a), inputs, &[]).expect("infers");
    for seed in [1, 2, 3] {
        if let Err(e) = expansion_matches(&p, seed) {
            panic!("{op} {a:?}: {e}");
        }
    }
}

#[test]
fn conv_integer_subtracts_zero_points_by_hand() {
    use DType::{I8, U8};
    // The ONNX example: (x − 1) ⊛ ones(2, 2).
    let x = q(U8, &[1, 1, 3, 3], &[2., 3., 4., 5., 6., 7., 8., 9., 10.]);
    let w = q(U8, &[1, 1, 2, 2], &[1.; 4]);
    let y = eval("ConvInteger", &[], &[&x, &w, &q(U8, &[], &[1.])]);
    assert_eq!(y.dtype(), DType::I32);
    assert_eq!(y.shape, vec![1, 1, 2, 2]);
    assert_eq!(y.to_f64_vec(), vec![12., 16., 24., 28.]);

    // Two groups, per-channel w zero points, the end of the width padded: padding reads zero
    // after the subtraction. x − x₀ = [2, 3, 4 | 0, 1, 5], w − w₀ = [0, 1 | 5, 0].
    let x = q(I8, &[1, 2, 1, 3], &[1., 2., 3., -1., 0., 4.]);
    let w = q(I8, &[2, 1, 1, 2], &[1., 2., 3., -2.]);
    let (x0, w0) = (q(I8, &[1], &[-1.]), q(I8, &[2], &[1., -2.]));
    let a = [("group", Attr::Int(2)), ("pads", ints(&[0, 0, 0, 1]))];
    let y = eval("ConvInteger", &a, &[&x, &w, &x0, &w0]);
    assert_eq!(y.shape, vec![1, 2, 1, 3]);
    assert_eq!(y.to_f64_vec(), vec![3., 4., 0., 0., 5., 25.]);
}

#[test]
fn qlinear_conv_rounds_half_even_and_saturates_per_channel() {
    use DType::{F32, I32, U8};
    // x − x₀ = [0, 10, 20, 30]; w − w₀ = [2 | 10]; B = [2, −3].
    // Channel 0: (2, 22, 42, 62) · 0.5·0.25/0.5 = 0.5, 5.5, 10.5, 15.5 → 0, 6, 10, 16 (+100).
    // Channel 1: (−3, 97, 197, 297) · 1 + 100 → 97, 197, 255, 255 (saturated).
    let inputs = [
        q(U8, &[1, 1, 2, 2], &[10., 20., 30., 40.]),
        q(F32, &[], &[0.5]),
        q(U8, &[], &[10.]),
        q(U8, &[2, 1, 1, 1], &[3., 13.]),
        q(F32, &[2], &[0.25, 1.0]),
        q(U8, &[2], &[1., 3.]),
        q(F32, &[], &[0.5]),
        q(U8, &[], &[100.]),
        q(I32, &[2], &[2., -3.]),
    ];
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let y = eval("QLinearConv", &[], &refs);
    assert_eq!(y.dtype(), U8);
    assert_eq!(y.shape, vec![1, 2, 2, 2]);
    let want = [100., 106., 110., 116., 97., 197., 255., 255.];
    assert_eq!(y.to_f64_vec(), want);

    // Per-tensor w parameters and no bias: every channel shares the multiplier.
    let mut per_tensor = inputs[..8].to_vec();
    per_tensor[4] = q(F32, &[1], &[0.25]);
    per_tensor[5] = q(U8, &[], &[1.]);
    let refs: Vec<&Tensor> = per_tensor.iter().collect();
    let y = eval("QLinearConv", &[], &refs);
    // Channel 0: (0, 20, 40, 60)·0.25; channel 1: w − w₀ = 12, (0, 120, 240, 360)·0.25.
    let want = [100., 105., 110., 115., 100., 130., 160., 190.];
    assert_eq!(y.to_f64_vec(), want);
}

#[test]
fn quantized_convs_check_their_operands() {
    use DType::{F32, I32, I8, U8};
    let msg = infer_err(
        "ConvInteger",
        &[typed(F32, &[1, 1, 3]), typed(U8, &[1, 1, 2])],
    );
    assert!(msg.contains("int8 or uint8"), "{msg}");
    let msg = infer_err(
        "ConvInteger",
        &[
            typed(U8, &[1, 1, 3]),
            typed(U8, &[3, 1, 2]),
            None,
            typed(U8, &[2]),
        ],
    );
    assert!(msg.contains("one per output channel (3)"), "{msg}");
    let msg = infer_err(
        "ConvInteger",
        &[typed(U8, &[1, 2, 3]), typed(U8, &[1, 3, 2])],
    );
    assert!(msg.contains("channels"), "{msg}");
    let s = typed(F32, &[]);
    let z = typed(U8, &[]);
    let mut inputs = vec![
        typed(U8, &[1, 2, 4, 4]),
        s.clone(),
        z.clone(),
        typed(U8, &[3, 2, 2, 2]),
        typed(F32, &[3]),
        typed(U8, &[3]),
        s.clone(),
        z.clone(),
        typed(F32, &[3]),
    ];
    let msg = infer_err("QLinearConv", &inputs);
    assert!(msg.contains("bias B must be int32"), "{msg}");
    inputs[8] = typed(I32, &[3]);
    let y = infer("QLinearConv", &[("strides", ints(&[2, 1]))], &inputs).expect("infers");
    assert_eq!(
        y,
        TensorType::new(U8, vec![1.into(), 3.into(), 2.into(), 3.into()])
    );
    inputs[7] = typed(I8, &[]);
    assert_eq!(
        infer("QLinearConv", &[], &inputs).expect("infers").dtype,
        I8
    );
    inputs[4] = typed(F32, &[2]);
    let msg = infer_err("QLinearConv", &inputs);
    assert!(msg.contains("w_scale must hold one value"), "{msg}");
}

#[test]
fn quantized_conv_expansions_match_the_reference() {
    use DType::{F32, I32, I8, U8};
    let grouped = [
        ("group", Attr::Int(2)),
        ("strides", ints(&[2, 1])),
        ("dilations", ints(&[1, 2])),
        ("pads", ints(&[1, 0, 0, 2])),
    ];
    expands(
        "ConvInteger",
        &grouped,
        &[
            typed(I8, &[2, 4, 5, 3]),
            typed(I8, &[6, 2, 3, 2]),
            typed(I8, &[1]),
            typed(I8, &[6]),
        ],
    );
    expands(
        "ConvInteger",
        &[("auto_pad", Attr::Str("SAME_LOWER".into()))],
        &[typed(U8, &[1, 3, 7]), typed(U8, &[2, 3, 4])],
    );
    let s = typed(F32, &[]);
    expands(
        "QLinearConv",
        &grouped,
        &[
            typed(U8, &[1, 4, 5, 3]),
            s.clone(),
            typed(U8, &[]),
            typed(I8, &[6, 2, 3, 2]),
            typed(F32, &[6]),
            typed(I8, &[6]),
            s.clone(),
            typed(I8, &[1]),
            typed(I32, &[6]),
        ],
    );
    expands(
        "QLinearConv",
        &[("pads", ints(&[1, 1]))],
        &[
            typed(I8, &[2, 3, 5]),
            s.clone(),
            typed(I8, &[1]),
            typed(I8, &[2, 3, 3]),
            s.clone(),
            typed(I8, &[]),
            s,
            typed(U8, &[]),
        ],
    );
}
