//! Program fingerprints: one hash of the whole program for traces, and what a step changed,
//! node by node.

use crate::ir::text::{
    hash_graph_line, node_digest, print_hash_header, print_hash_header_with, scope_digest,
    DeclLines,
};
use crate::ir::{Graph, Node, NodeId, NodeKind, Program};
use petgraph::stable_graph::NodeIndex;
use sha2::{Digest, Sha256};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

/// The hash of the program's exact text form (every declaration, node id, memlet) in its
/// Merkle form ([`crate::ir::text::print_for_hash`]: constants and scopes by their digests), so two programs
/// hash alike exactly when they print alike, and a step re-hashes the declarations and the
/// nodes it changed, not the weights or the rest of the graph.
pub fn program_hash(p: &Program) -> String {
    Header::of(p).hash(p)
}

/// The hashing state after a program's declarations, constants and signature
/// ([`print_hash_header`]): the hash of any program with the same ones (see [`same_header`])
/// costs only its graph line.
#[derive(Clone, Debug)]
pub(super) struct Header(Sha256);

impl Header {
    pub fn of(p: &Program) -> Header {
        Header(Sha256::new_with_prefix(print_hash_header(p)))
    }

    /// [`Header::of`] with the declaration lines `lines` kept from earlier programs.
    pub fn of_with(p: &Program, lines: &mut DeclLines) -> Header {
        Header(Sha256::new_with_prefix(print_hash_header_with(p, lines)))
    }

    /// The hash of `p`, whose header must be this one.
    pub fn hash(&self, p: &Program) -> String {
        let mut h = self.0.clone();
        h.update(hash_graph_line(&p.graph));
        hex::encode(&h.finalize()[..16])
    }
}

/// Whether `a` and `b` print the same header: compared, not printed.
pub(super) fn same_header(a: &Program, b: &Program) -> bool {
    a.name == b.name
        && a.inputs == b.inputs
        && a.outputs == b.outputs
        && a.symbols == b.symbols
        && a.constants == b.constants
        && a.data == b.data
}

/// What a step changed, found by comparing the program before and after it.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Ids that appeared, disappeared, or whose fingerprint (see [`fingerprint`]) changed, each
    /// sorted.
    pub added: Vec<NodeId>,
    pub removed: Vec<NodeId>,
    pub modified: Vec<NodeId>,
    /// The top-level nodes, of either program, that are or contain a changed node.
    pub top_level: BTreeSet<NodeId>,
    /// The maps, of either program, whose body differs from its counterpart's (or has none).
    pub bodies: BTreeSet<NodeId>,
    /// Whether a symbol changed: any shape or range may mention it, so everything changed.
    pub symbols: bool,
    /// The containers whose declaration appeared, changed or went away. Their access nodes,
    /// in every scope, count as modified (a node's fingerprint includes its container's
    /// declaration), so the checks of what changed look at every access to them.
    pub declared: BTreeSet<String>,
}

impl Changes {
    /// Whether map `id` of the rewritten program is new, or changed itself or anywhere in its
    /// body (always, when a symbol changed).
    pub fn changed_map(&self, id: NodeId) -> bool {
        self.symbols
            || self.bodies.contains(&id)
            || self.added.binary_search(&id).is_ok()
            || self.modified.binary_search(&id).is_ok()
    }
}

/// Every node's fingerprint, with its top-level ancestor (a top-level node is its own).
type Prints = BTreeMap<NodeId, (u64, NodeId)>;

/// Compares `before` and `after` scope by scope: a map body whose digest (kept by the graph,
/// see [`scope_digest`]) is the same on both sides is skipped whole, so the comparison costs
/// the scopes the step changed, plus a walk for the access nodes of the containers whose
/// declaration changed. When a symbol changed, every scope is compared.
pub(super) fn changes(before: &Program, after: &Program) -> Changes {
    let symbols = before.symbols != after.symbols;
    let declared = changed_declarations(before, after);
    let mut found = compared(before, after, symbols, !symbols);
    found.declared = declared;
    if !symbols {
        accesses_changed(after, &mut found);
    }
    if cfg!(debug_assertions) {
        // Debug builds (every test) prove skipping unchanged scopes and nodes changes nothing.
        let full = compared(before, after, symbols, false);
        assert_eq!(
            (
                &found.added,
                &found.removed,
                &found.modified,
                &found.top_level
            ),
            (&full.added, &full.removed, &full.modified, &full.top_level),
            "the changes found scope by scope differ from a full comparison"
        );
    }
    found
}

