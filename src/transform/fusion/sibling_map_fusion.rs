//! SiblingMapFusion: fuse two independent maps of one scope that iterate over the same space.
//!
//! ```text
//! before:  map [i = 0:N] { Y[i] = f(X[i]) }
//!          map [j = 0:N] { Z[j] = g(X[j], W[j]) }
//! after:   map [i = 0:N] { Y[i] = f(X[i]); Z[i] = g(X[i], W[i]) }
//! ```
//! One loop instead of two: the shared input `X` is streamed once per iteration (both bodies
//! read it through one access node), and the loop overhead and the second pass over the
//! iteration space disappear. The maps must be independent — neither reads what the other
//! writes, they write no common container, and no path through other nodes joins them — so
//! interleaving their iterations cannot change any value. The second map's parameters are
//! renamed positionally to the first's; the fused map keeps the first's id, label and schedule.

use crate::ir::rewrite::substitute_symbols;
use crate::ir::{DataDesc, Graph, MapNode, NodeId, NodeKind, Program, Storage, SymExpr};
use crate::transform::support::splice::replace_pair;
use crate::transform::{
    expect_map, refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

pub struct SiblingMapFusion;

const SCHEMA: Schema = Schema {
    name: "SiblingMapFusion",
    level: Level::InterOperator,
    doc: "fuse two independent maps with the same iteration space into one; shared inputs are read once",
    site: &[
        Role::new(
            "first",
            NodeClass::Map,
            "the map whose id, label, schedule and parameter names the fused map keeps",
        ),
        Role::new(
            "second",
            NodeClass::Map,
            "an independent map of the same scope; its parameters are renamed to the first's",
        ),
    ],
    params: &[],
};

impl Transformation for SiblingMapFusion {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut out = Vec::new();
        scope_candidates(&p.graph, &mut out);
        out
    }

    /// Structural: one scope, one schedule, no name capture by the renaming. Legality: equal
    /// iteration spaces and independence (see [`independent`]).
    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let (first, second) = (site[0], site[1]);
        let (fm, sm) = (expect_map(self, p, first)?, expect_map(self, p, second)?);
        let why = |r: String| refuse(self, second, r);
        let (g, fi) = p
            .graph
            .locate(first)
            .ok_or_else(|| why("no such first map".into()))?;
        let si = g
            .index_of(second)
            .ok_or_else(|| why(format!("map {first} is in a different scope")))?;
        legality.holds(same_space(fm, sm).map_err(why))?;
        if fm.schedule != sm.schedule {
            return Err(why(format!(
                "schedules differ ({} vs {}); the fused map could run only one of them",
                fm.schedule.name(),
                sm.schedule.name()
            )));
        }
        legality.holds(independent(g, (fi, fm), (si, sm), &p.data).map_err(why))?;
        let captured = nested_params(&sm.body)
            .into_iter()
            .find(|n| fm.params.iter().any(|q| q.name == *n));
        if let Some(n) = captured {
            return Err(why(format!(
                "a map nested in {second} already uses the name `{n}`, which renaming its parameters would capture"
            )));
        }
        Ok(Plan::new(move |p| fuse(p, first, second)))
    }
}

/// The rewrite: the two maps leave, the merged map takes the first's id.
fn fuse(p: &mut Program, first: NodeId, second: NodeId) -> Result<Vec<NodeId>, NotApplicable> {
    let fail = |r: &str| refuse(&SiblingMapFusion, second, r);
    let mut edit = p.edit(first).ok_or_else(|| fail("no first map"))?;
    let fi = edit.idx;
    let si = edit
        .graph
        .index_of(second)
        .ok_or_else(|| fail("no second map"))?;
    let fused = replace_pair(edit.graph, (fi, si), &[], (first, false), merge)
        .ok_or_else(|| fail("a site node is not a map"))?;
    edit.refresh_boundary(fused);
    Ok(vec![first, second])
}

/// Pairs of maps in one scope with the same iteration space and no path between them, in every
/// scope, in topological order.
fn scope_candidates(g: &Graph, out: &mut Vec<Vec<NodeId>>) {
    let maps: Vec<(NodeIndex, &MapNode)> = g
        .ordered()
        .into_iter()
        .filter_map(|i| match &g.node(i).kind {
            NodeKind::Map(m) => Some((i, m)),
            _ => None,
        })
        .collect();
    for (k, (a, am)) in maps.iter().enumerate() {
        for (b, bm) in &maps[k + 1..] {
            let joined = g.has_path(*a, *b) || g.has_path(*b, *a);
            if !joined && same_space(am, bm).is_ok() {
                out.push(vec![g.node(*a).id, g.node(*b).id]);
            }
        }
    }
    for (_, m) in maps {
        scope_candidates(&m.body, out);
    }
}

