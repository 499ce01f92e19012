use super::{check_expansion, eval, eval1, f32s, i64s, infer, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType};

fn k(v: i64) -> dmove::ir::Tensor {
    i64s(&[], &[v])
}

#[test]
fn trilu_keeps_one_side_of_diagonal_k() {
    let x = f32s(&[3, 4], &(1..=12).map(|v| v as f32).collect::<Vec<_>>());
    let upper = eval1("Trilu", &[], &[&x]);
    let want_upper = [1., 2., 3., 4., 0., 6., 7., 8., 0., 0., 11., 12.];
    assert_eq!(upper.to_f64_vec(), want_upper);
    let lower = [("upper", Attr::Int(0))];
    let want_lower = [1., 0., 0., 0., 5., 6., 0., 0., 9., 10., 11., 0.];
    assert_eq!(eval1("Trilu", &lower, &[&x]).to_f64_vec(), want_lower);
    // k shifts the diagonal: above the first super-diagonal, up to the first sub-diagonal.
    let want = [0., 2., 3., 4., 0., 0., 7., 8., 0., 0., 0., 12.];
    assert_eq!(eval1("Trilu", &[], &[&x, &k(1)]).to_f64_vec(), want);
    let want = [1., 0., 0., 0., 5., 6., 0., 0., 9., 10., 11., 0.];
    assert_eq!(eval1("Trilu", &lower, &[&x, &k(0)]).to_f64_vec(), want);
    let want = [0., 0., 0., 0., 5., 0., 0., 0., 9., 10., 0., 0.];
    assert_eq!(eval1("Trilu", &lower, &[&x, &k(-1)]).to_f64_vec(), want);
    // A batch of matrices, k as a run-time input in the expansion.
    let b = f32s(&[2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.]);
    let got = run_expanded("Trilu", &lower, &[&b, &k(0)], &[]);
    assert_eq!(got[0].to_f64_vec(), [1., 0., 3., 4., 5., 0., 7., 8.]);
    let far = eval1("Trilu", &[], &[&b, &k(-5)]);
    assert_eq!(far, b);
}

#[test]
fn trilu_and_eyelike_check_their_inputs() {
    let msg = infer_err("Trilu", &[], &[ty(DType::F32, &[4])], &[]);
    assert!(msg.contains("rank at least 2"), "{msg}");
    let msg = infer_err(
        "Trilu",
        &[],
        &[ty(DType::F32, &[2, 2]), ty(DType::I64, &[2])],
        &[],
    );
    assert!(msg.contains("int64 scalar"), "{msg}");
    let msg = infer_err("EyeLike", &[], &[ty(DType::F32, &[2, 2, 2])], &[]);
    assert!(msg.contains("rank 2"), "{msg}");
    let msg = infer_err(
        "EyeLike",
        &[("dtype", Attr::Int(8))],
        &[ty(DType::F32, &[2, 2])],
        &[],
    );
    assert!(msg.contains("type code 8"), "{msg}");
    let out = infer(
        "EyeLike",
        &[("dtype", Attr::Int(7))],
        &[ty(DType::F32, &[2, 3])],
        &[],
    )
    .expect("infers");
    assert_eq!(out[0], ty(DType::I64, &[2, 3]));
}

#[test]
fn eyelike_puts_ones_on_diagonal_k() {
    let x = f32s(&[3, 4], &[9.0; 12]);
    let eye = eval1("EyeLike", &[], &[&x]);
    assert_eq!(
        eye.to_f64_vec(),
        [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0.]
    );
    let a = [("k", Attr::Int(-1)), ("dtype", Attr::Int(7))];
    let shifted = eval("EyeLike", &a, &[&x]).expect("runs").remove(0);
    assert_eq!(
        shifted,
        i64s(&[3, 4], &[0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0])
    );
    assert_eq!(run_expanded("EyeLike", &a, &[&x], &[])[0], shifted);
}

#[test]
fn diagonal_expansions_match_reference_on_awkward_shapes() {
    for upper in [0, 1] {
        let a = [("upper", Attr::Int(upper))];
        check_expansion("Trilu", &a, &[ty(DType::F32, &[2, 3, 5])], &[]);
        check_expansion("Trilu", &a, &[ty(DType::I64, &[1, 4, 1])], &[]);
        check_expansion(
            "Trilu",
            &a,
            &[ty(DType::F32, &[5, 2]), ty(DType::I64, &[])],
            &[],
        );
        check_expansion(
            "Trilu",
            &a,
            &[ty(DType::F32, &[3, 3]), ty(DType::I64, &[])],
            &[None, Some(k(-2))],
        );
    }
    for kk in [-2, 0, 3] {
        let a = [("k", Attr::Int(kk))];
        check_expansion("EyeLike", &a, &[ty(DType::F32, &[3, 5])], &[]);
        check_expansion("EyeLike", &a, &[ty(DType::I32, &[4, 1])], &[]);
    }
}
