//! Primitive graph edits that transformations compose: renaming symbols inside a scope and
//! re-deriving a map's boundary memlets after its body changed.

use super::build::{outer_memlets, passes_scoped};
use super::decls::Decls;
use super::graph::{Graph, Program};
use super::node::{Memlet, Node, NodeId, NodeKind};
use super::sym::SymExpr;
use super::texpr::TExpr;
use petgraph::stable_graph::NodeIndex;

/// Replaces symbols (simultaneously) everywhere in `g` and its nested scopes: memlet subsets,
/// nested map ranges and index values inside tasklets.
pub fn substitute_symbols(g: &mut Graph, f: &dyn Fn(&str) -> Option<SymExpr>) {
    let sub = |e: &SymExpr| e.substitute_all(f);
    for e in g.memlets_mut() {
        e.subset = e.subset.map_exprs(&sub);
    }
    for n in g.nodes_mut() {
        match &mut n.kind {
            NodeKind::Map(m) => {
                for p in &mut m.params {
                    p.range = p.range.map_exprs(&sub);
                }
                substitute_symbols(&mut m.body, f);
            }
            NodeKind::Tasklet(t) => {
                for (_, expr) in &mut t.outputs {
                    *expr = expr.rewrite(&|x| match x {
                        TExpr::Index(e) => Some(TExpr::Index(e.substitute_all(f))),
                        _ => None,
                    });
                }
            }
            NodeKind::Access(_) | NodeKind::Library(_) => {}
        }
    }
}

/// A scope being edited: the graph that directly contains a node, the node's index, the
/// declarations and the program's id counter (so edits can create nodes with fresh ids).
pub struct ScopeEdit<'a> {
    pub graph: &'a mut Graph,
    pub idx: NodeIndex,
    /// The declarations, copied (when shared with a snapshot) only if the edit writes one.
    pub data: &'a mut Decls,
    next_id: &'a mut u32,
}

impl Program {
    /// Opens the scope containing node `id` for editing.
    pub fn edit(&mut self, id: NodeId) -> Option<ScopeEdit<'_>> {
        let (data, next_id) = self.parts_mut_with_graph();
        let (graph, idx) = next_id.0.locate_mut(id)?;
        Some(ScopeEdit {
            graph,
            idx,
            data,
            next_id: next_id.1,
        })
    }
}

impl ScopeEdit<'_> {
    pub fn fresh_id(&mut self) -> NodeId {
        let id = NodeId(*self.next_id);
        *self.next_id += 1;
        id
    }

    /// A builder for a detached graph that shares this program's declarations and ids.
    pub fn builder(&mut self) -> super::build::ScopeBuilder<'_> {
        super::build::ScopeBuilder::resume(self.data, self.next_id, Graph::default())
    }

    /// Recomputes the outer memlets of the map at `idx` from its body: existing edges get the
    /// new subsets, edges for containers the body no longer moves are removed, and containers
    /// it now reads are wired to the latest earlier access node (created when there is none).
    pub fn refresh_boundary(&mut self, idx: NodeIndex) {
        let g = &mut *self.graph;
        let NodeKind::Map(m) = &g.node(idx).kind else {
            return;
        };
        let boundary = outer_memlets(m, self.data);
        let ins: Vec<_> = g
            .in_edges(idx)
            .iter()
            .map(|e| {
                let scoped = passes_scoped(m, self.data, &e.memlet.data, false);
                let ordering = e.memlet.subset.volume() == SymExpr::Int(0);
                (e.id, e.memlet.data.clone(), scoped, ordering)
            })
            .collect();
        let outs: Vec<_> = g
            .out_edges(idx)
            .iter()
            .map(|e| {
                let scoped = passes_scoped(m, self.data, &e.memlet.data, true);
                (e.id, e.memlet.data.clone(), scoped)
            })
            .collect();
        for (eid, d, scoped, ordering) in ins {
            match (boundary.reads.get(&d), boundary.writes.get(&d)) {
                (Some(s), _) => g.memlet_mut(eid).subset = s.clone(),
                // Read-modify-write ordering edges of accumulations stay, with the write's subset.
                (None, Some((s, Some(_)))) => g.memlet_mut(eid).subset = s.clone(),
                // Explicitly passed local containers stay while the body uses them, and so do
                // ordering edges (empty subsets: they move nothing, they only order the map).
                _ if scoped || ordering => {}
                _ => {
                    g.remove_edge(eid);
                }
            }
        }
        for (eid, d, scoped) in outs {
            match boundary.writes.get(&d) {
                Some((s, wcr)) => {
                    let m = g.memlet_mut(eid);
                    m.subset = s.clone();
                    m.wcr = *wcr;
                }
                None if scoped => {}
                None => {
                    g.remove_edge(eid);
                }
            }
        }
        let have_in: Vec<String> = g
            .in_edges(idx)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect();
        for (d, s) in boundary.reads {
            if !have_in.contains(&d) {
                let src = self.latest_access(&d, idx);
                self.graph.add_edge(src, idx, Memlet::new(d, s));
            }
        }
    }

    /// The access node of `data` that `before` should read: the last one in topological order
    /// before it; a new one when there is none.
    fn latest_access(&mut self, data: &str, before: NodeIndex) -> NodeIndex {
        let order = self.graph.ordered();
        let pos = order
            .iter()
            .position(|&i| i == before)
            .unwrap_or(order.len());
        let found = order[..pos]
            .iter()
            .rev()
            .find(|&&i| matches!(&self.graph.node(i).kind, NodeKind::Access(d) if d == data))
            .copied();
        match found {
            Some(i) => i,
            None => {
                let id = self.fresh_id();
                self.graph.add_node(Node {
                    id,
                    label: data.to_string(),
                    kind: NodeKind::Access(data.to_string()),
                })
            }
        }
    }
}