/// Equal iteration spaces once `second`'s parameters are renamed to `first`'s, or why not.
fn same_space(first: &MapNode, second: &MapNode) -> Result<(), String> {
    let shown = |m: &MapNode| {
        let v: Vec<String> = m
            .params
            .iter()
            .map(|q| format!("{} = {}", q.name, q.range))
            .collect();
        format!("[{}]", v.join(", "))
    };
    let rename = renaming(first, second);
    let equal = first.params.len() == second.params.len()
        && first.params.iter().zip(&second.params).all(|(a, b)| {
            a.range
                == b.range
                    .map_exprs(&|e| e.substitute_all(&|s| rename.get(s).cloned()))
        });
    if equal {
        Ok(())
    } else {
        Err(format!(
            "iteration spaces differ: {} vs {}",
            shown(first),
            shown(second)
        ))
    }
}

/// `second`'s parameter names mapped positionally to `first`'s.
fn renaming(first: &MapNode, second: &MapNode) -> BTreeMap<String, SymExpr> {
    second
        .params
        .iter()
        .zip(&first.params)
        .map(|(b, a)| (b.name.clone(), SymExpr::sym(a.name.as_str())))
        .collect()
}

/// Checks that running the two maps' iterations interleaved cannot change a value: no
/// container one writes is touched by the other, local containers are not shared, both read a
/// shared input in the same version, and no path through other nodes orders one after the other.
fn independent(
    g: &Graph,
    (fi, fm): (NodeIndex, &MapNode),
    (si, sm): (NodeIndex, &MapNode),
    data: &BTreeMap<String, DataDesc>,
) -> Result<(), String> {
    let (fid, sid) = (g.node(fi).id, g.node(si).id);
    for (from, to) in [(fi, si), (si, fi)] {
        if g.has_path(from, to) {
            return Err(format!(
                "map {} depends on map {} through the nodes between them",
                g.node(to).id,
                g.node(from).id
            ));
        }
    }
    let written = |i: NodeIndex| -> BTreeSet<String> {
        g.out_edges(i)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect()
    };
    let read = |i: NodeIndex| -> BTreeMap<String, NodeIndex> {
        g.in_edges(i)
            .iter()
            .map(|e| (e.memlet.data.clone(), e.other))
            .collect()
    };
    let (fw, sw, fr, sr) = (written(fi), written(si), read(fi), read(si));
    if let Some(d) = fw.intersection(&sw).next() {
        return Err(format!("both maps write `{d}`"));
    }
    for (writes, reads, w, r) in [(&fw, &sr, fid, sid), (&sw, &fr, sid, fid)] {
        if let Some(d) = reads.keys().find(|d| writes.contains(*d)) {
            return Err(format!("map {r} reads `{d}`, which map {w} writes"));
        }
    }
    for (d, a) in &fr {
        if sr.get(d).is_some_and(|b| b != a) {
            return Err(format!(
                "the maps read `{d}` from different access nodes (different versions)"
            ));
        }
    }
    let local = |m: &MapNode| -> BTreeSet<String> {
        m.body
            .data_used()
            .into_iter()
            .filter(|d| data.get(d).is_some_and(|x| x.storage != Storage::Global))
            .collect()
    };
    if let Some(d) = local(fm).intersection(&local(sm)).next() {
        return Err(format!(
            "both bodies use the local container `{d}`, so their iterations would share it"
        ));
    }
    Ok(())
}

/// Parameter names of every map nested (at any depth) in `g`.
fn nested_params(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    g.walk(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            out.extend(m.params.iter().map(|q| q.name.clone()));
        }
    });
    out
}

/// The first map with the second's body (parameters renamed) added to its own. A container both
/// bodies only read gets one access node: the first body's.
fn merge(first: MapNode, second: MapNode) -> MapNode {
    let rename = renaming(&first, &second);
    let mut extra = second.body;
    substitute_symbols(&mut extra, &|s| rename.get(s).cloned());
    let mut body = first.body;
    let sources = |g: &Graph| -> BTreeMap<String, NodeIndex> {
        let written: BTreeSet<String> = g
            .node_indices()
            .filter(|&i| !g.in_edges(i).is_empty())
            .filter_map(|i| match &g.node(i).kind {
                NodeKind::Access(d) => Some(d.clone()),
                _ => None,
            })
            .collect();
        g.ordered()
            .into_iter()
            .filter_map(|i| match &g.node(i).kind {
                NodeKind::Access(d) if !written.contains(d) => Some((d.clone(), i)),
                _ => None,
            })
            .collect()
    };
    let shared = sources(&body);
    let theirs = sources(&extra);
    let mut index: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    for idx in extra.node_indices() {
        let node = extra.node(idx);
        let reuse = match &node.kind {
            NodeKind::Access(d) if theirs.get(d) == Some(&idx) => shared.get(d).copied(),
            _ => None,
        };
        let target = reuse.unwrap_or_else(|| body.add_node(node.clone()));
        index.insert(idx, target);
    }
    for e in extra.edges() {
        if let (Some(&s), Some(&d)) = (index.get(&e.from), index.get(&e.to)) {
            body.add_edge(s, d, e.memlet.clone());
        }
    }
    MapNode {
        params: first.params,
        schedule: first.schedule,
        min_work: first.min_work,
        body,
    }
}
