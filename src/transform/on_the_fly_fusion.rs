//! OnTheFlyFusion: recompute instead of store — inline an element-wise producer into every read
//! its consumer makes of the intermediate array.
//!
//! ```text
//! before:  map [i, j] { T[i, j] = f(X[i, j]) }                      T: transient
//!          map [i, j] { Y[i, j] = T[i, j - 1] + T[i, j] + T[i, j + 1] }
//! after:   map [i, j] { Y[i, j] = f(X[i, j - 1]) + f(X[i, j]) + f(X[i, j + 1]) }
//! ```
//! `T` disappears: no write and no re-read of it, at the price of evaluating `f` once per read
//! instead of once per element. The **recomputation factor** — consumer reads of `T` executed
//! per element of `T` — is 3 above and `K` for a matmul `(M×K)·T(K×N)` whose right operand is
//! produced on the fly; it pays off when `f` is cheap and memory traffic dominates. Pass
//! `max_recompute=F` to refuse when the factor exceeds `F` (the refusal states the factor).
//!
//! The producer must be element-wise: one tasklet writing `T[p0, p1, …]` (its parameters in
//! order, each ranging over the whole dimension) without write-conflict resolution, so every
//! element of `T` is one evaluation of `f` at known indices. Its inputs must not be written by
//! the consumer nor rewritten after the producer reads them (the inlined reads would see other
//! values), and the consumer's tasklets must compute in the producer's precision with `T` of that
//! type (otherwise dropping the store would drop a rounding). Site `[producer, consumer]`; the
//! consumer keeps its id.

use super::map_fusion::{link, scope_candidates};
use super::map_support::{access_count, int_param};
use super::opgraph::prune;
use super::{expect_map, refuse, Level, NotApplicable, ParamSpec, Params, Transformation};
use crate::ir::{
    DType, Graph, MapNode, Memlet, Node, NodeId, NodeKind, Precision, Program, Storage, Subset,
    SymEnv, SymExpr, TExpr,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

pub struct OnTheFlyFusion;

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "max_recompute",
    kind: "int",
    doc: "refuse when the consumer would evaluate the producer more often than this per element",
}];

impl Transformation for OnTheFlyFusion {
    fn name(&self) -> &'static str {
        "OnTheFlyFusion"
    }

    fn level(&self) -> Level {
        Level::InterOperator
    }

    fn doc(&self) -> &'static str {
        "inline an element-wise producer at every read of its consumer; the intermediate array disappears"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut out = Vec::new();
        scope_candidates(&p.graph, &mut out);
        out
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        self.inspect(p, site, params).map(|_| ())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let f = self.inspect(p, site, params)?;
        let (producer, consumer) = (site[0], site[1]);
        let fail = |r: &str| refuse(self, consumer, r);
        let mut edit = p.edit(consumer).ok_or_else(|| fail("no consumer"))?;
        let idx = edit.idx;
        let mut body = match &mut edit.graph.node_mut(idx).kind {
            NodeKind::Map(m) => std::mem::take(&mut m.body),
            _ => return Err(fail("consumer is not a map")),
        };
        inline(&mut body, &f, &mut || edit.fresh_id());
        let nested = nested_maps(&body);
        if let NodeKind::Map(m) = &mut edit.graph.node_mut(idx).kind {
            m.body = body;
        }
        let pi = edit
            .graph
            .index_of(producer)
            .ok_or_else(|| fail("no producer"))?;
        let (link_node, _) = link(edit.graph, pi, idx).ok_or_else(|| fail("no link"))?;
        edit.graph.g.remove_node(link_node);
        edit.graph.g.remove_node(pi);
        for id in nested.into_iter().rev().chain([consumer]) {
            if let Some(mut e) = p.edit(id) {
                let at = e.idx;
                e.refresh_boundary(at);
            }
        }
        let mut names: Vec<String> = f.inputs.iter().map(|i| i.data.clone()).collect();
        names.push(f.t.clone());
        prune(p, &names);
        Ok(vec![producer, consumer])
    }
}

/// One input of the producer's tasklet.
struct Input {
    conn: String,
    data: String,
    subset: Subset,
}

/// The producer's computation, ready to be inlined: `T[params] = expr(inputs)`.
struct Producer {
    t: String,
    params: Vec<String>,
    expr: TExpr,
    inputs: Vec<Input>,
}

