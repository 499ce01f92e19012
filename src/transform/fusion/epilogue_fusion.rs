//! EpilogueFusion: fuse an element-wise map that reads a tiled map's result into the copy that
//! stores each tile, so the result is finished (activation, residual add, a padded copy for the
//! next convolution) while it is still in registers.
//!
//! ```text
//! before:  map [h, w/8] {                                          (a register-tiled convolution)
//!            … accumulate into acc …
//!            map [w', m] { Y[0, h, w + w', m] = acc[w', m] }       its store
//!          }
//!          map [i, j, m] { P[0, i + 1, j + 1, m] = max(Y[0, i, j, m], 0) }
//! after:   map [h, w/8] {
//!            …
//!            map [w', m] { y = acc[w', m]; P[0, h + 1, w + w' + 1, m] = max(y, 0) }
//!          }
//! ```
//! The consumer's body is copied into the store with its parameters replaced by the store's
//! write indices, so it runs once for each element the producer stores; the array between them
//! disappears when nothing else uses it. The producer keeps its id.

use super::map_fusion::{
    chain, covers, declare_register, element_accesses, linked_pair, nested_use, LinkedPair,
};
use crate::ir::rewrite::substitute_symbols;
use crate::ir::{
    Dim, Graph, MapNode, Memlet, Node, NodeId, NodeKind, Program, Storage, Subset, SymExpr,
};
use crate::transform::support::scope::{map_pairs, uses};
use crate::transform::{
    refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

pub struct EpilogueFusion;

const SCHEMA: Schema = Schema {
    name: "EpilogueFusion",
    level: Level::InterOperator,
    doc: "fuse an element-wise consumer of a tiled map's result into the copy that stores each tile; the result array disappears",
    site: &[
        Role::new(
            "producer",
            NodeClass::Map,
            "the map whose nested store copy writes every element of the array; it keeps its id",
        ),
        Role::new(
            "consumer",
            NodeClass::Map,
            "the map that reads the array element by element",
        ),
    ],
    params: &[],
};

/// Values of the parameters around a point of an iteration space.
type Env = BTreeMap<String, i64>;

/// Elements of the array whose stores planning enumerates at most (a bit each).
const MAX_ELEMENTS: usize = 1 << 26;

/// What the rewrite needs, found while planning.
struct Fusion {
    producer: NodeId,
    consumer: NodeId,
    link: NodeId,
    /// The nested map inside the producer that stores the array.
    store: NodeId,
    /// The consumer's body with its parameters replaced by the store's write indices.
    body: Graph,
    /// The containers the consumer writes.
    outputs: Vec<(String, Subset)>,
    t: String,
    scalar: String,
}

impl Transformation for EpilogueFusion {
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

impl EpilogueFusion {
    /// Structural: one scope, a global transient whose version the producer writes and only the
    /// consumer reads, one nested map of the producer storing it. Legality: the stores write
    /// every element, the consumer reads each element once at its own iteration and writes
    /// without conflicts, and what the consumer reads besides is ready before the producer runs.
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
        let only = |edges: Vec<NodeIndex>, node: NodeIndex| edges.iter().all(|&o| o == node);
        let ins = |i: NodeIndex| g.in_edges(i).iter().map(|e| e.other).collect::<Vec<_>>();
        let outs = |i: NodeIndex| g.out_edges(i).iter().map(|e| e.other).collect::<Vec<_>>();
        if !only(ins(link_node), pi) || !only(outs(link_node), ci) || later_reader(g, pi, ci, &t) {
            return Err(why(format!(
                "the version of `{t}` the producer writes must be read by this consumer alone"
            )));
        }
        nested_use(&cm.body, &t).map_err(|r| why(format!("consumer: {r}")))?;
        let read = (cm.body.edges())
            .find(|e| e.memlet.data == t)
            .map(|e| e.memlet.subset.clone())
            .ok_or_else(|| why(format!("the consumer does not read `{t}` in its body")))?;
        legality.holds(
            element_accesses(&cm.body, &t, &read, false).map_err(|r| why(format!("consumer: {r}"))),
        )?;
        legality.holds(
            covers(cm, &read.0, &desc.shape, &t)
                .map_err(|r| why(format!("the consumer {r}: it is not element-wise"))),
        )?;
        let outputs = conflict_free_writes(p, cm).map_err(why)?;
        let (store, sm, written) = store(pm, &t).map_err(why)?;
        legality.holds(stored_everywhere(p, pm, sm, &written, &desc.shape, &t).map_err(why))?;
        legality.holds(ready_before(g, pi, ci, link_node).map_err(why))?;
        let mut rename = BTreeMap::new();
        for (r, w) in read.0.iter().zip(&written) {
            if let Dim::Index(SymExpr::Sym(q)) = r {
                rename.insert(q.clone(), w.clone());
            }
        }
        let mut body = cm.body.clone();
        substitute_symbols(&mut body, &|s| rename.get(s).cloned());
        legality.holds(writes_follow_stores(p, pm, &written, &body).map_err(why))?;
        Ok(Fusion {
            producer,
            consumer,
            link: g.node(link_node).id,
            store,
            body,
            outputs,
            scalar: p.fresh_data_name(&format!("{t}_reg")),
            t,
        })
    }
}

/// Whether a node of the scope other than the two (and the access nodes between) reads `t`
/// after the producer wrote it (the version would be gone).
fn later_reader(g: &Graph, pi: NodeIndex, ci: NodeIndex, t: &str) -> bool {
    g.node_indices().any(|idx| {
        idx != pi
            && idx != ci
            && !matches!(g.node(idx).kind, NodeKind::Access(_))
            && g.has_path(pi, idx)
            && g.in_edges(idx).iter().any(|e| e.memlet.data == t)
    })
}

/// Whether `data` lives in memory, outside the body that accesses it (not a register, which
/// a fused chain of element-wise maps holds its intermediates in).
fn in_memory(p: &Program, data: &str) -> bool {
    p.data
        .get(data)
        .is_some_and(|d| d.storage != Storage::Register)
}

/// The consumer's writes to memory, each without write-conflict resolution: the store may run
/// a consumer iteration where the original ran it once, and accumulations would double.
fn conflict_free_writes(p: &Program, cm: &MapNode) -> Result<Vec<(String, Subset)>, String> {
    let mut out = Vec::new();
    for e in cm.body.edges() {
        if !matches!(cm.body.node(e.to).kind, NodeKind::Access(_)) || !in_memory(p, &e.memlet.data)
        {
            continue;
        }
        if e.memlet.wcr.is_some() {
            return Err(format!(
                "the consumer accumulates into `{}`; only plain writes move into the stores",
                e.memlet.data
            ));
        }
        out.push((e.memlet.data.clone(), e.memlet.subset.clone()));
    }
    Ok(out)
}

/// The one node inside the producer writing `t` (a map whose tasklets write one element each
/// iteration), and that element as one index per dimension.
fn store<'a>(pm: &'a MapNode, t: &str) -> Result<(NodeId, &'a MapNode, Vec<SymExpr>), String> {
    let body = &pm.body;
    let writers: Vec<NodeIndex> = (body.node_indices())
        .filter(|&i| matches!(&body.node(i).kind, NodeKind::Access(d) if d == t))
        .flat_map(|i| body.in_edges(i).into_iter().map(|e| e.other))
        .collect();
    let [writer] = writers.as_slice() else {
        return Err(format!(
            "{} nodes of the producer write `{t}`; fusion needs exactly one nested store",
            writers.len()
        ));
    };
    let node = body.node(*writer);
    let NodeKind::Map(sm) = &node.kind else {
        return Err(format!(
            "`{t}` is written by a node of the producer that is not a map"
        ));
    };
    nested_use(&sm.body, t).map_err(|r| format!("store: {r}"))?;
    let written = (sm.body.edges())
        .find(|e| e.memlet.data == t)
        .map(|e| e.memlet.subset.clone())
        .ok_or_else(|| format!("the store does not write `{t}`"))?;
    element_accesses(&sm.body, t, &written, true).map_err(|r| format!("store: {r}"))?;
    let indices = (written.0.iter())
        .map(|d| match d {
            Dim::Index(e) => Ok(e.clone()),
            Dim::Range(_) => Err(format!(
                "the store writes a range of `{t}`, not one element"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((node.id, sm, indices))
}

/// Each of the consumer's writes, moved into the store, still depends on every parameter of the
/// producer that the stored element depends on: iterations of the producer (which may run in
/// parallel) that store different elements then write different elements. A consumer that
/// drops a unit dimension (`T[0, o, c]` read as `T[0, 0, c]`) would not.
fn writes_follow_stores(
    p: &Program,
    pm: &MapNode,
    written: &[SymExpr],
    body: &Graph,
) -> Result<(), String> {
    let stored: Vec<&String> = (pm.params.iter())
        .map(|q| &q.name)
        .filter(|q| written.iter().any(|e| e.free_symbols().contains(*q)))
        .collect();
    for e in body.edges() {
        if !matches!(body.node(e.to).kind, NodeKind::Access(_)) || !in_memory(p, &e.memlet.data) {
            continue;
        }
        let used: Vec<String> = (e.memlet.subset.0.iter())
            .flat_map(|d| d.free_symbols())
            .collect();
        if let Some(q) = stored.iter().find(|q| !used.contains(q)) {
            return Err(format!(
                "the consumer's write of `{}` does not depend on the producer's parameter `{q}`, \
                 which the stored element does: iterations of the producer would write it alike",
                e.memlet.data
            ));
        }
    }
    Ok(())
}

/// Every element of `t` is stored by some iteration of the producer and its store: counted by
/// running through their (bound) iteration spaces, since tiles may be clipped or strided.
fn stored_everywhere(
    p: &Program,
    pm: &MapNode,
    sm: &MapNode,
    written: &[SymExpr],
    shape: &[SymExpr],
    t: &str,
) -> Result<(), String> {
    let bound = |s: &str| p.symbols.get(s).copied().flatten();
    let dims = (shape.iter())
        .map(|d| {
            d.eval_with(&bound)
                .ok()
                .and_then(|v| usize::try_from(v).ok())
        })
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| format!("`{t}` has a shape not known before run time"))?;
    let total = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let total = total
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| format!("`{t}` is too large to check that every element is stored"))?;
    let mut seen = vec![false; total];
    let params: Vec<_> = pm.params.iter().chain(&sm.params).collect();
    let mut env = Env::new();
    let mut visit = |env: &Env| -> Result<(), String> {
        let lookup = |s: &str| env.get(s).copied().or_else(|| bound(s));
        let mut flat = 0usize;
        for (e, extent) in written.iter().zip(&dims) {
            let v = e.eval_with(&lookup).map_err(|e| e.to_string())?;
            let v = usize::try_from(v).ok().filter(|v| v < extent);
            let v = v.ok_or_else(|| format!("the store writes outside `{t}`"))?;
            flat = flat * extent + v;
        }
        seen[flat] = true;
        Ok(())
    };
    walk(&params, 0, &mut env, &bound, &mut visit)?;
    match seen.iter().position(|s| !s) {
        None => Ok(()),
        Some(_) => Err(format!(
            "the producer does not store every element of `{t}`, so the consumer would miss some"
        )),
    }
}

/// Runs `visit` at every point of the nested iteration space `params` (ranges evaluated with
/// the outer parameters' values).
fn walk(
    params: &[&crate::ir::MapParam],
    at: usize,
    env: &mut Env,
    bound: &dyn Fn(&str) -> Option<i64>,
    visit: &mut dyn FnMut(&Env) -> Result<(), String>,
) -> Result<(), String> {
    let Some(q) = params.get(at) else {
        return visit(env);
    };
    let value = |e: &SymExpr, env: &Env| {
        e.eval_with(&|s| env.get(s).copied().or_else(|| bound(s)))
            .map_err(|e| e.to_string())
    };
    let (start, end, step) = (
        value(&q.range.start, env)?,
        value(&q.range.end, env)?,
        value(&q.range.step, env)?,
    );
    if step <= 0 {
        return Err(format!("parameter `{}` has step {step}", q.name));
    }
    let mut v = start;
    while v < end {
        env.insert(q.name.clone(), v);
        walk(params, at + 1, env, bound, visit)?;
        v += step;
    }
    env.remove(&q.name);
    Ok(())
}

/// What the consumer reads besides the link is ready before the producer runs (nothing after
/// the producer writes it), so the consumer's work can move into the producer.
fn ready_before(g: &Graph, pi: NodeIndex, ci: NodeIndex, link: NodeIndex) -> Result<(), String> {
    for e in g.in_edges(ci) {
        if e.other != link && g.has_path(pi, e.other) {
            return Err(format!(
                "the consumer also reads `{}`, written after the producer",
                e.memlet.data
            ));
        }
    }
    let reads: Vec<&String> = g.in_edges(pi).iter().map(|e| &e.memlet.data).collect();
    if let Some(d) = (g.out_edges(ci).iter())
        .map(|e| &e.memlet.data)
        .find(|d| reads.contains(d))
    {
        return Err(format!(
            "the producer reads `{d}`, which the consumer writes"
        ));
    }
    Ok(())
}

/// The rewrite: the store runs the consumer's body after its own, through a register; the
/// consumer and the link leave, the consumer's other inputs and its outputs are wired to the
/// producer, and the boundaries of the store and the producer are derived again.
fn fuse(p: &mut Program, f: Fusion) -> Result<Vec<NodeId>, NotApplicable> {
    let fail = |r: &str| refuse(&EpilogueFusion, f.consumer, r);
    let dtype = (p.data.get(&f.t))
        .map(|d| d.dtype)
        .ok_or_else(|| fail("the array is gone"))?;
    declare_register(p, &f.scalar, dtype);
    {
        let mut edit = p.edit(f.store).ok_or_else(|| fail("no store"))?;
        let si = edit.idx;
        let targets: Vec<NodeIndex> = (edit.graph.out_edges(si).iter())
            .filter(|e| e.memlet.data == f.t)
            .map(|e| e.other)
            .collect();
        let NodeKind::Map(sm) = &mut edit.graph.node_mut(si).kind else {
            return Err(fail("the store is not a map"));
        };
        let own = std::mem::take(&mut sm.body);
        sm.body = chain(own, f.body, &f.t, &f.scalar);
        for target in targets {
            let g = &mut *edit.graph;
            if g.in_edges(target).len() == 1 && g.out_edges(target).is_empty() {
                g.remove_node(target);
            }
        }
        for (data, subset) in &f.outputs {
            let id = edit.fresh_id();
            let g = &mut *edit.graph;
            let access = g.add_node(Node {
                id,
                label: data.clone(),
                kind: NodeKind::Access(data.clone()),
            });
            g.add_edge(si, access, Memlet::new(data.clone(), subset.clone()));
        }
        edit.refresh_boundary(si);
    }
    let mut edit = p.edit(f.producer).ok_or_else(|| fail("no producer"))?;
    let pi = edit.idx;
    let g = &mut *edit.graph;
    let ci = g.index_of(f.consumer).ok_or_else(|| fail("no consumer"))?;
    let link_node = g.index_of(f.link).ok_or_else(|| fail("no link"))?;
    let ins: Vec<_> = (g.in_edges(ci).iter())
        .filter(|e| e.other != link_node)
        .map(|e| (e.other, e.memlet.clone()))
        .collect();
    let outs: Vec<_> = (g.out_edges(ci).iter())
        .map(|e| (e.other, e.memlet.clone()))
        .collect();
    g.remove_node(ci);
    g.remove_node(link_node);
    for (src, memlet) in ins {
        g.add_edge(src, pi, memlet);
    }
    for (dst, memlet) in outs {
        g.add_edge(pi, dst, memlet);
    }
    edit.refresh_boundary(pi);
    if uses(&p.graph, &f.t) == (0, 0) {
        p.data.remove(&f.t);
    }
    Ok(vec![f.producer, f.consumer])
}
