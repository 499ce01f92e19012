//! Acyclic dataflow graphs (one per scope) and the program that owns them.

use super::constant::Constant;
use super::data::DataDesc;
use super::node::{Memlet, Node, NodeId, NodeKind};
use super::sym::SymEnv;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use petgraph::Direction;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// One scope's dataflow graph. Backed by a petgraph `StableDiGraph` so indices of untouched
/// nodes survive removals; program-wide identity is the [`NodeId`] stored in each node. The
/// storage is private: other modules go through the methods below, so petgraph stays an
/// implementation detail of `ir`.
#[derive(Clone, Default)]
pub struct Graph {
    g: StableDiGraph<Node, Memlet>,
    /// The digest of this scope's text form (`ir::text::scope_digest`), computed on first use.
    /// Every `&mut self` method forgets it, and a nested scope is reachable mutably only
    /// through one of them, so a kept digest is always current: a checked step re-hashes only
    /// the scopes it changed, and a copy (a rollback snapshot) keeps the digests it copied.
    digest: OnceLock<[u8; 32]>,
    /// Each node's digest (its text with its edges, `ir::text::node_digest`), by node index,
    /// kept the same way: changing a node, or adding, removing or editing one of its edges,
    /// forgets that node's, so re-hashing a wide scope after a step costs the nodes it touched.
    node_digests: Vec<OnceLock<[u8; 32]>>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("g", &self.g).finish()
    }
}

impl PartialEq for Graph {
    /// Structural equality: same nodes (by id) with the same edges, whatever the indices.
    fn eq(&self, other: &Self) -> bool {
        let key = |gr: &Graph| {
            let mut nodes: Vec<_> = gr.g.node_weights().map(|n| (n.id, n.clone())).collect();
            nodes.sort_by_key(|(id, _)| *id);
            let mut edges: Vec<String> =
                gr.g.edge_references()
                    .map(|e| {
                        format!(
                            "{:?}->{:?}:{:?}",
                            gr.g[e.source()].id,
                            gr.g[e.target()].id,
                            e.weight()
                        )
                    })
                    .collect();
            edges.sort();
            (nodes, edges)
        };
        key(self) == key(other)
    }
}

/// An edge seen from one of its endpoints.
#[derive(Clone, Debug)]
pub struct EdgeView<'a> {
    pub id: EdgeIndex,
    pub other: NodeIndex,
    pub memlet: &'a Memlet,
}

/// An edge seen whole: both endpoints and its memlet (see [`Graph::edges`]).
#[derive(Clone, Debug)]
pub struct Edge<'a> {
    pub id: EdgeIndex,
    pub from: NodeIndex,
    pub to: NodeIndex,
    pub memlet: &'a Memlet,
}

impl Graph {
    /// Forgets the kept digests of these nodes (and the scope's).
    fn forget(&mut self, nodes: &[NodeIndex]) {
        self.digest.take();
        for idx in nodes {
            if let Some(slot) = self.node_digests.get_mut(idx.index()) {
                slot.take();
            }
        }
    }

    /// Forgets every kept digest of this scope.
    fn forget_all(&mut self) {
        self.digest.take();
        for slot in &mut self.node_digests {
            slot.take();
        }
    }

    /// The digest kept for this scope, computed by `compute` when there is none (see the
    /// `digest` field; `ir::text::scope_digest` is the only caller).
    pub(crate) fn digest_with(&self, compute: impl FnOnce() -> [u8; 32]) -> [u8; 32] {
        *self.digest.get_or_init(compute)
    }

    /// The digest kept for node `idx`, computed by `compute` when there is none
    /// (`ir::text::node_digest` is the only caller).
    pub(crate) fn node_digest_with(
        &self,
        idx: NodeIndex,
        compute: impl FnOnce() -> [u8; 32],
    ) -> [u8; 32] {
        match self.node_digests.get(idx.index()) {
            Some(slot) => *slot.get_or_init(compute),
            None => compute(),
        }
    }

    /// Both endpoints of edge `id`, when it exists.
    fn endpoints(&self, id: EdgeIndex) -> Vec<NodeIndex> {
        (self.g.edge_endpoints(id)).map_or(Vec::new(), |(a, b)| vec![a, b])
    }

    /// Node indices in index order (stable across removals), for scans that must be
    /// deterministic but need not be topological; see [`Graph::ordered`] for program order.
    pub fn node_indices(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.g.node_indices()
    }

