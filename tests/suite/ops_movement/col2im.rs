//! Col2Im: overlapping blocks summed back into an image, with strides, dilations and pads
//! (hand-computed), several channels, three spatial axes, shape errors, and expansions.

use super::{agrees_const, assert_close, assert_err, eval, infer, infer_const, int_list, iota};
use super::{ints, ty, type_of};
use dmove::ir::{Attr, Tensor};

fn col2im(a: &[(&str, Attr)], x: &Tensor, image: &[i64], block: &[i64]) -> Tensor {
    eval(
        "Col2Im",
        a,
        &[Some(x), Some(&ints(image)), Some(&ints(block))],
    )
}

#[test]
fn overlapping_blocks_add_up() {
    // Image 2×3, blocks 1×2: a 2×2 grid of blocks. Row 0 of X holds each block's left element
    // ([0, 1, 2, 3]), row 1 its right one ([4, 5, 6, 7]); the middle column gets both.
    let y = col2im(&[], &iota(&[1, 2, 4]), &[2, 3], &[1, 2]);
    assert_close(&y, &[1, 1, 2, 3], &[0.0, 5.0, 5.0, 2.0, 9.0, 7.0]);
    // Channel c owns rows c·∏block_shape + k.
    let y = col2im(&[], &iota(&[1, 4, 1]), &[1, 2], &[1, 2]);
    assert_close(&y, &[1, 2, 1, 2], &[0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn strides_dilations_and_pads_place_the_blocks() {
    // Stride 2, blocks of 3 over 5: blocks at 0 and 2, overlapping at 2.
    let a = [("strides", int_list(&[1, 2]))];
    let y = col2im(&a, &iota(&[1, 3, 2]), &[1, 5], &[1, 3]);
    assert_close(&y, &[1, 1, 1, 5], &[0.0, 2.0, 5.0, 3.0, 5.0]);
    // Dilation 2, blocks of 2 spanning 3 over 5: three blocks, elements at l and l + 2.
    let a = [("dilations", int_list(&[1, 2]))];
    let y = col2im(&a, &iota(&[1, 2, 3]), &[1, 5], &[1, 2]);
    assert_close(&y, &[1, 1, 1, 5], &[0.0, 1.0, 5.0, 4.0, 5.0]);
    // One pad on each side of a width of 3: four blocks of 2 starting at −1; the parts in the
    // padding (element 0 of row 0, element 3 of row 1) are dropped.
    let a = [("pads", int_list(&[0, 1, 0, 1]))];
    let y = col2im(&a, &iota(&[1, 2, 4]), &[1, 3], &[1, 2]);
    assert_close(&y, &[1, 1, 1, 3], &[5.0, 7.0, 9.0]);
}

/// The ONNX documentation's example: 5×5 image, 1×5 blocks, X = 1…25 as [1, 5, 5].
#[test]
fn follows_the_onnx_example() {
    let x = Tensor::f32(vec![1, 5, 5], (1..=25).map(|v| v as f32).collect());
    let y = col2im(&[], &x, &[5, 5], &[1, 5]);
    // Each block is one image row: Y[0, 0, r, k] = X[0, k, r].
    let want: Vec<f64> = (0..5)
        .flat_map(|r| (0..5).map(move |k| f64::from(k * 5 + r + 1)))
        .collect();
    assert_close(&y, &[1, 1, 5, 5], &want);
}

#[test]
fn bad_geometries_are_refused() {
    let (image, block) = (ints(&[2, 3]), ints(&[1, 2]));
    let params = [Some(&image), Some(&block)];
    assert_err(
        infer_const("Col2Im", &[], ty(&[1, 2, 5]), &params),
        "shape",
        "geometry gives 4",
    );
    assert_err(
        infer_const("Col2Im", &[], ty(&[1, 3, 4]), &params),
        "shape",
        "not a multiple",
    );
    assert_err(
        infer_const("Col2Im", &[], ty(&[2, 4]), &params),
        "shape",
        "3-D input",
    );
    assert_err(
        infer_const(
            "Col2Im",
            &[],
            ty(&[1, 2, 4]),
            &[Some(&image), Some(&ints(&[2]))],
        ),
        "shape",
        "one per spatial axis",
    );
    assert_err(
        infer_const(
            "Col2Im",
            &[],
            ty(&[1, 8, 1]),
            &[Some(&image), Some(&ints(&[2, 4]))],
        ),
        "shape",
        "does not fit",
    );
    let a = [("strides", int_list(&[1, 0]))];
    assert_err(
        infer_const("Col2Im", &a, ty(&[1, 2, 4]), &params),
        "attr",
        "minimum",
    );
    // A computed image_shape: the output shape would be unknown.
    assert_err(
        infer(
            "Col2Im",
            &[],
            &[
                Some(ty(&[1, 2, 4])),
                Some(type_of(&image)),
                Some(type_of(&block)),
            ],
            &[None, None, Some(&block)],
        ),
        "unsupported",
        "`image_shape` must be a constant",
    );
}

#[test]
fn expansions_match_the_reference() {
    let p = |v: &[i64]| Some(ints(v));
    agrees_const("Col2Im", &[], &[2, 6, 4], &[p(&[2, 3]), p(&[1, 2])]);
    let a = [
        ("strides", int_list(&[2, 1])),
        ("dilations", int_list(&[1, 2])),
        ("pads", int_list(&[1, 0, 0, 2])),
    ];
    // Axis 0: (5 + 1 − 2) / 2 + 1 = 3 blocks; axis 1: (4 + 2 − 3) / 1 + 1 = 4.
    agrees_const("Col2Im", &a, &[2, 8, 12], &[p(&[5, 4]), p(&[2, 2])]);
    // Three spatial axes, each with 2 blocks.
    let a = [("strides", int_list(&[1, 2, 1]))];
    agrees_const("Col2Im", &a, &[1, 8, 8], &[p(&[2, 4, 3]), p(&[1, 2, 2])]);
    // One spatial axis.
    agrees_const("Col2Im", &[], &[1, 3, 4], &[p(&[6]), p(&[3])]);
}
