//! BufferReuse: memory planning of transients — a transient whose life starts after another's
//! ended takes over the other's buffer.
//!
//! ```text
//! before:  A ─▶ m1 ─▶ T1 ─▶ m2 ─▶ B ─▶ m3 ─▶ T2 ─▶ m4 ─▶ C       T1, T2: transient f32[N]
//! after:   A ─▶ m1 ─▶ T1 ─▶ m2 ─▶ B ─▶ m3 ─▶ T1 ─▶ m4 ─▶ C       T2 removed
//!                                 B ┄(B[0:0])┄▶ m3               ordering edge, when needed
//! ```
//! Live ranges are taken in the top-level graph's topological order ([`Graph::ordered`], the
//! order the interpreter and the C backend run): the reuse applies when every node touching the
//! first container comes before every node touching the second, the second's first writer
//! writes all of it (so no value of the first leaks into it) and every other access to the
//! second is ordered after that writer. Renaming alone would lose the write-after-read
//! dependence between the first's last reader and the second's first writer, so the rewrite adds
//! an **ordering edge** wherever no path already orders them: from an access node the reader
//! writes to the writer, moving the empty subset `d[0:0, …]` — it states that the writer runs
//! after that version exists and moves no element (validation, the interpreter and the backend
//! move nothing for it, and `refresh_boundary` keeps it). The writer must therefore be a map
//! (library nodes accept edges only on their connectors).
//!
//! Site: `[access node of the first container, access node of the second]` (any top-level access
//! node of each names the container). [`plan_buffers`] proposes a whole plan greedily.

use super::opgraph::{rename_container, same_shape, shown};
use super::{refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{
    DataKind, Dim, Graph, Memlet, NodeId, NodeKind, Program, Range, Storage, Subset, SymExpr,
};
use petgraph::algo::has_path_connecting;
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

pub struct BufferReuse;

impl Transformation for BufferReuse {
    fn name(&self) -> &'static str {
        "BufferReuse"
    }

    fn level(&self) -> Level {
        Level::InterOperator
    }

    fn doc(&self) -> &'static str {
        "let a transient whose live range starts after another's ends reuse that buffer"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let live = Liveness::of(p);
        let mut out = Vec::new();
        for (a, la) in live.ranges() {
            for (b, lb) in live.ranges() {
                let compatible = p.data[a].dtype == p.data[b].dtype
                    && same_shape(&p.data[a].shape, &p.data[b].shape);
                if a != b && compatible && la.last < lb.first {
                    out.push(vec![la.access, lb.access]);
                }
            }
        }
        out
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
        self.plan(p, site).map(|_| ())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let plan = self.plan(p, site)?;
        let g = &mut p.graph;
        for (from, data) in &plan.orderings {
            let rank = p.data[data].rank();
            let empty = Subset(vec![Dim::Range(Range::upto(SymExpr::Int(0))); rank]);
            g.add_edge(*from, plan.writer, Memlet::new(data.as_str(), empty));
        }
        rename_container(g, &plan.second, &plan.first);
        p.data.remove(&plan.second);
        let mut touched = site.to_vec();
        touched.push(p.graph.node(plan.writer).id);
        Ok(touched)
    }
}

/// What an accepted reuse does: rename `second` to `first`, and add ordering edges from the
/// access nodes in `orderings` (with their container) to `writer`.
struct Plan {
    first: String,
    second: String,
    writer: NodeIndex,
    orderings: Vec<(NodeIndex, String)>,
}

