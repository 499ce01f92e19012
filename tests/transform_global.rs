//! Inter-operator / global transformations: SiblingMapFusion, BufferReuse and OnTheFlyFusion,
//! each applied (results checked by the engine and again here against hand-computed values),
//! refused with the expected reason on the expected node (program untouched), and compiled to C
//! and compared with the interpreter.

#[path = "transform_global/buffers.rs"]
mod buffers;
mod common;
#[path = "transform_global/on_the_fly.rs"]
mod on_the_fly;
#[path = "transform_global/siblings.rs"]
mod siblings;

use dmove::check::{compare_outputs, random_inputs, same_outputs};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp;
use dmove::ir::build::{In, Out};
use dmove::ir::{NodeId, NodeKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Tensor};
use dmove::transform::engine::{apply, Checks, Refusal, Step};
use dmove::transform::{lookup, NotApplicable, Params};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub fn s(name: &str) -> SymExpr {
    SymExpr::sym(name)
}

/// A one-tasklet map over `ranges` (parameters `i`, `j`, … unless `names` says otherwise)
/// writing `out[idx]` from the given reads.
pub fn map1(
    p: &mut Program,
    label: &str,
    params: &[(&str, i64)],
    reads: Vec<In>,
    out: (&str, Subset),
    value: TExpr,
) -> NodeId {
    let params: Vec<(&str, Range)> = params.iter().map(|(n, e)| (*n, Range::upto(*e))).collect();
    p.build(|b| {
        b.map(label, params, Schedule::Sequential, |b| {
            b.tasklet(label, reads, vec![Out("o", out.0, out.1, None, value)]);
        })
    })
}

/// The first top-level access node of `data`, in topological order.
pub fn access_id(p: &Program, data: &str) -> NodeId {
    p.graph
        .ordered()
        .into_iter()
        .map(|i| p.graph.node(i))
        .find(|n| matches!(&n.kind, NodeKind::Access(d) if d == data))
        .map(|n| n.id)
        .unwrap_or_else(|| panic!("no access node of {data}"))
}

/// Applies `name` through the engine, requires that it ran its numerics check, and compares the
/// result with the program before the step once more.
pub fn apply_checked(p: &mut Program, name: &str, site: &[NodeId], ps: &Params) -> Step {
    let before = p.clone();
    let t = lookup(name).unwrap_or_else(|| panic!("{name} is registered"));
    let step =
        apply(p, t, site, ps, &Checks::default()).unwrap_or_else(|e| panic!("{name} applies: {e}"));
    assert!(
        step.checks.contains(&"numerics".to_string()),
        "{:?}",
        step.checks
    );
    let inputs = random_inputs(&before, 11).expect("inputs");
    same_outputs(&before, p, &inputs).expect("same outputs as before the step");
    step
}

/// Applies `name` expecting a precondition refusal at `at`; the program must be unchanged.
pub fn refused(p: &mut Program, name: &str, site: &[NodeId], ps: &Params, at: NodeId) -> String {
    let before = p.clone();
    let t = lookup(name).unwrap_or_else(|| panic!("{name} is registered"));
    let err = apply(p, t, site, ps, &Checks::default()).expect_err("refused");
    assert_eq!(*p, before, "a refused step leaves the program unchanged");
    match err {
        Refusal::NotApplicable(NotApplicable {
            transformation,
            node,
            reason,
        }) => {
            assert_eq!(transformation, name);
            assert_eq!(node, at, "refused at the expected node: {reason}");
            reason
        }
        other => panic!("expected a precondition refusal, got {other}"),
    }
}

/// Compiles `p`, runs it on random inputs and compares with the interpreter.
pub fn compiled_matches_interpreter(p: &Program) {
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let c = Compiled::build_with(p, &config).expect("compiles");
    let inputs = random_inputs(p, 5).expect("inputs");
    let got = c.run(&inputs).expect("runs");
    let want = interp::run(p, &inputs).expect("interprets");
    compare_outputs(&got, &want).expect("C matches the interpreter");
}

/// Runs `p` in the interpreter on `inputs` given by name.
pub fn run(p: &Program, inputs: &[(&str, Tensor)]) -> BTreeMap<String, Tensor> {
    let map = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    interp::run(p, &map).expect("runs")
}

/// Deterministic test values in [-1.5, 1.5].
pub fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + seed * 3) % 13) as f32 * 0.25 - 1.5)
        .collect()
}

/// Asserts `got` equals `want` within a small absolute tolerance.
pub fn assert_values(got: &Tensor, want: &[f64]) {
    let got = got.to_f64_vec();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-4, "element {i}: got {g}, want {w}");
    }
}

/// Shorthand for a tasklet read.
pub fn read<'a>(conn: &'a str, data: &'a str, idx: Vec<SymExpr>) -> In<'a> {
    In(conn, data, Subset::element(idx))
}
