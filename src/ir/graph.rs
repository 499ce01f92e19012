//! Acyclic dataflow graphs (one per scope) and the program that owns them.

use super::constant::Constant;
use super::data::DataDesc;
use super::decls::{Constants, Decls, Names};
use super::node::{Memlet, Node, NodeId, NodeKind};
use super::sym::SymEnv;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeRef, IntoEdgeReferences, NodeIndexable};
use petgraph::Direction;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

/// One scope's dataflow graph. Backed by a petgraph `StableDiGraph` so indices of untouched
/// nodes survive removals; program-wide identity is the [`NodeId`] stored in each node. The
/// storage is private: other modules go through the methods below, so petgraph stays an
/// implementation detail of `ir`.
#[derive(Clone, Default)]
pub struct Graph {
    /// Shared between copies until one of them changes (copy on write): a rollback snapshot
    /// costs a pointer per scope, and a step copies only the scopes it writes to.
    inner: Arc<Scope>,
}

/// A graph's storage and the digests it keeps.
#[derive(Clone, Default)]
struct Scope {
    /// Nodes and memlets behind their own `Arc`, so copying a scope for a step copies pointers
    /// and the step then copies only the nodes and memlets it writes to.
    g: StableDiGraph<Arc<Node>, Arc<Memlet>>,
    /// The digest of this scope's text form (`ir::text::scope_digest`), computed on first use.
    /// Every `&mut self` method forgets it, and a nested scope is reachable mutably only
    /// through one of them, so a kept digest is always current: a checked step re-hashes only
    /// the scopes it changed, and a copy (a rollback snapshot) keeps the digests it copied.
    digest: OnceLock<[u8; 32]>,
    /// Where each node id of this scope is, built on first lookup and then kept up to date by
    /// the methods that add and remove nodes, so finding a site costs a hash lookup instead of
    /// a scan of the scope. An entry may be stale (its node was removed or renumbered): a
    /// lookup checks the node it finds.
    ids: OnceLock<HashMap<NodeId, NodeIndex>>,
    /// The node last handed out by [`Graph::node_mut`], whose id may have changed since: the
    /// next change to the scope records its id in `ids`, and a lookup before that checks it.
    renamed: Option<NodeIndex>,
    /// Each node's digest (its text with its edges, `ir::text::node_digest`), by node index,
    /// kept the same way: changing a node, or adding, removing or editing one of its edges,
    /// forgets that node's, so re-hashing a wide scope after a step costs the nodes it touched.
    node_digests: Vec<OnceLock<[u8; 32]>>,
    /// Which map of this scope holds each id of a nested scope, so finding a nested node
    /// costs a lookup per level instead of a scan of every body (see [`Holders`]).
    holders: HoldersCell,
}

/// The map of a scope whose body (at any depth) holds each nested id. Read on the first
/// nested lookup; afterwards a change to a map's body records the map in `touched`, and a
/// lookup that misses re-reads only those bodies. An entry can be stale (its node moved or
/// went away); a lookup goes on into the body, which says whether the id is really there.
#[derive(Clone, Default)]
struct Holders {
    read: bool,
    /// Shared with copies of the scope until a lookup re-reads a body.
    of: Arc<HashMap<NodeId, NodeIndex>>,
    touched: BTreeSet<NodeIndex>,
}

/// [`Holders`] behind a lock: lookups take `&self`, and a scope is shared between threads.
#[derive(Default)]
struct HoldersCell(std::sync::Mutex<Holders>);

