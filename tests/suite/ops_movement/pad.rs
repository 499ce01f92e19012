//! Pad.

use super::{
    agrees, agrees_const, assert_close, assert_err, eval, infer, infer_const, int_list, ints, s, t,
    ty, type_of,
};
use dmove::ir::{Attr, Tensor};

/// The examples of the ONNX operator documentation.
#[test]
fn pad_modes_match_the_onnx_examples() {
    let x = t(&[3, 2], &[1.0, 1.2, 2.3, 3.4, 4.5, 5.7]);
    let pads = ints(&[0, 2, 0, 0]);
    let run = |mode: &str| eval("Pad", &[("mode", s(mode))], &[Some(&x), Some(&pads)]);
    let constant = [0.0, 0.0, 1.0, 1.2, 0.0, 0.0, 2.3, 3.4, 0.0, 0.0, 4.5, 5.7];
    assert_close(&run("constant"), &[3, 4], &constant);
    let reflect = [1.0, 1.2, 1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7];
    assert_close(&run("reflect"), &[3, 4], &reflect);
    let edge = [1.0, 1.0, 1.0, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7];
    assert_close(&run("edge"), &[3, 4], &edge);
}

#[test]
fn pad_reflects_periodically_and_crops() {
    // numpy.pad([1, 2, 3], (5, 4), "reflect")
    let x = t(&[3], &[1.0, 2.0, 3.0]);
    let y = eval(
        "Pad",
        &[("mode", s("reflect"))],
        &[Some(&x), Some(&ints(&[5, 4]))],
    );
    let want = [2.0, 1.0, 2.0, 3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0, 2.0, 3.0];
    assert_close(&y, &[12], &want);
    // A single element reflects onto itself.
    let one = t(&[1], &[7.0]);
    let y = eval(
        "Pad",
        &[("mode", s("reflect"))],
        &[Some(&one), Some(&ints(&[2, 1]))],
    );
    assert_close(&y, &[4], &[7.0; 4]);
    // Negative pads crop; the constant comes from input 2.
    let x = t(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let c = Tensor::f32(vec![], vec![9.0]);
    let y = eval("Pad", &[], &[Some(&x), Some(&ints(&[-1, 2])), Some(&c)]);
    assert_close(&y, &[5], &[2.0, 3.0, 4.0, 9.0, 9.0]);
    // Opset < 11: `pads` and `value` attributes.
    let a = [("pads", int_list(&[1, 0])), ("value", Attr::Float(-1.5))];
    assert_close(
        &eval("Pad", &a, &[Some(&x)]),
        &[5],
        &[-1.5, 1.0, 2.0, 3.0, 4.0],
    );
    // Opset 18: only the listed axes.
    let x = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let y = eval(
        "Pad",
        &[("mode", s("edge"))],
        &[Some(&x), Some(&ints(&[0, 1])), None, Some(&ints(&[-1]))],
    );
    assert_close(&y, &[2, 3], &[1.0, 2.0, 2.0, 3.0, 4.0, 4.0]);
}

/// `wrap` repeats the input as on a torus, also for pads wider than the input (numpy's
/// `wrap`).
#[test]
fn pad_wraps_around() {
    // numpy.pad([1, 2, 3], (4, 2), "wrap")
    let x = t(&[3], &[1.0, 2.0, 3.0]);
    let wrap = [("mode", s("wrap"))];
    let y = eval("Pad", &wrap, &[Some(&x), Some(&ints(&[4, 2]))]);
    assert_close(&y, &[9], &[3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0]);
    // numpy.pad([[1, 2], [3, 4]], ((1, 0), (0, 3)), "wrap")
    let x = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let y = eval("Pad", &wrap, &[Some(&x), Some(&ints(&[1, 0, 0, 3]))]);
    let want = [3., 4., 3., 4., 3., 1., 2., 1., 2., 1., 3., 4., 3., 4., 3.];
    assert_close(&y, &[3, 5], &want);
}

#[test]
fn pad_shape_rules() {
    let x = ty(&[2, 3]);
    let pads = |v: &[i64]| ints(v);
    let run =
        |mode: &str, p: &Tensor| infer_const("Pad", &[("mode", s(mode))], x.clone(), &[Some(p)]);
    assert_eq!(
        run("constant", &pads(&[1, -1, 0, 2])).expect("infers")[0],
        ty(&[3, 4])
    );
    assert_err(
        run("constant", &pads(&[1, 1])),
        "attr",
        "expected 2 × 2 axes",
    );
    assert_err(
        run("constant", &pads(&[0, -2, 0, -2])),
        "shape",
        "crop more",
    );
    assert_err(run("mirror", &pads(&[0, 0, 0, 0])), "attr", "unknown mode");
    let empty = infer_const(
        "Pad",
        &[("mode", s("edge"))],
        ty(&[0, 2]),
        &[Some(&pads(&[1, 0, 0, 0]))],
    );
    assert_err(empty, "shape", "empty");
    assert_err(infer_const("Pad", &[], x.clone(), &[]), "attr", "required");
    let dynamic = infer(
        "Pad",
        &[],
        &[Some(x.clone()), Some(type_of(&pads(&[0, 0, 0, 0])))],
        &[],
    );
    assert_err(dynamic, "unsupported", "constant");
    let c = Some(dmove::ops::TensorType::new(dmove::ir::DType::I64, vec![]));
    let p4 = pads(&[0, 0, 0, 0]);
    let mixed = infer(
        "Pad",
        &[],
        &[Some(x.clone()), Some(type_of(&p4)), c],
        &[None, Some(&p4)],
    );
    assert_err(mixed, "shape", "type");
}

#[test]
fn pad_expansion_matches_reference() {
    let p = |v: &[i64]| Some(ints(v));
    for mode in ["constant", "reflect", "edge", "wrap"] {
        let a = [("mode", s(mode))];
        agrees_const("Pad", &a, &[3, 1, 4], &[p(&[1, 2, 0, 2, 3, 1])]);
        agrees_const("Pad", &a, &[5], &[p(&[-2, 3])]);
        agrees_const("Pad", &a, &[2, 3], &[p(&[4, 0, 5, -1])]);
        agrees_const("Pad", &a, &[1, 2], &[p(&[0, 1]), None, p(&[-1])]);
    }
    // A run-time scalar constant value, and a constant one.
    let x = ty(&[2, 3]);
    let pads = ints(&[1, 1, 2, 0]);
    agrees(
        "Pad",
        &[],
        &[Some(x.clone()), Some(type_of(&pads)), Some(ty(&[]))],
        &[None, Some(pads.clone())],
    );
    let c = Tensor::f32(vec![1], vec![2.5]);
    agrees(
        "Pad",
        &[],
        &[Some(x), Some(type_of(&pads)), Some(type_of(&c))],
        &[None, Some(pads), Some(c)],
    );
    // Nothing to read: an empty input padded with the constant.
    agrees_const(
        "Pad",
        &[("value", Attr::Float(3.0))],
        &[0, 2],
        &[p(&[1, 0, 1, 1])],
    );
}
