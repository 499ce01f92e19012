use super::{assert_close, check_expansion, eval, eval1, infer, infer_err, t, ty};
use dmove::ir::{Attr, Tensor};
use std::f64::consts::{E, LN_2};

/// `op(x)` for a few inputs, checked against values worked out by hand.
fn check(op: &str, a: &[(&str, Attr)], xs: &[f32], want: &[f64]) {
    let x = t(&[xs.len()], xs);
    assert_close(&eval1(op, a, &[&x]), &[xs.len()], want);
}

#[test]
fn simple_functions_match_hand_values() {
    check("Relu", &[], &[-1.0, 0.0, 2.5], &[0.0, 0.0, 2.5]);
    check("Sigmoid", &[], &[0.0, 3f32.ln()], &[0.5, 0.75]);
    check("Tanh", &[], &[0.0, 0.5], &[0.0, 0.46211715726000974]);
    check("Erf", &[], &[0.0, 0.5], &[0.0, 0.5204998778130465]);
    check("Sqrt", &[], &[4.0, 2.25], &[2.0, 1.5]);
    check("Exp", &[], &[0.0, 1.0], &[1.0, E]);
    check("Log", &[], &[1.0, E as f32], &[0.0, 1.0]);
    check("Neg", &[], &[1.5, -2.0], &[-1.5, 2.0]);
    check("Abs", &[], &[-1.5, 2.0], &[1.5, 2.0]);
    check("Reciprocal", &[], &[4.0, -0.5], &[0.25, -2.0]);
    check("Floor", &[], &[-1.5, 1.5, 2.0], &[-2.0, 1.0, 2.0]);
    check("Ceil", &[], &[-1.5, 1.5, 2.0], &[-1.0, 2.0, 2.0]);
    check(
        "Softplus",
        &[],
        &[0.0, 1.0, 100.0],
        &[LN_2, (1.0 + E).ln(), 100.0],
    );
}

#[test]
fn parameterised_activations_use_defaults_and_attributes() {
    check("LeakyRelu", &[], &[-1.0, 2.0], &[-0.01, 2.0]);
    check(
        "LeakyRelu",
        &[("alpha", Attr::Float(0.1))],
        &[-2.0, 0.0],
        &[-0.2, 0.0],
    );
    // Elu: α·(e^x − 1) below zero; e^(−ln 2) = 1/2.
    check("Elu", &[], &[-(LN_2 as f32), 3.0], &[-0.5, 3.0]);
    check(
        "Elu",
        &[("alpha", Attr::Float(2.0))],
        &[-(LN_2 as f32)],
        &[-1.0],
    );
    let gamma = 1.0507009873554805;
    let alpha = 1.6732632423543772;
    check(
        "Selu",
        &[],
        &[1.0, 0.0, -1.0],
        &[gamma, 0.0, gamma * alpha * ((-1f64).exp() - 1.0)],
    );
    check(
        "HardSigmoid",
        &[],
        &[0.0, 1.0, 5.0, -5.0],
        &[0.5, 0.7, 1.0, 0.0],
    );
    check(
        "HardSigmoid",
        &[("alpha", Attr::Float(0.5)), ("beta", Attr::Float(0.0))],
        &[1.0],
        &[0.5],
    );
    check("HardSwish", &[], &[3.0, -3.0, 1.0], &[3.0, 0.0, 2.0 / 3.0]);
    // Celu with α = 2: 2·(e^(x/2) − 1) below zero; e^(−ln 2) = 1/2.
    let celu2 = [("alpha", Attr::Float(2.0))];
    check("Celu", &celu2, &[-2.0 * LN_2 as f32, 1.5], &[-1.0, 1.5]);
    check("Celu", &[], &[-(LN_2 as f32), 0.0], &[-0.5, 0.0]);
    // ThresholdedRelu keeps only values strictly above α.
    check("ThresholdedRelu", &[], &[1.0, 1.5, -3.0], &[0.0, 1.5, 0.0]);
    let a = [("alpha", Attr::Float(-1.0))];
    check("ThresholdedRelu", &a, &[-0.5, -2.0], &[-0.5, 0.0]);
    check(
        "Shrink",
        &[],
        &[-1.0, -0.5, 0.25, 0.5, 2.0],
        &[-1.0, 0.0, 0.0, 0.0, 2.0],
    );
    let a = [("lambd", Attr::Float(1.0)), ("bias", Attr::Float(0.5))];
    check("Shrink", &a, &[-2.0, 0.5, 3.0], &[-1.5, 0.0, 2.5]);
    check("Softsign", &[], &[1.0, -3.0, 0.0], &[0.5, -0.75, 0.0]);
}

#[test]
fn gelu_exact_and_tanh_approximation() {
    // Φ(1) = 0.841344746…, Φ(−1) = 1 − Φ(1).
    check(
        "Gelu",
        &[],
        &[1.0, -1.0, 0.0],
        &[0.8413447460685429, -(1.0 - 0.8413447460685429), 0.0],
    );
    let approx = |x: f64| {
        0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
    };
    check(
        "Gelu",
        &[("approximate", Attr::Str("tanh".into()))],
        &[1.0, -0.5],
        &[approx(1.0), approx(-0.5)],
    );
    let msg = infer_err(
        "Gelu",
        &[("approximate", Attr::Str("fast".into()))],
        &[Some(ty(&[2]))],
    );
    assert!(msg.contains("approximate"), "{msg}");
}

