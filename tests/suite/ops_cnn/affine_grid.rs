//! AffineGrid.

use super::{assert_close, attrs, t, ty};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::{OpError, TensorType};

fn size(v: &[i64]) -> Tensor {
    Tensor::i64(vec![v.len()], v.to_vec())
}

fn size_type(n: usize) -> Option<TensorType> {
    Some(TensorType::new(DType::I64, vec![SymExpr::from(n)]))
}

fn eval(align: i64, theta: &Tensor, s: &[i64]) -> Tensor {
    let s = size(s);
    let a = [("align_corners", Attr::Int(align))];
    super::eval("AffineGrid", &a, &[Some(theta), Some(&s)])
}

fn infer(theta: &[usize], s: Option<&Tensor>, n: usize) -> Result<TensorType, OpError> {
    let inputs = [Some(ty(theta)), size_type(n)];
    super::infer_consts("AffineGrid", &[], &inputs, &[None, s])
}

#[test]
fn affine_grid_2d_by_hand() {
    // x over W = 3 and y over H = 2; grid = (2x + 0.5, −y).
    let theta = t(&[1, 2, 3], &[2., 0., 0.5, 0., -1., 0.]);
    let y = eval(0, &theta, &[1, 4, 2, 3]);
    let (x0, y0) = (2. / 3., 0.5);
    let want = [
        -2. * x0 + 0.5,
        y0,
        0.5,
        y0,
        2. * x0 + 0.5,
        y0,
        -2. * x0 + 0.5,
        -y0,
        0.5,
        -y0,
        2. * x0 + 0.5,
        -y0,
    ];
    assert_close(&y, &[1, 2, 3, 2], &want);
    // With align_corners the corners sit at ±1.
    let y = eval(1, &theta, &[1, 4, 2, 3]);
    let want = [-1.5, 1., 0.5, 1., 2.5, 1., -1.5, -1., 0.5, -1., 2.5, -1.];
    assert_close(&y, &[1, 2, 3, 2], &want);
}

#[test]
fn affine_grid_3d_by_hand() {
    // A single depth position sits at −1 with align_corners; z is shifted by 0.5.
    let theta = t(
        &[1, 3, 4],
        &[1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0.5],
    );
    let y = eval(1, &theta, &[1, 1, 1, 2, 2]);
    let want = [-1., -1., -0.5, 1., -1., -0.5, -1., 1., -0.5, 1., 1., -0.5];
    assert_close(&y, &[1, 1, 2, 2, 3], &want);
}

#[test]
fn affine_grid_shapes_and_errors() {
    let s = size(&[2, 3, 4, 5]);
    assert_eq!(
        infer(&[2, 2, 3], Some(&s), 4).expect("infers"),
        ty(&[2, 4, 5, 2])
    );
    let err = |r: Result<TensorType, OpError>| r.expect_err("refused").to_string();
    let msg = err(infer(&[2, 3, 4], Some(&s), 4));
    assert!(msg.contains("expected"), "{msg}");
    let msg = err(infer(&[2, 2, 3], None, 4));
    assert!(msg.contains("`size` must be a constant"), "{msg}");
    let msg = err(infer(&[2, 2, 3], Some(&size(&[2, 3, 4])), 3));
    assert!(msg.contains("4 (2-D) or 5 (3-D)"), "{msg}");
}

#[test]
fn affine_grid_expansions_match_the_reference() {
    for (theta, s) in [
        (vec![3, 2, 3], vec![3, 1, 5, 4]),
        (vec![2, 3, 4], vec![2, 2, 3, 1, 4]),
    ] {
        for align in [0, 1] {
            let a = attrs(&[("align_corners", Attr::Int(align))]);
            let types = [Some(ty(&theta)), size_type(s.len())];
            let p = single_op_program("AffineGrid", a, &types, &[None, Some(size(&s))])
                .expect("infers");
            expansion_matches(&p, 3).unwrap_or_else(|e| panic!("{s:?} {align}: {e}"));
        }
    }
}
