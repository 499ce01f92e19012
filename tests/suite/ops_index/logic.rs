use super::{bools, check_expansion, eval1, f32s, i64s, infer, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType, Tensor};

fn cast_to(code: i64) -> Vec<(&'static str, Attr)> {
    vec![("to", Attr::Int(code))]
}

#[test]
fn cast_truncates_toward_zero_and_tests_non_zero() {
    let x = f32s(&[5], &[-2.7, -0.5, 0.0, 1.9, 3.0]);
    let y = eval1("Cast", &cast_to(7), &[&x]);
    assert_eq!(y, i64s(&[5], &[-2, 0, 0, 1, 3]));
    let b = eval1("Cast", &cast_to(9), &[&x]);
    assert_eq!(b, bools(&[5], &[true, true, false, true, true]));
    let back = eval1("Cast", &cast_to(1), &[&b]);
    assert_eq!(back.to_f64_vec(), vec![1.0, 1.0, 0.0, 1.0, 1.0]);
    // 2^40 + 1 survives i64 → f64 → i64 exactly, in the reference and the expansion.
    let big = i64s(&[2], &[(1 << 40) + 1, -(1 << 35) - 3]);
    let d = eval1("Cast", &cast_to(11), &[&big]);
    assert_eq!(d.dtype(), DType::F64);
    assert_eq!(eval1("Cast", &cast_to(7), &[&d]), big);
    let got = run_expanded("Cast", &cast_to(11), &[&big], &[]);
    assert_eq!(got[0], d);
    let got = run_expanded("Cast", &cast_to(7), &[&x], &[]);
    assert_eq!(got[0], i64s(&[5], &[-2, 0, 0, 1, 3]));
}

#[test]
fn cast_rejects_unknown_types_and_expands_everywhere() {
    let msg = infer_err("Cast", &cast_to(8), &[ty(DType::F32, &[2])], &[]);
    assert!(msg.contains("type code 8"), "{msg}");
    let msg = infer_err("Cast", &[], &[ty(DType::F32, &[2])], &[]);
    assert!(msg.contains("`to`"), "{msg}");
    // Every IR type to every ONNX code of one (1–7, 9–13, 16–22): the expansion's stores agree
    // with the reference conversion, float8's saturating clamp included.
    let codes = (1..=22).filter(|c| ![8, 14, 15].contains(c));
    for from in DType::ALL {
        for code in codes.clone() {
            check_expansion("Cast", &cast_to(code), &[ty(from, &[3, 1, 2])], &[]);
        }
    }
}

