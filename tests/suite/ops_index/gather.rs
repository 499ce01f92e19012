use super::{
    check_expansion, eval, eval1, f32s, i64s, infer, infer_err, program, run_expanded, ty,
};
use dmove::ir::{Attr, DType, Tensor};
use std::collections::BTreeMap;

fn seq(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    f32s(shape, &(0..n).map(|i| i as f32).collect::<Vec<_>>())
}

#[test]
fn gather_picks_rows_and_wraps_negative_indices() {
    let data = f32s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let idx = i64s(&[2, 2], &[0, 1, 1, 2]);
    let y = eval1("Gather", &[], &[&data, &idx]);
    assert_eq!(y.shape, vec![2, 2, 2]);
    assert_eq!(y.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0, 6.0]);
    let neg = i64s(&[2], &[-1, 0]);
    let y = eval1("Gather", &[], &[&data, &neg]);
    assert_eq!(y.to_f64_vec(), vec![5.0, 6.0, 1.0, 2.0]);
    // The expansion computes the same, wrap included.
    let got = run_expanded("Gather", &[], &[&data], &[None, Some(neg)]);
    assert_eq!(got[0].to_f64_vec(), vec![5.0, 6.0, 1.0, 2.0]);
    // Axis 1 of a 3×3 (x[r, c] = 3r + c) with indices [[0, 2]] → y[r, 0, j] = 3r + idx[j].
    let y = eval1(
        "Gather",
        &[("axis", Attr::Int(1))],
        &[&seq(&[3, 3]), &i64s(&[1, 2], &[0, 2])],
    );
    assert_eq!(y.shape, vec![3, 1, 2]);
    assert_eq!(y.to_f64_vec(), vec![0.0, 2.0, 3.0, 5.0, 6.0, 8.0]);
    let scalar = i64s(&[], &[2]);
    let y = eval1("Gather", &[], &[&data, &scalar]);
    assert_eq!((y.shape.clone(), y.to_f64_vec()), (vec![2], vec![5.0, 6.0]));
}

#[test]
fn gather_rejects_bad_indices_everywhere() {
    let data = f32s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    for bad in [3, -4] {
        let e = eval("Gather", &[], &[&data, &i64s(&[1], &[bad])]).unwrap_err();
        assert!(e.to_string().contains(&bad.to_string()), "{e}");
    }
    // The interpreter reports the out-of-range element read instead of panicking.
    let p = program(
        "Gather",
        &[],
        &[ty(DType::F32, &[3, 2]), ty(DType::I64, &[1])],
        &[],
    );
    let mut lowered = p.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    let feed = BTreeMap::from([
        ("x0".to_string(), data.clone()),
        ("x1".to_string(), i64s(&[1], &[7])),
    ]);
    let err = dmove::interp::run(&lowered, &feed).unwrap_err().to_string();
    assert!(err.contains("index 7"), "{err}");
    let msg = infer_err(
        "Gather",
        &[],
        &[ty(DType::F32, &[3, 2]), ty(DType::F32, &[1])],
        &[],
    );
    assert!(msg.contains("indices must be int32 or int64"), "{msg}");
    let msg = infer_err(
        "Gather",
        &[("axis", Attr::Int(2))],
        &[ty(DType::F32, &[3, 2]), ty(DType::I64, &[1])],
        &[],
    );
    assert!(msg.contains("axis 2"), "{msg}");
}

#[test]
fn gather_expansion_matches_on_awkward_shapes() {
    let f = DType::F32;
    // Random indices lie in [0, 4), so the gathered axis has at least 4 elements.
    check_expansion(
        "Gather",
        &[],
        &[ty(f, &[5, 3]), ty(DType::I64, &[2, 3])],
        &[],
    );
    check_expansion(
        "Gather",
        &[("axis", Attr::Int(-1))],
        &[ty(f, &[2, 1, 4]), ty(DType::I32, &[3])],
        &[],
    );
    check_expansion(
        "Gather",
        &[("axis", Attr::Int(1))],
        &[ty(DType::I64, &[1, 7, 2]), ty(DType::I64, &[])],
        &[],
    );
    let neg = i64s(&[2, 2], &[-1, 0, -3, 2]);
    check_expansion(
        "Gather",
        &[("axis", Attr::Int(1))],
        &[ty(f, &[2, 3, 1]), ty(DType::I64, &[2, 2])],
        &[None, Some(neg)],
    );
}

#[test]
fn gather_elements_follows_the_onnx_examples() {
    let data = f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let idx = i64s(&[2, 2], &[0, 0, 1, 0]);
    let y = eval1("GatherElements", &[("axis", Attr::Int(1))], &[&data, &idx]);
    assert_eq!(y.to_f64_vec(), vec![1.0, 1.0, 4.0, 3.0]);
    let data = f32s(&[3, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let idx = i64s(&[2, 3], &[1, 2, 0, 2, 0, 0]);
    let y = eval1("GatherElements", &[], &[&data, &idx]);
    assert_eq!(y.shape, vec![2, 3]);
    assert_eq!(y.to_f64_vec(), vec![4.0, 8.0, 3.0, 7.0, 2.0, 3.0]);
    let neg = i64s(&[1, 2], &[-1, -2]);
    let got = run_expanded(
        "GatherElements",
        &[("axis", Attr::Int(1))],
        &[&data],
        &[None, Some(neg)],
    );
    assert_eq!(got[0].to_f64_vec(), vec![3.0, 2.0]);
}

#[test]
fn gather_elements_checks_shapes_and_expands() {
    let msg = infer_err(
        "GatherElements",
        &[],
        &[ty(DType::F32, &[3, 2]), ty(DType::I64, &[3])],
        &[],
    );
    assert!(msg.contains("rank"), "{msg}");
    let msg = infer_err(
        "GatherElements",
        &[],
        &[ty(DType::F32, &[3, 2]), ty(DType::I64, &[2, 3])],
        &[],
    );
    assert!(msg.contains("dimension 1"), "{msg}");
    let t = infer(
        "GatherElements",
        &[("axis", Attr::Int(-1))],
        &[ty(DType::F64, &[3, 2]), ty(DType::I32, &[2, 5])],
        &[],
    )
    .expect("infers");
    assert_eq!(t[0], ty(DType::F64, &[2, 5]));
    check_expansion(
        "GatherElements",
        &[("axis", Attr::Int(-1))],
        &[ty(DType::F32, &[3, 1, 4]), ty(DType::I64, &[2, 1, 6])],
        &[],
    );
    check_expansion(
        "GatherElements",
        &[],
        &[ty(DType::I64, &[5]), ty(DType::I32, &[3])],
        &[],
    );
}