/// The containers declared differently in `before` and `after` (or in only one of them).
fn changed_declarations(before: &Program, after: &Program) -> BTreeSet<String> {
    if before.data.shared_with(&after.data) {
        return BTreeSet::new();
    }
    let gone_or_changed = (before.data.iter()).filter(|(name, d)| after.data.get(*name) != Some(d));
    let appeared = (after.data.keys()).filter(|name| !before.data.contains_key(*name));
    (gone_or_changed.map(|(name, _)| name).chain(appeared))
        .cloned()
        .collect()
}

/// Adds to `found` every access node of `after` to a container in `found.declared` that it
/// does not already list: as modified, with its top-level ancestor, and the maps around it as
/// changed bodies (whether a map's iterations race depends on its containers' declarations).
fn accesses_changed(after: &Program, found: &mut Changes) {
    if found.declared.is_empty() {
        return;
    }
    let mut more = Vec::new();
    walk_accesses(&after.graph, &mut Vec::new(), found, &mut more);
    for (id, top) in more {
        let listed = |v: &[NodeId]| v.binary_search(&id).is_ok();
        if !listed(&found.added) && !listed(&found.modified) {
            found.modified.push(id);
            found.modified.sort_unstable();
            found.top_level.insert(top);
        }
    }
}

/// The access nodes of `g` and its nested scopes to a container of `found.declared`, each with
/// its top-level ancestor (itself at the top level); the maps around them (`path`, outermost
/// first) go into `found.bodies`.
fn walk_accesses(
    g: &Graph,
    path: &mut Vec<NodeId>,
    found: &mut Changes,
    out: &mut Vec<(NodeId, NodeId)>,
) {
    for n in g.nodes() {
        match &n.kind {
            NodeKind::Access(d) if found.declared.contains(d) => {
                out.push((n.id, path.first().copied().unwrap_or(n.id)));
                found.bodies.extend(path.iter().copied());
            }
            NodeKind::Map(m) => {
                path.push(n.id);
                walk_accesses(&m.body, path, found, out);
                path.pop();
            }
            _ => {}
        }
    }
}

/// [`changes`], skipping the scopes and nodes whose digests are unchanged or not.
fn compared(before: &Program, after: &Program, symbols: bool, skip: bool) -> Changes {
    let (mut b, mut a) = (Prints::new(), Prints::new());
    let mut bodies = BTreeSet::new();
    let mut pair = Pairing {
        before,
        after,
        skip_unchanged: skip,
        b: &mut b,
        a: &mut a,
        bodies: &mut bodies,
    };
    pair.scopes(Some(&before.graph), Some(&after.graph), None, None);
    let mut out = Changes {
        symbols,
        bodies,
        ..Changes::default()
    };
    for (id, (print, top)) in &a {
        match b.get(id) {
            None => out.added.push(*id),
            Some((old, _)) if old != print => out.modified.push(*id),
            Some(_) => continue,
        }
        out.top_level.insert(*top);
        out.top_level.extend(b.get(id).map(|(_, t)| *t));
    }
    for (id, (_, top)) in &b {
        if !a.contains_key(id) {
            out.removed.push(*id);
            out.top_level.insert(*top);
        }
    }
    out
}

/// The two programs' fingerprints, gathered scope by scope.
struct Pairing<'a> {
    before: &'a Program,
    after: &'a Program,
    skip_unchanged: bool,
    b: &'a mut Prints,
    a: &'a mut Prints,
    bodies: &'a mut BTreeSet<NodeId>,
}

impl Pairing<'_> {
    /// Fingerprints the nodes of one scope on each side (`None`: the scope has no counterpart)
    /// and pairs the nested maps by id. A node with the same digest on both sides (content,
    /// body and edges) is skipped.
    fn scopes(
        &mut self,
        b: Option<&Graph>,
        a: Option<&Graph>,
        scope: Option<NodeId>,
        top: Option<NodeId>,
    ) {
        let mut same = Unchanged::new();
        if let (Some(gb), Some(ga), true) = (b, a, self.skip_unchanged) {
            if scope_digest(gb) == scope_digest(ga) {
                return;
            }
            same = unchanged_nodes(gb, ga);
        }
        self.bodies.extend(scope);
        let bodies_b = b.map(|g| level(self.before, g, scope, top, &same, self.b));
        let bodies_a = a.map(|g| level(self.after, g, scope, top, &same, self.a));
        let (bodies_b, bodies_a) = (bodies_b.unwrap_or_default(), bodies_a.unwrap_or_default());
        for (id, (body, top)) in &bodies_a {
            let other = bodies_b.get(id).map(|(g, _)| *g);
            self.scopes(other, Some(body), Some(*id), Some(*top));
        }
        for (id, (body, top)) in &bodies_b {
            if !bodies_a.contains_key(id) {
                self.scopes(Some(body), None, Some(*id), Some(*top));
            }
        }
    }
}

