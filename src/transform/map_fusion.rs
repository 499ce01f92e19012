//! MapFusion: fuse a producer map into the consumer map that reads its result element by element.
//!
//! ```text
//! before:  map [i = 0:N] { T[i] = f(X[i]) }      T: transient f32[N]
//!          map [i = 0:N] { Y[i] = g(T[i]) }
//! after:   map [i = 0:N] { t = f(X[i]); Y[i] = g(t) }   t: register f32[]
//! ```
//! The intermediate array disappears: each value is produced and consumed in a register, which
//! removes a full write and read of `T` from memory. The fused map keeps the consumer's id.

use super::{expect_map, refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::rewrite::substitute_symbols;
use crate::ir::{
    DataDesc, DataKind, Graph, MapNode, Memlet, NodeId, NodeKind, Program, Storage, Subset, SymExpr,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

pub struct MapFusion;

impl Transformation for MapFusion {
    fn name(&self) -> &'static str {
        "MapFusion"
    }

    fn level(&self) -> Level {
        Level::InterOperator
    }

    fn doc(&self) -> &'static str {
        "fuse a producer map into its element-wise consumer; the intermediate array becomes a register"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut out = Vec::new();
        scope_candidates(&p.graph, &mut out);
        out
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
        let [producer, consumer] = site else {
            return Err(refuse(
                self,
                site.first().copied().unwrap_or(NodeId(0)),
                "a site is a producer and a consumer map",
            ));
        };
        let (pm, cm) = (
            expect_map(self, p, *producer)?,
            expect_map(self, p, *consumer)?,
        );
        let why = |r: String| refuse(self, *consumer, r);
        let (g, pi) = p
            .graph
            .locate(*producer)
            .ok_or_else(|| why("no such producer".into()))?;
        let ci = g.index_of(*consumer).ok_or_else(|| {
            why(format!(
                "producer {producer} and consumer are in different scopes"
            ))
        })?;
        let (_, t) = link(g, pi, ci).ok_or_else(|| {
            why(format!(
                "consumer does not read anything that map {producer} writes"
            ))
        })?;
        let desc = &p.data[&t];
        if desc.kind != DataKind::Transient || desc.storage != Storage::Global {
            return Err(why(format!(
                "`{t}` is not a global transient (it is {} {}), so it must stay in memory",
                desc.kind.name(),
                desc.storage.name()
            )));
        }
        // Uses outside the two bodies: exactly the link (written by the producer, read by the consumer).
        let (all_r, all_w) = uses(&p.graph, &t);
        let (pr, pw) = uses(&pm.body, &t);
        let (cr, cw) = uses(&cm.body, &t);
        let (readers, writers) = (all_r - pr - cr, all_w - pw - cw);
        if readers != 1 || writers != 1 {
            return Err(why(format!("`{t}` is read by {readers} and written by {writers} nodes; fusion needs exactly one producer and one consumer")));
        }
        if pm.params.len() != cm.params.len()
            || pm
                .params
                .iter()
                .zip(&cm.params)
                .any(|(a, b)| a.range != b.range)
        {
            return Err(why(format!(
                "iteration spaces differ: producer {} vs consumer {}",
                ranges(pm),
                ranges(cm)
            )));
        }
        let pidx: Vec<SymExpr> = pm
            .params
            .iter()
            .map(|q| SymExpr::sym(q.name.as_str()))
            .collect();
        let cidx: Vec<SymExpr> = cm
            .params
            .iter()
            .map(|q| SymExpr::sym(q.name.as_str()))
            .collect();
        check_accesses(&pm.body, &t, &Subset::element(pidx), true)
            .map_err(|r| why(format!("producer: {r}")))?;
        check_accesses(&cm.body, &t, &Subset::element(cidx), false)
            .map_err(|r| why(format!("consumer: {r}")))?;
        let p_writes: Vec<String> = g
            .out_edges(pi)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect();
        let c_writes: Vec<String> = g
            .out_edges(ci)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect();
        if let Some(d) = g
            .in_edges(ci)
            .iter()
            .map(|e| &e.memlet.data)
            .find(|d| **d != t && p_writes.contains(d))
        {
            return Err(why(format!(
                "consumer also reads `{d}`, which the producer writes"
            )));
        }
        if let Some(d) = g
            .in_edges(pi)
            .iter()
            .map(|e| &e.memlet.data)
            .find(|d| c_writes.contains(d))
        {
            return Err(why(format!(
                "producer reads `{d}`, which the consumer writes"
            )));
        }
        Ok(())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let (producer, consumer) = (site[0], site[1]);
        let fail = |r: &str| refuse(self, consumer, r);
        let (t, scalar) = {
            let (g, pi) = p
                .graph
                .locate(producer)
                .ok_or_else(|| fail("no producer"))?;
            let ci = g.index_of(consumer).ok_or_else(|| fail("no consumer"))?;
            let (_, t) = link(g, pi, ci).ok_or_else(|| fail("no link"))?;
            let scalar = p.fresh_data_name(&format!("{t}_reg"));
            (t, scalar)
        };
        let dtype = p.data[&t].dtype;
        let mut reg = DataDesc::new(dtype, Vec::new(), DataKind::Transient);
        reg.storage = Storage::Register;
        p.data.insert(scalar.clone(), reg);

        let mut edit = p.edit(consumer).ok_or_else(|| fail("no consumer"))?;
        let g = &mut *edit.graph;
        let ci = edit.idx;
        let pi = g.index_of(producer).ok_or_else(|| fail("no producer"))?;
        let (link_node, _) = link(g, pi, ci).ok_or_else(|| fail("no link"))?;
        let mut wiring: Vec<(NodeIndex, bool, Memlet)> = Vec::new();
        for side in [pi, ci] {
            for e in g.in_edges(side) {
                if e.other != link_node {
                    wiring.push((e.other, true, e.memlet.clone()));
                }
            }
            for e in g.out_edges(side) {
                if e.other != link_node {
                    wiring.push((e.other, false, e.memlet.clone()));
                }
            }
        }
        let take = |g: &mut Graph, i: NodeIndex| match g.g.remove_node(i).map(|n| n.kind) {
            Some(NodeKind::Map(m)) => Some(m),
            _ => None,
        };
        let label = g.node(ci).label.clone();
        let pm = take(g, pi).ok_or_else(|| fail("producer vanished"))?;
        let cm = take(g, ci).ok_or_else(|| fail("consumer vanished"))?;
        g.g.remove_node(link_node);
        let fused = fuse_bodies(pm, cm, &t, &scalar);
        let fi = g.add_node(crate::ir::Node {
            id: consumer,
            label,
            kind: NodeKind::Map(fused),
        });
        let mut seen: Vec<(NodeIndex, bool, String)> = Vec::new();
        for (other, incoming, m) in wiring {
            let key = (other, incoming, m.data.clone());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            if incoming {
                g.add_edge(other, fi, m);
            } else {
                g.add_edge(fi, other, m);
            }
        }
        edit.refresh_boundary(fi);
        if uses(&p.graph, &t) == (0, 0) {
            p.data.remove(&t);
        }
        Ok(vec![producer, consumer])
    }
}