impl OnTheFlyFusion {
    /// Checks every precondition and extracts the producer's computation.
    fn inspect(
        &self,
        p: &Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Producer, NotApplicable> {
        let [producer, consumer] = site else {
            return Err(refuse(
                self,
                site.first().copied().unwrap_or(NodeId(0)),
                format!(
                    "a site is a producer and a consumer map, got {} node(s)",
                    site.len()
                ),
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
        let ci = g
            .index_of(*consumer)
            .ok_or_else(|| why(format!("producer {producer} is in a different scope")))?;
        let (link_node, t) = link(g, pi, ci).ok_or_else(|| {
            why(format!(
                "consumer does not read anything map {producer} writes"
            ))
        })?;
        let desc = &p.data[&t];
        if desc.kind != crate::ir::DataKind::Transient || desc.storage != Storage::Global {
            return Err(why(format!(
                "`{t}` is {} {}, not a global transient, so it must stay",
                desc.kind.name(),
                desc.storage.name()
            )));
        }
        let inside = access_count(&pm.body, &t) + access_count(&cm.body, &t);
        let private = g.in_edges(link_node).len() == 1
            && g.out_edges(link_node).len() == 1
            && access_count(&p.graph, &t) == inside + 1;
        if !private {
            return Err(why(format!(
                "`{t}` is used outside map {producer} and this consumer; it must stay"
            )));
        }
        let f = elementwise(pm, &t, &desc.shape).map_err(|r| {
            refuse(
                self,
                *producer,
                format!("producer is not element-wise: {r}"),
            )
        })?;
        let c_writes: Vec<&str> = g
            .out_edges(ci)
            .iter()
            .map(|e| e.memlet.data.as_str())
            .collect();
        for e in g.in_edges(pi) {
            let d = e.memlet.data.as_str();
            if c_writes.contains(&d) {
                return Err(why(format!(
                    "producer reads `{d}`, which the consumer writes"
                )));
            }
            let later = g.g.node_indices().find(|&i| {
                i != e.other
                    && matches!(&g.node(i).kind, NodeKind::Access(x) if x == d)
                    && !g.in_edges(i).is_empty()
            });
            if let Some(w) = later {
                return Err(why(format!(
                    "`{d}` has another written version ({}); the consumer could read a different value than the producer did",
                    g.node(w).id
                )));
            }
        }
        let precision = Precision::of(
            f.inputs
                .iter()
                .map(|i| p.data[&i.data].dtype)
                .chain([desc.dtype]),
        );
        let stored = match precision {
            Precision::F32 => DType::F32,
            Precision::F64 => DType::F64,
        };
        if desc.dtype != stored {
            return Err(why(format!(
                "`{t}` is {} but the producer computes in {stored}; inlining would drop the conversion",
                desc.dtype
            )));
        }
        consumer_reads(&cm.body, &t, precision, p).map_err(why)?;
        if let Some(max) = int_param(params, "max_recompute").map_err(why)? {
            let factor = recompute_factor(cm, &t, &desc.elements(), &p.symbol_values());
            match factor {
                Some(x) if x <= max as f64 => {}
                Some(x) => {
                    return Err(why(format!(
                        "recomputation factor {x:.1} exceeds max_recompute={max}"
                    )))
                }
                None => {
                    return Err(why(format!(
                        "the recomputation factor is not known (symbolic extents) and max_recompute={max} was given"
                    )))
                }
            }
        }
        Ok(f)
    }
}

/// The producer's single tasklet, when it computes each element `T[p0, p1, …]` of the whole of
/// `T` once from element reads: the reason in words otherwise.
fn elementwise(m: &MapNode, t: &str, shape: &[SymExpr]) -> Result<Producer, String> {
    if m.body
        .g
        .node_weights()
        .any(|n| matches!(n.kind, NodeKind::Map(_)))
    {
        return Err("its body has a nested map".into());
    }
    let tasklets: Vec<NodeIndex> = m
        .body
        .g
        .node_indices()
        .filter(|&i| matches!(m.body.node(i).kind, NodeKind::Tasklet(_)))
        .collect();
    let [ti] = tasklets.as_slice() else {
        return Err(format!("its body has {} tasklets, not one", tasklets.len()));
    };
    let NodeKind::Tasklet(task) = &m.body.node(*ti).kind else {
        return Err("no tasklet".into());
    };
    let outs = m.body.out_edges(*ti);
    let ([(_, expr)], [out]) = (task.outputs.as_slice(), outs.as_slice()) else {
        return Err("its tasklet has more than one output".into());
    };
    let params: Vec<String> = m.params.iter().map(|q| q.name.clone()).collect();
    let own = Subset::element(params.iter().map(|n| SymExpr::sym(n.as_str())));
    if let Some(w) = out.memlet.wcr {
        return Err(format!(
            "it is a reduction (writes `{t}` with wcr {})",
            w.name()
        ));
    }
    if out.memlet.data != t || out.memlet.subset != own {
        return Err(format!(
            "it writes {}{} instead of {t}{own}",
            out.memlet.data, out.memlet.subset
        ));
    }
    let covers = m.params.len() == shape.len()
        && m.params.iter().zip(shape).all(|(q, extent)| {
            q.range.start == SymExpr::Int(0)
                && q.range.step == SymExpr::Int(1)
                && (&q.range.end - extent).simplify() == SymExpr::Int(0)
        });
    if !covers {
        return Err(format!(
            "its iteration space does not cover `{t}` exactly once"
        ));
    }
    let inputs = m
        .body
        .in_edges(*ti)
        .into_iter()
        .map(|e| Input {
            conn: e.memlet.dst_conn.clone().unwrap_or_default(),
            data: e.memlet.data.clone(),
            subset: e.memlet.subset.clone(),
        })
        .collect();
    Ok(Producer {
        t: t.to_string(),
        params,
        expr: expr.clone(),
        inputs,
    })
}

/// Checks that every read of `t` in the consumer is a whole-element tasklet read in a tasklet
/// computing in `precision`, and that the consumer never writes `t`.
fn consumer_reads(g: &Graph, t: &str, precision: Precision, p: &Program) -> Result<(), String> {
    for idx in g.g.node_indices() {
        match &g.node(idx).kind {
            NodeKind::Access(d) if d == t && !g.in_edges(idx).is_empty() => {
                return Err(format!("the consumer writes `{t}`"));
            }
            NodeKind::Map(m) => consumer_reads(&m.body, t, precision, p)?,
            NodeKind::Tasklet(task) => {
                let ins = g.in_edges(idx);
                let Some(e) = ins.iter().find(|e| e.memlet.data == t) else {
                    continue;
                };
                let id = g.node(idx).id;
                let conn = e.memlet.dst_conn.clone().unwrap_or_default();
                let by_index = task
                    .outputs
                    .iter()
                    .any(|(_, x)| x.element_reads().iter().any(|(c, _)| *c == conn));
                if by_index || !e.memlet.subset.is_element() {
                    return Err(format!(
                        "tasklet {id} reads `{t}` at computed indices, not at one known element"
                    ));
                }
                let own = Precision::of(
                    ins.iter()
                        .chain(&g.out_edges(idx))
                        .map(|e| p.data[&e.memlet.data].dtype),
                );
                if own != precision {
                    return Err(format!(
                        "tasklet {id} computes in {own:?} but the producer in {precision:?}; inlining would change the rounding"
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Reads of `t` the consumer executes per element of `t` (its elements given by `elements`),
/// when all extents evaluate.
pub(crate) fn recompute_factor(
    consumer: &MapNode,
    t: &str,
    elements: &SymExpr,
    env: &SymEnv,
) -> Option<f64> {
    let reads = executed_reads(consumer, t, env)?;
    let n = elements.eval(env).ok()?;
    (n > 0).then(|| reads as f64 / n as f64)
}

/// Tasklet reads of `t` executed by map `m` over its whole iteration space.
fn executed_reads(m: &MapNode, t: &str, env: &SymEnv) -> Option<i64> {
    let mut points = 1i64;
    for q in &m.params {
        points = points.checked_mul(q.range.len().eval(env).ok()?.max(0))?;
    }
    let mut inner = 0i64;
    for idx in m.body.g.node_indices() {
        match &m.body.node(idx).kind {
            NodeKind::Tasklet(_) => {
                let reads = m.body.in_edges(idx);
                let n = reads.iter().filter(|e| e.memlet.data == t).count();
                inner = inner.checked_add(i64::try_from(n).ok()?)?;
            }
            NodeKind::Map(nested) => inner = inner.checked_add(executed_reads(nested, t, env)?)?,
            _ => {}
        }
    }
    points.checked_mul(inner)
}

/// Replaces, in every tasklet of `g` (at any depth), each read of the producer's array by the
/// producer's expression evaluated at the read's indices, reading the producer's inputs there.
fn inline(g: &mut Graph, f: &Producer, fresh: &mut dyn FnMut() -> NodeId) {
    for idx in g.g.node_indices().collect::<Vec<_>>() {
        if let NodeKind::Map(m) = &mut g.node_mut(idx).kind {
            inline(&mut m.body, f, fresh);
            continue;
        }
        let reads: Vec<_> = g
            .in_edges(idx)
            .iter()
            .filter(|e| e.memlet.data == f.t)
            .map(|e| {
                (
                    e.id,
                    e.memlet.dst_conn.clone().unwrap_or_default(),
                    e.memlet.subset.clone(),
                )
            })
            .collect();
        for (eid, conn, subset) in reads {
            g.g.remove_edge(eid);
            let at: BTreeMap<&str, SymExpr> = f
                .params
                .iter()
                .map(String::as_str)
                .zip(subset.0.iter().map(|d| d.first().clone()))
                .collect();
            let sub = |e: &SymExpr| e.substitute_all(&|s| at.get(s).cloned());
            let mut renamed: BTreeMap<String, String> = BTreeMap::new();
            for input in &f.inputs {
                let name = fresh_connector(g, idx, &format!("{conn}_{}", input.conn));
                let src = source_node(g, &input.data, fresh);
                let m = Memlet::new(input.data.as_str(), input.subset.map_exprs(&sub))
                    .to_conn(name.as_str());
                g.add_edge(src, idx, m);
                if let NodeKind::Tasklet(task) = &mut g.node_mut(idx).kind {
                    task.inputs.push(name.clone());
                }
                renamed.insert(input.conn.clone(), name);
            }
            let value = f.expr.rewrite(&|x| match x {
                TExpr::Input(c) => renamed.get(c).map(|n| TExpr::Input(n.clone())),
                TExpr::Element(c, ix) => renamed
                    .get(c)
                    .map(|n| TExpr::Element(n.clone(), ix.clone())),
                TExpr::Index(e) => Some(TExpr::Index(sub(e))),
                _ => None,
            });
            if let NodeKind::Tasklet(task) = &mut g.node_mut(idx).kind {
                task.inputs.retain(|c| *c != conn);
                for (_, out) in &mut task.outputs {
                    *out = out.rewrite(&|x| match x {
                        TExpr::Input(c) if *c == conn => Some(value.clone()),
                        _ => None,
                    });
                }
            }
        }
    }
    let unused: Vec<NodeIndex> =
        g.g.node_indices()
            .filter(|&i| {
                matches!(&g.node(i).kind, NodeKind::Access(d) if *d == f.t)
                    && g.in_edges(i).is_empty()
                    && g.out_edges(i).is_empty()
            })
            .collect();
    for i in unused {
        g.g.remove_node(i);
    }
}

/// A connector name for tasklet `idx` based on `base` that it does not use yet.
fn fresh_connector(g: &Graph, idx: NodeIndex, base: &str) -> String {
    let NodeKind::Tasklet(task) = &g.node(idx).kind else {
        return base.to_string();
    };
    let taken =
        |n: &str| task.inputs.iter().any(|c| c == n) || task.outputs.iter().any(|(c, _)| c == n);
    if !taken(base) {
        return base.to_string();
    }
    (1..)
        .map(|k| format!("{base}_{k}"))
        .find(|n| !taken(n))
        .expect("unbounded names")
}

/// An access node of `data` in `g` that nothing writes (created when there is none).
fn source_node(g: &mut Graph, data: &str, fresh: &mut dyn FnMut() -> NodeId) -> NodeIndex {
    let existing = g.ordered().into_iter().find(|&i| {
        matches!(&g.node(i).kind, NodeKind::Access(d) if d == data) && g.in_edges(i).is_empty()
    });
    existing.unwrap_or_else(|| {
        g.add_node(Node {
            id: fresh(),
            label: data.to_string(),
            kind: NodeKind::Access(data.to_string()),
        })
    })
}

/// Ids of the maps nested in `g`, outer maps first.
fn nested_maps(g: &Graph) -> Vec<NodeId> {
    let mut out = Vec::new();
    g.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Map(_)) {
            out.push(n.id);
        }
    });
    out
}
