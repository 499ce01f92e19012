//! Expand and Tile.

use super::{
    agrees_const, assert_close, assert_err, eval, infer, infer_const, ints, iota, sym_ty, t, ty,
    type_of,
};
use dmove::ir::Tensor;

#[test]
fn expand_broadcasts_both_ways() {
    let x = t(&[3, 1], &[1.0, 2.0, 3.0]);
    let y = eval("Expand", &[], &[Some(&x), Some(&ints(&[2, 1, 4]))]);
    let row: Vec<f64> = [1.0, 2.0, 3.0].iter().flat_map(|&v| [v; 4]).collect();
    let want: Vec<f64> = row.iter().chain(&row).copied().collect();
    assert_close(&y, &[2, 3, 4], &want);
    // The target may be smaller than the input: the input's extents win.
    let x = iota(&[2, 3]);
    let y = eval("Expand", &[], &[Some(&x), Some(&ints(&[3, 1, 1]))]);
    let want: Vec<f64> = (0..3).flat_map(|_| (0..6).map(f64::from)).collect();
    assert_close(&y, &[3, 2, 3], &want);
    let i = Tensor::i64(vec![1], vec![(1 << 60) + 3]);
    assert_eq!(
        eval("Expand", &[], &[Some(&i), Some(&ints(&[2]))]).to_i64_vec(),
        [(1 << 60) + 3; 2]
    );
}

#[test]
fn expand_shape_rules() {
    let out =
        infer_const("Expand", &[], sym_ty(&["B", "1"]), &[Some(&ints(&[1, 5]))]).expect("infers");
    assert_eq!(out[0], sym_ty(&["B", "5"]));
    assert_err(
        infer_const("Expand", &[], ty(&[3]), &[Some(&ints(&[4]))]),
        "shape",
        "cannot be broadcast",
    );
    assert_err(
        infer_const("Expand", &[], ty(&[3]), &[Some(&ints(&[-1]))]),
        "shape",
        "negative",
    );
    let dynamic = infer(
        "Expand",
        &[],
        &[Some(ty(&[3])), Some(type_of(&ints(&[3])))],
        &[],
    );
    assert_err(dynamic, "unsupported", "constant");
    assert_err(
        infer_const("Expand", &[], ty(&[3]), &[Some(&t(&[1], &[3.0]))]),
        "shape",
        "integer",
    );
}

#[test]
fn expand_expansion_matches_reference() {
    agrees_const("Expand", &[], &[3, 1], &[Some(ints(&[2, 1, 4]))]);
    agrees_const("Expand", &[], &[1, 2, 1], &[Some(ints(&[3, 1, 5]))]);
    agrees_const("Expand", &[], &[2, 3], &[Some(ints(&[1]))]);
    agrees_const("Expand", &[], &[1], &[Some(ints(&[0]))]);
}

#[test]
fn tile_repeats_whole_copies() {
    let x = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let y = eval("Tile", &[], &[Some(&x), Some(&ints(&[2, 3]))]);
    let rows = [
        [1.0, 2.0, 1.0, 2.0, 1.0, 2.0],
        [3.0, 4.0, 3.0, 4.0, 3.0, 4.0],
    ];
    let want: Vec<f64> = [rows[0], rows[1], rows[0], rows[1]].concat();
    assert_close(&y, &[4, 6], &want);
    let y = eval("Tile", &[], &[Some(&x), Some(&ints(&[0, 1]))]);
    assert_eq!(y.shape, [0, 2]);
}

#[test]
fn tile_shape_rules() {
    let out =
        infer_const("Tile", &[], sym_ty(&["B", "3"]), &[Some(&ints(&[2, 1]))]).expect("infers");
    assert_eq!(out[0].shape[0], dmove::ir::SymExpr::sym("B") * 2);
    assert_err(
        infer_const("Tile", &[], ty(&[2, 3]), &[Some(&ints(&[2]))]),
        "shape",
        "rank 2",
    );
    assert_err(
        infer_const("Tile", &[], ty(&[2]), &[Some(&ints(&[-1]))]),
        "shape",
        "negative",
    );
}

#[test]
fn tile_expansion_matches_reference() {
    agrees_const("Tile", &[], &[1, 3, 2], &[Some(ints(&[2, 1, 3]))]);
    agrees_const("Tile", &[], &[3], &[Some(ints(&[4]))]);
    agrees_const("Tile", &[], &[2, 1], &[Some(ints(&[0, 5]))]);
}