impl HoldersCell {
    fn lock(&self) -> std::sync::MutexGuard<'_, Holders> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Access through `&mut` (no locking): for the methods that change the scope.
    fn get_mut(&mut self) -> &mut Holders {
        self.0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clone for HoldersCell {
    fn clone(&self) -> Self {
        HoldersCell(std::sync::Mutex::new(self.lock().clone()))
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("g", &self.inner.g).finish()
    }
}

impl PartialEq for Graph {
    /// Structural equality: same nodes (by id) with the same edges, whatever the indices.
    fn eq(&self, other: &Self) -> bool {
        let key = |gr: &Graph| {
            let mut nodes: Vec<_> = gr
                .inner
                .g
                .node_weights()
                .map(|n| (n.id, n.clone()))
                .collect();
            nodes.sort_by_key(|(id, _)| *id);
            let mut edges: Vec<String> = gr
                .inner
                .g
                .edge_references()
                .map(|e| {
                    format!(
                        "{:?}->{:?}:{:?}",
                        gr.inner.g[e.source()].id,
                        gr.inner.g[e.target()].id,
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
    /// The storage, about to change (copied first if another graph shares it), with the kept
    /// digests of these nodes and of the scope forgotten.
    fn forget(&mut self, nodes: &[NodeIndex]) -> &mut Scope {
        let scope = Arc::make_mut(&mut self.inner);
        scope.digest.take();
        if let (Some(idx), Some(ids)) = (scope.renamed.take(), scope.ids.get_mut()) {
            if let Some(n) = scope.g.node_weight(idx) {
                ids.insert(n.id, idx);
            }
        }
        let holders = scope.holders.get_mut();
        for idx in nodes {
            if let Some(slot) = scope.node_digests.get_mut(idx.index()) {
                slot.take();
            }
            if holders.read {
                holders.touched.insert(*idx);
            }
        }
        scope
    }

    /// The storage, about to change, with every kept digest forgotten.
    fn forget_all(&mut self) -> &mut Scope {
        let scope = Arc::make_mut(&mut self.inner);
        scope.digest.take();
        scope.ids.take();
        scope.renamed = None;
        *scope.holders.get_mut() = Holders::default();
        for slot in &mut scope.node_digests {
            slot.take();
        }
        scope
    }

    /// The digest kept for this scope, computed by `compute` when there is none (see the
    /// `digest` field; `ir::text::scope_digest` is the only caller).
    pub(crate) fn digest_with(&self, compute: impl FnOnce() -> [u8; 32]) -> [u8; 32] {
        *self.inner.digest.get_or_init(compute)
    }

    /// The digest kept for node `idx`, computed by `compute` when there is none
    /// (`ir::text::node_digest` is the only caller).
    pub(crate) fn node_digest_with(
        &self,
        idx: NodeIndex,
        compute: impl FnOnce() -> [u8; 32],
    ) -> [u8; 32] {
        match self.inner.node_digests.get(idx.index()) {
            Some(slot) => *slot.get_or_init(compute),
            None => compute(),
        }
    }

    /// The digest kept for node `idx`, if one is (without computing it).
    pub(crate) fn kept_node_digest(&self, idx: NodeIndex) -> Option<[u8; 32]> {
        self.inner.node_digests.get(idx.index())?.get().copied()
    }

    /// Both endpoints of edge `id`, when it exists.
    fn endpoints(&self, id: EdgeIndex) -> Vec<NodeIndex> {
        (self.inner.g.edge_endpoints(id)).map_or(Vec::new(), |(a, b)| vec![a, b])
    }

    /// Node indices in index order (stable across removals), for scans that must be
    /// deterministic but need not be topological; see [`Graph::ordered`] for program order.
    pub fn node_indices(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.inner.g.node_indices()
    }

    /// The nodes themselves, in the same order as [`Graph::node_indices`].
    pub fn nodes(&self) -> impl Iterator<Item = &Node> + '_ {
        self.inner.g.node_weights().map(|n| &**n)
    }

    /// Mutable nodes, in index order, for edits applied to every node of the scope (renames,
    /// symbol substitution).
    pub fn nodes_mut(&mut self) -> impl Iterator<Item = &mut Node> + '_ {
        self.forget_all().g.node_weights_mut().map(Arc::make_mut)
    }

    /// The node at `idx`, or `None` when it was removed (for cached indices that may be stale).
    pub fn get_node(&self, idx: NodeIndex) -> Option<&Node> {
        self.inner.g.node_weight(idx).map(|n| &**n)
    }

    /// Number of nodes in this scope (nested scopes not counted).
    pub fn node_count(&self) -> usize {
        self.inner.g.node_count()
    }

    /// Every edge of this scope in edge-index order (deterministic; printing, hashing and
    /// copying graphs rely on it).
    pub fn edges(&self) -> impl Iterator<Item = Edge<'_>> + '_ {
        self.inner.g.edge_references().map(|e| Edge {
            id: e.id(),
            from: e.source(),
            to: e.target(),
            memlet: e.weight(),
        })
    }

    /// Mutable memlets of every edge, in edge-index order, for edits applied to all of them.
    pub fn memlets_mut(&mut self) -> impl Iterator<Item = &mut Memlet> + '_ {
        self.forget_all().g.edge_weights_mut().map(Arc::make_mut)
    }

    /// The memlet on edge `id`, to edit one edge in place (keeps its index and endpoints).
    pub fn memlet_mut(&mut self, id: EdgeIndex) -> &mut Memlet {
        let ends = self.endpoints(id);
        Arc::make_mut(&mut self.forget(&ends).g[id])
    }

    /// Removes a node and its edges; other indices stay valid. `None` if already gone.
    pub fn remove_node(&mut self, idx: NodeIndex) -> Option<Node> {
        let mut touched: Vec<NodeIndex> = self.inner.g.neighbors_undirected(idx).collect();
        touched.push(idx);
        let scope = self.forget(&touched);
        let node = scope.g.remove_node(idx)?;
        if let Some(ids) = scope.ids.get_mut() {
            if ids.get(&node.id) == Some(&idx) {
                ids.remove(&node.id);
            }
        }
        Some(Arc::unwrap_or_clone(node))
    }

    /// Removes one edge; other indices stay valid. `None` if already gone.
    pub fn remove_edge(&mut self, id: EdgeIndex) -> Option<Memlet> {
        let ends = self.endpoints(id);
        self.forget(&ends)
            .g
            .remove_edge(id)
            .map(Arc::unwrap_or_clone)
    }

    /// Targets of `idx`'s outgoing edges (one per edge, unsorted): cheap traversal for
    /// reachability and neighbourhoods, where [`Graph::out_edges`]' sorting is not needed.
    pub fn successors(&self, idx: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.inner.g.neighbors_directed(idx, Direction::Outgoing)
    }

    /// Sources of `idx`'s incoming edges (one per edge, unsorted); see [`Graph::successors`].
    pub fn predecessors(&self, idx: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.inner.g.neighbors_directed(idx, Direction::Incoming)
    }

    /// Whether a path of edges leads from `from` to `to` (a node reaches itself): the ordering
    /// question behind fusion and buffer reuse legality.
    pub fn has_path(&self, from: NodeIndex, to: NodeIndex) -> bool {
        petgraph::algo::has_path_connecting(&self.inner.g, from, to, None)
    }

    pub fn add_node(&mut self, node: Node) -> NodeIndex {
        let scope = self.forget(&[]);
        let id = node.id;
        let idx = scope.g.add_node(Arc::new(node));
        let holders = scope.holders.get_mut();
        if holders.read {
            holders.touched.insert(idx);
        }
        if let Some(ids) = scope.ids.get_mut() {
            ids.insert(id, idx);
        }
        // A removed node's index is reused: its slot may hold the old node's digest.
        if scope.node_digests.len() <= idx.index() {
            scope
                .node_digests
                .resize_with(idx.index() + 1, OnceLock::new);
        }
        scope.node_digests[idx.index()].take();
        idx
    }

    pub fn add_edge(&mut self, from: NodeIndex, to: NodeIndex, memlet: Memlet) -> EdgeIndex {
        self.forget(&[from, to])
            .g
            .add_edge(from, to, Arc::new(memlet))
    }

    pub fn node(&self, idx: NodeIndex) -> &Node {
        &self.inner.g[idx]
    }

    pub fn node_mut(&mut self, idx: NodeIndex) -> &mut Node {
        let scope = self.forget(&[idx]);
        scope.renamed = Some(idx);
        Arc::make_mut(&mut scope.g[idx])
    }

    /// Index of the node with this id in *this* graph (not in nested scopes).
    pub fn index_of(&self, id: NodeId) -> Option<NodeIndex> {
        let ids = self.inner.ids.get_or_init(|| {
            let mut ids = HashMap::new();
            for i in self.inner.g.node_indices() {
                // The first index wins, as a scan would find it (an invalid scope may repeat an id).
                ids.entry(self.inner.g[i].id).or_insert(i);
            }
            ids
        });
        let is = |i: NodeIndex| self.get_node(i).is_some_and(|n| n.id == id);
        match self.inner.renamed.filter(|&i| is(i)) {
            Some(i) => Some(i),
            None => ids.get(&id).copied().filter(|&i| is(i)),
        }
    }

    pub fn in_edges(&self, idx: NodeIndex) -> Vec<EdgeView<'_>> {
        self.directed_edges(idx, Direction::Incoming)
    }

    pub fn out_edges(&self, idx: NodeIndex) -> Vec<EdgeView<'_>> {
        self.directed_edges(idx, Direction::Outgoing)
    }

    fn directed_edges(&self, idx: NodeIndex, dir: Direction) -> Vec<EdgeView<'_>> {
        let mut v: Vec<EdgeView> = self
            .inner
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
            (conn(a), &a.memlet.data, self.inner.g[a.other].id).cmp(&(
                conn(b),
                &b.memlet.data,
                self.inner.g[b.other].id,
            ))
        });
        v
    }

    /// Nodes in a deterministic topological order (among ready nodes, the smallest id first),
    /// or the ids of the nodes on a cycle.
    pub fn topo_order(&self) -> Result<Vec<NodeIndex>, Vec<NodeId>> {
        let g = &self.inner.g;
        // Indegrees by node index (a vector, not a map: this runs for every walk of a scope).
        let mut indegree = vec![0usize; g.node_bound()];
        for e in g.edge_references() {
            indegree[e.target().index()] += 1;
        }
        let mut ready: BTreeSet<(NodeId, NodeIndex)> = (g.node_indices())
            .filter(|i| indegree[i.index()] == 0)
            .map(|i| (g[i].id, i))
            .collect();
        let mut order = Vec::with_capacity(g.node_count());
        while let Some(first) = ready.pop_first() {
            order.push(first.1);
            for e in g.edges_directed(first.1, Direction::Outgoing) {
                let d = &mut indegree[e.target().index()];
                *d -= 1;
                if *d == 0 {
                    ready.insert((g[e.target()].id, e.target()));
                }
            }
        }
        if order.len() == g.node_count() {
            Ok(order)
        } else {
            let done: BTreeSet<_> = order.into_iter().collect();
            let mut stuck: Vec<NodeId> = (g.node_indices())
                .filter(|i| !done.contains(i))
                .map(|i| g[i].id)
                .collect();
            stuck.sort();
            Err(stuck)
        }
    }

    /// The nodes of a cycle through one of `starts`, if there is one (sorted by id): the cycle
    /// check of a scope whose other nodes kept their edges, costing what `starts` reach.
    pub fn cycle_through(&self, starts: &BTreeSet<NodeIndex>) -> Option<Vec<NodeId>> {
        // A cycle through a start lies in what the starts reach and in what reaches them, so
        // the search follows the edges in the direction that reaches less (found by
        // exploring both a node at a time): a change in the middle of a long chain costs
        // the shorter side, not everything downstream.
        let dir = self.narrower_direction(starts);
        // Depth-first search; a node on the current path (`Some(false)`) seen again closes
        // a cycle, a finished one (`Some(true)`) is not entered again.
        let next =
            |n: NodeIndex| -> Vec<NodeIndex> { self.inner.g.neighbors_directed(n, dir).collect() };
        let mut done: HashMap<NodeIndex, bool> = HashMap::new();
        for &start in starts {
            if done.contains_key(&start) {
                continue;
            }
            let mut path: Vec<(NodeIndex, Vec<NodeIndex>)> = vec![(start, next(start))];
            done.insert(start, false);
            while let Some((node, todo)) = path.last_mut() {
                let Some(succ) = todo.pop() else {
                    done.insert(*node, true);
                    path.pop();
                    continue;
                };
                match done.get(&succ) {
                    Some(true) => {}
                    Some(false) => {
                        let at = path.iter().position(|(n, _)| *n == succ).unwrap_or(0);
                        let mut cycle: Vec<NodeId> =
                            path[at..].iter().map(|(n, _)| self.node(*n).id).collect();
                        cycle.sort();
                        return Some(cycle);
                    }
                    None => {
                        done.insert(succ, false);
                        path.push((succ, next(succ)));
                    }
                }
            }
        }
        None
    }

    /// The direction (outgoing or incoming edges) in which fewer nodes are reachable from
    /// `starts`, found by exploring both one node at a time until one side runs out.
    fn narrower_direction(&self, starts: &BTreeSet<NodeIndex>) -> Direction {
        let sides = [Direction::Outgoing, Direction::Incoming];
        let mut seen: [BTreeSet<NodeIndex>; 2] = [starts.clone(), starts.clone()];
        let mut todo: [Vec<NodeIndex>; 2] = [
            starts.iter().copied().collect(),
            starts.iter().copied().collect(),
        ];
        loop {
            for (side, dir) in sides.into_iter().enumerate() {
                let Some(n) = todo[side].pop() else {
                    return dir;
                };
                for m in self.inner.g.neighbors_directed(n, dir) {
                    if seen[side].insert(m) {
                        todo[side].push(m);
                    }
                }
            }
        }
    }

    /// Topological order, with a cycle reported as the first node on it (callers that ran
    /// `validate` know there is none).
    pub fn ordered(&self) -> Vec<NodeIndex> {
        self.topo_order().unwrap_or_else(|_| {
            let mut v: Vec<_> = self.inner.g.node_indices().collect();
            v.sort_by_key(|i| self.inner.g[*i].id);
            v
        })
    }

    /// Visits every node in this graph and all nested scopes, outer nodes first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Node)) {
        for idx in self.ordered() {
            let node = &self.inner.g[idx];
            f(node);
            if let NodeKind::Map(m) = &node.kind {
                m.body.walk(f);
            }
        }
    }

    /// Visits every node in this graph and all nested scopes in storage order: for questions
    /// whose answer does not depend on the order (counts, sets, maxima), without the
    /// topological sort per scope that [`Graph::walk`] pays.
    pub fn each<'a>(&'a self, f: &mut dyn FnMut(&'a Node)) {
        for node in self.nodes() {
            f(node);
            if let NodeKind::Map(m) = &node.kind {
                m.body.each(f);
            }
        }
    }

    /// The graph (this one or a nested scope) that directly contains `id`, with its index.
    pub fn locate(&self, id: NodeId) -> Option<(&Graph, NodeIndex)> {
        if let Some(i) = self.index_of(id) {
            return Some((self, i));
        }
        self.nested(id).map(|(_, found)| found)
    }

    /// `id` looked up in the body of map `holder` of this scope.
    fn in_body(&self, holder: NodeIndex, id: NodeId) -> Option<(&Graph, NodeIndex)> {
        match &self.get_node(holder)?.kind {
            NodeKind::Map(m) => m.body.locate(id),
            _ => None,
        }
    }

    /// The map of this scope whose body holds `id` at some depth (see [`Holders`]), with
    /// where `id` is inside it: each level is looked up once, and a stale entry is never
    /// returned.
    fn nested(&self, id: NodeId) -> Option<(NodeIndex, (&Graph, NodeIndex))> {
        let read = |h: &mut Holders, maps: &mut dyn Iterator<Item = NodeIndex>| {
            for i in maps {
                if let Some(NodeKind::Map(m)) = self.get_node(i).map(|n| &n.kind) {
                    let of = Arc::make_mut(&mut h.of);
                    m.body.each(&mut |n| {
                        of.insert(n.id, i);
                    });
                }
            }
        };
        let mut h = self.inner.holders.lock();
        if !h.read {
            read(&mut h, &mut self.node_indices());
            h.read = true;
        }
        let found = |h: &Holders| {
            let holder = h.of.get(&id).copied()?;
            Some((holder, self.in_body(holder, id)?))
        };
        if let Some(hit) = found(&h) {
            return Some(hit);
        }
        if h.touched.is_empty() {
            return None;
        }
        let touched = std::mem::take(&mut h.touched);
        read(&mut h, &mut touched.into_iter());
        found(&h)
    }

    /// Mutable access to the graph that directly contains `id`.
    pub fn locate_mut(&mut self, id: NodeId) -> Option<(&mut Graph, NodeIndex)> {
        if let Some(i) = self.index_of(id) {
            return Some((self, i));
        }
        let (holder, _) = self.nested(id)?;
        match &mut Arc::make_mut(&mut self.forget(&[holder]).g[holder]).kind {
            NodeKind::Map(m) => m.body.locate_mut(id),
            _ => None,
        }
    }

    /// Largest id used in this graph or nested scopes.
    pub fn max_id(&self) -> Option<NodeId> {
        let mut best = None;
        self.each(&mut |n| best = best.max(Some(n.id)));
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
        self.inner.g.node_indices().try_fold(0u64, |total, idx| {
            let here = match &self.inner.g[idx].kind {
                NodeKind::Tasklet(t) => t.work(),
                NodeKind::Map(m) => m.work_in(outer)?,
                NodeKind::Access(_) => {
                    let mut copied = 0u64;
                    for e in self.out_edges(idx) {
                        if matches!(self.inner.g[e.other].kind, NodeKind::Access(_)) {
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

    /// Which of `names` are accessed anywhere in this scope (including nested scopes): one
    /// walk that allocates nothing, for the question "is this container still used" after a
    /// rewrite removed some accesses.
    pub fn uses_any<'n>(&self, names: &'n [String]) -> BTreeSet<&'n str> {
        let mut found = BTreeSet::new();
        self.mark_uses(names, &mut found);
        found
    }

    fn mark_uses<'n>(&self, names: &'n [String], found: &mut BTreeSet<&'n str>) {
        let mark = |d: &str, found: &mut BTreeSet<&'n str>| {
            if let Some(n) = names.iter().find(|n| n.as_str() == d) {
                found.insert(n.as_str());
            }
        };
        for e in self.inner.g.edge_weights() {
            mark(&e.data, found);
        }
        for node in self.nodes() {
            match &node.kind {
                NodeKind::Access(d) => mark(d, found),
                NodeKind::Map(m) => m.body.mark_uses(names, found),
                _ => {}
            }
        }
    }

    /// Data containers accessed anywhere in this scope (including nested scopes).
    pub fn data_used(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.each(&mut |n| {
            if let NodeKind::Access(d) = &n.kind {
                out.insert(d.clone());
            }
        });
        for e in self.inner.g.edge_weights() {
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
    pub data: Decls,
    /// Constant values, shared between copies of the program (see [`Constant`]).
    pub constants: Constants,
    /// Caller-visible inputs and outputs, in signature order.
    pub inputs: Names,
    pub outputs: Names,
    pub graph: Graph,
    next_id: u32,
}

impl Program {
    pub fn new(name: impl Into<String>) -> Self {
        Program {
            name: name.into(),
            symbols: BTreeMap::new(),
            data: Decls::default(),
            constants: Constants::default(),
            inputs: Names::default(),
            outputs: Names::default(),
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
    pub(crate) fn parts_mut_with_graph(&mut self) -> (&mut Decls, (&mut Graph, &mut u32)) {
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