/// The nodes of `b` and of `a` with the same id and digest on both sides (a digest covers the
/// node, its body and its edges). A copy keeps node indices, so nodes are paired by index: one
/// that moved to another index is fingerprinted, which finds it unchanged all the same.
fn unchanged_nodes(b: &Graph, a: &Graph) -> Unchanged {
    let mut same = Unchanged::new();
    for i in a.node_indices() {
        // Digests kept on both sides answer without reading the nodes (a digest covers the
        // id): the common case, since a copy keeps the digests of the nodes it did not touch.
        let unchanged = match (b.kept_node_digest(i), a.kept_node_digest(i)) {
            (Some(kb), Some(ka)) => kb == ka,
            _ => {
                b.get_node(i).is_some_and(|n| n.id == a.node(i).id)
                    && node_digest(b, i) == node_digest(a, i)
            }
        };
        if unchanged {
            if same.len() <= i.index() {
                same.resize(i.index() + 1, false);
            }
            same[i.index()] = true;
        }
    }
    same
}

/// Whether the node at each index is unchanged (the same index on both sides).
type Unchanged = Vec<bool>;

/// Fingerprints the nodes of one scope but `skip` into `out`, and returns the bodies of those
/// that are maps by id, each with its top-level ancestor.
fn level<'g>(
    p: &Program,
    g: &'g Graph,
    scope: Option<NodeId>,
    top: Option<NodeId>,
    skip: &Unchanged,
    out: &mut Prints,
) -> BTreeMap<NodeId, (&'g Graph, NodeId)> {
    let mut bodies = BTreeMap::new();
    let edge = |from: NodeIndex, to: NodeIndex, m: &crate::ir::Memlet| {
        let mut h = DefaultHasher::new();
        (g.node(from).id, g.node(to).id, format!("{m:?}")).hash(&mut h);
        h.finish()
    };
    let skipped = |i: &NodeIndex| skip.get(i.index()).copied().unwrap_or(false);
    for idx in g.node_indices().filter(|i| !skipped(i)) {
        let n = g.node(idx);
        let top = top.unwrap_or(n.id);
        if let NodeKind::Map(m) = &n.kind {
            bodies.insert(n.id, (&m.body, top));
        }
        // Edges are folded in with a commutative sum so their storage order does not matter.
        let ins = g
            .in_edges(idx)
            .into_iter()
            .map(|e| edge(e.other, idx, e.memlet));
        let outs = g
            .out_edges(idx)
            .into_iter()
            .map(|e| edge(idx, e.other, e.memlet));
        let e = ins.chain(outs).fold(0u64, u64::wrapping_add);
        out.insert(n.id, (fingerprint(p, n, scope) ^ e.rotate_left(17), top));
    }
    bodies
}

/// A hash of everything a pattern can see of a node but its edges: its scope, label, kind (a
/// map without its body) and the declaration of the container an access node refers to. Only
/// compared within one process, before and after one step.
fn fingerprint(p: &Program, n: &Node, scope: Option<NodeId>) -> u64 {
    let mut h = DefaultHasher::new();
    (scope, &n.label).hash(&mut h);
    match &n.kind {
        NodeKind::Map(m) => format!("map {:?} {:?}", m.params, m.schedule).hash(&mut h),
        NodeKind::Access(d) => format!("{d} {:?}", p.data.get(d)).hash(&mut h),
        other => format!("{other:?}").hash(&mut h),
    }
    h.finish()
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
    fn the_hash_is_the_sha256_of_the_text_form_for_hashing() {
        let p = mlp();
        let text = crate::ir::text::print_for_hash(&p);
        assert_eq!(program_hash(&p), hex::encode(&Sha256::digest(text)[..16]));
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
