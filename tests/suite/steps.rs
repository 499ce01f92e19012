//! Helpers shared by the transformation test files: apply through the engine with every check,
//! expect a precise refusal, compile and compare with the interpreter, small value helpers.

use dmove::check::{compare_outputs, random_inputs, same_outputs};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp;
use dmove::ir::{NodeId, Program, Tensor};
use dmove::transform::engine::{apply, Checks, Layer, Refusal, Step};
use dmove::transform::{lookup, NotApplicable, Params};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Applies `name` through the engine, requires that it ran its numerics check, and compares the
/// result with the program before the step once more (other inputs than the engine's).
pub fn apply_checked(p: &mut Program, name: &str, site: &[NodeId], ps: &Params) -> Step {
    let before = p.clone();
    let t = lookup(name).unwrap_or_else(|| panic!("{name} is registered"));
    let step =
        apply(p, t, site, ps, &Checks::default()).unwrap_or_else(|e| panic!("{name} applies: {e}"));
    assert!(step.passed(Layer::Numerics).is_some(), "{:?}", step.checks);
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
            ..
        }) => {
            assert_eq!(transformation, name);
            assert_eq!(node, at, "refused at the expected node: {reason}");
            reason
        }
        other => panic!("expected a precondition refusal, got {other}"),
    }
}

/// Applies `name` at `site`, expects the engine to reject the call itself (a site that does not
/// fit the roles, or parameters that do not fit the declarations) before the transformation
/// runs, and returns the message.
pub fn rejected(p: &mut Program, name: &str, site: &[NodeId], ps: &Params) -> String {
    let before = p.clone();
    let t = lookup(name).unwrap_or_else(|| panic!("{name} is registered"));
    let err = apply(p, t, site, ps, &Checks::default()).expect_err("rejected");
    assert_eq!(*p, before, "a rejected call leaves the program unchanged");
    assert!(
        matches!(err, Refusal::Params(_) | Refusal::Site(_)),
        "expected the engine to reject the call, got {err}"
    );
    err.to_string()
}

/// Compiles `p` to C (cache under the test target directory), runs it on random inputs and
/// compares with the interpreter; returns the generated source for structural assertions.
pub fn compiled_matches_interpreter(p: &Program) -> String {
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let c = Compiled::build_with(p, &config).expect("compiles");
    let inputs = random_inputs(p, 5).expect("inputs");
    let got = c.run(&inputs).expect("runs");
    let want = interp::run(p, &inputs).expect("interprets");
    compare_outputs(&got, &want).expect("C matches the interpreter");
    c.source().to_string()
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
