//! The checks are proven, not claimed: deliberately broken transformations pass their own
//! preconditions and then compute the wrong result, break an invariant or introduce a data race.
//! Each must be refused by the right layer, the program restored byte for byte, and the refusal
//! reported with the transformation and the node.

use crate::common::{declare, elementwise_chain};
use dmove::ir::build::{In, Out};
use dmove::ir::text::print_exact;
use dmove::ir::{
    BinOp, DataKind, Graph, MapNode, NodeId, NodeKind, Program, Range, Schedule, Subset, SymExpr,
    TExpr,
};
use dmove::transform::engine::{Checks, Engine, Layer, Outcome, Refusal};
use dmove::transform::{
    find, Call, Level, NodeClass, NotApplicable, ParamValue, Params, Plan, Role, Schema,
    Transformation,
};

const MAP: &[Role] = &[Role::new("map", NodeClass::Map, "the map to break")];

/// A deliberately broken transformation: `rewrite` changes the program at the site map and
/// claims to have touched only it; no precondition is checked.
struct Broken {
    schema: &'static Schema,
    rewrite: fn(&mut Program, NodeId),
}

impl Transformation for Broken {
    fn schema(&self) -> &'static Schema {
        self.schema
    }
    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let (id, rewrite) = (call.site[0], self.rewrite);
        Ok(Plan::new(move |p| {
            rewrite(p, id);
            Ok(vec![id])
        }))
    }
}

/// The schema of a broken test transformation: one map as the site, no parameters.
const fn schema(name: &'static str, level: Level, doc: &'static str) -> Schema {
    Schema {
        name,
        level,
        doc,
        site: MAP,
        params: &[],
    }
}

/// Applies `f` to the body of map `id`.
fn in_body(p: &mut Program, id: NodeId, f: impl FnOnce(&mut MapNode)) {
    let edit = p.edit(id).expect("the site is a map");
    if let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind {
        f(m);
    }
}

/// Replaces the first tasklet's expressions in the map's body by `x + 1`: valid IR, wrong
/// values.
const WRONG_RESULT: Broken = Broken {
    schema: &schema(
        "TestWrongResult",
        Level::IntraOperator,
        "test only: a rewrite that computes something else",
    ),
    rewrite: |p, id| {
        in_body(p, id, |m| {
            for idx in m.body.ordered() {
                if let NodeKind::Tasklet(t) = &mut m.body.node_mut(idx).kind {
                    let input = TExpr::input(t.inputs[0].as_str());
                    for (_, e) in &mut t.outputs {
                        *e = TExpr::binary(BinOp::Add, input.clone(), TExpr::Const(1.0));
                    }
                    break;
                }
            }
        })
    },
};

/// Drops the declaration of every transient: the program then names undeclared containers.
const INVALID_IR: Broken = Broken {
    schema: &schema(
        "TestInvalidIr",
        Level::InterOperator,
        "test only: a rewrite that leaves an invalid program",
    ),
    rewrite: |p, _| p.data.retain(|_, d| d.kind != DataKind::Transient),
};

/// Marks the map parallel without asking whether its iterations conflict.
const RACY: Broken = Broken {
    schema: &schema(
        "TestRacy",
        Level::IntraOperator,
        "test only: parallelizes without a legality check",
    ),
    rewrite: |p, id| in_body(p, id, |m| m.schedule = Schedule::Parallel),
};

/// Disconnects the input of the innermost first tasklet under the map, leaving the map itself
/// and every declaration as they were: only a check of the rewritten scope finds it.
const BROKEN_BODY: Broken = Broken {
    schema: &schema(
        "TestBrokenBody",
        Level::IntraOperator,
        "test only: a rewrite that breaks an invariant deep inside a map",
    ),
    rewrite: |p, id| {
        in_body(p, id, |m| {
            assert!(disconnect_a_tasklet(&mut m.body), "a tasklet under the map");
        })
    },
};

/// Removes the first incoming edge of the first tasklet found in `g` or its nested scopes.
fn disconnect_a_tasklet(g: &mut Graph) -> bool {
    for idx in g.ordered() {
        if matches!(g.node(idx).kind, NodeKind::Tasklet(_)) {
            let edge = g.in_edges(idx)[0].id;
            g.remove_edge(edge);
            return true;
        }
        if let NodeKind::Map(m) = &mut g.node_mut(idx).kind {
            if disconnect_a_tasklet(&mut m.body) {
                return true;
            }
        }
    }
    false
}