/// Producer → consumer pairs linked through one access node, in every scope.
fn scope_candidates(g: &Graph, out: &mut Vec<Vec<NodeId>>) {
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
                scope_candidates(&m.body, out);
            }
            _ => continue,
        }
    }
}

/// The access node and container through which `c` reads what `p` writes.
fn link(g: &Graph, p: NodeIndex, c: NodeIndex) -> Option<(NodeIndex, String)> {
    g.out_edges(p).into_iter().find_map(|e| {
        let reads = g.out_edges(e.other).iter().any(|r| r.other == c);
        match &g.node(e.other).kind {
            NodeKind::Access(d) if reads => Some((e.other, d.clone())),
            _ => None,
        }
    })
}

/// How many edges read from and write to access nodes of `data`, program-wide.
pub(super) fn uses(g: &Graph, data: &str) -> (usize, usize) {
    let (mut r, mut w) = (0, 0);
    count_uses(g, data, &mut r, &mut w);
    (r, w)
}

fn count_uses(g: &Graph, data: &str, r: &mut usize, w: &mut usize) {
    for idx in g.g.node_indices() {
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

fn ranges(m: &MapNode) -> String {
    let v: Vec<String> = m
        .params
        .iter()
        .map(|q| format!("{} = {}", q.name, q.range))
        .collect();
    format!("[{}]", v.join(", "))
}

/// Inside one body: `data` is accessed only at `expected`, only by tasklets, with no resolution,
/// written exactly once (producer) or only read (consumer).
fn check_accesses(
    body: &Graph,
    data: &str,
    expected: &Subset,
    producer: bool,
) -> Result<(), String> {
    let mut writes = 0;
    for idx in body.g.node_indices() {
        match &body.node(idx).kind {
            NodeKind::Access(d) if d == data => {
                let edges = body
                    .in_edges(idx)
                    .into_iter()
                    .map(|e| (e, true))
                    .chain(body.out_edges(idx).into_iter().map(|e| (e, false)));
                for (e, write) in edges {
                    if !matches!(body.node(e.other).kind, NodeKind::Tasklet(_)) {
                        return Err(format!(
                            "`{data}` is accessed by a nested map, not element-wise"
                        ));
                    }
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
            NodeKind::Map(m) if m.body.data_used().contains(data) => {
                return Err(format!("`{data}` is accessed inside a nested map"));
            }
            _ => {}
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
    let mut body = pm.body;
    substitute_symbols(&mut body, &|s| rename.get(s).cloned());
    let to_scalar = |m: &mut Memlet| {
        if m.data == t {
            m.data = scalar.to_string();
            m.subset = Subset::default();
        }
    };
    let mut produced = None;
    for idx in body.g.node_indices().collect::<Vec<_>>() {
        if matches!(&body.node(idx).kind, NodeKind::Access(d) if d == t) {
            body.node_mut(idx).kind = NodeKind::Access(scalar.to_string());
            produced = Some(idx);
        }
    }
    for m in body.g.edge_weights_mut() {
        to_scalar(m);
    }
    let consumer = cm.body;
    let mut map: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    for idx in consumer.g.node_indices() {
        let node = consumer.node(idx);
        let target = match (&node.kind, produced) {
            (NodeKind::Access(d), Some(src)) if d == t => src,
            _ => body.add_node(node.clone()),
        };
        map.insert(idx, target);
    }
    for e in consumer.g.edge_indices() {
        let (s, d) = consumer.g.edge_endpoints(e).expect("edge exists");
        let mut m = consumer.g[e].clone();
        to_scalar(&mut m);
        body.add_edge(map[&s], map[&d], m);
    }
    MapNode {
        params: cm.params,
        schedule: cm.schedule,
        body,
    }
}
