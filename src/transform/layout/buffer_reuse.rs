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

use crate::ir::{
    DataDesc, DataKind, Graph, Memlet, NodeId, NodeKind, Program, Storage, Subset, SymExpr,
};
use crate::transform::support::opgraph::{rename_container, same_shape, shown};
use crate::transform::{
    refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

pub struct BufferReuse;

const SCHEMA: Schema = Schema {
    name: "BufferReuse",
    level: Level::InterOperator,
    doc: "let a transient whose live range starts after another's ends reuse that buffer",
    site: &[
        Role::new(
            "first",
            NodeClass::Access,
            "a top-level access node of the transient whose buffer is kept",
        ),
        Role::new(
            "second",
            NodeClass::Access,
            "a top-level access node of the later transient, which takes over the buffer",
        ),
    ],
    params: &[],
};

impl Transformation for BufferReuse {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let live = Liveness::of(p);
        let mut out = Vec::new();
        for (a, la) in live.ranges() {
            for (b, lb) in live.ranges() {
                let compatible = match (p.data.get(a), p.data.get(b)) {
                    (Some(da), Some(db)) => {
                        da.dtype == db.dtype && same_shape(&da.shape, &db.shape)
                    }
                    _ => false,
                };
                if a != b && compatible && la.last < lb.first {
                    out.push(vec![la.access, lb.access]);
                }
            }
        }
        out
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let reuse = self.reuse(p, site[0], site[1], legality)?;
        Ok(Plan::new(move |p| reuse.rewrite(p)))
    }
}

/// What an accepted reuse does: rename `second` to `first`, and add the ordering edges
/// (from an access node, moving an empty subset) to `writer`. Nodes are kept by id, so the
/// rewrite finds them again without trusting graph indices.
#[derive(Clone, Debug)]
struct Reuse {
    site: [NodeId; 2],
    first: String,
    second: String,
    writer: NodeId,
    orderings: Vec<(NodeId, Memlet)>,
}

impl Reuse {
    fn rewrite(self, p: &mut Program) -> Result<Vec<NodeId>, NotApplicable> {
        let g = &mut p.graph;
        let gone = |id: NodeId| {
            refuse(
                &BufferReuse,
                id,
                "the node is no longer in the top-level graph",
            )
        };
        let writer = g.index_of(self.writer).ok_or_else(|| gone(self.writer))?;
        for (from, memlet) in self.orderings {
            let from = g.index_of(from).ok_or_else(|| gone(from))?;
            g.add_edge(from, writer, memlet);
        }
        rename_container(g, &self.second, &self.first);
        p.data.remove(&self.second);
        let mut touched = self.site.to_vec();
        touched.push(self.writer);
        Ok(touched)
    }
}

impl BufferReuse {
    /// Checks every precondition (live ranges, the second's first writer defining all of it and
    /// ordering every other use, as legality) and works out the ordering edges.
    fn reuse(
        &self,
        p: &Program,
        a: NodeId,
        b: NodeId,
        legality: &mut Legality,
    ) -> Result<Reuse, NotApplicable> {
        let g = &p.graph;
        let (first, d1) = self.container(p, a)?;
        let (second, d2) = self.container(p, b)?;
        let why = |r: String| refuse(self, b, r);
        if first == second {
            return Err(why(format!("both nodes hold `{first}`")));
        }
        interchangeable((&first, d1), (&second, d2)).map_err(why)?;
        let live = Liveness::of(p);
        let unused = |d: &str, id| {
            refuse(
                self,
                id,
                format!("`{d}` is not used in the top-level graph"),
            )
        };
        let l1 = live.of.get(&first).ok_or_else(|| unused(&first, a))?;
        let l2 = live.of.get(&second).ok_or_else(|| unused(&second, b))?;
        let id_at = |step: usize| {
            (live.order.get(step)).map_or_else(String::new, |&i| g.node(i).id.to_string())
        };
        legality.holds(if l1.last >= l2.first {
            Err(why(format!(
                "live ranges overlap: `{first}` is last used by {} (step {}) but `{second}` is first used by {} (step {})",
                id_at(l1.last),
                l1.last,
                id_at(l2.first),
                l2.first
            )))
        } else {
            Ok(())
        })?;
        let writer = *live.order.get(l2.first).ok_or_else(|| unused(&second, b))?;
        let wid = g.node(writer).id;
        legality
            .holds(defines(g, writer, &second, &d2.shape).map_err(|r| why(format!("{wid} {r}"))))?;
        let late = (l2.touching.iter()).find(|&&n| n != writer && !g.has_path(writer, n));
        legality.holds(match late {
            Some(&late) => Err(why(format!(
                "{} uses `{second}` but is not ordered after its first writer {wid}",
                g.node(late).id
            ))),
            None => Ok(()),
        })?;
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
        Ok(Reuse {
            site: [a, b],
            first,
            second,
            writer: wid,
            orderings,
        })
    }

