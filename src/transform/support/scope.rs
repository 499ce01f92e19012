//! Producer → consumer structure inside scopes: which maps feed which, through which container,
//! and how often a container is read and written.

use crate::ir::{Graph, NodeId, NodeKind, Program};
use petgraph::graph::NodeIndex;

/// Producer → consumer map pairs linked through one access node, in every scope (outer scopes
/// first): the candidates of the fusions.
pub(crate) fn map_pairs(p: &Program) -> Vec<Vec<NodeId>> {
    let mut out = Vec::new();
    scope_pairs(&p.graph, &mut out);
    out
}

fn scope_pairs(g: &Graph, out: &mut Vec<Vec<NodeId>>) {
    for idx in g.ordered() {
        let node = g.node(idx);
        match &node.kind {
            NodeKind::Map(m) => {
                for e in g.out_edges(idx) {
                    for r in g.out_edges(e.other) {
                        if matches!(g.node(r.other).kind, NodeKind::Map(_)) {
                            out.push(vec![node.id, g.node(r.other).id]);
                        }
                    }
                }
                scope_pairs(&m.body, out);
            }
            _ => continue,
        }
    }
}

/// The access node and container through which `c` reads what `p` writes.
pub(crate) fn link(g: &Graph, p: NodeIndex, c: NodeIndex) -> Option<(NodeIndex, String)> {
    g.out_edges(p).into_iter().find_map(|e| {
        let reads = g.out_edges(e.other).iter().any(|r| r.other == c);
        match &g.node(e.other).kind {
            NodeKind::Access(d) if reads => Some((e.other, d.clone())),
            _ => None,
        }
    })
}

/// How many edges read from and write to access nodes of `data`, program-wide.
pub(crate) fn uses(g: &Graph, data: &str) -> (usize, usize) {
    let (mut r, mut w) = (0, 0);
    count_uses(g, data, &mut r, &mut w);
    (r, w)
}

fn count_uses(g: &Graph, data: &str, r: &mut usize, w: &mut usize) {
    for idx in g.node_indices() {
        match &g.node(idx).kind {
            NodeKind::Access(d) if d == data => {
                *r += g.out_edges(idx).len();
                *w += g.in_edges(idx).len();
            }
            NodeKind::Map(m) => count_uses(&m.body, data, r, w),
            _ => {}
        }
    }
}
