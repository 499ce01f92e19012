//! ReductionFusion and LayoutTransform on the real expansions of single operators: each applied
//! (checked by the engine's numerics and again here against values computed independently),
//! refused with the expected reason on the expected node (program untouched), and compiled to C
//! and compared with the interpreter.

#[path = "transform_fused/layout.rs"]
mod layout;
#[path = "transform_fused/reduction.rs"]
mod reduction;

use dmove::check::{compare_outputs, random_inputs, same_outputs, single_op_program};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp;
use dmove::ir::{Attr, DType, NodeId, NodeKind, Program, SymExpr, Tensor};
use dmove::ops::expand::expand_all;
use dmove::ops::TensorType;
use dmove::transform::engine::{apply, Checks, Refusal, Step};
use dmove::transform::{lookup, NotApplicable, Params};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The expansion of one operator applied to f32 inputs of the given shapes.
pub fn expanded(op: &str, attrs: &[(&str, Attr)], shapes: &[&[i64]]) -> Program {
    let attrs = attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let inputs: Vec<Option<TensorType>> = shapes
        .iter()
        .map(|s| {
            let dims = s.iter().map(|&d| SymExpr::Int(d)).collect();
            Some(TensorType::new(DType::F32, dims))
        })
        .collect();
    let mut p = single_op_program(op, attrs, &inputs, &vec![None; shapes.len()])
        .expect("the operator applies");
    expand_all(&mut p).expect("the operator expands");
    p
}

/// Ids of the maps directly in the top-level graph, in program order, with their labels.
pub fn top_maps(p: &Program) -> Vec<(NodeId, String)> {
    p.graph
        .ordered()
        .into_iter()
        .map(|i| p.graph.node(i))
        .filter(|n| matches!(n.kind, NodeKind::Map(_)))
        .map(|n| (n.id, n.label.clone()))
        .collect()
}

/// Applies `name` through the engine, requires that the engine compared outputs, and compares
/// the result with the program before the step once more.
pub fn apply_checked(p: &mut Program, name: &str, site: &[NodeId], ps: &Params) -> Step {
    let before = p.clone();
    let t = lookup(name).unwrap_or_else(|| panic!("{name} is registered"));
    let step =
        apply(p, t, site, ps, &Checks::default()).unwrap_or_else(|e| panic!("{name} applies: {e}"));
    assert!(
        step.checks.iter().any(|c| c == "numerics"),
        "{:?}",
        step.checks
    );
    let inputs = random_inputs(&before, 11).expect("inputs");
    same_outputs(&before, p, &inputs).expect("same outputs as before the step");
    step
}

/// Applies `name` expecting a precondition refusal at node `at`; the program must be unchanged.
/// Returns the reason.
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
            assert_eq!(node, at, "refused on the expected node: {reason}");
            reason
        }
        other => panic!("expected a precondition refusal, got {other}"),
    }
}

/// Compiles `p` to C, runs it on random inputs and compares with the interpreter.
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
