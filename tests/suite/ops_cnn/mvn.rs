//! MeanVarianceNormalization: hand-computed groups (default per-channel axes, a single axis,
//! negative axes, a constant group that normalises to 0), attribute errors, expansions against
//! the reference.

use super::{assert_close, attr_error, eval, expansion_agrees, infer, ints, shape_error, t, ty};
use dmove::ir::{DType, SymExpr};
use dmove::ops::TensorType;

const OP: &str = "MeanVarianceNormalization";

#[test]
fn mvn_by_hand() {
    // Default axes [0, 2, 3]: per channel over N. Channel 0 holds 1, 3; channel 1 holds 4, 8.
    let x = t(&[2, 2, 1, 1], &[1., 4., 3., 8.]);
    assert_close(
        &eval(OP, &[], &[Some(&x)]),
        &[2, 2, 1, 1],
        &[-1., -1., 1., 1.],
    );
    // Per row; the constant row has variance 0 and normalises to 0 (ε joins the deviation).
    let x = t(&[1, 2, 3], &[1., 2., 3., 5., 5., 5.]);
    let r = 1.5f64.sqrt();
    assert_close(
        &eval(OP, &[("axes", ints(&[2]))], &[Some(&x)]),
        &[1, 2, 3],
        &[-r, 0., r, 0., 0., 0.],
    );
    // Per column, the axis given as positive or negative.
    let x = t(&[2, 3], &[0., 1., 2., 2., 5., 2.]);
    for axes in [[0], [-2]] {
        assert_close(
            &eval(OP, &[("axes", ints(&axes))], &[Some(&x)]),
            &[2, 3],
            &[-1., -1., 0., 1., 1., 0.],
        );
    }
}

#[test]
fn mvn_rejects_bad_inputs() {
    // The default axes need rank 4.
    attr_error(infer(OP, &[], &[Some(ty(&[2, 3, 4]))]), "axes");
    attr_error(
        infer(OP, &[("axes", ints(&[1, -2]))], &[Some(ty(&[2, 3, 4]))]),
        "axes",
    );
    let int = TensorType::new(DType::I64, vec![SymExpr::Int(3)]);
    shape_error(
        infer(OP, &[("axes", ints(&[0]))], &[Some(int)]),
        "floating-point",
    );
    assert_eq!(
        infer(OP, &[], &[Some(ty(&[2, 3, 4, 5]))]).expect("infers"),
        ty(&[2, 3, 4, 5])
    );
}

#[test]
fn mvn_expansion_matches_reference() {
    expansion_agrees(OP, &[], &[Some(&[2, 3, 4, 5])], &[None]);
    for (axes, shape) in [
        (&[1][..], &[3, 5, 2][..]),
        (&[0, 2], &[2, 3, 4]),
        (&[-1], &[7]),
        (&[3, 1], &[1, 2, 3, 3]),
    ] {
        expansion_agrees(OP, &[("axes", ints(axes))], &[Some(shape)], &[None]);
    }
}
