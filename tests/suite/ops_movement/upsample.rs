//! Upsample: hand-computed nearest and linear upsampling with scales as an input (opset 9) or
//! an attribute (opset 7), parameter errors, expansions against the reference.

use super::{
    agrees, agrees_const, assert_close, assert_err, eval, floats, infer, infer_const, s, t, ty,
};
use dmove::ir::Attr;

const OP: &str = "Upsample";

fn scales_attr(v: &[f64]) -> Attr {
    Attr::Floats(v.to_vec())
}

#[test]
fn upsample_by_hand() {
    // The ONNX example: nearest by (2, 3).
    let x = t(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
    let (a, b) = ([1., 1., 1., 2., 2., 2.], [3., 3., 3., 4., 4., 4.]);
    let y = eval(OP, &[], &[Some(&x), Some(&floats(&[1., 1., 2., 3.]))]);
    assert_close(&y, &[1, 1, 4, 6], &[a, a, b, b].concat());
    // The same through the opset-7 attribute.
    let by_attr = [("scales", scales_attr(&[1., 1., 2., 3.]))];
    assert_close(
        &eval(OP, &by_attr, &[Some(&x)]),
        &[1, 1, 4, 6],
        &[a, a, b, b].concat(),
    );
    // A fractional scale: 2 · 2.5 = 5 outputs reading floor(o / 2.5) = 0, 0, 0, 1, 1.
    let x = t(&[1, 2], &[7., 9.]);
    let y = eval(OP, &[], &[Some(&x), Some(&floats(&[1., 2.5]))]);
    assert_close(&y, &[1, 5], &[7., 7., 7., 9., 9.]);
    // Linear, asymmetric coordinates o / 2, clamped past the last element.
    let x = t(&[1, 3], &[0., 10., 20.]);
    let linear = [("mode", s("linear")), ("scales", scales_attr(&[1., 2.]))];
    assert_close(
        &eval(OP, &linear, &[Some(&x)]),
        &[1, 6],
        &[0., 5., 10., 15., 20., 20.],
    );
}

#[test]
fn upsample_rejects_bad_parameters() {
    let x = ty(&[1, 2, 3]);
    let sc = |v: &[f32]| floats(v);
    assert_err(
        infer_const(OP, &[], x.clone(), &[Some(&sc(&[1., 0.5, 2.]))]),
        "shape",
        "below 1",
    );
    assert_err(
        infer_const(OP, &[], x.clone(), &[Some(&sc(&[1., 2.]))]),
        "shape",
        "2 entries for rank 3",
    );
    let cubic = [("mode", s("cubic"))];
    assert_err(
        infer_const(OP, &cubic, x.clone(), &[Some(&sc(&[1., 1., 2.]))]),
        "attr",
        "nearest",
    );
    let both = [("scales", scales_attr(&[1., 1., 2.]))];
    assert_err(
        infer_const(OP, &both, x.clone(), &[Some(&sc(&[1., 1., 2.]))]),
        "shape",
        "both",
    );
    let dynamic = infer(OP, &[], &[Some(x.clone()), Some(ty(&[3]))], &[]);
    assert_err(dynamic, "unsupported", "constant");
    assert_err(infer(OP, &[], &[Some(x.clone())], &[]), "attr", "required");
    let out = infer_const(OP, &[], x, &[Some(&sc(&[1., 1.5, 2.]))]).expect("infers");
    assert_eq!(out, vec![ty(&[1, 3, 6])]);
}

#[test]
fn upsample_expansion_matches_reference() {
    for mode in ["nearest", "linear"] {
        let a = [("mode", s(mode))];
        agrees_const(OP, &a, &[2, 3, 3, 2], &[Some(floats(&[1., 1., 2., 3.]))]);
        agrees_const(OP, &a, &[1, 5], &[Some(floats(&[1., 2.5]))]);
        let by_attr = [("mode", s(mode)), ("scales", scales_attr(&[1., 1.5, 2.]))];
        agrees(OP, &by_attr, &[Some(ty(&[2, 3, 3]))], &[None]);
    }
}