    /// The global transient held by top-level access node `id`, with its declaration.
    fn container<'p>(
        &self,
        p: &'p Program,
        id: NodeId,
    ) -> Result<(String, &'p DataDesc), NotApplicable> {
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
        let desc =
            (p.data.get(d)).ok_or_else(|| refuse(self, id, format!("`{d}` is not declared")))?;
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
        Ok((d.clone(), desc))
    }
}

/// Checks that the two containers have the same element type and shape, so that one buffer
/// can hold either without re-indexing any access.
fn interchangeable(
    (first, d1): (&str, &DataDesc),
    (second, d2): (&str, &DataDesc),
) -> Result<(), String> {
    if d1.dtype != d2.dtype {
        return Err(format!(
            "`{first}` is {} but `{second}` is {}",
            d1.dtype, d2.dtype
        ));
    }
    if !same_shape(&d1.shape, &d2.shape) {
        return Err(format!(
            "`{first}` has shape {} but `{second}` has {}; reusing the buffer would need its accesses re-indexed",
            shown(&d1.shape),
            shown(&d2.shape)
        ));
    }
    Ok(())
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

/// The ordering edges `writer` needs, as (access node, memlet of the empty subset): for each
/// node of `touching`, latest first, that no path (including the edges added for later ones)
/// already orders before `writer`, one from an array that node writes. Fails with the node that
/// writes no array (an empty subset of a scalar would still move its one element).
fn orderings(
    p: &Program,
    touching: &BTreeSet<NodeIndex>,
    writer: NodeIndex,
) -> Result<Vec<(NodeId, Memlet)>, NodeIndex> {
    let g = &p.graph;
    let mut scratch = g.clone();
    let mut out = Vec::new();
    for n in g
        .ordered()
        .into_iter()
        .rev()
        .filter(|n| touching.contains(n))
    {
        if scratch.has_path(n, writer) {
            continue;
        }
        let (source, rank) = (g.out_edges(n).into_iter())
            .find_map(|e| match p.data.get(&e.memlet.data) {
                Some(d) if d.rank() > 0 => Some((e, d.rank())),
                _ => None,
            })
            .ok_or(n)?;
        scratch.add_edge(source.other, writer, source.memlet.clone());
        let empty = Subset::empty(rank);
        let memlet = Memlet::new(source.memlet.data.as_str(), empty);
        out.push((g.node(source.other).id, memlet));
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
                let Some(&k) = step.get(&e.other) else {
                    continue;
                };
                live.touching.insert(e.other);
                live.first = live.first.min(k);
                live.last = live.last.max(k);
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
/// Only reuses whose legality conditions hold are taken.
pub fn plan_buffers(p: &Program) -> Vec<(String, String)> {
    let mut work = p.clone();
    let t = BufferReuse;
    let mut out = Vec::new();
    loop {
        let next = t
            .candidates(&work)
            .into_iter()
            .find_map(|site| match site[..] {
                [a, b] => t.reuse(&work, a, b, &mut Legality::new(false)).ok(),
                _ => None,
            });
        let Some(reuse) = next else {
            return out;
        };
        let names = (reuse.first.clone(), reuse.second.clone());
        if reuse.rewrite(&mut work).is_err() {
            return out;
        }
        out.push(names);
    }
}
