//! Building dataflow graphs without wiring edges by hand.
//!
//! A [`ScopeBuilder`] appends nodes to one scope in program order. It remembers the latest access
//! node of every container, so a consumer is wired to the version its producer wrote, and it
//! derives a map's outer memlets from its body by propagation. Importers, operator expansions,
//! tests and transformations all build through it, so every graph has the same shape.

use super::data::{DType, DataDesc, DataKind, Storage};
use super::graph::{Graph, Program};
use super::node::{
    Attr, LibraryNode, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Schedule, Tasklet, Wcr,
};
use super::subset::{Dim, ParamBounds, Range, Subset};
use super::sym::SymExpr;
use super::texpr::TExpr;
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

/// Appends nodes to one scope of a program.
pub struct ScopeBuilder<'p> {
    data: &'p mut BTreeMap<String, DataDesc>,
    next_id: &'p mut u32,
    pub graph: Graph,
    latest: BTreeMap<String, NodeIndex>,
}

/// A tasklet input: connector, container, element.
pub struct In<'a>(pub &'a str, pub &'a str, pub Subset);

/// A tasklet output: connector, container, element, write-conflict resolution, value.
pub struct Out<'a>(
    pub &'a str,
    pub &'a str,
    pub Subset,
    pub Option<Wcr>,
    pub TExpr,
);

impl Program {
    /// Runs `f` with a builder that appends to the top-level graph.
    pub fn build<R>(&mut self, f: impl FnOnce(&mut ScopeBuilder) -> R) -> R {
        let graph = std::mem::take(&mut self.graph);
        let (data, next_id) = self.parts_mut();
        let mut b = ScopeBuilder::resume(data, next_id, graph);
        let r = f(&mut b);
        self.graph = b.graph;
        r
    }

    /// Runs `f` with a builder for a fresh, detached graph (for splicing into a scope later).
    pub fn build_detached<R>(&mut self, f: impl FnOnce(&mut ScopeBuilder) -> R) -> (Graph, R) {
        let (data, next_id) = self.parts_mut();
        let mut b = ScopeBuilder::resume(data, next_id, Graph::default());
        let r = f(&mut b);
        (b.graph, r)
    }
}

impl<'p> ScopeBuilder<'p> {
    /// Continues building `graph`: the latest version of each container is its access node with
    /// no successors that reads it, or otherwise the one with the largest id.
    pub fn resume(
        data: &'p mut BTreeMap<String, DataDesc>,
        next_id: &'p mut u32,
        graph: Graph,
    ) -> Self {
        let mut latest: BTreeMap<String, NodeIndex> = BTreeMap::new();
        for idx in graph.ordered() {
            if let NodeKind::Access(d) = &graph.node(idx).kind {
                latest.insert(d.clone(), idx);
            }
        }
        ScopeBuilder {
            data,
            next_id,
            graph,
            latest,
        }
    }

    fn fresh_id(&mut self) -> NodeId {
        let id = NodeId(*self.next_id);
        *self.next_id += 1;
        id
    }

    fn add(&mut self, label: &str, kind: NodeKind) -> NodeIndex {
        let id = self.fresh_id();
        self.graph.add_node(Node {
            id,
            label: label.to_string(),
            kind,
        })
    }

    pub fn desc(&self, data: &str) -> Option<&DataDesc> {
        self.data.get(data)
    }

    /// Declares a container; `base` is made unique.
    pub fn declare(
        &mut self,
        base: &str,
        dtype: DType,
        shape: Vec<SymExpr>,
        kind: DataKind,
        storage: Storage,
    ) -> String {
        let name = if self.data.contains_key(base) {
            (1..)
                .map(|k| format!("{base}_{k}"))
                .find(|n| !self.data.contains_key(n))
                .expect("unbounded names")
        } else {
            base.to_string()
        };
        let mut desc = DataDesc::new(dtype, shape, kind);
        desc.storage = storage;
        self.data.insert(name.clone(), desc);
        name
    }