    /// The nodes themselves, in the same order as [`Graph::node_indices`].
    pub fn nodes(&self) -> impl Iterator<Item = &Node> + '_ {
        self.g.node_weights()
    }

    /// Mutable nodes, in index order, for edits applied to every node of the scope (renames,
    /// symbol substitution).
    pub fn nodes_mut(&mut self) -> impl Iterator<Item = &mut Node> + '_ {
        self.forget_all();
        self.g.node_weights_mut()
    }

    /// The node at `idx`, or `None` when it was removed (for cached indices that may be stale).
    pub fn get_node(&self, idx: NodeIndex) -> Option<&Node> {
        self.g.node_weight(idx)
    }

    /// Number of nodes in this scope (nested scopes not counted).
    pub fn node_count(&self) -> usize {
        self.g.node_count()
    }

    /// Every edge of this scope in edge-index order (deterministic; printing, hashing and
    /// copying graphs rely on it).
    pub fn edges(&self) -> impl Iterator<Item = Edge<'_>> + '_ {
        self.g.edge_references().map(|e| Edge {
            id: e.id(),
            from: e.source(),
            to: e.target(),
            memlet: e.weight(),
        })
    }

    /// Mutable memlets of every edge, in edge-index order, for edits applied to all of them.
    pub fn memlets_mut(&mut self) -> impl Iterator<Item = &mut Memlet> + '_ {
        self.forget_all();
        self.g.edge_weights_mut()
    }

    /// The memlet on edge `id`, to edit one edge in place (keeps its index and endpoints).
    pub fn memlet_mut(&mut self, id: EdgeIndex) -> &mut Memlet {
        self.forget(&self.endpoints(id));
        &mut self.g[id]
    }

    /// Removes a node and its edges; other indices stay valid. `None` if already gone.
    pub fn remove_node(&mut self, idx: NodeIndex) -> Option<Node> {
        let mut touched: Vec<NodeIndex> = self.g.neighbors_undirected(idx).collect();
        touched.push(idx);
        self.forget(&touched);
        self.g.remove_node(idx)
    }

    /// Removes one edge; other indices stay valid. `None` if already gone.
    pub fn remove_edge(&mut self, id: EdgeIndex) -> Option<Memlet> {
        self.forget(&self.endpoints(id));
        self.g.remove_edge(id)
    }

    /// Targets of `idx`'s outgoing edges (one per edge, unsorted): cheap traversal for
    /// reachability and neighbourhoods, where [`Graph::out_edges`]' sorting is not needed.
    pub fn successors(&self, idx: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.g.neighbors_directed(idx, Direction::Outgoing)
    }

    /// Sources of `idx`'s incoming edges (one per edge, unsorted); see [`Graph::successors`].
    pub fn predecessors(&self, idx: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.g.neighbors_directed(idx, Direction::Incoming)
    }

    /// Whether a path of edges leads from `from` to `to` (a node reaches itself): the ordering
    /// question behind fusion and buffer reuse legality.
    pub fn has_path(&self, from: NodeIndex, to: NodeIndex) -> bool {
        petgraph::algo::has_path_connecting(&self.g, from, to, None)
    }

    pub fn add_node(&mut self, node: Node) -> NodeIndex {
        let idx = self.g.add_node(node);
        // A removed node's index is reused: its slot may hold the old node's digest.
        if self.node_digests.len() <= idx.index() {
            self.node_digests
                .resize_with(idx.index() + 1, OnceLock::new);
        }
        self.forget(&[idx]);
        idx
    }

    pub fn add_edge(&mut self, from: NodeIndex, to: NodeIndex, memlet: Memlet) -> EdgeIndex {
        self.forget(&[from, to]);
        self.g.add_edge(from, to, memlet)
    }

    pub fn node(&self, idx: NodeIndex) -> &Node {
        &self.g[idx]
    }

    pub fn node_mut(&mut self, idx: NodeIndex) -> &mut Node {
        self.forget(&[idx]);
        &mut self.g[idx]
    }

    /// Index of the node with this id in *this* graph (not in nested scopes).
    pub fn index_of(&self, id: NodeId) -> Option<NodeIndex> {
        self.g.node_indices().find(|&i| self.g[i].id == id)
    }

    pub fn in_edges(&self, idx: NodeIndex) -> Vec<EdgeView<'_>> {
        self.directed_edges(idx, Direction::Incoming)
    }

    pub fn out_edges(&self, idx: NodeIndex) -> Vec<EdgeView<'_>> {
        self.directed_edges(idx, Direction::Outgoing)
    }

    fn directed_edges(&self, idx: NodeIndex, dir: Direction) -> Vec<EdgeView<'_>> {
        let mut v: Vec<EdgeView> = self
            .g
            .edges_directed(idx, dir)
            .map(|e| EdgeView {
                id: e.id(),
                other: if dir == Direction::Incoming {
                    e.source()
                } else {
                    e.target()
                },
                memlet: e.weight(),
            })
            .collect();
        // Deterministic order: by connector, then container, then the other node's id.
        v.sort_by(|a, b| {
            let conn = |e: &EdgeView| {
                if dir == Direction::Incoming {
                    e.memlet.dst_conn.clone()
                } else {
                    e.memlet.src_conn.clone()
                }
            };
            (conn(a), &a.memlet.data, self.g[a.other].id).cmp(&(
                conn(b),
                &b.memlet.data,
                self.g[b.other].id,
            ))
        });
        v
    }

    /// Nodes in a deterministic topological order (among ready nodes, the smallest id first),
    /// or the ids of the nodes on a cycle.
    pub fn topo_order(&self) -> Result<Vec<NodeIndex>, Vec<NodeId>> {
        let mut indegree: BTreeMap<NodeIndex, usize> = self
            .g
            .node_indices()
            .map(|i| (i, self.g.edges_directed(i, Direction::Incoming).count()))
            .collect();
        let mut ready: BTreeSet<(NodeId, NodeIndex)> = indegree
            .iter()
            .filter(|(_, d)| **d == 0)
            .map(|(i, _)| (self.g[*i].id, *i))
            .collect();
        let mut order = Vec::with_capacity(indegree.len());
        while let Some(first) = ready.pop_first() {
            order.push(first.1);
            for e in self.g.edges_directed(first.1, Direction::Outgoing) {
                let d = indegree
                    .get_mut(&e.target())
                    .expect("edge target is a node");
                *d -= 1;
                if *d == 0 {
                    ready.insert((self.g[e.target()].id, e.target()));
                }
            }
        }
        if order.len() == indegree.len() {
            Ok(order)
        } else {
            let done: BTreeSet<_> = order.into_iter().collect();
            let mut stuck: Vec<NodeId> = self
                .g
                .node_indices()
                .filter(|i| !done.contains(i))
                .map(|i| self.g[i].id)
                .collect();
            stuck.sort();
            Err(stuck)
        }
    }

    /// Topological order, with a cycle reported as the first node on it (callers that ran
    /// `validate` know there is none).
    pub fn ordered(&self) -> Vec<NodeIndex> {
        self.topo_order().unwrap_or_else(|_| {
            let mut v: Vec<_> = self.g.node_indices().collect();
            v.sort_by_key(|i| self.g[*i].id);
            v
        })
    }

    /// Visits every node in this graph and all nested scopes, outer nodes first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Node)) {
        for idx in self.ordered() {
            let node = &self.g[idx];
            f(node);
            if let NodeKind::Map(m) = &node.kind {
                m.body.walk(f);
            }
        }
    }

    /// The graph (this one or a nested scope) that directly contains `id`, with its index.
    pub fn locate(&self, id: NodeId) -> Option<(&Graph, NodeIndex)> {
        if let Some(i) = self.index_of(id) {
            return Some((self, i));
        }
        self.g.node_weights().find_map(|n| match &n.kind {
            NodeKind::Map(m) => m.body.locate(id),
            _ => None,
        })
    }

    /// Mutable access to the graph that directly contains `id`.
    pub fn locate_mut(&mut self, id: NodeId) -> Option<(&mut Graph, NodeIndex)> {
        if let Some(i) = self.index_of(id) {
            return Some((self, i));
        }
        let holder = self.g.node_indices().find(|&i| match &self.g[i].kind {
            NodeKind::Map(m) => m.body.locate(id).is_some(),
            _ => false,
        })?;
        self.forget(&[holder]);
        match &mut self.g[holder].kind {
            NodeKind::Map(m) => m.body.locate_mut(id),
            _ => None,
        }
    }

    /// Largest id used in this graph or nested scopes.
    pub fn max_id(&self) -> Option<NodeId> {
        let mut best = None;
        self.walk(&mut |n| best = best.max(Some(n.id)));
        best
    }

    /// The work of one execution of this scope: tasklets run (weighted by [`Tasklet::work`])
    /// plus elements copied, nested maps counting their body once per iteration. `None` when a trip count is not a constant
    /// (bind symbols first).
    pub fn work(&self) -> Option<u64> {
        self.work_in(&mut SymEnv::new())
    }

    /// [`Graph::work`] inside maps whose parameters `outer` holds (see `MapNode::work_in`).
    pub(crate) fn work_in(&self, outer: &mut SymEnv) -> Option<u64> {
        self.g.node_indices().try_fold(0u64, |total, idx| {
            let here = match &self.g[idx].kind {
                NodeKind::Tasklet(t) => t.work(),
                NodeKind::Map(m) => m.work_in(outer)?,
                NodeKind::Access(_) => {
                    let mut copied = 0u64;
                    for e in self.out_edges(idx) {
                        if matches!(self.g[e.other].kind, NodeKind::Access(_)) {
                            let v = e.memlet.subset.volume().eval(outer).ok()?;
                            copied = copied.checked_add(u64::try_from(v).ok()?)?;
                        }
                    }
                    copied
                }
                NodeKind::Library(_) => 0,
            };
            total.checked_add(here)
        })
    }

    /// Data containers accessed anywhere in this scope (including nested scopes).
    pub fn data_used(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.walk(&mut |n| {
            if let NodeKind::Access(d) = &n.kind {
                out.insert(d.clone());
            }
        });
        for e in self.g.edge_weights() {
            out.insert(e.data.clone());
        }
        out
    }
}

