//! MapFusion: fuse a producer map into the consumer map that reads its result element by element.
//!
//! ```text
//! before:  map [i = 0:N] { T[i] = f(X[i]) }      T: transient f32[N]
//!          map [i = 0:N] { Y[i] = g(T[i]) }
//! after:   map [i = 0:N] { t = f(X[i]); Y[i] = g(t) }   t: register f32[]
//! ```
//! The intermediate array disappears: each value is produced and consumed in a register, which
//! removes a full write and read of `T` from memory. The fused map keeps the consumer's id.

use crate::ir::rewrite::substitute_symbols;
use crate::ir::{
    DType, DataDesc, DataKind, Dim, Graph, MapNode, Memlet, NodeId, NodeKind, Program, Storage,
    Subset, SymExpr,
};
use crate::transform::support::scope::{link, map_pairs, uses};
use crate::transform::support::splice::replace_pair;
use crate::transform::{
    expect_map, refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema,
    Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

pub struct MapFusion;

const SCHEMA: Schema = Schema {
    name: "MapFusion",
    level: Level::InterOperator,
    doc: "fuse a producer map into its element-wise consumer; the intermediate array becomes a register",
    site: &[
        Role::new("producer", NodeClass::Map, "the map that writes the intermediate array"),
        Role::new(
            "consumer",
            NodeClass::Map,
            "the map that reads it element by element; the fused map keeps its id",
        ),
    ],
    params: &[],
};

/// What the rewrite needs, found while planning.
struct Fusion {
    producer: NodeId,
    consumer: NodeId,
    /// The access node through which the consumer reads what the producer writes.
    link: NodeId,
    /// The intermediate array and the register that replaces it.
    t: String,
    scalar: String,
    dtype: DType,
}

impl Transformation for MapFusion {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        map_pairs(p)
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let f = self.fusable(p, site[0], site[1], legality)?;
        Ok(Plan::new(move |p| fuse(p, f)))
    }
}

impl MapFusion {
    /// Checks every precondition of fusing `producer` into `consumer`. Structural: one scope, a
    /// linking global transient with exactly this producer and consumer, no nested use of it.
    /// Legality: equal iteration spaces, element-wise accesses at the map parameters, and no
    /// other container flowing between the two maps.
    fn fusable(
        &self,
        p: &Program,
        producer: NodeId,
        consumer: NodeId,
        legality: &mut Legality,
    ) -> Result<Fusion, NotApplicable> {
        let LinkedPair {
            pm,
            cm,
            g,
            pi,
            ci,
            link: link_node,
            t,
            desc,
        } = linked_pair(self, p, producer, consumer)?;
        let why = |r: String| refuse(self, consumer, r);
        // Uses outside the two bodies: exactly the link (written by the producer, read by the consumer).
        let (all_r, all_w) = uses(&p.graph, &t);
        let (pr, pw) = uses(&pm.body, &t);
        let (cr, cw) = uses(&cm.body, &t);
        let readers = all_r.saturating_sub(pr + cr);
        let writers = all_w.saturating_sub(pw + cw);
        if readers != 1 || writers != 1 {
            return Err(why(format!("`{t}` is read by {readers} and written by {writers} nodes; fusion needs exactly one producer and one consumer")));
        }
        legality.holds(same_space(pm, cm).map_err(why))?;
        nested_use(&pm.body, &t).map_err(|r| why(format!("producer: {r}")))?;
        let written = element_written(pm, &t).map_err(|r| why(format!("producer: {r}")))?;
        legality.holds(
            element_accesses(&pm.body, &t, &written, true)
                .map_err(|r| why(format!("producer: {r}"))),
        )?;
        nested_use(&cm.body, &t).map_err(|r| why(format!("consumer: {r}")))?;
        let read = in_params_of(&written, pm, cm);
        legality.holds(
            element_accesses(&cm.body, &t, &read, false).map_err(|r| why(format!("consumer: {r}"))),
        )?;
        legality.holds(crossed(g, pi, ci, &t).map_err(why))?;
        Ok(Fusion {
            producer,
            consumer,
            link: g.node(link_node).id,
            scalar: p.fresh_data_name(&format!("{t}_reg")),
            dtype: desc.dtype,
            t,
        })
    }
}

