//! ReverseSequence: hand-computed reversals along either axis order, exact copies of wide
//! integers, errors (lengths, axes, types), expansions with run-time and constant lengths.

use super::{check_expansion, eval, eval1, i64s, infer_err, ty, type_of};
use dmove::ir::{Attr, DType, Tensor};

const OP: &str = "ReverseSequence";

/// Attributes and the input's shape.
type Case<'a> = (&'a [(&'a str, Attr)], &'a [i64]);

fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::f32(shape.to_vec(), (0..n).map(|v| v as f32).collect())
}

#[test]
fn reverse_sequence_by_hand() {
    // Defaults: time axis 0, batch axis 1. Batch 0 = (0, 1, 2, 3), batch 1 = (10, …, 13).
    let x = Tensor::f32(vec![4, 2], vec![0., 10., 1., 11., 2., 12., 3., 13.]);
    let y = eval1(OP, &[], &[&x, &i64s(&[2], &[3, 0])]);
    assert_eq!(y.to_f64_vec(), [2., 10., 1., 11., 0., 12., 3., 13.]);
    // Batch axis 0, time axis 1, a trailing axis carried along.
    let a = [("batch_axis", Attr::Int(0)), ("time_axis", Attr::Int(1))];
    let y = eval1(OP, &a, &[&iota(&[3, 3, 2]), &i64s(&[3], &[1, 2, 3])]);
    let want = [
        0., 1., 2., 3., 4., 5., 8., 9., 6., 7., 10., 11., 16., 17., 14., 15., 12., 13.,
    ];
    assert_eq!(y.to_f64_vec(), want);
    // Integers are copied, not rounded through a float.
    let big = (1i64 << 60) + 1;
    let x = i64s(&[2, 1], &[big, 7]);
    assert_eq!(
        eval1(OP, &[], &[&x, &i64s(&[1], &[2])]),
        i64s(&[2, 1], &[7, big])
    );
}

#[test]
fn reverse_sequence_rejects_bad_inputs() {
    let x = ty(DType::F32, &[4, 3]);
    let lens = |n: i64| ty(DType::I64, &[n]);
    let e = infer_err(OP, &[], &[x.clone(), lens(4)], &[]);
    assert!(e.contains("batch axis has 3"), "{e}");
    let e = infer_err(OP, &[], &[x.clone(), ty(DType::I32, &[3])], &[]);
    assert!(e.contains("int64"), "{e}");
    let e = infer_err(OP, &[], &[ty(DType::F32, &[3]), lens(3)], &[]);
    assert!(e.contains("rank at least 2"), "{e}");
    let e = infer_err(OP, &[], &[x.clone(), ty(DType::I64, &[3, 1])], &[]);
    assert!(e.contains("rank 1"), "{e}");
    let same = [("batch_axis", Attr::Int(0))];
    let e = infer_err(OP, &same, &[x.clone(), lens(3)], &[]);
    assert!(e.contains("time_axis"), "{e}");
    let two = [("batch_axis", Attr::Int(2))];
    let e = infer_err(OP, &two, &[x.clone(), lens(3)], &[]);
    assert!(e.contains("batch_axis"), "{e}");
    let long = i64s(&[3], &[1, 5, 0]);
    let e = eval(OP, &[], &[&iota(&[4, 3]), &long]).expect_err("too long");
    assert!(e.to_string().contains("outside [0, 4]"), "{e}");
}

#[test]
fn reverse_sequence_expansion_matches_reference() {
    let swapped = [("batch_axis", Attr::Int(0)), ("time_axis", Attr::Int(1))];
    // Random lengths lie in [0, 4): every time axis has at least 4 steps.
    let cases: [Case; 3] = [(&[], &[4, 3]), (&swapped, &[2, 5, 3]), (&[], &[4, 1, 2, 2])];
    for (a, shape) in cases {
        let batch = if a.is_empty() { shape[1] } else { shape[0] };
        let inputs = [ty(DType::F32, shape), ty(DType::I64, &[batch])];
        check_expansion(OP, a, &inputs, &[]);
    }
    // Constant lengths, a wide integer payload.
    let lens = i64s(&[2], &[5, 2]);
    let inputs = [ty(DType::I64, &[2, 5]), type_of(&lens)];
    check_expansion(OP, &swapped, &inputs, &[None, Some(lens)]);
}