impl BufferReuse {
    /// Checks every precondition and works out the ordering edges.
    fn plan(&self, p: &Program, site: &[NodeId]) -> Result<Plan, NotApplicable> {
        let [a, b] = site else {
            return Err(refuse(
                self,
                site.first().copied().unwrap_or(NodeId(0)),
                format!(
                    "a site is two access nodes (first, second transient), got {} node(s)",
                    site.len()
                ),
            ));
        };
        let g = &p.graph;
        let first = self.container(p, *a)?;
        let second = self.container(p, *b)?;
        let why = |r: String| refuse(self, *b, r);
        if first == second {
            return Err(why(format!("both nodes hold `{first}`")));
        }
        let (d1, d2) = (&p.data[&first], &p.data[&second]);
        if d1.dtype != d2.dtype {
            return Err(why(format!(
                "`{first}` is {} but `{second}` is {}",
                d1.dtype, d2.dtype
            )));
        }
        if !same_shape(&d1.shape, &d2.shape) {
            return Err(why(format!(
                "`{first}` has shape {} but `{second}` has {}; reusing the buffer would need its accesses re-indexed",
                shown(&d1.shape),
                shown(&d2.shape)
            )));
        }
        let live = Liveness::of(p);
        let (l1, l2) = (&live.of[&first], &live.of[&second]);
        if l1.last >= l2.first {
            return Err(why(format!(
                "live ranges overlap: `{first}` is last used by {} (step {}) but `{second}` is first used by {} (step {})",
                g.node(live.order[l1.last]).id,
                l1.last,
                g.node(live.order[l2.first]).id,
                l2.first
            )));
        }
        let writer = live.order[l2.first];
        let wid = g.node(writer).id;
        defines(g, writer, &second, &d2.shape).map_err(|r| why(format!("{wid} {r}")))?;
        if let Some(&late) = l2
            .touching
            .iter()
            .find(|&&n| n != writer && !has_path_connecting(&g.g, writer, n, None))
        {
            return Err(why(format!(
                "{} uses `{second}` but is not ordered after its first writer {wid}",
                g.node(late).id
            )));
        }
        let orderings = orderings(p, &l1.touching, writer).map_err(|n| {
            why(format!(
                "{} writes no array an ordering edge to {wid} could start from",
                g.node(n).id
            ))
        })?;
        if !orderings.is_empty() && !matches!(g.node(writer).kind, NodeKind::Map(_)) {
            return Err(why(format!(
                "{wid} must be ordered after the last use of `{first}` but is a {} node; only maps take ordering edges",
                g.node(writer).kind.kind_name()
            )));
        }
        Ok(Plan {
            first,
            second,
            writer,
            orderings,
        })
    }

    /// The global transient held by top-level access node `id`.
    fn container(&self, p: &Program, id: NodeId) -> Result<String, NotApplicable> {
        let idx = p
            .graph
            .index_of(id)
            .ok_or_else(|| refuse(self, id, "not a node of the top-level graph"))?;
        let NodeKind::Access(d) = &p.graph.node(idx).kind else {
            return Err(refuse(
                self,
                id,
                format!(
                    "node is a {} node, not an access node",
                    p.graph.node(idx).kind.kind_name()
                ),
            ));
        };
        let desc = &p.data[d];
        if desc.kind != DataKind::Transient || desc.storage != Storage::Global {
            return Err(refuse(
                self,
                id,
                format!(
                    "`{d}` is {} {}, not a global transient the program may reuse",
                    desc.kind.name(),
                    desc.storage.name()
                ),
            ));
        }
        Ok(d.clone())
    }
}

/// Checks that `writer` writes the whole of `data` without resolution and reads none of it, so
/// nothing of the previous owner of the buffer can be observed.
fn defines(g: &Graph, writer: NodeIndex, data: &str, shape: &[SymExpr]) -> Result<(), String> {
    if g.in_edges(writer).iter().any(|e| e.memlet.data == data) {
        return Err(format!("reads `{data}` before defining it"));
    }
    let full = Subset::full(shape);
    match g
        .out_edges(writer)
        .iter()
        .find(|e| e.memlet.data == data)
        .map(|e| e.memlet)
    {
        Some(m) if m.wcr.is_some() => Err(format!(
            "accumulates into `{data}` ({}), so it would read the old contents",
            m.wcr.map_or("", |w| w.name())
        )),
        Some(m) if m.subset != full => Err(format!(
            "writes only {data}{} of `{data}`{}; the rest would keep the old contents",
            m.subset,
            shown(shape)
        )),
        Some(_) => Ok(()),
        None => Err(format!(
            "is the first use of `{data}` but does not write it"
        )),
    }
}

