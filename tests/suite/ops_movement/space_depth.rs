//! DepthToSpace and SpaceToDepth: the ONNX examples in both channel orders, round trips,
//! shape errors, and expansions on awkward shapes.

use super::{agrees, assert_err, eval, infer, iota, s, ty};
use dmove::ir::Attr;

fn blocks(b: i64, mode: &str) -> Vec<(&'static str, Attr)> {
    vec![("blocksize", Attr::Int(b)), ("mode", s(mode))]
}

#[test]
fn depth_to_space_follows_the_onnx_examples() {
    // x[0, c, 0, 0] = c for 4 channels and blocksize 2: one 2×2 block.
    let x = iota(&[1, 4, 1, 1]);
    let dcr = eval("DepthToSpace", &blocks(2, "DCR"), &[Some(&x)]);
    assert_eq!(dcr.shape, vec![1, 1, 2, 2]);
    assert_eq!(dcr.to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0]);
    // 8 channels: DCR takes block offset (i, j) from channel (2i + j)·2 + c, CRD from 4c + 2i + j.
    let x = iota(&[1, 8, 1, 1]);
    let dcr = eval("DepthToSpace", &blocks(2, "DCR"), &[Some(&x)]);
    assert_eq!(
        dcr.to_f64_vec(),
        vec![0.0, 2.0, 4.0, 6.0, 1.0, 3.0, 5.0, 7.0]
    );
    let crd = eval("DepthToSpace", &blocks(2, "CRD"), &[Some(&x)]);
    assert_eq!(
        crd.to_f64_vec(),
        vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    );
}

#[test]
fn space_to_depth_inverts_depth_to_space() {
    let x = iota(&[2, 3, 4, 6]);
    for mode in ["DCR", "CRD"] {
        let a = blocks(2, mode);
        let deep = eval("SpaceToDepth", &a, &[Some(&x)]);
        assert_eq!(deep.shape, vec![2, 12, 2, 3]);
        let back = eval("DepthToSpace", &a, &[Some(&deep)]);
        assert_eq!(back.to_f64_vec(), x.to_f64_vec(), "{mode}");
    }
    // The default order is DCR: channel 0 of the output is each block's top-left element.
    let deep = eval(
        "SpaceToDepth",
        &[("blocksize", Attr::Int(2))],
        &[Some(&iota(&[1, 1, 2, 4]))],
    );
    assert_eq!(
        deep.to_f64_vec(),
        vec![0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]
    );
}

#[test]
fn rearrangements_check_shapes_and_expand() {
    assert_err(
        infer(
            "DepthToSpace",
            &blocks(2, "DCR"),
            &[Some(ty(&[1, 6, 2, 2]))],
            &[],
        ),
        "shape",
        "multiple of blocksize",
    );
    assert_err(
        infer(
            "SpaceToDepth",
            &blocks(3, "DCR"),
            &[Some(ty(&[1, 1, 6, 4]))],
            &[],
        ),
        "shape",
        "dimension 3",
    );
    assert_err(
        infer(
            "SpaceToDepth",
            &blocks(2, "RCD"),
            &[Some(ty(&[1, 1, 2, 2]))],
            &[],
        ),
        "attr",
        "mode",
    );
    assert_err(
        infer("DepthToSpace", &[], &[Some(ty(&[1, 4, 1, 1]))], &[]),
        "attr",
        "blocksize",
    );
    assert_err(
        infer(
            "DepthToSpace",
            &blocks(1, "DCR"),
            &[Some(ty(&[4, 1, 1]))],
            &[],
        ),
        "shape",
        "4-D",
    );
    for mode in ["DCR", "CRD"] {
        agrees(
            "DepthToSpace",
            &blocks(3, mode),
            &[Some(ty(&[2, 18, 1, 3]))],
            &[],
        );
        agrees(
            "SpaceToDepth",
            &blocks(2, mode),
            &[Some(ty(&[1, 3, 4, 2]))],
            &[],
        );
    }
}
