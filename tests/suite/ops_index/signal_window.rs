//! HannWindow, HammingWindow, BlackmanWindow: hand-computed periodic and symmetric windows, the
//! output type, errors (non-constant or bad size, integer outputs), expansions against the
//! reference.

use super::{check_expansion, eval1, i64s, infer, infer_err, ty};
use dmove::ir::{Attr, DType, Tensor};

const WINDOWS: [&str; 3] = ["HannWindow", "HammingWindow", "BlackmanWindow"];

fn size(n: i64) -> Tensor {
    i64s(&[], &[n])
}

fn close(got: &Tensor, want: &[f64]) {
    assert_eq!(got.shape, [want.len()]);
    for (i, (g, w)) in got.to_f64_vec().iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-6, "element {i}: got {g}, want {w}");
    }
}

#[test]
fn windows_by_hand() {
    let symmetric = [("periodic", Attr::Int(0))];
    // Hann: sin²(πn / N).
    close(&eval1("HannWindow", &[], &[&size(4)]), &[0., 0.5, 1., 0.5]);
    close(
        &eval1("HannWindow", &symmetric, &[&size(5)]),
        &[0., 0.5, 1., 0.5, 0.],
    );
    // Hamming: 25/46 − 21/46 · cos(2πn / N).
    let (lo, mid) = (4. / 46., 25. / 46.);
    close(
        &eval1("HammingWindow", &[], &[&size(4)]),
        &[lo, mid, 1., mid],
    );
    // Blackman: 0.42 − 0.5 · cos(2πn / N) + 0.08 · cos(4πn / N).
    close(
        &eval1("BlackmanWindow", &[], &[&size(4)]),
        &[0., 0.34, 1., 0.34],
    );
    close(
        &eval1("BlackmanWindow", &symmetric, &[&size(3)]),
        &[0., 1., 0.],
    );
    // output_datatype 11 is double; the size may be int32.
    let double = [("output_datatype", Attr::Int(11))];
    let y = eval1("HannWindow", &double, &[&size(3)]);
    assert_eq!(y.dtype(), DType::F64);
    let n32 = Tensor::from_f64(DType::I32, vec![], &[3.0]);
    assert_eq!(eval1("HannWindow", &double, &[&n32]), y);
}

#[test]
fn windows_reject_bad_sizes_and_types() {
    let scalar = [ty(DType::I64, &[])];
    for op in WINDOWS {
        let e = infer_err(op, &[], &scalar, &[]);
        assert!(e.contains("size must be a constant"), "{e}");
        let e = infer_err(op, &[], &scalar, &[Some(&size(0))]);
        assert!(e.contains("must be positive"), "{e}");
        let periodic = [("periodic", Attr::Int(2))];
        let e = infer_err(op, &periodic, &scalar, &[Some(&size(3))]);
        assert!(e.contains("periodic"), "{e}");
        let symmetric = [("periodic", Attr::Int(0))];
        let e = infer_err(op, &symmetric, &scalar, &[Some(&size(1))]);
        assert!(e.contains("size 1"), "{e}");
        let int = [("output_datatype", Attr::Int(7))];
        let e = infer_err(op, &int, &scalar, &[Some(&size(3))]);
        assert!(e.contains("output_datatype"), "{e}");
        let float = Tensor::f32(vec![], vec![3.0]);
        let e = infer_err(op, &[], &[ty(DType::F32, &[])], &[Some(&float)]);
        assert!(e.contains("int32 or int64"), "{e}");
        let two = i64s(&[2], &[3, 3]);
        let e = infer_err(op, &[], &[ty(DType::I64, &[2])], &[Some(&two)]);
        assert!(e.contains("scalar"), "{e}");
        let out = infer(op, &[], &scalar, &[Some(&size(7))]).expect("infers");
        assert_eq!(out, vec![ty(DType::F32, &[7])]);
    }
}

#[test]
fn window_expansions_match_reference() {
    let scalar = [ty(DType::I64, &[])];
    for op in WINDOWS {
        for (periodic, n) in [(1, 7), (0, 6), (1, 1), (0, 2)] {
            let a = [("periodic", Attr::Int(periodic))];
            check_expansion(op, &a, &scalar, &[Some(size(n))]);
        }
        let double = [("output_datatype", Attr::Int(11))];
        check_expansion(op, &double, &scalar, &[Some(size(5))]);
    }
}
