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

use crate::ir::{
    DType, DataKind, Graph, MapNode, Memlet, Node, NodeId, NodeKind, Precision, Program, Storage,
    Subset, SymEnv, SymExpr, TExpr,
};
use crate::transform::support::maps::access_count;
use crate::transform::support::opgraph::prune;
use crate::transform::support::scope::{link, map_pairs};
use crate::transform::{
    expect_map, refuse, Call, Default, Legality, Level, NodeClass, NotApplicable, ParamDecl,
    ParamKind, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

pub struct OnTheFlyFusion;

const SCHEMA: Schema = Schema {
    name: "OnTheFlyFusion",
    level: Level::InterOperator,
    doc: "inline an element-wise producer at every read of its consumer; the intermediate array disappears",
    site: &[
        Role::new(
            "producer",
            NodeClass::Map,
            "the element-wise map that writes the intermediate array",
        ),
        Role::new(
            "consumer",
            NodeClass::Map,
            "the map that reads it; the producer is inlined at its reads and it keeps its id",
        ),
    ],
    params: &[ParamDecl {
        name: "max_recompute",
        kind: ParamKind::Int {
            min: 1,
            max: i64::MAX,
        },
        default: Default::Optional,
        doc: "refuse when the consumer would evaluate the producer more often than this per element (absent: no limit)",
    }],
};

impl Transformation for OnTheFlyFusion {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        map_pairs(p)
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p,
            site,
            args,
            legality,
        } = call;
        let (producer, consumer) = (site[0], site[1]);
        let max = match args.get("max_recompute") {
            Some(_) => Some(args.int("max_recompute")?),
            None => None,
        };
        let (f, link) = self.inspect(p, (producer, consumer), max, legality)?;
        Ok(Plan::new(move |p| fuse(p, (producer, consumer), link, f)))
    }
}

