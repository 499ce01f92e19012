//! StripMining and MapCollapse: reshaping a map's loop nest.

use super::{
    apply_checked, assert_matmul, compiled_matches_interpreter, map, map_id, param_names, params,
    refused, rejected,
};
use crate::common;
use dmove::transform::{ParamValue, Params};

#[test]
fn strip_mining_inserts_the_strip_loop_before_the_parameter() {
    let mut p = common::elementwise_chain(10, 3);
    let id = map_id(&p, "double");
    let step = apply_checked(
        &mut p,
        "StripMining",
        &[id],
        &params(&[
            ("param", ParamValue::Str("i".into())),
            ("size", ParamValue::Int(4)),
        ]),
    );
    assert_eq!(step.touched, [id]);
    let m = map(&p, id);
    assert_eq!(param_names(m), ["i_strip", "i", "j"]);
    assert_eq!(m.params[0].range.to_string(), "0:10:4");
    assert_eq!(
        m.params[1].range.to_string(),
        "i_strip:min(i_strip + 4, 10)"
    );
    compiled_matches_interpreter(&p);
}

#[test]
fn strip_mining_by_position_keeps_matmul_results() {
    let mut p = common::matmul(6, 13, 5);
    let acc = map_id(&p, "acc");
    apply_checked(
        &mut p,
        "StripMining",
        &[acc],
        &params(&[("param", ParamValue::Int(2)), ("size", ParamValue::Int(4))]),
    );
    assert_eq!(param_names(map(&p, acc)), ["i", "j", "k_strip", "k"]);
    assert_matmul(&p, 6, 13, 5);
}

#[test]
fn strip_mining_refuses_a_strip_as_long_as_the_loop() {
    let mut p = common::elementwise_chain(10, 3);
    let id = map_id(&p, "double");
    let why = refused(
        &mut p,
        "StripMining",
        &[id],
        &params(&[
            ("param", ParamValue::Str("i".into())),
            ("size", ParamValue::Int(16)),
        ]),
        id,
    );
    assert_eq!(
        why,
        "`i` runs at most 10 times, not more than the strip size 16: nothing to strip-mine"
    );
    let why = rejected(
        &mut p,
        "StripMining",
        &[id],
        &params(&[
            ("param", ParamValue::Str("q".into())),
            ("size", ParamValue::Int(4)),
        ]),
    );
    assert_eq!(
        why,
        "StripMining: parameter `param` expects a map parameter, by name or position, found `q`; the map's parameters are i, j"
    );
}

#[test]
fn collapse_undoes_an_expansion() {
    let mut p = common::matmul(4, 6, 3);
    let acc = map_id(&p, "acc");
    let expanded = apply_checked(
        &mut p,
        "MapExpansion",
        &[acc],
        &params(&[("split", ParamValue::Int(1))]),
    );
    let inner = expanded.touched[1];
    let step = apply_checked(&mut p, "MapCollapse", &[acc], &Params::new());
    assert_eq!(step.touched, [acc, inner]);
    assert!(p.node(inner).is_none(), "the inner map is gone");
    assert_eq!(param_names(map(&p, acc)), ["i", "j", "k"]);
    assert_matmul(&p, 4, 6, 3);
}

#[test]
fn collapse_keeps_tile_ranges_that_use_outer_parameters() {
    let mut p = common::matmul(9, 5, 7);
    let acc = map_id(&p, "acc");
    apply_checked(
        &mut p,
        "MapTiling",
        &[acc],
        &params(&[("tiles", ParamValue::Ints(vec![4, 0, 0]))]),
    );
    apply_checked(&mut p, "MapCollapse", &[acc], &Params::new());
    assert_eq!(param_names(map(&p, acc)), ["i_tile", "i", "j", "k"]);
    assert_matmul(&p, 9, 5, 7);
    compiled_matches_interpreter(&p);
}

#[test]
fn collapse_refuses_a_body_that_is_not_a_single_map() {
    let mut p = common::matmul(4, 6, 3);
    let init = map_id(&p, "init");
    let why = refused(&mut p, "MapCollapse", &[init], &Params::new(), init);
    assert!(why.starts_with("the body holds tasklet node n"), "{why}");
    assert!(why.ends_with(", not only a nested map"), "{why}");
}

#[test]
fn tile_bounds_are_exact_when_the_tile_divides_the_extent() {
    // i = 0:8 is tiled by 4 (divides), k = 0:9 by 4 (does not).
    let mut p = common::matmul(8, 9, 6);
    let acc = map_id(&p, "acc");
    let tiled = apply_checked(
        &mut p,
        "MapTiling",
        &[acc],
        &params(&[("tiles", ParamValue::Ints(vec![4, 0, 4]))]),
    );
    let inner = map(&p, tiled.touched[1]);
    let end = |name: &str| {
        let prm = inner.params.iter().find(|q| q.name == name).unwrap();
        prm.range.end.to_string()
    };
    assert_eq!(end("i"), "i_tile + 4");
    assert!(end("k").starts_with("min("), "{}", end("k"));
    assert_matmul(&p, 8, 9, 6);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("i_tile + 4"), "{source}");
}
