//! ConstantMapFolding: run a top-level map that reads only constants once, now, and keep what
//! it writes as constants.
//!
//! ```text
//! before:  W: const f32[256, 256]      W_packed: transient f32[8, 256, 32]
//!          map [b = 0:8, c1 = 0:256, r = 0:32] parallel { W_packed[b, c1, r] = W[c1, 32 * b + r] }
//!          … W_packed read by a micro-kernel …
//! after:   W_packed: const f32[8, 256, 32] (computed now)
//!          … W_packed read by a micro-kernel …
//! ```
//! `Pack` copies an operand into the order a micro-kernel walks it before every run; when the
//! operand is a weight, that copy reads and writes every weight on every call (the network
//! suite's complaint: "weights are packed at run time on every call"). Folding it moves the
//! copy to build time, so the program reads each weight once, ready. It is the map-level twin of
//! `ConstantFolding` (which evaluates library nodes): the values come from the reference
//! interpreter running the map alone, the oracle every numerics check uses.
//!
//! Only what stays exact is folded: the map reads nothing but constants with values, and each
//! container it writes is a transient that this map alone writes, whole, without accumulation
//! (so no value written elsewhere or left from before can be lost). `max_growth` bounds the
//! values created by the constants read (by default no more elements than it reads, as a
//! packing copy writes), so a broadcast cannot turn a small bias into a feature-map-sized
//! constant that costs more to read than to compute.

use crate::interp;
use crate::ir::{DataKind, Graph, NodeId, NodeKind, Program, Tensor};
use crate::transform::support::opgraph::{become_constants, prune};
use crate::transform::{
    expect_map, refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan,
    Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

pub struct ConstantMapFolding;

/// By default a fold creates no more elements than the map reads.
const MAX_GROWTH: i64 = 1;

const SCHEMA: Schema = Schema {
    name: "ConstantMapFolding",
    level: Level::IntraOperator,
    doc: "run a top-level map that reads only constants once, now; the transients it writes become constants",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "a top-level map that reads only constants and writes whole transients no other node writes",
    )],
    params: &[ParamDecl {
        name: "max_growth",
        kind: ParamKind::Int { min: 1, max: 1 << 20 },
        default: Default::Int(MAX_GROWTH),
        doc: "the folded values may hold at most this many times the elements of the constants the map reads",
    }],
};

/// What a foldable map reads and writes: the containers by name.
struct Foldable {
    /// The map's index in the top-level scope.
    idx: NodeIndex,
    reads: BTreeSet<String>,
    writes: BTreeSet<String>,
}

impl ConstantMapFolding {
    /// The containers the top-level map `id` reads and writes, or why it cannot be folded.
    fn preconditions(
        &self,
        p: &Program,
        id: NodeId,
        max_growth: i64,
    ) -> Result<Foldable, NotApplicable> {
        expect_map(self, p, id)?;
        let g = &p.graph;
        let idx = g.index_of(id).ok_or_else(|| {
            refuse(
                self,
                id,
                "the map is nested; only top-level maps are folded",
            )
        })?;
        let mut reads = BTreeSet::new();
        let mut read = 0i64;
        for e in g.in_edges(idx) {
            let name = &e.memlet.data;
            let constant = p
                .data
                .get(name)
                .is_some_and(|d| d.kind == DataKind::Constant);
            if !constant || !p.constants.contains_key(name) {
                return Err(refuse(
                    self,
                    id,
                    format!("it reads `{name}`, which is not a constant with a value"),
                ));
            }
            if reads.insert(name.clone()) {
                let size = p.constants.get(name).map_or(0, |c| c.tensor().len());
                read = read.saturating_add(i64::try_from(size).unwrap_or(i64::MAX));
            }
        }
        let mut writes = BTreeSet::new();
        let mut elements = 0i64;
        for e in g.out_edges(idx) {
            let name = &e.memlet.data;
            let desc = (p.data.get(name))
                .ok_or_else(|| refuse(self, id, format!("`{name}` is not declared")))?;
            if desc.kind != DataKind::Transient || p.outputs.contains(name) {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "it writes `{name}`, which is {}, not a transient",
                        desc.kind.name()
                    ),
                ));
            }
            if e.memlet.wcr.is_some() {
                return Err(refuse(self, id, format!("it accumulates into `{name}`")));
            }
            let size = (desc.shape.iter()).try_fold(1i64, |n, d| n.checked_mul(d.as_int()?));
            let whole = size.is_some_and(|n| e.memlet.subset.volume().as_int() == Some(n));
            if !whole {
                return Err(refuse(
                    self,
                    id,
                    format!("it does not write all of `{name}` (or its size is not a constant)"),
                ));
            }
            elements = elements.saturating_add(size.unwrap_or(i64::MAX));
            writes.insert(name.clone());
        }
        if writes.is_empty() {
            return Err(refuse(self, id, "it writes nothing"));
        }
        if elements > read.saturating_mul(max_growth) {
            return Err(refuse(
                self,
                id,
                format!(
                    "it writes {elements} elements from {read} constant elements, more than max_growth = {max_growth} times"
                ),
            ));
        }
        if let Some((other, name)) = other_writer(g, idx, &writes) {
            return Err(refuse(
                self,
                id,
                format!("node {other} also writes `{name}`"),
            ));
        }
        Ok(Foldable { idx, reads, writes })
    }

    /// The values the map writes, from the reference interpreter running it alone.
    fn evaluate(
        &self,
        p: &Program,
        id: NodeId,
        f: &Foldable,
    ) -> Result<BTreeMap<String, Tensor>, NotApplicable> {
        let alone = standalone(p, f);
        let values = interp::run(&alone, &BTreeMap::new())
            .map_err(|e| refuse(self, id, format!("running it failed: {e}")))?;
        if values.len() != f.writes.len() {
            return Err(refuse(
                self,
                id,
                "running it did not produce every value it writes",
            ));
        }
        Ok(values)
    }
}