/// An element-wise chain whose first map an engine with `checks` has parallelized (a checked
/// step), the engine, and that map as the site of the next step.
fn parallelized_once(checks: Checks) -> (Program, Engine, [NodeId; 1]) {
    let mut p = elementwise_chain(4, 6);
    let mut engine = Engine::new(checks);
    let site = [first_map(&p)];
    let parallelize = find("Parallelize").expect("registered");
    (engine.apply(&mut p, parallelize, &site, &Params::new())).expect("the map parallelizes");
    (p, engine, site)
}

/// The first top-level map of `p`.
fn first_map(p: &Program) -> NodeId {
    let mut maps = Vec::new();
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Map(_)) {
            maps.push(n.id);
        }
    });
    maps[0]
}

/// `S[0] = X[i]` for every i: each iteration writes the same element (last write wins
/// sequentially; a race in parallel).
fn last_element() -> Program {
    let mut p = Program::new("last");
    declare(&mut p, "X", &[8], DataKind::Input);
    declare(&mut p, "S", &[1], DataKind::Output);
    p.build(|b| {
        b.map(
            "last",
            vec![("i", Range::upto(8))],
            Schedule::Sequential,
            |b| {
                let x = Subset::element([SymExpr::sym("i")]);
                let s = Subset::element([SymExpr::Int(0)]);
                b.tasklet(
                    "copy",
                    vec![In("x", "X", x)],
                    vec![Out("y", "S", s, None, TExpr::input("x"))],
                );
            },
        );
    });
    p
}

/// Applies `t` at the first map and returns the refusal, asserting the program is unchanged.
fn refused(p: &mut Program, t: &dyn Transformation, checks: Checks) -> Refusal {
    let before = print_exact(p);
    let site = [first_map(p)];
    let refusal = Engine::new(checks)
        .apply(p, t, &site, &Params::new())
        .expect_err("a broken rewrite must be refused");
    assert_eq!(
        print_exact(p),
        before,
        "the program must be restored exactly"
    );
    refusal
}

#[test]
fn wrong_numerics_are_refused_by_the_numerics_layer() {
    let mut p = elementwise_chain(4, 6);
    let r = refused(&mut p, &WRONG_RESULT, Checks::default());
    assert!(matches!(r, Refusal::Numerics { .. }), "{r:?}");
    assert_eq!(r.layer(), Some(Layer::Numerics));
    let text = r.to_string();
    assert!(
        text.contains("TestWrongResult") && text.contains("changed the results"),
        "{text}"
    );
}

#[test]
fn wrong_numerics_are_refused_when_the_original_s_outputs_come_from_the_step_before() {
    // The first step's rewritten region is the next step's original: its outputs are kept, not
    // recomputed, and the wrong rewrite after it must still be refused against them.
    let (mut p, mut engine, site) = parallelized_once(Checks::default());
    let before = print_exact(&p);
    let r = engine
        .apply(&mut p, &WRONG_RESULT, &site, &Params::new())
        .expect_err("a wrong result must be refused");
    assert!(matches!(r, Refusal::Numerics { .. }), "{r:?}");
    assert_eq!(
        print_exact(&p),
        before,
        "the program must be restored exactly"
    );
    // A correct step from the same program reads the kept outputs too, and says so.
    let tiles: Params = [("tiles".to_string(), ParamValue::Ints(vec![2, 0]))].into();
    let tiling = find("MapTiling").expect("registered");
    let step = engine
        .apply(&mut p, tiling, &site, &tiles)
        .expect("tiling applies");
    let how = step.passed(Layer::Numerics).expect("numerics ran");
    assert!(how.contains("outputs kept from the previous step"), "{how}");
}

#[test]
fn wrong_numerics_pass_only_when_the_user_lowered_numerics_and_the_step_says_so() {
    let mut p = elementwise_chain(4, 6);
    let site = [first_map(&p)];
    let checks = Checks::default().lower(Layer::Numerics, "test: accepted on purpose");
    let step = Engine::new(checks)
        .apply(&mut p, &WRONG_RESULT, &site, &Params::new())
        .expect("numerics lowered");
    let numerics = step.checks.iter().find(|c| c.layer == Layer::Numerics);
    assert_eq!(
        numerics.map(|c| &c.outcome),
        Some(&Outcome::Lowered {
            reason: "test: accepted on purpose".into(),
            waived: vec![]
        })
    );
    assert_eq!(
        step.lowered().get(&Layer::Numerics).map(String::as_str),
        Some("test: accepted on purpose")
    );
}

