use super::{assert_close, check_expansion, eval1, infer, t, ty};
use dmove::ir::{Attr, DType, Tensor};
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// `op(x)` for a few inputs, checked against values worked out by hand.
fn check(op: &str, a: &[(&str, Attr)], xs: &[f32], want: &[f64]) {
    let x = t(&[xs.len()], xs);
    assert_close(&eval1(op, a, &[&x]), &[xs.len()], want);
}

/// The boolean output of a predicate on `xs`.
fn truth(op: &str, a: &[(&str, Attr)], xs: &[f32]) -> Vec<bool> {
    let y = eval1(op, a, &[&t(&[xs.len()], xs)]);
    assert_eq!(y.dtype(), DType::Bool, "{op} yields bool");
    y.to_f64_vec().into_iter().map(|v| v != 0.0).collect()
}

#[test]
fn trigonometric_and_hyperbolic_functions_match_hand_values() {
    let quarter = FRAC_PI_4 as f32;
    check("Sin", &[], &[0.0, FRAC_PI_2 as f32], &[0.0, 1.0]);
    check("Cos", &[], &[0.0, PI as f32], &[1.0, -1.0]);
    check("Tan", &[], &[0.0, quarter], &[0.0, 1.0]);
    check("Asin", &[], &[1.0, 0.0], &[FRAC_PI_2, 0.0]);
    check("Acos", &[], &[1.0, 0.0], &[0.0, FRAC_PI_2]);
    check("Atan", &[], &[1.0, -1.0], &[FRAC_PI_4, -FRAC_PI_4]);
    // sinh(ln 2) = (2 − ½)/2, cosh(ln 2) = (2 + ½)/2, and the inverses give ln 2 back.
    let ln2 = std::f64::consts::LN_2;
    check("Sinh", &[], &[ln2 as f32], &[0.75]);
    check("Cosh", &[], &[ln2 as f32], &[1.25]);
    check("Asinh", &[], &[0.75], &[ln2]);
    check("Acosh", &[], &[1.25, 1.0], &[ln2, 0.0]);
    check("Atanh", &[], &[0.6, 0.0], &[(4f64).ln() / 2.0, 0.0]);
    // Outside the domain: NaN, as numpy.
    let nan = eval1("Acos", &[], &[&t(&[1], &[2.0])]).to_f64_vec();
    assert!(nan[0].is_nan());
}

#[test]
fn round_goes_half_to_even_and_sign_keeps_zero_and_nan() {
    check(
        "Round",
        &[],
        &[0.5, 1.5, 2.5, -0.5, -1.5, 2.3, -2.7, 0.9],
        &[0.0, 2.0, 2.0, 0.0, -2.0, 2.0, -3.0, 1.0],
    );
    check("Sign", &[], &[-3.5, 0.0, 2.0, -0.0], &[-1.0, 0.0, 1.0, 0.0]);
    let s = eval1("Sign", &[], &[&t(&[1], &[f32::NAN])]).to_f64_vec();
    assert!(s[0].is_nan());
    let ints = Tensor::i64(vec![3], vec![-7, 0, 9]);
    assert_eq!(
        eval1("Sign", &[], &[&ints]),
        Tensor::i64(vec![3], vec![-1, 0, 1])
    );
}

#[test]
fn swish_scales_its_sigmoid_by_alpha() {
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    check(
        "Swish",
        &[],
        &[0.0, 1.0, -2.0],
        &[0.0, sig(1.0), -2.0 * sig(-2.0)],
    );
    check("Swish", &[("alpha", Attr::Float(2.0))], &[1.0], &[sig(2.0)]);
}

#[test]
fn predicates_detect_nan_and_chosen_infinities() {
    let xs = [1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0];
    assert_eq!(truth("IsNaN", &[], &xs), [false, true, false, false, false]);
    assert_eq!(truth("IsInf", &[], &xs), [false, false, true, true, false]);
    let only = |attr: &'static str| [(attr, Attr::Int(0))];
    assert_eq!(
        truth("IsInf", &only("detect_negative"), &xs),
        [false, false, true, false, false]
    );
    assert_eq!(
        truth("IsInf", &only("detect_positive"), &xs),
        [false, false, false, true, false]
    );
    let neither = [
        ("detect_negative", Attr::Int(0)),
        ("detect_positive", Attr::Int(0)),
    ];
    assert_eq!(truth("IsInf", &neither, &xs), [false; 5]);
    let out = infer("IsNaN", &[], &[Some(ty(&[2, 3]))], &[]).expect("infers");
    assert_eq!(out[0].dtype, DType::Bool);
    assert_eq!(out[0].shape, ty(&[2, 3]).shape);
}

#[test]
fn math_expansions_match_reference_on_awkward_shapes() {
    let ops = [
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "Round", "Sign", "Swish", "IsNaN", "IsInf",
    ];
    for op in ops {
        for shape in [&[2, 1, 3][..], &[5], &[]] {
            check_expansion(op, &[], &[Some(ty(shape))], &[]);
        }
    }
    for a in [
        vec![("detect_negative", Attr::Int(0))],
        vec![("detect_positive", Attr::Int(0))],
        vec![
            ("detect_negative", Attr::Int(0)),
            ("detect_positive", Attr::Int(0)),
        ],
    ] {
        check_expansion("IsInf", &a, &[Some(ty(&[4, 1]))], &[]);
    }
    check_expansion(
        "Swish",
        &[("alpha", Attr::Float(-0.75))],
        &[Some(ty(&[3, 2]))],
        &[],
    );
}