    /// Declares a global transient.
    pub fn transient(&mut self, base: &str, dtype: DType, shape: Vec<SymExpr>) -> String {
        self.declare(base, dtype, shape, DataKind::Transient, Storage::Global)
    }

    /// The access node holding the current version of `data` (created if this scope has none).
    pub fn read_node(&mut self, data: &str) -> NodeIndex {
        if let Some(&idx) = self.latest.get(data) {
            return idx;
        }
        let idx = self.add(data, NodeKind::Access(data.to_string()));
        self.latest.insert(data.to_string(), idx);
        idx
    }

    /// A new access node for the next version of `data`.
    fn write_node(&mut self, data: &str) -> NodeIndex {
        let idx = self.add(data, NodeKind::Access(data.to_string()));
        self.latest.insert(data.to_string(), idx);
        idx
    }

    /// A library node reading `inputs` (absent optional inputs as `None`) and writing `outputs`.
    pub fn library(
        &mut self,
        label: &str,
        op: &str,
        attrs: BTreeMap<String, Attr>,
        inputs: &[Option<&str>],
        outputs: &[&str],
    ) -> NodeId {
        let node = self.add(
            label,
            NodeKind::Library(LibraryNode {
                op: op.to_string(),
                attrs,
            }),
        );
        for (i, input) in inputs.iter().enumerate() {
            if let Some(d) = input {
                let src = self.read_node(d);
                let m = Memlet::new(*d, self.full(d)).to_conn(LibraryNode::input_connector(i));
                self.graph.add_edge(src, node, m);
            }
        }
        for (i, d) in outputs.iter().enumerate() {
            let dst = self.write_node(d);
            let m = Memlet::new(*d, self.full(d)).from_conn(LibraryNode::output_connector(i));
            self.graph.add_edge(node, dst, m);
        }
        self.graph.node(node).id
    }

    fn full(&self, data: &str) -> Subset {
        self.data
            .get(data)
            .map(|d| Subset::full(&d.shape))
            .unwrap_or_default()
    }

    /// A tasklet computing `outputs` from `inputs`.
    pub fn tasklet(&mut self, label: &str, inputs: Vec<In>, outputs: Vec<Out>) -> NodeId {
        let node = self.add(
            label,
            NodeKind::Tasklet(Tasklet {
                inputs: inputs.iter().map(|i| i.0.to_string()).collect(),
                outputs: outputs
                    .iter()
                    .map(|o| (o.0.to_string(), o.4.clone()))
                    .collect(),
            }),
        );
        for In(conn, data, subset) in inputs {
            let src = self.read_node(data);
            self.graph
                .add_edge(src, node, Memlet::new(data, subset).to_conn(conn));
        }
        for Out(conn, data, subset, wcr, _) in outputs {
            let dst = self.write_node(data);
            let m = Memlet::new(data, subset).with_wcr(wcr).from_conn(conn);
            self.graph.add_edge(node, dst, m);
        }
        self.graph.node(node).id
    }

    /// A map over `params`; `body` builds the scope executed per iteration. Outer memlets are
    /// derived from the body (see [`outer_memlets`]).
    pub fn map(
        &mut self,
        label: &str,
        params: Vec<(&str, Range)>,
        schedule: Schedule,
        body: impl FnOnce(&mut ScopeBuilder),
    ) -> NodeId {
        let params: Vec<MapParam> = params
            .into_iter()
            .map(|(n, r)| MapParam {
                name: n.to_string(),
                range: r,
            })
            .collect();
        let inner_graph = {
            let mut inner = ScopeBuilder {
                data: &mut *self.data,
                next_id: &mut *self.next_id,
                graph: Graph::default(),
                latest: BTreeMap::new(),
            };
            body(&mut inner);
            inner.graph
        };
        let id = self.fresh_id();
        self.map_node(
            id,
            label,
            MapNode {
                params,
                schedule,
                min_work: 0,
                body: inner_graph,
            },
        );
        id
    }

