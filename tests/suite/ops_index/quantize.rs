//! QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: rounding half to even,
//! saturation of integers and float8, per-tensor, per-axis and blocked parameters (a last block
//! shorter than the others included), the ONNX examples, shape errors, and expansions.

use super::{check_expansion, eval1, f32s, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType, Tensor};

fn of(dtype: DType, shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_f64(dtype, shape.to_vec(), values)
}

#[test]
fn quantize_rounds_half_to_even_and_saturates() {
    let x = f32s(&[8], &[0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, 3.0]);
    let scale = f32s(&[], &[1.0]);
    let zp = of(DType::I8, &[1], &[0.0]);
    let y = eval1("QuantizeLinear", &[], &[&x, &scale, &zp]);
    assert_eq!(y.dtype(), DType::I8);
    assert_eq!(
        y.to_f64_vec(),
        vec![0.0, 2.0, 2.0, 0.0, -2.0, 127.0, -128.0, 3.0]
    );
    // The rounding comes before the zero point: round(2.5) + 1 = 3, not round(3.5) = 4.
    let zp = of(DType::U8, &[], &[1.0]);
    let y = eval1("QuantizeLinear", &[], &[&x, &scale, &zp]);
    assert_eq!(
        y.to_f64_vec(),
        vec![1.0, 3.0, 3.0, 1.0, 0.0, 255.0, 0.0, 4.0]
    );
    // Without a zero point the target is uint8; `output_dtype` picks another.
    let y = eval1("QuantizeLinear", &[], &[&x, &scale]);
    assert_eq!((y.dtype(), y.to_f64_vec()[5]), (DType::U8, 255.0));
    let a = [("output_dtype", Attr::Int(22))];
    let y = eval1("QuantizeLinear", &a, &[&x, &scale]);
    assert_eq!(y.dtype(), DType::I4);
    assert_eq!(
        y.to_f64_vec(),
        vec![0.0, 2.0, 2.0, 0.0, -2.0, 7.0, -8.0, 3.0]
    );
    // float8: clamped to ±448 under `saturate`, infinite or NaN without it.
    let z8 = of(DType::F8E4M3FN, &[1], &[0.0]);
    let big = f32s(&[3], &[1000.0, -1000.0, 0.3]);
    let y = eval1("QuantizeLinear", &[], &[&big, &scale, &z8]);
    assert_eq!(y.to_f64_vec()[..2], [448.0, -448.0]);
    let y = eval1(
        "QuantizeLinear",
        &[("saturate", Attr::Int(0))],
        &[&big, &scale, &z8],
    );
    assert!(y.to_f64_vec()[0].is_nan());
    // The expansion computes the same, half-way values included.
    let got = run_expanded("QuantizeLinear", &[], &[&x], &[None, Some(scale), Some(zp)]);
    assert_eq!(
        got[0].to_f64_vec(),
        vec![1.0, 3.0, 3.0, 1.0, 0.0, 255.0, 0.0, 4.0]
    );
}

#[test]
fn parameters_apply_per_axis_and_per_block() {
    // x[r, c] = c + 4r: per-axis scales on the rows, blocks of 3 columns (the last has 1).
    let x = f32s(&[2, 4], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let rows = f32s(&[2], &[1.0, 2.0]);
    let y = eval1("QuantizeLinear", &[("axis", Attr::Int(0))], &[&x, &rows]);
    assert_eq!(y.to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0, 2.0, 2.0, 3.0, 4.0]);
    let blocks = f32s(&[2, 2], &[1.0, 0.5, 2.0, 0.25]);
    let a = [("axis", Attr::Int(1)), ("block_size", Attr::Int(3))];
    let y = eval1("QuantizeLinear", &a, &[&x, &blocks]);
    assert_eq!(
        y.to_f64_vec(),
        vec![0.0, 1.0, 2.0, 6.0, 2.0, 2.0, 3.0, 28.0]
    );
    let q = of(
        DType::U8,
        &[2, 4],
        &[0.0, 1.0, 2.0, 6.0, 2.0, 2.0, 3.0, 28.0],
    );
    let zp = of(DType::U8, &[2, 2], &[0.0, 1.0, 1.0, 0.0]);
    let y = eval1("DequantizeLinear", &a, &[&q, &blocks, &zp]);
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(y.to_f64_vec(), vec![0.0, 1.0, 2.0, 2.5, 2.0, 2.0, 4.0, 7.0]);
    let got = run_expanded("DequantizeLinear", &a, &[&q, &blocks, &zp], &[]);
    assert_eq!(got[0].to_f64_vec(), y.to_f64_vec());
}

