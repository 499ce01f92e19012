//! Building patterns, enumerating matches and explaining failures.

use crate::common::declare;
use dmove::ir::{Attr, DType, DataKind, NodeId, Program};
use dmove::pattern::library::builtin;
use dmove::pattern::{
    explain, find_all, find_at, params, uses, Match, NodeClass, PatternBuilder, PatternError, Pred,
};
use std::collections::BTreeMap;

/// Ids of the library nodes of [`library_program`].
struct Ids {
    fused: [NodeId; 2],
    gemm: NodeId,
    shared: NodeId,
    t1: NodeId,
}

/// Three MatMul-like producers feeding an Add: one that matches `matmul_add`, one that is a
/// Gemm, and one whose result is also read by a Relu.
fn library_program() -> (Program, Ids) {
    let mut p = Program::new("lib");
    declare(&mut p, "X", &[4, 8], DataKind::Input);
    declare(&mut p, "W", &[8, 6], DataKind::Input);
    declare(&mut p, "b", &[6], DataKind::Input);
    for t in ["t1", "t2", "t3"] {
        declare(&mut p, t, &[4, 6], DataKind::Transient);
    }
    for y in ["y1", "y2", "y3", "y4"] {
        declare(&mut p, y, &[4, 6], DataKind::Output);
    }
    let none = BTreeMap::new;
    let ids = p.build(|b| {
        let mm = b.library("mm1", "MatMul", none(), &[Some("X"), Some("W")], &["t1"]);
        let add = b.library("add1", "Add", none(), &[Some("t1"), Some("b")], &["y1"]);
        let mut attrs = BTreeMap::new();
        attrs.insert("transB".to_string(), Attr::Int(0));
        let gemm = b.library("gemm", "Gemm", attrs, &[Some("X"), Some("W")], &["t2"]);
        b.library("add2", "Add", none(), &[Some("t2"), Some("b")], &["y2"]);
        let shared = b.library("mm3", "MatMul", none(), &[Some("X"), Some("W")], &["t3"]);
        b.library("add3", "Add", none(), &[Some("t3"), Some("b")], &["y3"]);
        b.library("relu", "Relu", none(), &[Some("t3")], &["y4"]);
        Ids {
            fused: [mm, add],
            gemm,
            shared,
            t1: NodeId(0),
        }
    });
    let t1 = find_access(&p, "t1");
    (p, Ids { t1, ..ids })
}

fn find_access(p: &Program, data: &str) -> NodeId {
    let mut found = None;
    p.graph.walk(&mut |n| {
        if matches!(&n.kind, dmove::ir::NodeKind::Access(d) if d == data) {
            found = Some(n.id);
        }
    });
    found.unwrap_or_else(|| panic!("no access node for {data}"))
}

#[test]
fn matmul_add_matches_only_the_single_use_matmul() {
    let (p, ids) = library_program();
    let pat = builtin("matmul_add").expect("built-in");
    let all = find_all(&pat, &p);
    assert_eq!(
        all,
        [Match {
            nodes: vec![ids.fused[0], ids.t1, ids.fused[1]]
        }]
    );
    assert_eq!(pat.get(&all[0], "add"), Some(ids.fused[1]));
    assert_eq!(find_at(&pat, &p, ids.fused[0]), all);
    assert!(find_at(&pat, &p, ids.shared).is_empty());
}

#[test]
fn explain_names_the_failed_constraint_and_the_value_seen() {
    let (p, ids) = library_program();
    let pat = builtin("matmul_add").expect("built-in");
    let why = explain(&pat, &p, ids.gemm).unwrap_err();
    assert_eq!(why.to_string(), "`mm`: expected op MatMul, found Gemm");
    assert_eq!(why.node, Some(ids.gemm));
    let why = explain(&pat, &p, ids.shared).unwrap_err();
    assert_eq!(why.to_string(), "`uses(t) == 1` failed: 2 reader(s)");
    let why = explain(&pat, &p, NodeId(999)).unwrap_err();
    assert_eq!(
        why.to_string(),
        "`mm`: there is no node n999 in the program"
    );
    let ok = explain(&pat, &p, ids.fused[0]).expect("matches");
    assert_eq!(ok.nodes[0], ids.fused[0]);
}

#[test]
fn data_predicates_report_what_the_container_is() {
    let (p, ids) = library_program();
    let expect = |pred: Pred, want: &str| {
        let pat = PatternBuilder::new("one")
            .node("mm", [Pred::op("MatMul")])
            .node("out", [pred])
            .edge("mm", "out")
            .finish()
            .expect("well-formed");
        let why = explain(&pat, &p, ids.fused[0]).unwrap_err();
        assert_eq!(why.to_string(), want);
        assert_eq!(why.node, Some(ids.t1));
    };
    expect(
        Pred::DType(DType::I64),
        "`out`: expected dtype i64, found f32 (container t1)",
    );
    expect(
        Pred::Dim(1, 7),
        "`out`: expected dimension 1 = 7, found 6 (container t1)",
    );
    expect(
        Pred::Rank(3),
        "`out`: expected rank 3, found rank 2 (container t1)",
    );
    expect(
        Pred::DataKind(DataKind::Output),
        "`out`: expected an output container, found transient container t1",
    );
    expect(
        Pred::Kind(NodeClass::Map),
        "`out`: expected a map node, found an access node (t1)",
    );
    let gemm = PatternBuilder::new("gemm")
        .node("g", [Pred::attr("transB", Attr::Int(1))])
        .finish()
        .expect("well-formed");
    assert_eq!(
        explain(&gemm, &p, ids.gemm).unwrap_err().to_string(),
        "`g`: expected attribute transB = 1, found 0"
    );
}

