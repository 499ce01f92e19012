//! CenterCropPad: the odd element goes to the end both when cropping and when padding (as the
//! ONNX reference does), axes, constant `shape`, and expansions.

use super::{agrees, agrees_const, assert_close, assert_err, eval, infer, infer_const, iota};
use super::{int_list, ints, sym_ty, ty, type_of};

fn crop_pad(x: &dmove::ir::Tensor, shape: &[i64]) -> dmove::ir::Tensor {
    eval("CenterCropPad", &[], &[Some(x), Some(&ints(shape))])
}

#[test]
fn odd_differences_put_the_extra_element_at_the_end() {
    // Cropping 5 to 2 drops one element before and two after.
    assert_close(&crop_pad(&iota(&[5]), &[2]), &[2], &[1.0, 2.0]);
    // Padding 2 to 5 writes one zero before and two after.
    assert_close(
        &crop_pad(&iota(&[2]), &[5]),
        &[5],
        &[0.0, 0.0, 1.0, 0.0, 0.0],
    );
    // Even differences split equally; an equal extent is a copy.
    assert_close(&crop_pad(&iota(&[6]), &[2]), &[2], &[2.0, 3.0]);
    assert_close(&crop_pad(&iota(&[2]), &[4]), &[4], &[0.0, 0.0, 1.0, 0.0]);
    assert_close(&crop_pad(&iota(&[3]), &[3]), &[3], &[0.0, 1.0, 2.0]);
}

#[test]
fn crops_one_axis_and_pads_another() {
    // [[0, 1], [2, 3], [4, 5]]: 3 rows cropped to 2 (rows 0 and 1), 2 columns padded to 4.
    let y = crop_pad(&iota(&[3, 2]), &[2, 4]);
    let want = [0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 3.0, 0.0];
    assert_close(&y, &[2, 4], &want);
}

#[test]
fn axes_select_the_resized_axes() {
    // Only the last axis (given as -1), 4 cropped to 2: positions 1 and 2 of every row.
    let a = [("axes", int_list(&[-1]))];
    let y = eval(
        "CenterCropPad",
        &a,
        &[Some(&iota(&[2, 3, 4])), Some(&ints(&[2]))],
    );
    let want: Vec<f64> = (0..6)
        .flat_map(|r| [4 * r + 1, 4 * r + 2])
        .map(f64::from)
        .collect();
    assert_close(&y, &[2, 3, 2], &want);
    // Axes in any order: `shape` follows `axes`.
    let a = [("axes", int_list(&[2, 0]))];
    let t = infer_const("CenterCropPad", &a, ty(&[4, 3, 5]), &[Some(&ints(&[7, 1]))]);
    assert_eq!(t.expect("infers")[0], ty(&[1, 3, 7]));
    // Axes not listed may be symbolic.
    let t = infer_const(
        "CenterCropPad",
        &a,
        sym_ty(&["4", "B", "5"]),
        &[Some(&ints(&[7, 1]))],
    );
    assert_eq!(t.expect("infers")[0], sym_ty(&["1", "B", "7"]));
}

#[test]
fn bad_parameters_are_refused() {
    let x = ty(&[4, 3]);
    let shape = ints(&[2, 2]);
    // `shape` computed at run time: the output shape would be unknown.
    assert_err(
        infer(
            "CenterCropPad",
            &[],
            &[Some(x.clone()), Some(type_of(&shape))],
            &[],
        ),
        "unsupported",
        "`shape` must be a constant",
    );
    assert_err(
        infer_const("CenterCropPad", &[], x.clone(), &[Some(&ints(&[2]))]),
        "shape",
        "one per axis",
    );
    assert_err(
        infer_const("CenterCropPad", &[], x.clone(), &[Some(&ints(&[2, -1]))]),
        "shape",
        "negative",
    );
    let a = [("axes", int_list(&[0, -2]))];
    assert_err(
        infer_const("CenterCropPad", &a, x, &[Some(&shape)]),
        "attr",
        "twice",
    );
    assert_err(
        infer_const("CenterCropPad", &[], sym_ty(&["B", "3"]), &[Some(&shape)]),
        "symbolic",
        "axis 0",
    );
}

#[test]
fn expansions_match_the_reference() {
    agrees_const("CenterCropPad", &[], &[5, 2], &[Some(ints(&[2, 5]))]);
    agrees_const("CenterCropPad", &[], &[3, 4, 1], &[Some(ints(&[6, 1, 2]))]);
    let a = [("axes", int_list(&[-1, 0]))];
    agrees_const("CenterCropPad", &a, &[2, 3, 7], &[Some(ints(&[4, 5]))]);
    // An explicit `shape` type, and an axis left alone.
    let a = [("axes", int_list(&[1]))];
    let shape = ints(&[5]);
    agrees(
        "CenterCropPad",
        &a,
        &[Some(ty(&[3, 2])), Some(type_of(&shape))],
        &[None, Some(shape)],
    );
}