    /// Adds an already-built map with id `id` and wires its outer memlets.
    pub fn map_node(&mut self, id: NodeId, label: &str, map: MapNode) -> NodeIndex {
        let boundary = outer_memlets(&map, self.data);
        let node = self.graph.add_node(Node {
            id,
            label: label.to_string(),
            kind: NodeKind::Map(map),
        });
        for (data, subset) in boundary.reads {
            let src = self.read_node(&data);
            self.graph.add_edge(src, node, Memlet::new(data, subset));
        }
        for (data, (subset, wcr)) in boundary.writes {
            if wcr.is_some() && self.latest.contains_key(&data) && !self.reads_latest(node, &data) {
                // Read-modify-write: order after the version being accumulated into.
                let src = self.read_node(&data);
                self.graph
                    .add_edge(src, node, Memlet::new(data.clone(), subset.clone()));
            } else if wcr.is_none() && !self.reads_latest(node, &data) {
                self.order_after_writes(node, &data);
            }
            let dst = self.write_node(&data);
            self.graph
                .add_edge(node, dst, Memlet::new(data, subset).with_wcr(wcr));
        }
        node
    }

    /// Orders `writer` after the writes of the current version of `data` (an edge moving the
    /// empty subset) when this scope wrote one. A write that does not read the version it
    /// replaces may cover only part of the container — one operand of a Concat, the interior of
    /// a padded copy — so the new version holds the earlier writes too, and a reader of it must
    /// run after them; the edge says so, where program order alone would leave the writers
    /// unordered and a topological order free to run the reader first.
    fn order_after_writes(&mut self, writer: NodeIndex, data: &str) {
        let Some(&previous) = self.latest.get(data) else {
            return;
        };
        let rank = self.data.get(data).map_or(0, DataDesc::rank);
        // An empty subset of a scalar would still move its element; a scalar is written whole.
        if rank == 0 || self.graph.in_edges(previous).is_empty() {
            return;
        }
        let empty = Subset::empty(rank);
        self.graph
            .add_edge(previous, writer, Memlet::new(data, empty));
    }

    fn reads_latest(&self, node: NodeIndex, data: &str) -> bool {
        self.graph
            .in_edges(node)
            .iter()
            .any(|e| e.memlet.data == data)
    }
}

/// What a map moves across its boundary: containers read from outside and containers written.
#[derive(Debug, Default, PartialEq)]
pub struct Boundary {
    pub reads: BTreeMap<String, Subset>,
    pub writes: BTreeMap<String, (Subset, Option<Wcr>)>,
}

/// Derives a map's outer memlets from its body: every body memlet on a non-local container is
/// propagated over the map parameters, and memlets on the same container are joined into their
/// hull. A body read counts as external only when it reads a version the body did not write.
/// Containers with local or register storage stay inside (see [`passes_scoped`]).
pub fn outer_memlets(map: &MapNode, data: &BTreeMap<String, DataDesc>) -> Boundary {
    let bounds: Vec<ParamBounds> = map
        .params
        .iter()
        .map(|p| ParamBounds {
            name: &p.name,
            range: &p.range,
        })
        .collect();
    let body = &map.body;
    let mut out = Boundary::default();
    let is_external = |d: &str| {
        data.get(d)
            .map(|desc| desc.storage == Storage::Global)
            .unwrap_or(true)
    };
    for idx in body.ordered() {
        let NodeKind::Access(d) = &body.node(idx).kind else {
            continue;
        };
        if !is_external(d) {
            continue;
        }
        let shape = data.get(d).map(|x| x.shape.clone()).unwrap_or_default();
        let written_here = !body.in_edges(idx).is_empty();
        for e in body.in_edges(idx) {
            let s = e.memlet.subset.propagate(&bounds, &shape);
            let entry = out
                .writes
                .entry(d.clone())
                .or_insert_with(|| (s.clone(), e.memlet.wcr));
            entry.0 = hull(&entry.0, &s, &shape);
            entry.1 = entry.1.or(e.memlet.wcr);
        }
        if written_here {
            continue;
        }
        for e in body.out_edges(idx) {
            let s = e.memlet.subset.propagate(&bounds, &shape);
            let entry = out.reads.entry(d.clone()).or_insert_with(|| s.clone());
            *entry = hull(entry, &s, &shape);
        }
    }
    out
}