#[test]
fn edges_through_named_data_and_missing_edges_are_explained() {
    let (p, ids) = library_program();
    let through = PatternBuilder::new("through")
        .node("mm", [Pred::op("MatMul")])
        .node("x", [Pred::Kind(NodeClass::Access)])
        .edge_through("x", "mm", "b")
        .finish()
        .expect("well-formed");
    let why = explain(&through, &p, ids.fused[0]).unwrap_err();
    assert!(
        why.to_string().starts_with("`x` -> `mm`: the edge ")
            && why.to_string().ends_with("does not move container b"),
        "{why}"
    );
    let sink = PatternBuilder::new("sink")
        .node("y", [Pred::data("y1")])
        .node("next", [])
        .edge("y", "next")
        .finish()
        .expect("well-formed");
    let y1 = find_access(&p, "y1");
    assert_eq!(
        explain(&sink, &p, y1).unwrap_err().to_string(),
        format!("`y` -> `next`: {y1} has no successors")
    );
}

#[test]
fn unbound_and_malformed_patterns_are_rejected_when_built() {
    let err = PatternBuilder::new("typo")
        .node("mm", [Pred::op("MatMul")])
        .node("t", [])
        .edge("mm", "t")
        .require(uses("tt").equals(1))
        .finish()
        .unwrap_err();
    assert_eq!(
        err,
        PatternError::UnboundCapture {
            pattern: "typo".into(),
            capture: "tt".into(),
            used_in: "constraint `uses(tt) == 1`".into()
        }
    );
    let err = PatternBuilder::new("edge")
        .node("a", [])
        .edge("a", "b")
        .finish()
        .unwrap_err();
    assert!(matches!(err, PatternError::UnboundCapture { capture, .. } if capture == "b"));
    let err = PatternBuilder::new("apart")
        .node("a", [])
        .node("b", [])
        .finish()
        .unwrap_err();
    assert!(matches!(err, PatternError::Disconnected { capture, .. } if capture == "b"));
    let err = PatternBuilder::new("twice")
        .node("a", [])
        .node("a", [])
        .finish()
        .unwrap_err();
    assert!(matches!(err, PatternError::DuplicateCapture { .. }));
    assert!(matches!(builtin("nope"), Err(PatternError::Unknown { .. })));
}

#[test]
fn map_chains_compare_parameter_counts() {
    let p = crate::common::elementwise_chain(3, 5);
    let pat = builtin("elementwise_chain").expect("built-in");
    let all = find_all(&pat, &p);
    // double -> T1 -> tanh and tanh -> T2 -> residual, in id order.
    assert_eq!(all.len(), 2);
    assert!(all[0] < all[1]);
    let wider = PatternBuilder::new("wider")
        .node("a", [Pred::Kind(NodeClass::Map)])
        .node("t", [Pred::Kind(NodeClass::Access)])
        .node("b", [Pred::Kind(NodeClass::Map)])
        .flow("a", "t", "b")
        .require(params("a").compare(dmove::pattern::Cmp::Gt, params("b")))
        .finish()
        .expect("well-formed");
    let why = explain(&wider, &p, all[0].nodes[0]).unwrap_err();
    assert_eq!(
        why.to_string(),
        "`params(a) > params(b)` failed: 2 parameter(s) against 2 parameter(s)"
    );
}

#[test]
fn an_attribute_a_node_leaves_out_compares_its_operators_default() {
    // A Conv with no `group`: ONNX's default is 1.
    let p = dmove::onnx::import_bytes(
        &dmove::demo::suite::conv(4, 4, 6, 1, 0),
        &Default::default(),
    )
    .expect("imports");
    let conv = find_all(
        &PatternBuilder::new("any")
            .node("c", [Pred::Op("Conv".into())])
            .finish()
            .expect("ok"),
        &p,
    )[0]
    .nodes[0];
    let group = |g: i64| {
        PatternBuilder::new("grouped")
            .node("c", [Pred::attr("group", Attr::Int(g))])
            .finish()
            .expect("well-formed")
    };
    explain(&group(1), &p, conv).expect("the default matches");
    assert_eq!(
        explain(&group(2), &p, conv).unwrap_err().to_string(),
        "`c`: expected attribute group = 2, found no such attribute, whose default is 1"
    );
    // An attribute without a declared default is still just missing.
    let dilated = PatternBuilder::new("dilated")
        .node("c", [Pred::attr("dilations", Attr::Ints(vec![2, 2]))])
        .finish()
        .expect("well-formed");
    assert_eq!(
        explain(&dilated, &p, conv).unwrap_err().to_string(),
        "`c`: expected attribute dilations = [2, 2], found no such attribute"
    );
}
