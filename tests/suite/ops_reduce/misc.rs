//! Mean, Mish and Dropout.

use super::{
    assert_close, eval, eval_all, expansion_agrees, infer, infer_with, shape_error, t, ty,
};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::{OpError, TensorType};

#[test]
fn mean_by_hand_with_broadcasting() {
    let a = t(&[2, 2], &[1., 2., 3., 4.]);
    let b = t(&[2], &[10., 20.]);
    let c = t(&[2, 1], &[0., 3.]);
    let y = eval("Mean", &[], &[Some(&a), Some(&b), Some(&c)]);
    assert_close(&y, &[2, 2], &[11. / 3., 22. / 3., 16. / 3., 27. / 3.]);
    assert_close(&eval("Mean", &[], &[Some(&b)]), &[2], &[10., 20.]);
    shape_error(
        infer("Mean", &[], &[Some(ty(&[2, 3])), Some(ty(&[2]))]),
        "broadcast",
    );
    let ints = TensorType::new(DType::I64, vec![SymExpr::Int(2)]);
    shape_error(infer("Mean", &[], &[Some(ints)]), "floating-point");
}

#[test]
fn mish_by_hand() {
    let x = t(&[4], &[0., 1., -2., 50.]);
    let softplus = |v: f64| (1.0 + v.exp()).ln();
    let want: Vec<f64> = [0., 1., -2.]
        .iter()
        .map(|&v| v * softplus(v).tanh())
        .chain([50.])
        .collect();
    assert_close(&eval("Mish", &[], &[Some(&x)]), &[4], &want);
    let ints = TensorType::new(DType::I64, vec![SymExpr::Int(2)]);
    shape_error(infer("Mish", &[], &[Some(ints)]), "floating-point");
}

#[test]
fn dropout_is_the_identity_with_a_true_mask() {
    let x = t(&[2, 2], &[1., -2., 3., 4.]);
    let ratio = t(&[], &[0.5]);
    let out = eval_all("Dropout", &[], &[Some(&x), Some(&ratio)]);
    assert_eq!(out[0], x);
    assert_eq!(out[1].dtype(), DType::Bool);
    assert_eq!(out[1].to_f64_vec(), vec![1.0; 4]);
    let training = Tensor::from_f64(DType::Bool, vec![], &[1.0]);
    let bool_ty = Some(TensorType::new(DType::Bool, vec![]));
    let r = infer_with(
        "Dropout",
        &[],
        &[Some(ty(&[2, 2])), Some(ty(&[])), bool_ty.clone()],
        &[None, None, Some(&training)],
    );
    assert!(matches!(r, Err(OpError::Unsupported { .. })), "{r:?}");
    // A training mode computed at run time is assumed false for inference.
    let r = infer("Dropout", &[], &[Some(ty(&[2, 2])), Some(ty(&[])), bool_ty]);
    assert_eq!(r.expect("infers"), ty(&[2, 2]));
}

#[test]
fn mean_mish_dropout_expansions_match_reference() {
    let shapes: [&[usize]; 3] = [&[3, 1, 5], &[1], &[2, 3]];
    for s in shapes {
        expansion_agrees("Mish", &[], &[Some(s)], &[]);
        expansion_agrees("Dropout", &[("ratio", Attr::Float(0.3))], &[Some(s)], &[]);
    }
    let means: [Vec<&[usize]>; 3] = [
        vec![&[2, 3], &[3], &[2, 1]],
        vec![&[1]],
        vec![&[4, 1, 2], &[3, 1], &[1, 1, 1], &[2]],
    ];
    for inputs in means {
        let inputs: Vec<Option<&[usize]>> = inputs.into_iter().map(Some).collect();
        expansion_agrees("Mean", &[], &inputs, &[]);
    }
}
