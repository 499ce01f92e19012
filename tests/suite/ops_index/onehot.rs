//! OneHot: the ONNX examples (negative indices counted from the end, out-of-range ones all off,
//! float indices, the new axis anywhere), errors, and expansions.

use super::{check_expansion, eval1, f32s, i64s, infer, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType, Tensor};

#[test]
fn one_hot_marks_each_index_and_wraps_negative_ones() {
    let indices = i64s(&[3], &[5, -6, -1]);
    let depth = f32s(&[], &[5.0]);
    let values = f32s(&[2], &[1.0, 3.0]);
    let y = eval1("OneHot", &[], &[&indices, &depth, &values]);
    assert_eq!(y.shape, vec![3, 5]);
    let mut want = vec![1.0; 15];
    want[14] = 3.0;
    assert_eq!(y.to_f64_vec(), want);
    // The new axis in front: y[k, i] is on where indices[i] == k.
    let indices = f32s(&[2], &[1.0, 0.0]);
    let a = [("axis", Attr::Int(0))];
    let y = eval1("OneHot", &a, &[&indices, &f32s(&[1], &[3.0]), &values]);
    assert_eq!(y.shape, vec![3, 2]);
    assert_eq!(y.to_f64_vec(), vec![1.0, 3.0, 3.0, 1.0, 1.0, 1.0]);
    let ints = Tensor::from_f64(DType::I32, vec![2], &[-1.0, 7.0]);
    let got = run_expanded(
        "OneHot",
        &[],
        &[&i64s(&[2], &[-2, 0])],
        &[None, Some(f32s(&[], &[3.0])), Some(ints)],
    );
    assert_eq!(got[0].to_f64_vec(), vec![-1.0, 7.0, -1.0, 7.0, -1.0, -1.0]);
}

#[test]
fn one_hot_needs_a_constant_positive_depth() {
    let (i, f) = (DType::I64, DType::F32);
    let types = [ty(i, &[2]), ty(f, &[]), ty(f, &[2])];
    let msg = infer_err("OneHot", &[], &types, &[]);
    assert!(msg.contains("depth must be a constant"), "{msg}");
    let zero = f32s(&[], &[0.0]);
    let msg = infer_err("OneHot", &[], &types, &[None, Some(&zero)]);
    assert!(msg.contains("positive integer"), "{msg}");
    let four = f32s(&[], &[4.0]);
    let msg = infer_err(
        "OneHot",
        &[],
        &[ty(i, &[2]), ty(f, &[]), ty(f, &[3])],
        &[None, Some(&four)],
    );
    assert!(msg.contains("[off, on]"), "{msg}");
    let msg = infer_err(
        "OneHot",
        &[("axis", Attr::Int(2))],
        &types,
        &[None, Some(&four)],
    );
    assert!(msg.contains("axis"), "{msg}");
    let t = infer(
        "OneHot",
        &[("axis", Attr::Int(-2))],
        &[ty(i, &[2, 3]), ty(f, &[]), ty(DType::I32, &[2])],
        &[None, Some(&four)],
    )
    .expect("infers");
    assert_eq!(t[0], ty(DType::I32, &[2, 4, 3]));
}

#[test]
fn one_hot_expansions_match_the_reference() {
    let depth = |shape: &[usize], d: f32| Some(f32s(shape, &[d]));
    for axis in [0, 1, -1] {
        let a = [("axis", Attr::Int(axis))];
        let types = [
            ty(DType::I64, &[2, 3]),
            ty(DType::F32, &[]),
            ty(DType::F32, &[2]),
        ];
        check_expansion("OneHot", &a, &types, &[None, depth(&[], 5.0)]);
    }
    let types = [
        ty(DType::F32, &[4]),
        ty(DType::F32, &[1]),
        ty(DType::F64, &[2]),
    ];
    check_expansion("OneHot", &[], &types, &[None, depth(&[1], 3.0)]);
}