/// The access nodes (with their containers) from which ordering edges to `writer` are needed:
/// for each node of `touching`, latest first, that no path (including the edges added for later
/// ones) already orders before `writer`, an array that node writes. Fails with the node that
/// writes no array (an empty subset of a scalar would still move its one element).
fn orderings(
    p: &Program,
    touching: &BTreeSet<NodeIndex>,
    writer: NodeIndex,
) -> Result<Vec<(NodeIndex, String)>, NodeIndex> {
    let g = &p.graph;
    let mut scratch = g.g.clone();
    let mut out = Vec::new();
    for n in g
        .ordered()
        .into_iter()
        .rev()
        .filter(|n| touching.contains(n))
    {
        if has_path_connecting(&scratch, n, writer, None) {
            continue;
        }
        let source = g
            .out_edges(n)
            .into_iter()
            .find(|e| p.data.get(&e.memlet.data).is_some_and(|d| d.rank() > 0))
            .ok_or(n)?;
        scratch.add_edge(source.other, writer, source.memlet.clone());
        out.push((source.other, source.memlet.data.clone()));
    }
    Ok(out)
}

/// Top-level live range of one global transient: the non-access nodes touching it, their first
/// and last step in the topological order, and its first access node.
struct Live {
    touching: BTreeSet<NodeIndex>,
    first: usize,
    last: usize,
    access: NodeId,
}

/// Live ranges of every global transient used in the top-level graph.
struct Liveness {
    order: Vec<NodeIndex>,
    of: BTreeMap<String, Live>,
}

impl Liveness {
    fn of(p: &Program) -> Liveness {
        let g = &p.graph;
        let order = g.ordered();
        let step: BTreeMap<NodeIndex, usize> =
            order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        let mut of: BTreeMap<String, Live> = BTreeMap::new();
        for &idx in &order {
            let NodeKind::Access(d) = &g.node(idx).kind else {
                continue;
            };
            let reusable = p
                .data
                .get(d)
                .is_some_and(|x| x.kind == DataKind::Transient && x.storage == Storage::Global);
            if !reusable {
                continue;
            }
            let live = of.entry(d.clone()).or_insert_with(|| Live {
                touching: BTreeSet::new(),
                first: usize::MAX,
                last: 0,
                access: g.node(idx).id,
            });
            let around = g.in_edges(idx).into_iter().chain(g.out_edges(idx));
            for e in around {
                live.touching.insert(e.other);
                live.first = live.first.min(step[&e.other]);
                live.last = live.last.max(step[&e.other]);
            }
        }
        of.retain(|_, l| !l.touching.is_empty());
        Liveness { order, of }
    }

    /// Containers with their live ranges, earliest start first.
    fn ranges(&self) -> Vec<(&String, &Live)> {
        let mut v: Vec<_> = self.of.iter().collect();
        v.sort_by_key(|(n, l)| (l.first, (*n).clone()));
        v
    }
}

/// A greedy memory plan: repeatedly takes the first applicable reuse among
/// [`BufferReuse::candidates`] (earliest-starting buffer first) on a copy of `p`, so the pairs,
/// applied in order, each find the previous ones done. Returns `(kept, reused)` container names.
pub fn plan_buffers(p: &Program) -> Vec<(String, String)> {
    let mut work = p.clone();
    let t = BufferReuse;
    let none = Params::new();
    let mut out = Vec::new();
    loop {
        let next = t
            .candidates(&work)
            .into_iter()
            .find_map(|site| t.plan(&work, &site).ok().map(|plan| (site, plan)));
        let Some((site, plan)) = next else {
            return out;
        };
        if t.apply(&mut work, &site, &none).is_err() {
            return out;
        }
        out.push((plan.first, plan.second));
    }
}