/// The rewrite: the consumer's body with the producer inlined at its reads, the producer and
/// the link removed, boundaries refreshed from the inside out, unused containers dropped.
fn fuse(
    p: &mut Program,
    (producer, consumer): (NodeId, NodeId),
    link: NodeId,
    f: Producer,
) -> Result<Vec<NodeId>, NotApplicable> {
    let fail = |r: &str| refuse(&OnTheFlyFusion, consumer, r);
    let mut edit = p.edit(consumer).ok_or_else(|| fail("no consumer"))?;
    let idx = edit.idx;
    let pi = (edit.graph.index_of(producer)).ok_or_else(|| fail("no producer"))?;
    let link_node = (edit.graph.index_of(link)).ok_or_else(|| fail("no link"))?;
    let mut body = match &mut edit.graph.node_mut(idx).kind {
        NodeKind::Map(m) => std::mem::take(&mut m.body),
        _ => return Err(fail("consumer is not a map")),
    };
    inline(&mut body, &f, &mut || edit.fresh_id());
    let nested = nested_maps(&body);
    if let NodeKind::Map(m) = &mut edit.graph.node_mut(idx).kind {
        m.body = body;
    }
    edit.graph.remove_node(link_node);
    edit.graph.remove_node(pi);
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
    /// Checks every precondition and extracts the producer's computation and the link's id.
    /// Structural: one scope, a private global transient link, an element-wise producer, reads
    /// of it at known elements, the recomputation limit. Legality: exact coverage, inputs not
    /// rewritten, and the precision of the stored and inlined values.
    fn inspect(
        &self,
        p: &Program,
        (producer, consumer): (NodeId, NodeId),
        max: Option<i64>,
        legality: &mut Legality,
    ) -> Result<(Producer, NodeId), NotApplicable> {
        let (pm, cm) = (
            expect_map(self, p, producer)?,
            expect_map(self, p, consumer)?,
        );
        let why = |r: String| refuse(self, consumer, r);
        let (g, pi) = p
            .graph
            .locate(producer)
            .ok_or_else(|| why("no such producer".into()))?;
        let ci = g
            .index_of(consumer)
            .ok_or_else(|| why(format!("producer {producer} is in a different scope")))?;
        let (link_node, t) = link(g, pi, ci).ok_or_else(|| {
            why(format!(
                "consumer does not read anything map {producer} writes"
            ))
        })?;
        let desc = (p.data.get(&t)).ok_or_else(|| why(format!("`{t}` is not declared")))?;
        if desc.kind != DataKind::Transient || desc.storage != Storage::Global {
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
        let not_elementwise =
            |r: String| refuse(self, producer, format!("producer is not element-wise: {r}"));
        let f = elementwise(pm, &t).map_err(not_elementwise)?;
        legality.holds(covers(pm, &t, &desc.shape).map_err(not_elementwise))?;
        legality.holds(stable_inputs(g, pi, ci).map_err(why))?;
        let precision = Precision::of(
            (f.inputs.iter())
                .filter_map(|i| p.data.get(&i.data).map(|d| d.dtype))
                .chain([desc.dtype]),
        );
        let stored = match precision {
            Precision::F32 => DType::F32,
            Precision::F64 => DType::F64,
        };
        legality.holds(match desc.dtype == stored {
            true => Ok(()),
            false => Err(why(format!(
                "`{t}` is {} but the producer computes in {stored}; inlining would drop the conversion",
                desc.dtype
            ))),
        })?;
        let mut rounding = None;
        consumer_reads(&cm.body, &t, precision, p, &mut rounding).map_err(why)?;
        legality.holds(rounding.map_or(Ok(()), |r| Err(why(r))))?;
        if let Some(max) = max {
            within_limit(cm, &t, &desc.elements(), p, max).map_err(why)?;
        }
        Ok((f, g.node(link_node).id))
    }
}

/// The recomputation factor is known and at most `max` (the caller's `max_recompute`).
fn within_limit(
    cm: &MapNode,
    t: &str,
    elements: &SymExpr,
    p: &Program,
    max: i64,
) -> Result<(), String> {
    match recompute_factor(cm, t, elements, &p.symbol_values()) {
        Some(x) if x <= max as f64 => Ok(()),
        Some(x) => Err(format!(
            "recomputation factor {x:.1} exceeds max_recompute={max}"
        )),
        None => Err(format!(
            "the recomputation factor is not known (symbolic extents) and max_recompute={max} was given"
        )),
    }
}

/// The producer's inputs are neither written by the consumer nor rewritten later in the scope,
/// so the inlined reads see the values the producer read.
fn stable_inputs(g: &Graph, pi: NodeIndex, ci: NodeIndex) -> Result<(), String> {
    let c_writes: Vec<&str> = (g.out_edges(ci).iter())
        .map(|e| e.memlet.data.as_str())
        .collect();
    for e in g.in_edges(pi) {
        let d = e.memlet.data.as_str();
        if c_writes.contains(&d) {
            return Err(format!("producer reads `{d}`, which the consumer writes"));
        }
        let later = g.node_indices().find(|&i| {
            i != e.other
                && matches!(&g.node(i).kind, NodeKind::Access(x) if x == d)
                && !g.in_edges(i).is_empty()
        });
        if let Some(w) = later {
            return Err(format!(
                "`{d}` has another written version ({}); the consumer could read a different value than the producer did",
                g.node(w).id
            ));
        }
    }
    Ok(())
}

/// The producer's single tasklet, when it computes each element `T[p0, p1, …]` of the whole of
/// `T` once from element reads: the reason in words otherwise.
fn elementwise(m: &MapNode, t: &str) -> Result<Producer, String> {
    if m.body.nodes().any(|n| matches!(n.kind, NodeKind::Map(_))) {
        return Err("its body has a nested map".into());
    }
    let tasklets: Vec<NodeIndex> = m
        .body
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

/// The producer's iteration space is the whole of `t`, each element once (so every element the
/// consumer reads is one the producer computed), or why not.
fn covers(m: &MapNode, t: &str, shape: &[SymExpr]) -> Result<(), String> {
    let covers = m.params.len() == shape.len()
        && m.params.iter().zip(shape).all(|(q, extent)| {
            q.range.start == SymExpr::Int(0)
                && q.range.step == SymExpr::Int(1)
                && (&q.range.end - extent).simplify() == SymExpr::Int(0)
        });
    match covers {
        true => Ok(()),
        false => Err(format!(
            "its iteration space does not cover `{t}` exactly once"
        )),
    }
}

/// Checks that every read of `t` in the consumer is a whole-element tasklet read and that the
/// consumer never writes `t` (what inlining can express); records in `rounding` the first
/// tasklet reading `t` that does not compute in `precision` (inlining would change its rounding).
fn consumer_reads(
    g: &Graph,
    t: &str,
    precision: Precision,
    p: &Program,
    rounding: &mut Option<String>,
) -> Result<(), String> {
    for idx in g.node_indices() {
        match &g.node(idx).kind {
            NodeKind::Access(d) if d == t && !g.in_edges(idx).is_empty() => {
                return Err(format!("the consumer writes `{t}`"));
            }
            NodeKind::Map(m) => consumer_reads(&m.body, t, precision, p, rounding)?,
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
                    (ins.iter().chain(&g.out_edges(idx)))
                        .filter_map(|e| p.data.get(&e.memlet.data).map(|d| d.dtype)),
                );
                if own != precision && rounding.is_none() {
                    *rounding = Some(format!(
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
fn recompute_factor(consumer: &MapNode, t: &str, elements: &SymExpr, env: &SymEnv) -> Option<f64> {
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
    for idx in m.body.node_indices() {
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
    for idx in g.node_indices().collect::<Vec<_>>() {
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
            g.remove_edge(eid);
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
    let unused: Vec<NodeIndex> = g
        .node_indices()
        .filter(|&i| {
            matches!(&g.node(i).kind, NodeKind::Access(d) if *d == f.t)
                && g.in_edges(i).is_empty()
                && g.out_edges(i).is_empty()
        })
        .collect();
    for i in unused {
        g.remove_node(i);
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
