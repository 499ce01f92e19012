//! LocalStorage: staging a tile of a container in a local buffer.

use super::{
    apply_checked, assert_matmul, compiled_matches_interpreter, map_id, params, refused, rejected,
};
use crate::common;
use dmove::ir::{NodeId, Program, Storage};
use dmove::transform::{ParamValue, Params};

/// A 13×6·6×5 matmul tiled by 4 rows: returns the tile map and the inner map.
fn tiled_matmul() -> (Program, NodeId, NodeId) {
    let mut p = common::matmul(13, 6, 5);
    let acc = map_id(&p, "acc");
    let step = apply_checked(
        &mut p,
        "MapTiling",
        &[acc],
        &params(&[("tiles", ParamValue::Ints(vec![4, 0, 0]))]),
    );
    (p, acc, step.touched[1])
}

fn data(name: &str) -> Params {
    params(&[("data", ParamValue::Str(name.into()))])
}

#[test]
fn local_storage_stages_a_read_tile_and_a_written_tile() {
    let (mut p, acc, inner) = tiled_matmul();
    apply_checked(&mut p, "Parallelize", &[acc], &Params::new());
    let read = apply_checked(&mut p, "LocalStorage", &[inner], &data("A"));
    assert_eq!(read.touched.len(), 2, "the map and a copy-in map");
    let a = &p.data["A_local"];
    assert_eq!(a.storage, Storage::Local);
    assert_eq!(
        a.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        ["4", "6"]
    );
    let written = apply_checked(&mut p, "LocalStorage", &[inner], &data("C"));
    assert_eq!(
        written.touched.len(),
        3,
        "the map, a copy-in and a copy-out map"
    );
    assert_eq!(p.data["C_local"].storage, Storage::Local);
    assert_matmul(&p, 13, 6, 5);
    let source = compiled_matches_interpreter(&p);
    // 13 rows in tiles of 4: a whole tile's copy-in writes all of A_local, so it is not
    // zeroed first; the clipped last tile's copy leaves rows unwritten, so it is.
    assert!(source.contains("d_A_local[24]; /*"), "{source}");
    assert!(source.contains("d_A_local[24] = {0}"), "{source}");
}

#[test]
fn local_storage_refuses_a_top_level_map_and_an_unused_container() {
    let (mut p, acc, inner) = tiled_matmul();
    let why = refused(&mut p, "LocalStorage", &[acc], &data("A"), acc);
    assert!(why.starts_with("the map is at the top level"), "{why}");
    let why = rejected(&mut p, "LocalStorage", &[inner], &data("X"));
    assert_eq!(
        why,
        "LocalStorage: parameter `data` expects the name of a data container, found `X`, which the program does not declare"
    );
    let init = map_id(&p, "init");
    apply_checked(
        &mut p,
        "MapExpansion",
        &[init],
        &params(&[("split", ParamValue::Int(1))]),
    );
    let inner_init = map_id(&p, "init_inner");
    let why = refused(
        &mut p,
        "LocalStorage",
        &[inner_init],
        &data("A"),
        inner_init,
    );
    assert_eq!(why, "the map neither reads nor writes `A`");
}

/// Local containers passed explicitly into nested maps survive the textual IR.
#[test]
fn staged_programs_round_trip_through_the_text_form() {
    use dmove::ir::text::{parse, print_exact};
    use dmove::ir::validate::validate;
    let (mut p, _, inner) = tiled_matmul();
    apply_checked(&mut p, "LocalStorage", &[inner], &data("C"));
    let text = print_exact(&p);
    let parsed = parse(&text).expect("parses").program;
    validate(&parsed).expect("valid after parsing");
    assert_eq!(print_exact(&parsed), text);
}