/// A whole program: data descriptors, constant values and the top-level dataflow graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    /// Named integers that may appear in shapes and ranges, with a value once bound.
    pub symbols: BTreeMap<String, Option<i64>>,
    pub data: BTreeMap<String, DataDesc>,
    /// Constant values, shared between copies of the program (see [`Constant`]).
    pub constants: BTreeMap<String, Constant>,
    /// Caller-visible inputs and outputs, in signature order.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub graph: Graph,
    next_id: u32,
}

impl Program {
    pub fn new(name: impl Into<String>) -> Self {
        Program {
            name: name.into(),
            symbols: BTreeMap::new(),
            data: BTreeMap::new(),
            constants: BTreeMap::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            graph: Graph::default(),
            next_id: 0,
        }
    }

    /// A fresh node id, never used before in this program.
    pub fn fresh_id(&mut self) -> NodeId {
        let id = NodeId(self.next_id);
        self.next_id += 1;
        id
    }

    /// Makes sure future fresh ids do not collide with ids already in the graph (after parsing).
    pub fn reserve_ids(&mut self) {
        if let Some(NodeId(max)) = self.graph.max_id() {
            self.next_id = self.next_id.max(max + 1);
        }
    }

    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// The declarations and the id counter, borrowed together for builders.
    pub(crate) fn parts_mut(&mut self) -> (&mut BTreeMap<String, DataDesc>, &mut u32) {
        (&mut self.data, &mut self.next_id)
    }

