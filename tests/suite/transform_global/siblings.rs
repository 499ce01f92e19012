//! SiblingMapFusion.

use super::*;
use crate::common::declare;
use dmove::ir::{BinOp, DataKind, NodeKind, Subset, TExpr};

/// `Y = 2·X` and `Z = X + W` as two independent maps over 3×4 (parameters `i, j` and `p, q`);
/// with `dependent`, the second map reads `Y` instead of `W`.
fn siblings(dependent: bool) -> (Program, NodeId, NodeId) {
    let mut p = Program::new("siblings");
    declare(&mut p, "X", &[3, 4], DataKind::Input);
    declare(&mut p, "W", &[3, 4], DataKind::Input);
    declare(&mut p, "Y", &[3, 4], DataKind::Output);
    declare(&mut p, "Z", &[3, 4], DataKind::Output);
    let a = map1(
        &mut p,
        "double",
        &[("i", 3), ("j", 4)],
        vec![read("x", "X", vec![s("i"), s("j")])],
        ("Y", Subset::element([s("i"), s("j")])),
        TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::Const(2.0)),
    );
    let second = if dependent { "Y" } else { "W" };
    let b = map1(
        &mut p,
        "add",
        &[("p", 3), ("q", 4)],
        vec![
            read("x", "X", vec![s("p"), s("q")]),
            read("w", second, vec![s("p"), s("q")]),
        ],
        ("Z", Subset::element([s("p"), s("q")])),
        TExpr::binary(BinOp::Add, TExpr::input("x"), TExpr::input("w")),
    );
    (p, a, b)
}

fn access_nodes(g: &dmove::ir::Graph, data: &str) -> usize {
    g.nodes()
        .filter(|n| matches!(&n.kind, NodeKind::Access(d) if d == data))
        .count()
}

#[test]
fn fuses_independent_maps_and_shares_the_common_input() {
    let (mut p, a, b) = siblings(false);
    apply_checked(&mut p, "SiblingMapFusion", &[a, b], &Params::new());
    assert!(p.node(b).is_none(), "the second map is gone");
    let NodeKind::Map(m) = &p.node(a).expect("fused map keeps the first id").kind else {
        panic!("not a map");
    };
    assert_eq!(
        m.params.iter().map(|q| q.name.as_str()).collect::<Vec<_>>(),
        ["i", "j"]
    );
    assert_eq!(
        access_nodes(&m.body, "X"),
        1,
        "one access node of X per iteration"
    );
    let top_maps = p
        .graph
        .nodes()
        .filter(|n| matches!(n.kind, NodeKind::Map(_)))
        .count();
    assert_eq!(top_maps, 1);
    let (x, w) = (values(12, 1), values(12, 2));
    let out = run(
        &p,
        &[
            ("X", Tensor::f32(vec![3, 4], x.clone())),
            ("W", Tensor::f32(vec![3, 4], w.clone())),
        ],
    );
    let y: Vec<f64> = x.iter().map(|v| f64::from(*v) * 2.0).collect();
    let z: Vec<f64> = x
        .iter()
        .zip(&w)
        .map(|(a, b)| f64::from(*a) + f64::from(*b))
        .collect();
    assert_values(&out["Y"], &y);
    assert_values(&out["Z"], &z);
}

#[test]
fn refuses_maps_where_one_reads_what_the_other_writes() {
    let (mut p, a, b) = siblings(true);
    let why = refused(&mut p, "SiblingMapFusion", &[a, b], &Params::new(), b);
    assert!(why.contains("depends on map"), "{why}");
    assert!(why.contains(&a.to_string()), "{why}");
}

#[test]
fn refuses_different_iteration_spaces() {
    let mut p = Program::new("spaces");
    declare(&mut p, "X", &[6], DataKind::Input);
    declare(&mut p, "Y", &[6], DataKind::Output);
    declare(&mut p, "Z", &[5], DataKind::Output);
    let a = map1(
        &mut p,
        "copy",
        &[("i", 6)],
        vec![read("x", "X", vec![s("i")])],
        ("Y", Subset::element([s("i")])),
        TExpr::input("x"),
    );
    let b = map1(
        &mut p,
        "head",
        &[("k", 5)],
        vec![read("x", "X", vec![s("k")])],
        ("Z", Subset::element([s("k")])),
        TExpr::input("x"),
    );
    let why = refused(&mut p, "SiblingMapFusion", &[a, b], &Params::new(), b);
    assert!(
        why.contains("iteration spaces differ: [i = 0:6] vs [k = 0:5]"),
        "{why}"
    );
}

#[test]
fn fused_siblings_compile_and_match_the_interpreter() {
    let (mut p, a, b) = siblings(false);
    apply_checked(&mut p, "SiblingMapFusion", &[a, b], &Params::new());
    compiled_matches_interpreter(&p);
}