#[test]
fn dynamic_quantization_follows_the_onnx_example() {
    let x = f32s(&[6], &[0.0, 2.0, -3.0, -2.5, 1.34, 0.5]);
    let out = super::eval("DynamicQuantizeLinear", &[], &[&x]).expect("runs");
    assert_eq!(
        out[0].to_f64_vec(),
        vec![153.0, 255.0, 0.0, 26.0, 221.0, 179.0]
    );
    assert_eq!(out[1].to_f64_vec(), vec![f64::from(5.0f32 / 255.0)]);
    assert_eq!(out[2].to_f64_vec(), vec![153.0]);
    // All positive: the range still starts at 0, so the zero point is 0. In f32, 2 / (4 / 255)
    // is 127.49999, which rounds to 127 (numpy agrees).
    let x = f32s(&[3], &[1.0, 2.0, 4.0]);
    let out = super::eval("DynamicQuantizeLinear", &[], &[&x]).expect("runs");
    assert_eq!(
        (out[0].to_f64_vec(), out[2].to_f64_vec()),
        (vec![64.0, 127.0, 255.0], vec![0.0])
    );
    let got = run_expanded("DynamicQuantizeLinear", &[], &[&x], &[]);
    for (g, w) in got.iter().zip(&out) {
        assert_eq!(g.to_f64_vec(), w.to_f64_vec());
    }
}

#[test]
fn quantization_checks_its_parameters() {
    let (f, u8t) = (DType::F32, DType::U8);
    let msg = infer_err("QuantizeLinear", &[], &[ty(f, &[2, 3]), ty(f, &[2])], &[]);
    assert!(msg.contains("axis 1 has 3"), "{msg}");
    let a = [("block_size", Attr::Int(2))];
    let msg = infer_err("QuantizeLinear", &a, &[ty(f, &[2, 5]), ty(f, &[2, 2])], &[]);
    assert!(msg.contains("needs 3"), "{msg}");
    let msg = infer_err(
        "QuantizeLinear",
        &[],
        &[ty(f, &[4]), ty(f, &[]), ty(f, &[])],
        &[],
    );
    assert!(msg.contains("cannot quantize to f32"), "{msg}");
    let a = [("output_dtype", Attr::Int(3))];
    let msg = infer_err(
        "QuantizeLinear",
        &a,
        &[ty(f, &[4]), ty(f, &[]), ty(u8t, &[])],
        &[],
    );
    assert!(msg.contains("output_dtype"), "{msg}");
    let msg = infer_err(
        "DequantizeLinear",
        &[],
        &[ty(u8t, &[4]), ty(f, &[]), ty(DType::I8, &[])],
        &[],
    );
    assert!(msg.contains("zero point has type"), "{msg}");
    let msg = infer_err(
        "DequantizeLinear",
        &[],
        &[ty(u8t, &[4, 2]), ty(f, &[3]), ty(u8t, &[2])],
        &[],
    );
    assert!(msg.contains("zero point has shape"), "{msg}");
    let msg = infer_err("DynamicQuantizeLinear", &[], &[ty(DType::F64, &[4])], &[]);
    assert!(msg.contains("expects float"), "{msg}");
}

#[test]
fn quantization_expansions_match_the_reference() {
    let (f, u8t) = (DType::F32, DType::U8);
    let axis0 = [("axis", Attr::Int(0))];
    check_expansion(
        "QuantizeLinear",
        &[],
        &[ty(f, &[3, 5]), ty(f, &[]), ty(u8t, &[])],
        &[],
    );
    check_expansion(
        "QuantizeLinear",
        &axis0,
        &[ty(f, &[3, 1, 2]), ty(f, &[3]), ty(DType::I8, &[3])],
        &[],
    );
    let blocked = [
        ("axis", Attr::Int(-1)),
        ("block_size", Attr::Int(2)),
        ("output_dtype", Attr::Int(5)),
    ];
    check_expansion(
        "QuantizeLinear",
        &blocked,
        &[ty(DType::F16, &[2, 5]), ty(DType::F16, &[2, 3])],
        &[],
    );
    let e5 = DType::F8E5M2;
    check_expansion(
        "QuantizeLinear",
        &[],
        &[ty(f, &[7]), ty(f, &[1]), ty(e5, &[1])],
        &[],
    );
    check_expansion(
        "DequantizeLinear",
        &[],
        &[ty(DType::I16, &[4, 3]), ty(f, &[3]), ty(DType::I16, &[3])],
        &[],
    );
    check_expansion(
        "DequantizeLinear",
        &blocked[..2],
        &[ty(DType::U4, &[3, 5]), ty(DType::F16, &[3, 3])],
        &[],
    );
    check_expansion(
        "DequantizeLinear",
        &[],
        &[ty(DType::F8E4M3FN, &[6]), ty(DType::F16, &[])],
        &[],
    );
    check_expansion("DynamicQuantizeLinear", &[], &[ty(f, &[3, 1, 4])], &[]);
}