    /// Declarations, top-level graph and id counter borrowed together for scope edits.
    pub(crate) fn parts_mut_with_graph(
        &mut self,
    ) -> (&mut BTreeMap<String, DataDesc>, (&mut Graph, &mut u32)) {
        (&mut self.data, (&mut self.graph, &mut self.next_id))
    }

    /// Builder parts plus read access to the constants (for expansions that inspect weights).
    pub fn builder_parts(
        &mut self,
    ) -> (
        &mut BTreeMap<String, DataDesc>,
        &mut u32,
        &BTreeMap<String, Constant>,
    ) {
        (&mut self.data, &mut self.next_id, &self.constants)
    }

    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.graph.locate(id).map(|(g, i)| g.node(i))
    }

    /// A data name not yet declared, derived from `base`.
    pub fn fresh_data_name(&self, base: &str) -> String {
        if !self.data.contains_key(base) {
            return base.to_string();
        }
        (1..)
            .map(|k| format!("{base}_{k}"))
            .find(|n| !self.data.contains_key(n))
            .expect("unbounded names")
    }

    /// The symbols without a value that a shape uses, each with the first input dimension that
    /// names it (the input and the axis), for an error that says which flag binds it.
    pub fn unbound_symbols(&self) -> Vec<(&str, Option<(&str, usize)>)> {
        let used =
            |symbol: &str| (self.data.values()).any(|d| d.shape.iter().any(|e| e.mentions(symbol)));
        let first_use = |symbol: &str| {
            self.inputs.iter().find_map(|name| {
                let shape = &self.data.get(name)?.shape;
                let axis = shape.iter().position(|d| d.mentions(symbol))?;
                Some((name.as_str(), axis))
            })
        };
        (self.symbols.iter())
            .filter(|(k, v)| v.is_none() && used(k))
            .map(|(k, _)| (k.as_str(), first_use(k)))
            .collect()
    }

    /// Binds a symbol everywhere: shapes and ranges keep the symbol, its value is recorded.
    pub fn symbol_values(&self) -> crate::ir::sym::SymEnv {
        self.symbols
            .iter()
            .filter_map(|(k, v)| v.map(|v| (k.clone(), v)))
            .collect()
    }
}
