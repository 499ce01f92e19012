//! Intra- and inter-operator map transformations: each one applied (results checked by the
//! engine and again here, against the interpreter and hand-computed values), refused with the
//! expected reason (program untouched), and, where it changes the C, compiled and run.

mod nesting;
mod packing;
mod reduction;
mod schedules;
mod squeeze;
mod staging;

use dmove::ir::{MapNode, NodeId, NodeKind, Program, Tensor};
use dmove::transform::{ParamValue, Params};

pub use crate::steps::{
    apply_checked, assert_values, compiled_matches_interpreter, refused, rejected, run, values,
};

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