/// Whether an explicit memlet of the local or register container `d` may cross the boundary
/// of `map` in the given direction. Such containers live in the innermost scope holding all
/// their access nodes; a map nested in that scope never derives memlets for them, but the scope
/// may pass them in (when the body uses them) and take them out (when the body writes them), so
/// that the map is ordered after the container's producer and before its consumer.
pub fn passes_scoped(
    map: &MapNode,
    data: &BTreeMap<String, DataDesc>,
    d: &str,
    outgoing: bool,
) -> bool {
    if data
        .get(d)
        .is_none_or(|desc| desc.storage == Storage::Global)
    {
        return false;
    }
    if outgoing {
        writes_anywhere(&map.body, d)
    } else {
        map.body.data_used().contains(d)
    }
}

/// Whether some edge in `g` or its nested scopes writes an access node of `d`.
fn writes_anywhere(g: &Graph, d: &str) -> bool {
    g.node_indices().any(|idx| match &g.node(idx).kind {
        NodeKind::Access(x) => x == d && !g.in_edges(idx).is_empty(),
        NodeKind::Map(m) => writes_anywhere(&m.body, d),
        _ => false,
    })
}

/// The smallest subset covering both, per dimension; incomparable symbolic bounds widen to the
/// whole extent.
pub fn hull(a: &Subset, b: &Subset, shape: &[SymExpr]) -> Subset {
    if a == b {
        return a.clone();
    }
    Subset(
        a.0.iter()
            .zip(&b.0)
            .zip(shape)
            .map(|((x, y), extent)| {
                if x == y {
                    return x.clone();
                }
                let bounds = |d: &Dim| match d {
                    Dim::Index(e) => Some((e.clone(), e + 1)),
                    Dim::Range(r) if r.step == SymExpr::Int(1) => {
                        Some((r.start.clone(), r.end.clone()))
                    }
                    Dim::Range(_) => None,
                };
                match (bounds(x), bounds(y)) {
                    (Some((s1, e1)), Some((s2, e2))) => {
                        let lo =
                            (&s1 - &s2)
                                .as_int()
                                .map(|d| if d <= 0 { s1.clone() } else { s2.clone() });
                        let hi =
                            (&e1 - &e2)
                                .as_int()
                                .map(|d| if d >= 0 { e1.clone() } else { e2.clone() });
                        match (lo, hi) {
                            (Some(lo), Some(hi)) => Dim::Range(Range::new(lo, hi)),
                            _ => Dim::Range(Range::upto(extent.clone())),
                        }
                    }
                    _ => Dim::Range(Range::upto(extent.clone())),
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C[i, j] += A[i, k] * B[k, j] built as init map + accumulation map.
    #[test]
    fn builds_matmul_with_propagated_memlets() {
        let p = crate::check::fixtures::matmul(8.into(), 8.into(), 8.into(), Schedule::Sequential);
        let order = p.graph.ordered();
        let labels: Vec<_> = order
            .iter()
            .map(|i| p.graph.node(*i).label.clone())
            .collect();
        assert_eq!(labels, ["init", "C", "A", "B", "acc", "C"]);
        let acc = order[4];
        let ins: Vec<String> = p
            .graph
            .in_edges(acc)
            .iter()
            .map(|e| format!("{}{}", e.memlet.data, e.memlet.subset))
            .collect();
        assert_eq!(ins, ["A[0:8, 0:8]", "B[0:8, 0:8]", "C[0:8, 0:8]"]);
        let out = &p.graph.out_edges(acc)[0];
        assert_eq!(out.memlet.wcr, Some(Wcr::Sum));
    }
}