#[test]
fn where_selects_with_broadcasting() {
    let c = bools(&[2, 1], &[true, false]);
    let x = f32s(&[3], &[1.0, 2.0, 3.0]);
    let y = f32s(&[], &[-1.0]);
    let out = eval1("Where", &[], &[&c, &x, &y]);
    assert_eq!(out.shape, vec![2, 3]);
    assert_eq!(out.to_f64_vec(), vec![1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);
    let msg = infer_err(
        "Where",
        &[],
        &[
            ty(DType::F32, &[2]),
            ty(DType::F32, &[2]),
            ty(DType::F32, &[2]),
        ],
        &[],
    );
    assert!(msg.contains("input 0 must be bool"), "{msg}");
    let msg = infer_err(
        "Where",
        &[],
        &[
            ty(DType::Bool, &[2]),
            ty(DType::F32, &[2]),
            ty(DType::I64, &[2]),
        ],
        &[],
    );
    assert!(msg.contains("input 2 has type i64"), "{msg}");
    let msg = infer_err(
        "Where",
        &[],
        &[
            ty(DType::Bool, &[3]),
            ty(DType::F32, &[2]),
            ty(DType::F32, &[2]),
        ],
        &[],
    );
    assert!(msg.contains("cannot be broadcast"), "{msg}");
    check_expansion(
        "Where",
        &[],
        &[
            ty(DType::Bool, &[2, 1, 3]),
            ty(DType::F32, &[4, 1]),
            ty(DType::F32, &[1]),
        ],
        &[],
    );
    check_expansion(
        "Where",
        &[],
        &[
            ty(DType::Bool, &[5]),
            ty(DType::I64, &[5]),
            ty(DType::I64, &[1, 5]),
        ],
        &[],
    );
}

#[test]
fn not_and_or_follow_truth_tables() {
    let a = bools(&[4], &[false, false, true, true]);
    let b = bools(&[4], &[false, true, false, true]);
    let expect = |f: fn(bool, bool) -> bool| -> Tensor {
        let v: Vec<bool> = (0..4).map(|i| f(i >= 2, i % 2 == 1)).collect();
        bools(&[4], &v)
    };
    assert_eq!(eval1("And", &[], &[&a, &b]), expect(|x, y| x && y));
    assert_eq!(eval1("Or", &[], &[&a, &b]), expect(|x, y| x || y));
    assert_eq!(
        eval1("Not", &[], &[&a]),
        bools(&[4], &[true, true, false, false])
    );
    assert_eq!(eval1("Xor", &[], &[&a, &b]), expect(|x, y| x != y));
    let got = run_expanded("Or", &[], &[&a, &b], &[]);
    assert_eq!(got[0], expect(|x, y| x || y));
    let got = run_expanded("Xor", &[], &[&a, &b], &[]);
    assert_eq!(got[0], expect(|x, y| x != y));
    let t = infer(
        "And",
        &[],
        &[ty(DType::Bool, &[2, 1]), ty(DType::Bool, &[3])],
        &[],
    )
    .expect("infers");
    assert_eq!(t[0], ty(DType::Bool, &[2, 3]));
    let msg = infer_err("Not", &[], &[ty(DType::F32, &[2])], &[]);
    assert!(msg.contains("must be bool"), "{msg}");
    let msg = infer_err(
        "Or",
        &[],
        &[ty(DType::Bool, &[2]), ty(DType::I64, &[2])],
        &[],
    );
    assert!(msg.contains("input 1 must be bool"), "{msg}");
    check_expansion("Not", &[], &[ty(DType::Bool, &[3, 1, 2])], &[]);
    check_expansion(
        "And",
        &[],
        &[ty(DType::Bool, &[2, 1, 3]), ty(DType::Bool, &[4, 1])],
        &[],
    );
    check_expansion(
        "Or",
        &[],
        &[ty(DType::Bool, &[1]), ty(DType::Bool, &[5])],
        &[],
    );
    check_expansion(
        "Xor",
        &[],
        &[ty(DType::Bool, &[3, 1]), ty(DType::Bool, &[1, 4])],
        &[],
    );
}

#[test]
fn prelu_scales_negative_values_by_the_broadcast_slope() {
    let x = f32s(&[2, 3], &[-1.0, 2.0, -3.0, 0.0, -2.0, 4.0]);
    let slope = f32s(&[3], &[0.5, 10.0, 2.0]);
    let y = eval1("PRelu", &[], &[&x, &slope]);
    assert_eq!(y.to_f64_vec(), vec![-0.5, 2.0, -6.0, 0.0, -20.0, 4.0]);
    let got = run_expanded("PRelu", &[], &[&x, &slope], &[]);
    assert_eq!(got[0].to_f64_vec(), y.to_f64_vec());
    // The slope broadcasts to X, never X to the slope.
    let msg = infer_err(
        "PRelu",
        &[],
        &[ty(DType::F32, &[3]), ty(DType::F32, &[2, 3])],
        &[],
    );
    assert!(msg.contains("slope"), "{msg}");
    let msg = infer_err(
        "PRelu",
        &[],
        &[ty(DType::F32, &[3]), ty(DType::F64, &[3])],
        &[],
    );
    assert!(msg.contains("type"), "{msg}");
    check_expansion(
        "PRelu",
        &[],
        &[ty(DType::F32, &[2, 3, 1, 4]), ty(DType::F32, &[3, 1, 1])],
        &[],
    );
    check_expansion(
        "PRelu",
        &[],
        &[ty(DType::I32, &[5]), ty(DType::I32, &[1])],
        &[],
    );
}

#[test]
fn castlike_takes_the_type_of_its_second_input_only() {
    let x = f32s(&[4], &[-2.7, 0.5, 300.0, f32::NAN]);
    // The target's shape and values do not matter.
    let like = Tensor::from_f64(DType::U8, vec![2, 2], &[7.0, 7.0, 7.0, 7.0]);
    let y = eval1("CastLike", &[], &[&x, &like]);
    assert_eq!(y.dtype(), DType::U8);
    assert_eq!(y.shape, vec![4]);
    assert_eq!(y.to_f64_vec()[..3], [254.0, 0.0, 44.0]);
    assert_eq!(run_expanded("CastLike", &[], &[&x, &like], &[])[0], y);
    // Float8 targets saturate unless `saturate` is 0, as Cast's.
    let f8 = Tensor::from_f64(DType::F8E4M3FN, vec![1], &[0.0]);
    let big = f32s(&[2], &[1e6, -1e6]);
    let sat = eval1("CastLike", &[], &[&big, &f8]).to_f64_vec();
    assert_eq!(sat, vec![448.0, -448.0]);
    let raw = eval1("CastLike", &[("saturate", Attr::Int(0))], &[&big, &f8]).to_f64_vec();
    assert!(raw.iter().all(|v| v.is_nan()), "{raw:?}");
    let t = infer(
        "CastLike",
        &[],
        &[ty(DType::I64, &[3, 1]), ty(DType::F16, &[])],
        &[],
    )
    .expect("infers");
    assert_eq!(t[0], ty(DType::F16, &[3, 1]));
    let msg = infer_err("CastLike", &[], &[ty(DType::F32, &[2])], &[]);
    assert!(msg.contains("expected 2 input(s), got 1"), "{msg}");
    for from in DType::ALL {
        for to in [
            DType::F32,
            DType::I8,
            DType::U64,
            DType::Bool,
            DType::BF16,
            DType::F8E5M2,
        ] {
            check_expansion("CastLike", &[], &[ty(from, &[3, 1, 2]), ty(to, &[1])], &[]);
        }
    }
}