/// A node other than the map at `idx` that writes one of `writes`, and which (at any depth: a
/// nested write reaches the top level as an edge into an access node of the container).
fn other_writer(g: &Graph, idx: NodeIndex, writes: &BTreeSet<String>) -> Option<(NodeId, String)> {
    g.edges()
        .find(|e| e.from != idx && writes.contains(&e.memlet.data) && is_access(g, e.to))
        .map(|e| (g.node(e.from).id, e.memlet.data.clone()))
}

fn is_access(g: &Graph, idx: NodeIndex) -> bool {
    matches!(g.node(idx).kind, NodeKind::Access(_))
}

/// The map `id` alone: its access nodes and edges, the constants it reads and the transients it
/// writes (as outputs), and the program's symbols.
fn standalone(p: &Program, f: &Foldable) -> Program {
    let (g, idx) = (&p.graph, f.idx);
    let mut q = Program::new(format!("{}.fold", p.name));
    q.symbols = p.symbols.clone();
    for name in f.reads.iter().chain(&f.writes) {
        if let Some(desc) = p.data.get(name) {
            q.data.insert(name.clone(), desc.clone());
        }
        if let Some(value) = p.constants.get(name) {
            q.constants.insert(name.clone(), value.clone());
        }
    }
    q.outputs = f.writes.iter().cloned().collect();
    let map = q.graph.add_node(g.node(idx).clone());
    for e in g.in_edges(idx) {
        let from = q.graph.add_node(g.node(e.other).clone());
        q.graph.add_edge(from, map, e.memlet.clone());
    }
    for e in g.out_edges(idx) {
        let to = q.graph.add_node(g.node(e.other).clone());
        q.graph.add_edge(map, to, e.memlet.clone());
    }
    q.reserve_ids();
    q
}

impl Transformation for ConstantMapFolding {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        (p.graph.nodes())
            .filter(|n| matches!(n.kind, NodeKind::Map(_)))
            .filter(|n| self.preconditions(p, n.id, MAX_GROWTH).is_ok())
            .map(|n| vec![n.id])
            .collect()
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let foldable = self.preconditions(p, id, args.int("max_growth")?)?;
        let values = self.evaluate(p, id, &foldable)?;
        let names: Vec<String> = foldable
            .reads
            .iter()
            .chain(&foldable.writes)
            .cloned()
            .collect();
        Ok(Plan::new(move |p| {
            let idx = (p.graph.index_of(id))
                .ok_or_else(|| refuse(&ConstantMapFolding, id, "no such node"))?;
            p.graph.remove_node(idx);
            become_constants(p, values);
            prune(p, &names);
            Ok(vec![id])
        }))
    }
}
