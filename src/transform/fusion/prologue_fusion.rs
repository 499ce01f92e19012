//! PrologueFusion: fuse a map that initializes an array into the copy that loads it inside a
//! tiled map, so the initial values are computed where they are loaded instead of being
//! written to memory and read back.
//!
//! ```text
//! before:  map [h, w, m] { Y[0, h, w, m] = B[m] }                 Y: transient, its first version
//!          map [h, w/8] {                                          (a register-tiled convolution)
//!            map [w', m] { acc[w', m] = Y[0, h, w + w', m] }       the tile's copy-in
//!            … accumulate into acc …
//!            map [w', m] { Y[0, h, w + w', m] = acc[w', m] }       its copy-out
//!          }
//! after:   map [h, w/8] {
//!            map [w', m] { acc[w', m] = B[m] }
//!            …
//!          }
//! ```
//! A convolution or product with a bias initializes its output with the bias and accumulates
//! into it; once the accumulation runs on register tiles, that initialization is a whole pass
//! over the output (a `memcpy` of the bias per pixel in the C) whose values the tile's copy-in
//! reads straight back. Fusing removes the pass and the read. The producer's body is copied into
//! the copy-in with its parameters replaced by the copy-in's read indices; the consumer keeps
//! its id.

use super::map_fusion::{
    chain, covers, declare_register, element_accesses, element_written, linked_pair, nested_use,
    LinkedPair,
};
use crate::ir::rewrite::substitute_symbols;
use crate::ir::{Dim, Graph, MapNode, NodeId, NodeKind, Program, SymExpr};
use crate::transform::support::scope::{map_pairs, uses};
use crate::transform::{
    refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

pub struct PrologueFusion;

const SCHEMA: Schema = Schema {
    name: "PrologueFusion",
    level: Level::InterOperator,
    doc: "fuse a map that initializes an array into the copy that loads it inside a tiled map; the initialization pass disappears",
    site: &[
        Role::new(
            "producer",
            NodeClass::Map,
            "the map that writes every element of the array, element by element",
        ),
        Role::new(
            "consumer",
            NodeClass::Map,
            "the map whose nested copy map is the only reader of that array; it keeps its id",
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
    /// The nested map inside the consumer that reads the array.
    loader: NodeId,
    /// The producer's body with its parameters replaced by the loader's read indices.
    body: Graph,
    t: String,
    scalar: String,
}

impl Transformation for PrologueFusion {
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

impl PrologueFusion {
    /// Structural: one scope, a global transient linking exactly this producer to this consumer,
    /// the producer writing only it, one nested map of the consumer reading it. Legality: the
    /// producer writes every element once, the loader reads single elements, and the producer's
    /// inputs are not written after it (they are read later now, where the consumer runs).
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
        let outs = |i: NodeIndex| g.out_edges(i).iter().map(|e| e.other).collect::<Vec<_>>();
        let ins = |i: NodeIndex| g.in_edges(i).iter().map(|e| e.other).collect::<Vec<_>>();
        if !only(outs(pi), link_node) || !only(ins(link_node), pi) || !only(outs(link_node), ci) {
            return Err(why(format!(
                "the producer must write only `{t}`, read by this consumer alone"
            )));
        }
        nested_use(&pm.body, &t).map_err(|r| why(format!("producer: {r}")))?;
        let written = element_written(pm, &t).map_err(|r| why(format!("producer: {r}")))?;
        legality.holds(
            element_accesses(&pm.body, &t, &written, true)
                .map_err(|r| why(format!("producer: {r}"))),
        )?;
        legality.holds(covers(pm, &written.0, &desc.shape, &t).map_err(|r| {
            why(format!(
                "the producer {r}, so the loads would miss some values"
            ))
        }))?;
        let (loader, read) = loader(cm, &t).map_err(why)?;
        legality.holds(inputs_stay(g, pi, ci).map_err(why))?;
        // The producer's parameter that indexes dimension d reads the loader's index there.
        let mut rename = BTreeMap::new();
        for (w, r) in written.0.iter().zip(&read) {
            if let Dim::Index(SymExpr::Sym(q)) = w {
                rename.insert(q.clone(), r.clone());
            }
        }
        let mut body = pm.body.clone();
        substitute_symbols(&mut body, &|s| rename.get(s).cloned());
        Ok(Fusion {
            producer,
            consumer,
            link: g.node(link_node).id,
            loader,
            body,
            scalar: p.fresh_data_name(&format!("{t}_reg")),
            t,
        })
    }
}

/// The one map nested in the consumer that reads `t` (directly from an access node that nothing
/// in the consumer writes before), and the single element it reads, as one index per dimension.
fn loader(cm: &MapNode, t: &str) -> Result<(NodeId, Vec<SymExpr>), String> {
    let body = &cm.body;
    let mut readers = Vec::new();
    for idx in body.node_indices() {
        if matches!(&body.node(idx).kind, NodeKind::Access(d) if d == t) {
            let outs = body.out_edges(idx);
            if !outs.is_empty() && !body.in_edges(idx).is_empty() {
                return Err(format!("the consumer reads `{t}` after writing it"));
            }
            readers.extend(outs.into_iter().map(|e| e.other));
        }
    }
    let [reader] = readers.as_slice() else {
        return Err(format!(
            "{} nodes of the consumer read `{t}`; fusion needs exactly one nested copy map",
            readers.len()
        ));
    };
    let NodeKind::Map(lm) = &body.node(*reader).kind else {
        return Err(format!(
            "`{t}` is read by a node of the consumer that is not a map"
        ));
    };
    nested_use(&lm.body, t).map_err(|r| format!("loader: {r}"))?;
    let read = (lm.body.edges())
        .find(|e| e.memlet.data == t)
        .map(|e| e.memlet.subset.clone())
        .ok_or_else(|| format!("the loader does not read `{t}`"))?;
    element_accesses(&lm.body, t, &read, false).map_err(|r| format!("loader: {r}"))?;
    let indices = (read.0.iter())
        .map(|d| match d {
            Dim::Index(e) => Ok(e.clone()),
            Dim::Range(_) => Err(format!(
                "the loader reads a range of `{t}`, not one element"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((body.node(*reader).id, indices))
}

/// Nothing after the producer writes what it reads, and the consumer does not: its body now
/// reads those inputs where the consumer runs.
fn inputs_stay(g: &Graph, pi: NodeIndex, ci: NodeIndex) -> Result<(), String> {
    let inputs: Vec<String> = (g.in_edges(pi).iter())
        .map(|e| e.memlet.data.clone())
        .collect();
    for idx in g.node_indices() {
        if idx == pi || !(idx == ci || g.has_path(pi, idx)) {
            continue;
        }
        if let Some(d) = (g.out_edges(idx).iter())
            .map(|e| &e.memlet.data)
            .find(|d| inputs.contains(d))
        {
            let node = g.node(idx);
            return Err(format!(
                "`{d}`, which the producer reads, is written after it (by {} \"{}\")",
                node.id, node.label
            ));
        }
    }
    Ok(())
}

/// The rewrite: the loader runs the producer's body in front of its own, through a register;
/// the producer and its link leave, its inputs are wired to the consumer, and the boundaries of
/// the loader and the consumer are derived again.
fn fuse(p: &mut Program, f: Fusion) -> Result<Vec<NodeId>, NotApplicable> {
    let fail = |r: &str| refuse(&PrologueFusion, f.consumer, r);
    let dtype = (p.data.get(&f.t))
        .map(|d| d.dtype)
        .ok_or_else(|| fail("the array is gone"))?;
    declare_register(p, &f.scalar, dtype);
    {
        let mut edit = p.edit(f.loader).ok_or_else(|| fail("no loader"))?;
        let li = edit.idx;
        let g = &mut *edit.graph;
        let sources: Vec<NodeIndex> = (g.in_edges(li).iter())
            .filter(|e| e.memlet.data == f.t)
            .map(|e| e.other)
            .collect();
        let NodeKind::Map(lm) = &mut g.node_mut(li).kind else {
            return Err(fail("the loader is not a map"));
        };
        let own = std::mem::take(&mut lm.body);
        lm.body = chain(f.body, own, &f.t, &f.scalar);
        for s in sources {
            if g.out_edges(s).len() == 1 && g.in_edges(s).is_empty() {
                g.remove_node(s);
            }
        }
        edit.refresh_boundary(li);
    }
    let mut edit = p.edit(f.consumer).ok_or_else(|| fail("no consumer"))?;
    let ci = edit.idx;
    let g = &mut *edit.graph;
    let pi = g.index_of(f.producer).ok_or_else(|| fail("no producer"))?;
    let link_node = g.index_of(f.link).ok_or_else(|| fail("no link"))?;
    let inputs: Vec<_> = (g.in_edges(pi).iter())
        .map(|e| (e.other, e.memlet.clone()))
        .collect();
    g.remove_node(link_node);
    g.remove_node(pi);
    for (src, memlet) in inputs {
        g.add_edge(src, ci, memlet);
    }
    edit.refresh_boundary(ci);
    if uses(&p.graph, &f.t) == (0, 0) {
        p.data.remove(&f.t);
    }
    Ok(vec![f.producer, f.consumer])
}
