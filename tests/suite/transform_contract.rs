//! The engine as a typed library: parameters and sites are validated against each
//! transformation's schema before it runs, explanations list every candidate with its verdict,
//! and patterns bind to site roles with the binding checked first.

use crate::common;

use dmove::ir::{NodeId, NodeKind, Program};
use dmove::pattern::library::builtin;
use dmove::pattern::{PatternBuilder, Pred};
use dmove::transform::engine::{apply_repeatedly, Budget, Checks, Engine, Refusal, StopReason};
use dmove::transform::{
    all, check_binding, explain, find, nearest, BindError, ParamError, ParamKind, ParamValue,
    Params, SiteError, Verdict,
};

fn one(name: &str, v: ParamValue) -> Params {
    Params::from([(name.to_string(), v)])
}

fn maps(p: &Program) -> Vec<NodeId> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Map(_)) {
            v.push(n.id);
        }
    });
    v
}

fn refusal(p: &mut Program, name: &str, site: &[NodeId], params: &Params) -> Refusal {
    let before = p.clone();
    let t = find(name).expect("built in");
    let r = Engine::default()
        .apply(p, t, site, params)
        .expect_err("refused");
    assert_eq!(*p, before, "nothing changes");
    r
}

#[test]
fn an_unknown_key_names_the_accepted_keys_and_the_closest() {
    let mut p = common::matmul(4, 3, 5);
    let acc = maps(&p)[1];
    let r = refusal(
        &mut p,
        "MapTiling",
        &[acc],
        &one("tile", ParamValue::Ints(vec![2, 0, 0])),
    );
    let Refusal::Params(ParamError::Unknown {
        key,
        accepted,
        closest,
        ..
    }) = &r
    else {
        panic!("expected an unknown-key error, got {r}");
    };
    assert_eq!(
        (key.as_str(), accepted.as_slice(), *closest),
        ("tile", &["tiles"][..], Some("tiles"))
    );
    let r = refusal(
        &mut p,
        "Vectorize",
        &[acc],
        &one("bogus", ParamValue::Int(3)),
    );
    assert!(
        matches!(&r, Refusal::Params(ParamError::Unknown { accepted, .. }) if accepted.is_empty()),
        "{r}"
    );
    assert_eq!(r.to_string(), "Vectorize has no parameter `bogus`");
}

#[test]
fn a_wrong_type_says_what_was_expected() {
    let mut p = common::matmul(4, 3, 5);
    let acc = maps(&p)[1];
    let r = refusal(
        &mut p,
        "MapTiling",
        &[acc],
        &one("tiles", ParamValue::Ints(vec![2, 0])),
    );
    assert_eq!(
        r.to_string(),
        "MapTiling: parameter `tiles` expects one integer per map parameter, each in 0.. (e.g. 32,32,0), \
         found the list 2,0 (2 entries); the map has 3 parameters (i, j, k)"
    );
    let r = refusal(
        &mut p,
        "MapTiling",
        &[acc],
        &one("tiles", ParamValue::Str("big".into())),
    );
    assert!(r.to_string().ends_with("found the name `big`"), "{r}");
    let r = refusal(&mut p, "MapTiling", &[acc], &Params::new());
    assert!(
        matches!(r, Refusal::Params(ParamError::Missing { key: "tiles", .. })),
        "{r}"
    );
}

#[test]
fn sites_are_checked_for_arity_existence_and_kind_before_the_transformation_runs() {
    let mut p = common::elementwise_chain(3, 4);
    let m = maps(&p);
    let r = refusal(&mut p, "MapFusion", &[m[0]], &Params::new());
    assert!(
        matches!(r, Refusal::Site(SiteError::Arity { given: 1, .. })),
        "{r}"
    );
    assert!(
        r.to_string().contains("producer: a map, consumer: a map"),
        "{r}"
    );
    let r = refusal(&mut p, "MapFusion", &[m[0], NodeId(9999)], &Params::new());
    assert!(
        matches!(
            r,
            Refusal::Site(SiteError::Missing {
                role: "consumer",
                ..
            })
        ),
        "{r}"
    );
    let r = refusal(&mut p, "MapFusion", &[m[0], m[0]], &Params::new());
    assert!(
        matches!(r, Refusal::Site(SiteError::Repeated { .. })),
        "{r}"
    );
    let mut access = None;
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Access(_)) && access.is_none() {
            access = Some(n.id);
        }
    });
    let access = access.expect("an access node");
    let r = refusal(&mut p, "Parallelize", &[access], &Params::new());
    assert_eq!(
        r.to_string(),
        format!("Parallelize: {access} (the `map` role) is an access node, not a map")
    );
    let r = refusal(&mut p, "Parallelize", &[], &Params::new());
    assert!(
        matches!(r, Refusal::Site(SiteError::Arity { given: 0, .. })),
        "{r}"
    );
}