#[test]
fn clip_bounds_come_from_inputs_or_attributes() {
    let x = t(&[4], &[-3.0, -0.5, 0.5, 3.0]);
    let lo = t(&[], &[-1.0]);
    let hi = t(&[], &[1.0]);
    let both = eval("Clip", &[], &[Some(&x), Some(&lo), Some(&hi)]).remove(0);
    assert_close(&both, &[4], &[-1.0, -0.5, 0.5, 1.0]);
    let upper = eval("Clip", &[], &[Some(&x), None, Some(&hi)]).remove(0);
    assert_close(&upper, &[4], &[-3.0, -0.5, 0.5, 1.0]);
    let legacy = [("min", Attr::Float(0.0)), ("max", Attr::Float(2.0))];
    assert_close(&eval1("Clip", &legacy, &[&x]), &[4], &[0.0, 0.0, 0.5, 2.0]);
    assert_close(&eval1("Clip", &[], &[&x]), &[4], &[-3.0, -0.5, 0.5, 3.0]);
    let msg = infer_err("Clip", &[], &[Some(ty(&[4])), Some(ty(&[2]))]);
    assert!(msg.contains("input 1 must be a scalar"), "{msg}");
    let msg = infer_err("Relu", &[], &[Some(ty(&[4])), Some(ty(&[4]))]);
    assert!(msg.contains("expected 1 input(s), got 2"), "{msg}");
}

#[test]
fn unary_output_keeps_type() {
    let out = infer("Tanh", &[], &[Some(ty(&[2, 1, 3]))], &[]).expect("infers");
    assert_eq!(out, vec![ty(&[2, 1, 3])]);
}

#[test]
fn expansions_match_reference_on_awkward_shapes() {
    let ops = [
        "Relu",
        "Sigmoid",
        "Tanh",
        "Erf",
        "Sqrt",
        "Exp",
        "Log",
        "Neg",
        "Abs",
        "Reciprocal",
        "Floor",
        "Ceil",
        "LeakyRelu",
        "Elu",
        "Selu",
        "HardSigmoid",
        "HardSwish",
        "Softplus",
        "Gelu",
        "Clip",
        "Celu",
        "ThresholdedRelu",
        "Shrink",
        "Softsign",
    ];
    let shapes: [&[i64]; 3] = [&[2, 1, 3], &[5], &[]];
    for op in ops {
        for shape in shapes {
            check_expansion(op, &[], &[Some(ty(shape))], &[]);
        }
    }
    let variants: [(&str, Vec<(&str, Attr)>); 9] = [
        ("Celu", vec![("alpha", Attr::Float(0.5))]),
        ("ThresholdedRelu", vec![("alpha", Attr::Float(-0.5))]),
        (
            "Shrink",
            vec![("lambd", Attr::Float(0.25)), ("bias", Attr::Float(1.5))],
        ),
        ("LeakyRelu", vec![("alpha", Attr::Float(0.3))]),
        ("Elu", vec![("alpha", Attr::Float(0.7))]),
        (
            "Selu",
            vec![("alpha", Attr::Float(2.0)), ("gamma", Attr::Float(0.5))],
        ),
        (
            "HardSigmoid",
            vec![("alpha", Attr::Float(0.4)), ("beta", Attr::Float(0.1))],
        ),
        ("Gelu", vec![("approximate", Attr::Str("tanh".into()))]),
        (
            "Clip",
            vec![("min", Attr::Float(-0.5)), ("max", Attr::Float(0.25))],
        ),
    ];
    for (op, a) in &variants {
        check_expansion(op, a, &[Some(ty(&[3, 1, 2]))], &[]);
    }
    let scalar = |v: f32| Some(Tensor::f32(vec![], vec![v]));
    check_expansion(
        "Clip",
        &[],
        &[Some(ty(&[4, 3])), Some(ty(&[])), Some(ty(&[]))],
        &[None, scalar(-0.75), scalar(0.5)],
    );
    check_expansion(
        "Clip",
        &[],
        &[Some(ty(&[1, 5])), None, Some(ty(&[]))],
        &[None, None, scalar(0.1)],
    );
}

/// Bounds that are graph inputs are read by the expansion at run time: both, one, and a bound
/// above the other (ONNX then yields `max`, as `min(max(x, lo), hi)` does).
#[test]
fn clip_expands_with_runtime_bounds() {
    check_expansion(
        "Clip",
        &[],
        &[Some(ty(&[3, 4])), Some(ty(&[])), Some(ty(&[]))],
        &[],
    );
    check_expansion("Clip", &[], &[Some(ty(&[5])), Some(ty(&[]))], &[]);
    check_expansion("Clip", &[], &[Some(ty(&[5])), None, Some(ty(&[1]))], &[]);
    let x = t(&[3], &[-2.0, 0.5, 2.0]);
    let (lo, hi) = (t(&[], &[1.0]), t(&[], &[-1.0]));
    let crossed = eval("Clip", &[], &[Some(&x), Some(&lo), Some(&hi)]).remove(0);
    assert_close(&crossed, &[3], &[-1.0, -1.0, -1.0]);
}
