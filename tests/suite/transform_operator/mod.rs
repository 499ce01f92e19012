//! Operator-level transformations and the Expand transformation (with Conv's im2col): each is
//! applied and checked with the interpreter, refused with the expected reason on the expected
//! node, and compared with the original on random inputs. This file holds the shared helpers;
//! each group of transformations has its own module.

mod expansion;
mod fusion;
mod layout;
mod simplify;

pub use crate::steps::rejected;

use dmove::check::{random_inputs, same_outputs};
use dmove::ir::{NodeId, NodeKind, Program, Tensor};
use dmove::onnx::{import, ImportOptions, ModelBuilder};
use dmove::transform::engine::{apply, Checks, Layer, Refusal, Step};
use dmove::transform::{lookup, NotApplicable, ParamValue, Params};
use std::collections::BTreeMap;

/// Imports an in-memory model.
pub fn model(b: ModelBuilder) -> Program {
    // As written: the operator-level rewrites under test must see the nodes the importer
    // would otherwise fold or remove.
    let opts = ImportOptions {
        as_written: true,
        ..ImportOptions::default()
    };
    import(&b.build(), &opts).expect("the test model imports")
}

/// The operators of the library nodes, in program order.
pub fn ops(p: &Program) -> Vec<String> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Library(l) = &n.kind {
            v.push(l.op.clone());
        }
    });
    v
}

/// The `k`-th library node applying `op`.
pub fn node(p: &Program, op: &str, k: usize) -> NodeId {
    let mut found = Vec::new();
    p.graph.walk(&mut |n| {
        if matches!(&n.kind, NodeKind::Library(l) if l.op == op) {
            found.push(n.id);
        }
    });
    *found
        .get(k)
        .unwrap_or_else(|| panic!("no {op} number {k} in {:?}", ops(p)))
}

/// The library node `id`'s attributes.
pub fn attrs(p: &Program, id: NodeId) -> BTreeMap<String, dmove::ir::Attr> {
    match &p.node(id).expect("exists").kind {
        NodeKind::Library(l) => l.attrs.clone(),
        other => panic!("{id} is a {}", other.kind_name()),
    }
}

pub fn params(pairs: &[(&str, ParamValue)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Applies `name` at `site` through the engine (with its numerics check) and returns the step.
pub fn applied(p: &mut Program, name: &str, site: &[NodeId], params: &Params) -> Step {
    let t = lookup(name).expect("registered");
    let step = apply(p, t, site, params, &Checks::default())
        .unwrap_or_else(|e| panic!("{name} at {site:?} refused: {e}"));
    assert!(step.passed(Layer::Numerics).is_some(), "{:?}", step.checks);
    step
}

/// Applies `name` at `site`, expects a precondition refusal and checks the program is
/// unchanged; returns the refusal.
pub fn refused(p: &mut Program, name: &str, site: &[NodeId], params: &Params) -> NotApplicable {
    let before = p.clone();
    let t = lookup(name).expect("registered");
    let err = apply(p, t, site, params, &Checks::default()).expect_err("must be refused");
    assert_eq!(
        *p, before,
        "a refused step must leave the program unchanged"
    );
    match err {
        Refusal::NotApplicable(n) => {
            assert_eq!(n.transformation, name);
            n
        }
        other => panic!("expected a precondition refusal, got {other}"),
    }
}

/// Asserts that `refusal` names `node` and gives a reason containing `text`.
pub fn assert_reason(refusal: &NotApplicable, node: NodeId, text: &str) {
    assert_eq!(refusal.node, node, "{refusal}");
    assert!(refusal.reason.contains(text), "{refusal}");
}

/// Independent numerics: both programs on random inputs from a seed the engine does not use.
pub fn same_results(original: &Program, rewritten: &Program) {
    for seed in [11, 12] {
        let inputs = random_inputs(original, seed).expect("inputs");
        same_outputs(original, rewritten, &inputs).expect("same results");
    }
}

/// Runs `p` on `inputs` and returns output `name`.
pub fn output(p: &Program, inputs: &[(&str, Tensor)], name: &str) -> Tensor {
    let inputs: BTreeMap<String, Tensor> = inputs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    dmove::interp::run(p, &inputs).expect("runs")[name].clone()
}

/// `n` deterministic, distinct-looking values.
pub fn values(n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + 3) % 11) as f32 * scale - 1.0)
        .collect()
}