#[test]
fn every_schema_declares_roles_and_typed_parameters() {
    for t in all() {
        let s = t.schema();
        assert!(!s.site.is_empty(), "{} declares its site", s.name);
        assert!(
            !s.site[0].optional,
            "{}: the first role is required",
            s.name
        );
        let json = serde_json::to_value(s).expect("serializes");
        assert_eq!(json["name"], s.name);
        for (decl, j) in s
            .params
            .iter()
            .zip(json["params"].as_array().expect("params"))
        {
            assert_eq!(j["name"], decl.name);
            assert!(j["type"]["kind"].is_string(), "{}: {j}", s.name);
            assert!(
                !decl.doc.is_empty(),
                "{}.{} has a doc line",
                s.name,
                decl.name
            );
            if let ParamKind::Enum { values } = decl.kind {
                assert!(!values.is_empty());
            }
        }
    }
    assert!(find("mapfusion").is_err(), "one spelling, no case folding");
    let e = find("MapFuson").err().expect("misspelled");
    assert_eq!(e.closest, Some("MapFusion"));
}

#[test]
fn explain_lists_every_candidate_with_applies_or_its_reason() {
    let p = common::matmul(4, 3, 5);
    let t = find("Parallelize").expect("built in");
    let verdicts = explain(t, &p, &Params::new());
    assert_eq!(verdicts.len(), maps(&p).len());
    assert!(verdicts.iter().all(|e| e.applies()), "{verdicts:?}");
    let t = find("Vectorize").expect("built in");
    let verdicts = explain(t, &p, &Params::new());
    let refused: Vec<_> = verdicts.iter().filter(|e| !e.applies()).collect();
    assert!(!refused.is_empty());
    for e in refused {
        let Verdict::Refused(r) = &e.verdict else {
            unreachable!()
        };
        assert!(r.to_string().contains("Vectorize does not apply at"), "{r}");
    }
}

#[test]
fn nearest_explains_a_node_that_is_not_a_candidate() {
    let p = common::elementwise_chain(3, 4);
    let t = find("MapFusion").expect("built in");
    let m = maps(&p);
    let e = nearest(t, &p, m[1], &Params::new()).expect("a candidate");
    assert!(
        e.site.contains(&m[1]),
        "a candidate containing the node: {e:?}"
    );
    let mut access = None;
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Access(_)) && access.is_none() {
            access = Some(n.id);
        }
    });
    assert!(nearest(t, &p, access.expect("access"), &Params::new()).is_some());
}

#[test]
fn repeated_application_keeps_the_reasons_of_the_sites_it_skipped() {
    let mut p = common::matmul(4, 3, 5);
    let t = find("Parallelize").expect("built in");
    let done = apply_repeatedly(
        &mut p,
        t,
        &Params::new(),
        &Checks::default(),
        &Budget::steps(10),
    );
    assert_eq!(done.stop, StopReason::Fixpoint);
    assert_eq!(done.steps.len(), 2);
    assert_eq!(done.skipped.len(), 2, "{:?}", done.skipped);
    assert!(done
        .skipped
        .iter()
        .all(|r| r.to_string().contains("already parallel")));
}

#[test]
fn a_pattern_binds_to_roles_and_a_capture_of_the_wrong_kind_is_refused_first() {
    let gemm = find("MatMulAddToGemm").expect("built in");
    let pattern = builtin("matmul_add").expect("built in");
    assert!(check_binding(gemm.schema(), &pattern, &[("matmul", "mm")]).is_ok());
    let e = check_binding(gemm.schema(), &pattern, &[("matmul", "t")]).expect_err("t is data");
    assert!(matches!(e, BindError::WrongKind { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "capture `t` is an access node, but the `matmul` role of MatMulAddToGemm needs a MatMul node"
    );
    let e = check_binding(gemm.schema(), &pattern, &[("matmul", "x")]).expect_err("no x");
    assert!(matches!(e, BindError::UnknownCapture { .. }), "{e}");
    let e = check_binding(gemm.schema(), &pattern, &[("product", "mm")]).expect_err("no role");
    assert!(matches!(e, BindError::UnknownRole { .. }), "{e}");
    let relu = PatternBuilder::new("mm_relu")
        .node("matmul", [Pred::op("MatMul")])
        .node("add", [Pred::op("Relu")])
        .edge("matmul", "add")
        .finish()
        .expect("well formed");
    let e = check_binding(gemm.schema(), &relu, &[]).expect_err("Relu is no Add");
    assert!(e.to_string().contains("is a Relu node"), "{e}");
}
