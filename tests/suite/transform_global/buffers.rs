//! BufferReuse and `plan_buffers`.

use super::*;
use crate::common::declare;
use dmove::ir::{BinOp, DType, DataDesc, DataKind, Dim, NodeKind, Subset, TExpr};
use dmove::transform::plan_buffers;

/// `Y1 = 2·X + 1` through transient `T1`, then `Y2 = 3·X − 1` through transient `T2` (both
/// f32[8]); with `overlap`, the last map reads `T1` too (`Y2 = T2 + T1`).
fn two_temporaries(overlap: bool) -> Program {
    let mut p = Program::new("buffers");
    declare(&mut p, "X", &[8], DataKind::Input);
    declare(&mut p, "Y1", &[8], DataKind::Output);
    declare(&mut p, "Y2", &[8], DataKind::Output);
    for t in ["T1", "T2"] {
        p.data.insert(
            t.into(),
            DataDesc::new(DType::F32, vec![8.into()], DataKind::Transient),
        );
    }
    let i = || vec![s("i")];
    let el = || Subset::element([s("i")]);
    let scaled = |k: f64| TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::Const(k));
    map1(
        &mut p,
        "m1",
        &[("i", 8)],
        vec![read("x", "X", i())],
        ("T1", el()),
        scaled(2.0),
    );
    let plus = TExpr::binary(BinOp::Add, TExpr::input("x"), TExpr::Const(1.0));
    map1(
        &mut p,
        "m2",
        &[("i", 8)],
        vec![read("x", "T1", i())],
        ("Y1", el()),
        plus,
    );
    map1(
        &mut p,
        "m3",
        &[("i", 8)],
        vec![read("x", "X", i())],
        ("T2", el()),
        scaled(3.0),
    );
    if overlap {
        let sum = TExpr::binary(BinOp::Add, TExpr::input("x"), TExpr::input("y"));
        let reads = vec![read("x", "T2", i()), read("y", "T1", i())];
        map1(&mut p, "m4", &[("i", 8)], reads, ("Y2", el()), sum);
    } else {
        let minus = TExpr::binary(BinOp::Sub, TExpr::input("x"), TExpr::Const(1.0));
        map1(
            &mut p,
            "m4",
            &[("i", 8)],
            vec![read("x", "T2", i())],
            ("Y2", el()),
            minus,
        );
    }
    p
}

#[test]
fn second_transient_takes_over_the_first_buffer_with_an_ordering_edge() {
    let mut p = two_temporaries(false);
    assert_eq!(plan_buffers(&p), vec![("T1".to_string(), "T2".to_string())]);
    let site = [access_id(&p, "T1"), access_id(&p, "T2")];
    apply_checked(&mut p, "BufferReuse", &site, &Params::new());
    assert!(!p.data.contains_key("T2"));
    assert!(!p.graph.data_used().contains("T2"));
    let empty = Subset(vec![Dim::Range(dmove::ir::Range::upto(0))]);
    let ordering: Vec<_> = p
        .graph
        .edges()
        .map(|e| e.memlet)
        .filter(|m| m.subset == empty)
        .collect();
    assert_eq!(ordering.len(), 1, "one ordering edge");
    assert_eq!(ordering[0].data, "Y1", "ordered after m2's result");
    assert!(plan_buffers(&p).is_empty(), "nothing left to reuse");
    let x = values(8, 3);
    let out = run(&p, &[("X", Tensor::f32(vec![8], x.clone()))]);
    let y1: Vec<f64> = x.iter().map(|v| f64::from(*v) * 2.0 + 1.0).collect();
    let y2: Vec<f64> = x.iter().map(|v| f64::from(*v) * 3.0 - 1.0).collect();
    assert_values(&out["Y1"], &y1);
    assert_values(&out["Y2"], &y2);
    // The ordering edge survives a later rewrite of the writer's boundary.
    let writer = p
        .graph
        .nodes()
        .find(|n| n.label == "m3" && matches!(n.kind, NodeKind::Map(_)))
        .map(|n| n.id)
        .expect("m3");
    let tiles = [("tiles", dmove::transform::ParamValue::Ints(vec![4]))];
    let ps: Params = tiles
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    apply_checked(&mut p, "MapTiling", &[writer], &ps);
    assert_eq!(
        p.graph
            .edges()
            .map(|e| e.memlet)
            .filter(|m| m.subset == empty)
            .count(),
        1
    );
}

#[test]
fn refuses_overlapping_live_ranges() {
    let mut p = two_temporaries(true);
    assert!(plan_buffers(&p).is_empty());
    let site = [access_id(&p, "T1"), access_id(&p, "T2")];
    let why = refused(&mut p, "BufferReuse", &site, &Params::new(), site[1]);
    assert!(
        why.contains("live ranges overlap: `T1` is last used by"),
        "{why}"
    );
}

#[test]
fn refuses_containers_that_are_not_transients() {
    let mut p = two_temporaries(false);
    let site = [access_id(&p, "X"), access_id(&p, "T2")];
    let why = refused(&mut p, "BufferReuse", &site, &Params::new(), site[0]);
    assert!(
        why.contains("`X` is input global, not a global transient"),
        "{why}"
    );
}

#[test]
fn reused_buffers_compile_and_match_the_interpreter() {
    let mut p = two_temporaries(false);
    let site = [access_id(&p, "T1"), access_id(&p, "T2")];
    apply_checked(&mut p, "BufferReuse", &site, &Params::new());
    compiled_matches_interpreter(&p);
}
