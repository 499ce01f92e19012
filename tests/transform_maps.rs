//! Intra- and inter-operator map transformations: each one applied (results checked by the
//! engine and again here, against the interpreter and hand-computed values), refused with the
//! expected reason (program untouched), and, where it changes the C, compiled and run.

mod common;
#[path = "transform_maps/nesting.rs"]
mod nesting;
#[path = "transform_maps/reduction.rs"]
mod reduction;
#[path = "transform_maps/schedules.rs"]
mod schedules;
#[path = "transform_maps/staging.rs"]
mod staging;

use dmove::check::{compare_outputs, random_inputs, same_outputs};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp;
use dmove::ir::{MapNode, NodeId, NodeKind, Program, Tensor};
use dmove::transform::engine::{apply, Checks, Refusal, Step};
use dmove::transform::{lookup, NotApplicable, ParamValue, Params};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The id of the map labelled `label` (the last one in walk order).
pub fn map_id(p: &Program, label: &str) -> NodeId {
    let mut found = None;
    p.graph.walk(&mut |n| {
        if n.label == label && matches!(n.kind, NodeKind::Map(_)) {
            found = Some(n.id);
        }
    });
    found.unwrap_or_else(|| panic!("no map labelled {label}"))
}

/// The map node `id`.
pub fn map(p: &Program, id: NodeId) -> &MapNode {
    match &p.node(id).expect("node exists").kind {
        NodeKind::Map(m) => m,
        other => panic!("{id} is a {} node", other.kind_name()),
    }
}

pub fn param_names(m: &MapNode) -> Vec<String> {
    m.params.iter().map(|q| q.name.clone()).collect()
}

pub fn params(pairs: &[(&str, ParamValue)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Applies `name` through the engine, requires that the engine ran its numerics check, and
/// compares the result with `p` before the step once more in the interpreter.
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
    assert_ne!(step.hash_before, step.hash_after);
    let inputs = random_inputs(&before, 11).expect("inputs");
    same_outputs(&before, p, &inputs).expect("same outputs as before the step");
    step
}

/// Applies `name` expecting a refusal for a failed precondition at `at`; the program must be
/// unchanged. Returns the reason.
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
            assert_eq!(node, at);
            reason
        }
        other => panic!("expected a precondition refusal, got {other}"),
    }
}

/// Builds in a cache under the test target directory.
fn config() -> BuildConfig {
    let mut c = BuildConfig::from_env();
    c.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    c
}

/// Compiles `p` to C, runs it on random inputs and compares with the interpreter; returns the
/// generated source for structural assertions.
pub fn compiled_matches_interpreter(p: &Program) -> String {
    let source = dmove::codegen::emit(p).expect("emits").source;
    let c = Compiled::build_with(p, &config()).expect("compiles");
    let inputs = random_inputs(p, 5).expect("inputs");
    let got = c.run(&inputs).expect("runs");
    let want = interp::run(p, &inputs).expect("interprets");
    compare_outputs(&got, &want).expect("C matches the interpreter");
    source
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

/// `A·B` for row-major `a` (m×k) and `b` (k×n), in f64, computed independently of the IR.
pub fn matmul_by_hand(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|x| f64::from(a[i * k + x]) * f64::from(b[x * n + j]))
                .sum();
        }
    }
    c
}

/// Asserts `got` equals `want` within a small absolute tolerance.
pub fn assert_values(got: &Tensor, want: &[f64]) {
    let got = got.to_f64_vec();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-4, "element {i}: got {g}, want {w}");
    }
}

/// Runs a matmul program on fixed inputs and checks `C` against the hand computation.
pub fn assert_matmul(p: &Program, m: usize, k: usize, n: usize) {
    let (a, b) = (values(m * k, 1), values(k * n, 2));
    let out = run(
        p,
        &[
            ("A", Tensor::f32(vec![m, k], a.clone())),
            ("B", Tensor::f32(vec![k, n], b.clone())),
        ],
    );
    assert_values(&out["C"], &matmul_by_hand(&a, &b, m, k, n));
}
