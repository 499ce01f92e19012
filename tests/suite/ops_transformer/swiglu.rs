//! SwiGLU: hand-computed gates with the default and a non-default alpha, the no-broadcasting
//! and type rules, expansions on static and symbolic shapes.

use super::{
    assert_close, check_expansion, check_symbolic_expansion, eval1, infer_err, sym_ty, t, ty,
};
use dmove::ir::{Attr, DType, SymExpr};
use dmove::ops::TensorType;

const OP: &str = "SwiGLU";

#[test]
fn swiglu_by_hand() {
    // A · sigmoid(A) · B: sigmoid(1) = 0.7310585786300049, −2 / (1 + e²) = −0.2384058440442351.
    let a = t(&[3], &[0., 1., -2.]);
    let b = t(&[3], &[3., 2., 0.5]);
    assert_close(
        &eval1(OP, &[], &[&a, &b]),
        &[3],
        &[0., 2. * 0.7310585786300049, 0.5 * -0.2384058440442351],
    );
    // alpha scales the sigmoid's argument only: 1 · sigmoid(2) · 1.
    let one = t(&[1, 1], &[1.]);
    let y = eval1(OP, &[("alpha", Attr::Float(2.0))], &[&one, &one]);
    assert_close(&y, &[1, 1], &[0.8807970779778823]);
}

#[test]
fn swiglu_rejects_broadcasting_and_mixed_types() {
    let e = infer_err(OP, &[], &[Some(ty(&[2, 3])), Some(ty(&[1, 3]))]);
    assert!(e.contains("identical shapes"), "{e}");
    let e = infer_err(OP, &[], &[Some(ty(&[3])), Some(ty(&[2, 3]))]);
    assert!(e.contains("identical shapes"), "{e}");
    let f64s = TensorType::new(DType::F64, vec![SymExpr::Int(3)]);
    let e = infer_err(OP, &[], &[Some(ty(&[3])), Some(f64s)]);
    assert!(e.contains("type"), "{e}");
    let ints = TensorType::new(DType::I64, vec![SymExpr::Int(3)]);
    let e = infer_err(OP, &[], &[Some(ints.clone()), Some(ints)]);
    assert!(e.contains("floating-point"), "{e}");
}

#[test]
fn swiglu_expansion_matches_reference() {
    let half = [("alpha", Attr::Float(0.5))];
    check_expansion(
        OP,
        &half,
        &[Some(ty(&[2, 3, 5])), Some(ty(&[2, 3, 5]))],
        &[],
    );
    check_expansion(OP, &[], &[Some(ty(&[7])), Some(ty(&[7]))], &[]);
    let x = sym_ty(&["B", "7"]);
    let inputs = [Some(x.clone()), Some(x)];
    check_symbolic_expansion(OP, &[], &inputs, &[], &[("B", 3)]);
}
