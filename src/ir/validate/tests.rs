use super::*;
use crate::ir::build::{In, Out};
use crate::ir::{DType, DataDesc, DataKind, Memlet, Range, Schedule, Subset, SymExpr, TExpr};

/// Y[i] = X[i + shift] over i in 0:4, with X of length `x_len`.
fn shifted_copy(x_len: i64, shift: i64) -> Program {
    let mut p = Program::new("copy");
    p.data.insert(
        "X".into(),
        DataDesc::new(DType::F32, vec![x_len.into()], DataKind::Input),
    );
    p.data.insert(
        "Y".into(),
        DataDesc::new(DType::F32, vec![4.into()], DataKind::Output),
    );
    p.inputs.push("X".into());
    p.outputs.push("Y".into());
    let i = || SymExpr::sym("i");
    p.build(|b| {
        b.map(
            "copy",
            vec![("i", Range::upto(4))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "t",
                    vec![In("x", "X", Subset::element([i() + shift]))],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([i()]),
                        None,
                        TExpr::input("x"),
                    )],
                );
            },
        );
    });
    p
}

fn messages(p: &Program) -> Vec<String> {
    validate(p)
        .err()
        .map(|e| e.0.iter().map(|v| v.to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn a_valid_program_passes() {
    assert_eq!(validate(&shifted_copy(5, 1)), Ok(()));
}

#[test]
fn out_of_bounds_memlets_name_the_edge_and_the_range() {
    let m = messages(&shifted_copy(4, 1));
    assert!(
        m.iter()
            .any(|s| s.contains("X[i + 1]") && s.contains("reaches [1, 5) outside 0..4")),
        "{m:?}"
    );
}

#[test]
fn undeclared_containers_and_unconnected_connectors_are_reported_together() {
    let mut p = shifted_copy(5, 0);
    p.data.remove("Y");
    let mut tasklet = None;
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Tasklet(_)) {
            tasklet = Some(n.id);
        }
    });
    let (body, idx) = p
        .graph
        .locate_mut(tasklet.expect("tasklet"))
        .expect("found");
    let input = body.in_edges(idx)[0].id;
    body.remove_edge(input);
    let m = messages(&p);
    assert!(
        m.iter().any(|s| s.contains("undeclared container `Y`")),
        "{m:?}"
    );
    assert!(
        m.iter()
            .any(|s| s.contains("signature names undeclared container `Y`")),
        "{m:?}"
    );
    assert!(
        m.iter()
            .any(|s| s.contains("input connector `x` is not connected")),
        "{m:?}"
    );
}

#[test]
fn cycles_and_bad_memlets_are_found() {
    let mut p = shifted_copy(5, 0);
    let order = p.graph.ordered();
    let (first, last) = (order[0], order[order.len() - 1]);
    p.graph.add_edge(
        last,
        first,
        Memlet::new("X", Subset::full(&[SymExpr::Int(5)])),
    );
    let m = messages(&p);
    assert!(m.iter().any(|s| s.contains("dataflow cycle")), "{m:?}");
    assert!(
        m.iter()
            .any(|s| s.contains("memlet moves `X` but the access node is `Y`")),
        "{m:?}"
    );
}

#[test]
fn a_check_of_what_changed_finds_a_cycle_through_a_changed_node() {
    let mut p = shifted_copy(5, 0);
    let order = p.graph.ordered();
    let (first, last) = (order[0], order[order.len() - 1]);
    let closing = p.graph.node(last).id;
    p.graph.add_edge(
        last,
        first,
        Memlet::new("Y", Subset::full(&[SymExpr::Int(4)])),
    );
    let names = BTreeSet::new();
    let since = |changed: NodeId| {
        let verdict = validate_since(
            &p,
            &Since {
                node: &|n| match n.id == changed {
                    true => Fresh::Changed,
                    false => Fresh::No,
                },
                taken_elsewhere: &|_| false,
                names: Some(&names),
                signature: false,
            },
        );
        verdict.map_err(|e| e.to_string())
    };
    let found = since(closing).expect_err("the cycle runs through the changed node");
    assert!(found.contains("dataflow cycle"), "{found}");
    // Every node of this scope is on the cycle, so any of them finds it.
    let other = p.graph.node(first).id;
    assert!(since(other).is_err_and(|e| e.contains("dataflow cycle")));
}