/// The rewrite: declares the register, replaces the two maps and their link by the fused map,
/// and drops the intermediate array once nothing uses it.
fn fuse(p: &mut Program, f: Fusion) -> Result<Vec<NodeId>, NotApplicable> {
    let fail = |r: &str| refuse(&MapFusion, f.consumer, r);
    declare_register(p, &f.scalar, f.dtype);
    let mut edit = p.edit(f.consumer).ok_or_else(|| fail("no consumer"))?;
    let g = &mut *edit.graph;
    let ci = edit.idx;
    let pi = g.index_of(f.producer).ok_or_else(|| fail("no producer"))?;
    let link_node = g.index_of(f.link).ok_or_else(|| fail("no link"))?;
    let (t, scalar) = (&f.t, &f.scalar);
    let fi = replace_pair(g, (pi, ci), &[link_node], (f.consumer, true), |pm, cm| {
        fuse_bodies(pm, cm, t, scalar)
    })
    .ok_or_else(|| fail("producer or consumer is not a map"))?;
    edit.refresh_boundary(fi);
    if uses(&p.graph, &f.t) == (0, 0) {
        p.data.remove(&f.t);
    }
    Ok(vec![f.producer, f.consumer])
}

/// A producer and a consumer map of one scope linked through a global transient: what every
/// fusion of two maps starts from.
pub(super) struct LinkedPair<'p> {
    pub pm: &'p MapNode,
    pub cm: &'p MapNode,
    /// The scope holding both.
    pub g: &'p Graph,
    pub pi: NodeIndex,
    pub ci: NodeIndex,
    /// The access node through which the consumer reads what the producer writes.
    pub link: NodeIndex,
    /// The linking array and its declaration.
    pub t: String,
    pub desc: &'p DataDesc,
}

/// The pair at `producer` → `consumer`, or why `fusion` refuses it (at the consumer): not two
/// maps of one scope, nothing linking them, or a link that must stay in memory.
pub(super) fn linked_pair<'p>(
    fusion: &dyn Transformation,
    p: &'p Program,
    producer: NodeId,
    consumer: NodeId,
) -> Result<LinkedPair<'p>, NotApplicable> {
    let (pm, cm) = (
        expect_map(fusion, p, producer)?,
        expect_map(fusion, p, consumer)?,
    );
    let why = |r: String| refuse(fusion, consumer, r);
    let (g, pi) = (p.graph.locate(producer)).ok_or_else(|| why("no such producer".into()))?;
    let ci = g.index_of(consumer).ok_or_else(|| {
        why(format!(
            "producer {producer} and consumer are in different scopes"
        ))
    })?;
    let (link_node, t) = link(g, pi, ci).ok_or_else(|| {
        why(format!(
            "consumer does not read anything that map {producer} writes"
        ))
    })?;
    let desc = (p.data.get(&t)).ok_or_else(|| why(format!("`{t}` is not declared")))?;
    if desc.kind != DataKind::Transient || desc.storage != Storage::Global {
        return Err(why(format!(
            "`{t}` is not a global transient (it is {} {}), so it must stay in memory",
            desc.kind.name(),
            desc.storage.name()
        )));
    }
    Ok(LinkedPair {
        pm,
        cm,
        g,
        pi,
        ci,
        link: link_node,
        t,
        desc,
    })
}

/// Declares `name`, a scalar register of `dtype`: what an intermediate array becomes.
pub(super) fn declare_register(p: &mut Program, name: &str, dtype: DType) {
    let mut reg = DataDesc::new(dtype, Vec::new(), DataKind::Transient);
    reg.storage = Storage::Register;
    p.data.insert(name.to_string(), reg);
}

/// Equal iteration spaces (same ranges, position by position), or why not.
fn same_space(pm: &MapNode, cm: &MapNode) -> Result<(), String> {
    let equal = pm.params.len() == cm.params.len()
        && pm
            .params
            .iter()
            .zip(&cm.params)
            .all(|(a, b)| a.range == b.range);
    if equal {
        Ok(())
    } else {
        Err(format!(
            "iteration spaces differ: producer {} vs consumer {}",
            ranges(pm),
            ranges(cm)
        ))
    }
}