#[test]
fn invalid_ir_is_refused_by_the_structural_layer_even_with_everything_lowered() {
    let mut p = elementwise_chain(4, 6);
    let checks = Checks::default()
        .lower(Layer::Numerics, "test")
        .lower(Layer::Legality, "test")
        .lower(Layer::Structural, "cannot be lowered");
    let r = refused(&mut p, &INVALID_IR, checks);
    assert!(matches!(r, Refusal::Invalid { .. }), "{r:?}");
    assert_eq!(r.layer(), Some(Layer::Structural));
    assert!(r.to_string().contains("produced an invalid program"), "{r}");
}

#[test]
fn an_invariant_broken_deep_inside_a_map_is_found_by_the_check_of_what_changed() {
    // After a checked tiling the same engine validates only what each step changed (debug
    // builds also validate the whole program and compare): the broken tasklet sits two scopes
    // below the top level, under a map whose own node is unchanged.
    let mut p = elementwise_chain(4, 6);
    let mut engine = Engine::new(Checks::default().lower(Layer::Numerics, "test"));
    let tiling = find("MapTiling").expect("registered");
    let site = [first_map(&p)];
    let tiles: Params = [("tiles".to_string(), ParamValue::Ints(vec![2, 0]))].into();
    engine
        .apply(&mut p, tiling, &site, &tiles)
        .expect("tiling applies");
    let before = print_exact(&p);
    let r = engine
        .apply(&mut p, &BROKEN_BODY, &site, &Params::new())
        .expect_err("a broken body must be refused");
    assert!(matches!(r, Refusal::Invalid { .. }), "{r:?}");
    assert_eq!(
        print_exact(&p),
        before,
        "the program must be restored exactly"
    );
}

/// Shrinks every transient to one row: no node changes, but every access to them now reaches
/// outside its container.
const SHRUNK_DECLARATIONS: Broken = Broken {
    schema: &schema(
        "TestShrunkDeclarations",
        Level::InterOperator,
        "test only: a rewrite that changes declarations and no node",
    ),
    rewrite: |p, _| {
        for d in (p.data.values_mut()).filter(|d| d.kind == DataKind::Transient) {
            d.shape[0] = SymExpr::Int(1);
        }
    },
};

#[test]
fn a_declaration_changed_under_unchanged_nodes_is_found_by_the_check_of_what_changed() {
    // After a checked step the engine checks only what the next one changed; a step that only
    // changes declarations changes no node, so the check must reach the accesses to them.
    let (mut p, mut engine, site) =
        parallelized_once(Checks::default().lower(Layer::Numerics, "test"));
    let before = print_exact(&p);
    let r = engine
        .apply(&mut p, &SHRUNK_DECLARATIONS, &site, &Params::new())
        .expect_err("accesses outside their containers must be refused");
    assert!(matches!(r, Refusal::Invalid { .. }), "{r:?}");
    assert!(r.to_string().contains("outside 0..1"), "{r}");
    assert_eq!(
        print_exact(&p),
        before,
        "the program must be restored exactly"
    );
}

#[test]
fn a_data_race_is_refused_by_the_legality_layer() {
    let mut p = last_element();
    let r = refused(&mut p, &RACY, Checks::default());
    match &r {
        Refusal::Race { node, reason, .. } => {
            assert_eq!(*node, first_map(&p));
            assert!(
                reason.contains('S'),
                "the reason names the container: {reason}"
            );
        }
        other => panic!("expected a race refusal, got {other:?}"),
    }
    assert_eq!(r.layer(), Some(Layer::Legality));
}

#[test]
fn a_race_passes_only_with_legality_lowered_and_is_recorded_as_waived() {
    let mut p = last_element();
    let site = [first_map(&p)];
    let checks = Checks::default().lower(Layer::Legality, "test: known race");
    let step = Engine::new(checks)
        .apply(&mut p, &RACY, &site, &Params::new())
        .expect("legality lowered");
    let legality = step.checks.iter().find(|c| c.layer == Layer::Legality);
    match legality.map(|c| &c.outcome) {
        Some(Outcome::Lowered { reason, waived }) => {
            assert_eq!(reason, "test: known race");
            assert_eq!(waived.len(), 1, "{waived:?}");
        }
        other => panic!("expected a lowered legality record, got {other:?}"),
    }
}

#[test]
fn the_built_in_parallelize_refuses_the_same_race_in_its_preconditions() {
    let mut p = last_element();
    let t = dmove::transform::find("Parallelize").expect("built in");
    let r = refused(&mut p, t, Checks::default());
    assert!(matches!(r, Refusal::NotApplicable(_)), "{r:?}");
    assert_eq!(r.layer(), None);
}
