//! Program fingerprints: one hash of the whole program for traces, and one hash per node to
//! find what a step changed.

use crate::ir::text::print_digests;
use crate::ir::{Graph, NodeId, NodeKind, Program};
use sha2::{Digest, Sha256};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// The hash of the program's exact text form (every declaration, node id, memlet) with each
/// constant value as its digest, so two programs hash alike exactly when they print alike, and
/// a step hashes the program's structure, not its weights (each constant's digest is computed
/// once per value).
pub fn program_hash(p: &Program) -> String {
    let digest = Sha256::digest(print_digests(p).as_bytes());
    hex::encode(&digest[..16])
}

/// A hash per node of everything a pattern can see of it: its scope, label, kind (a map without
/// its body), the declaration of the container an access node refers to, and its edges. Only
/// compared within one process, before and after one step.
pub(super) fn fingerprints(p: &Program) -> BTreeMap<NodeId, u64> {
    let mut out = BTreeMap::new();
    graph_fingerprints(p, &p.graph, None, &mut out);
    out
}

fn graph_fingerprints(
    p: &Program,
    g: &Graph,
    scope: Option<NodeId>,
    out: &mut BTreeMap<NodeId, u64>,
) {
    let mut own: BTreeMap<petgraph::stable_graph::NodeIndex, u64> = BTreeMap::new();
    for idx in g.node_indices() {
        let n = g.node(idx);
        let mut h = DefaultHasher::new();
        (scope, &n.label).hash(&mut h);
        match &n.kind {
            NodeKind::Map(m) => {
                format!("map {:?} {:?}", m.params, m.schedule).hash(&mut h);
                graph_fingerprints(p, &m.body, Some(n.id), out);
            }
            NodeKind::Access(d) => format!("{d} {:?}", p.data.get(d)).hash(&mut h),
            other => format!("{other:?}").hash(&mut h),
        }
        own.insert(idx, h.finish());
    }
    // Edges are folded in with a commutative sum so their storage order does not matter.
    let mut edges: BTreeMap<petgraph::stable_graph::NodeIndex, u64> = BTreeMap::new();
    for e in g.edges() {
        let (s, t) = (e.from, e.to);
        let mut h = DefaultHasher::new();
        (g.node(s).id, g.node(t).id, format!("{:?}", e.memlet)).hash(&mut h);
        let eh = h.finish();
        for end in [s, t] {
            let slot = edges.entry(end).or_default();
            *slot = slot.wrapping_add(eh);
        }
    }
    for (idx, h) in own {
        let e = edges.get(&idx).copied().unwrap_or(0);
        out.insert(g.node(idx).id, h ^ e.rotate_left(17));
    }
}

/// Ids added, removed, and present in both with a different fingerprint, each sorted.
pub(super) fn compare(
    before: &BTreeMap<NodeId, u64>,
    after: &BTreeMap<NodeId, u64>,
) -> (Vec<NodeId>, Vec<NodeId>, Vec<NodeId>) {
    let added = after
        .keys()
        .filter(|k| !before.contains_key(k))
        .copied()
        .collect();
    let removed = before
        .keys()
        .filter(|k| !after.contains_key(k))
        .copied()
        .collect();
    let modified = after
        .iter()
        .filter(|(k, h)| before.get(k).is_some_and(|b| b != *h))
        .map(|(k, _)| *k)
        .collect();
    (added, removed, modified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::text::{parse, print_exact};
    use crate::ir::{Constant, Tensor};
    use crate::onnx::{import_file, ImportOptions};

    fn mlp() -> Program {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlp.onnx");
        import_file(&path, &ImportOptions::default()).expect("the fixture imports")
    }

    #[test]
    fn the_hash_survives_printing_and_parsing_the_exact_form() {
        let p = mlp();
        let back = parse(&print_exact(&p)).expect("parses").program;
        assert_eq!(program_hash(&back), program_hash(&p));
    }

    #[test]
    fn the_hash_reads_every_constant_value() {
        let p = mlp();
        let mut changed = p.clone();
        let w = changed.constants.get_mut("w").expect("the weight");
        let mut values = w.to_f64_vec();
        values[7] += 1.0;
        *w = Constant::new(Tensor::from_f64(w.dtype(), w.shape.clone(), &values));
        assert_ne!(program_hash(&changed), program_hash(&p));
        // A copy shares each value and its digest: hashing it again costs no weight bytes.
        let copy = p.clone();
        assert!(std::ptr::eq(
            p.constants["w"].digest(),
            copy.constants["w"].digest()
        ));
    }
}