/// A container other than `t` flowing between the two maps (the consumer reading what the
/// producer writes, or the producer reading what the consumer writes), which fusing would
/// reorder.
fn crossed(g: &Graph, pi: NodeIndex, ci: NodeIndex, t: &str) -> Result<(), String> {
    let writes = |i: NodeIndex| -> Vec<String> {
        g.out_edges(i)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect()
    };
    let (p_writes, c_writes) = (writes(pi), writes(ci));
    if let Some(d) = g
        .in_edges(ci)
        .iter()
        .map(|e| &e.memlet.data)
        .find(|d| **d != t && p_writes.contains(d))
    {
        return Err(format!(
            "consumer also reads `{d}`, which the producer writes"
        ));
    }
    if let Some(d) = g
        .in_edges(pi)
        .iter()
        .map(|e| &e.memlet.data)
        .find(|d| c_writes.contains(d))
    {
        return Err(format!("producer reads `{d}`, which the consumer writes"));
    }
    Ok(())
}

fn ranges(m: &MapNode) -> String {
    let v: Vec<String> = m
        .params
        .iter()
        .map(|q| format!("{} = {}", q.name, q.range))
        .collect();
    format!("[{}]", v.join(", "))
}

/// Inside one body, `data` is accessed only by tasklets directly in it: the rewrite redirects
/// those accesses to the register and cannot reach into nested maps.
pub(super) fn nested_use(body: &Graph, data: &str) -> Result<(), String> {
    for idx in body.node_indices() {
        match &body.node(idx).kind {
            NodeKind::Access(d) if d == data => {
                let others = (body.in_edges(idx).into_iter())
                    .chain(body.out_edges(idx))
                    .map(|e| e.other);
                if others
                    .into_iter()
                    .any(|o| !matches!(body.node(o).kind, NodeKind::Tasklet(_)))
                {
                    return Err(format!(
                        "`{data}` is accessed by a nested map, not element-wise"
                    ));
                }
            }
            NodeKind::Map(m) if m.body.data_used().contains(data) => {
                return Err(format!("`{data}` is accessed inside a nested map"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The element of `data` each iteration of the producer `pm` writes: one index per dimension,
/// each either a lone parameter or free of parameters, with every parameter in exactly one
/// dimension (`T[0, m, h, w]` in a map over `[m, h, w]`: a batch of one keeps its index 0).
/// Then distinct iterations write distinct elements, so the consumer iteration that reads the
/// same element finds it in a register.
pub(super) fn element_written(pm: &MapNode, data: &str) -> Result<Subset, String> {
    let subset = (pm.body.edges())
        .find(|e| e.memlet.data == data && matches!(&pm.body.node(e.to).kind, NodeKind::Access(_)))
        .map(|e| e.memlet.subset.clone())
        .ok_or_else(|| format!("does not write `{data}` in its body"))?;
    let is_param = |name: &str| pm.params.iter().any(|q| q.name == name);
    let mut seen = Vec::new();
    for dim in &subset.0 {
        let Dim::Index(e) = dim else {
            return Err(format!(
                "writes a range of `{data}` ({subset}), not one element"
            ));
        };
        match e {
            SymExpr::Sym(q) if is_param(q) && !seen.contains(q) => seen.push(q.clone()),
            _ if e.free_symbols().iter().any(|s| is_param(s)) => {
                return Err(format!(
                    "writes `{data}`{subset}: each index must be one parameter or free of them"
                ))
            }
            _ => {}
        }
    }
    if seen.len() != pm.params.len() {
        return Err(format!(
            "writes `{data}`{subset}: not every parameter indexes it, so iterations overwrite one element"
        ));
    }
    Ok(subset)
}

/// Whether `dims`, accessed by each iteration of `m`, visit every element of `t` (of shape
/// `shape`) once: each index a parameter running over its whole dimension, or 0 in a dimension
/// of extent 1. The error completes "the producer …" or "the consumer …".
pub(super) fn covers(m: &MapNode, dims: &[Dim], shape: &[SymExpr], t: &str) -> Result<(), String> {
    let indexed: Vec<&String> = (dims.iter())
        .filter_map(|d| match d {
            Dim::Index(SymExpr::Sym(q)) => Some(q),
            _ => None,
        })
        .collect();
    let once = indexed.len() == m.params.len()
        && (m.params.iter())
            .all(|param| indexed.iter().filter(|q| ***q == param.name).count() == 1);
    let whole = once
        && dims.len() == shape.len()
        && dims.iter().zip(shape).all(|(d, extent)| match d {
            Dim::Index(SymExpr::Sym(q)) => (m.params.iter()).any(|param| {
                param.name == *q
                    && param.range.start == SymExpr::Int(0)
                    && param.range.end == *extent
                    && param.range.step == SymExpr::Int(1)
            }),
            Dim::Index(e) => e.as_int() == Some(0) && extent.as_int() == Some(1),
            Dim::Range(_) => false,
        });
    if whole {
        Ok(())
    } else {
        Err(format!("does not visit every element of `{t}` once"))
    }
}

/// `subset`, written in the parameters of `from`, in the parameters of `to` (position by position).
fn in_params_of(subset: &Subset, from: &MapNode, to: &MapNode) -> Subset {
    let rename: BTreeMap<&str, SymExpr> = (from.params.iter().zip(&to.params))
        .map(|(a, b)| (a.name.as_str(), SymExpr::sym(b.name.as_str())))
        .collect();
    subset.map_exprs(&|e| e.substitute_all(&|s| rename.get(s).cloned()))
}

/// Inside one body: `data` is accessed only at `expected`, with no resolution, written exactly
/// once (producer) or only read (consumer) — so each register value is the element it replaces.
pub(super) fn element_accesses(
    body: &Graph,
    data: &str,
    expected: &Subset,
    producer: bool,
) -> Result<(), String> {
    let mut writes = 0;
    for idx in body.node_indices() {
        if !matches!(&body.node(idx).kind, NodeKind::Access(d) if d == data) {
            continue;
        }
        let edges = (body.in_edges(idx).into_iter().map(|e| (e, true)))
            .chain(body.out_edges(idx).into_iter().map(|e| (e, false)));
        for (e, write) in edges {
            if e.memlet.subset != *expected {
                return Err(format!(
                    "accesses {data}{} instead of {data}{expected}",
                    e.memlet.subset
                ));
            }
            if e.memlet.wcr.is_some() {
                return Err(format!("writes `{data}` with write-conflict resolution"));
            }
            writes += usize::from(write);
        }
    }
    match (producer, writes) {
        (true, 1) | (false, 0) => Ok(()),
        (true, n) => Err(format!("writes `{data}` {n} times; expected once")),
        (false, _) => Err(format!("writes `{data}`")),
    }
}

/// The consumer's map with the producer's body (renamed to the consumer's parameters) in front
/// of its own, connected through the register `scalar` instead of the array `t`.
fn fuse_bodies(pm: MapNode, cm: MapNode, t: &str, scalar: &str) -> MapNode {
    let rename: BTreeMap<String, SymExpr> = pm
        .params
        .iter()
        .zip(&cm.params)
        .map(|(a, b)| (a.name.clone(), SymExpr::sym(b.name.as_str())))
        .collect();
    let mut first = pm.body;
    substitute_symbols(&mut first, &|s| rename.get(s).cloned());
    MapNode {
        params: cm.params,
        schedule: cm.schedule,
        min_work: cm.min_work,
        body: chain(first, cm.body, t, scalar),
    }
}

/// One body from two: `first`, which writes the element of `t` that `second` reads, then
/// `second`, the two connected through the register `scalar` instead of the array `t`. Both are
/// already written in the same parameters.
pub(super) fn chain(first: Graph, second: Graph, t: &str, scalar: &str) -> Graph {
    let mut body = first;
    let to_scalar = |m: &mut Memlet| {
        if m.data == t {
            m.data = scalar.to_string();
            m.subset = Subset::default();
        }
    };
    let mut produced = None;
    for idx in body.node_indices().collect::<Vec<_>>() {
        if matches!(&body.node(idx).kind, NodeKind::Access(d) if d == t) {
            body.node_mut(idx).kind = NodeKind::Access(scalar.to_string());
            produced = Some(idx);
        }
    }
    for m in body.memlets_mut() {
        to_scalar(m);
    }
    let mut map: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    for idx in second.node_indices() {
        let node = second.node(idx);
        let target = match (&node.kind, produced) {
            (NodeKind::Access(d), Some(src)) if d == t => src,
            _ => body.add_node(node.clone()),
        };
        map.insert(idx, target);
    }
    for e in second.edges() {
        let (Some(&s), Some(&d)) = (map.get(&e.from), map.get(&e.to)) else {
            continue;
        };
        let mut m = e.memlet.clone();
        to_scalar(&mut m);
        body.add_edge(s, d, m);
    }
    body
}
