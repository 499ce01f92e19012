//! LayoutTransform: store a 4-D transient channels-last (NHWC) or channels-first (NCHW).
//!
//! ```text
//! before:  data T: f32[N, C, H, W] transient
//!          map [n, c, h, w] { T[n, c, h, w] = f(…) }      map [n, c, h, w] { … = g(T[n, c, h, w]) }
//! after (to=nhwc):
//!          data T: f32[N, H, W, C] transient
//!          map [n, c, h, w] { T[n, h, w, c] = f(…) }      map [n, c, h, w] { … = g(T[n, h, w, c]) }
//! ```
//! Only where the data lives changes: the shape is permuted and so is every memlet subset on the
//! container in every scope (and the indices of element reads through its connectors), so
//! producers and consumers keep agreeing. Channels-last makes the channel the unit-stride
//! dimension, which is what a vectorized per-pixel channel loop wants; `to=nchw` is the inverse.
//! The site is any access node of the container. Containers in the signature, and containers a
//! library node reads or writes (its operator fixes the layout), are left alone.

use super::{refuse, Level, NotApplicable, ParamSpec, ParamValue, Params, Transformation};
use crate::ir::{Dim, Graph, NodeId, NodeKind, Program, Subset, TExpr};

pub struct LayoutTransform;

/// `NCHW → NHWC`: the new dimension `k` is the old dimension `TO_NHWC[k]`.
const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
/// `NHWC → NCHW`.
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "to",
    kind: "nhwc|nchw",
    doc: "the layout to store the container in (default nhwc)",
}];

impl Transformation for LayoutTransform {
    fn name(&self) -> &'static str {
        "LayoutTransform"
    }

    fn level(&self) -> Level {
        Level::InterOperator
    }

    fn doc(&self) -> &'static str {
        "store a 4-D transient NHWC or NCHW, permuting its shape and every access in every scope"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        p.graph.walk(&mut |n| {
            if let NodeKind::Access(d) = &n.kind {
                if !seen.contains(d) && container(self, p, n.id).is_ok() {
                    seen.push(d.clone());
                    out.push(vec![n.id]);
                }
            }
        });
        out
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site.first().copied().unwrap_or(NodeId(0));
        permutation(params).map_err(|r| refuse(self, id, r))?;
        container(self, p, id).map(|_| ())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let id = site[0];
        let perm = permutation(params).map_err(|r| refuse(self, id, r))?;
        let data = container(self, p, id)?;
        let desc = p
            .data
            .get_mut(&data)
            .ok_or_else(|| refuse(self, id, "the container is not declared"))?;
        desc.shape = perm.iter().map(|&k| desc.shape[k].clone()).collect();
        let mut touched = Vec::new();
        permute_accesses(&mut p.graph, &data, &perm, &mut touched);
        touched.sort();
        touched.dedup();
        Ok(touched)
    }
}

/// The permutation the `to` parameter asks for.
fn permutation(params: &Params) -> Result<[usize; 4], String> {
    match params.get("to") {
        None => Ok(TO_NHWC),
        Some(ParamValue::Str(s)) if s.eq_ignore_ascii_case("nhwc") => Ok(TO_NHWC),
        Some(ParamValue::Str(s)) if s.eq_ignore_ascii_case("nchw") => Ok(TO_NCHW),
        Some(other) => Err(format!(
            "parameter `to` must be `nhwc` or `nchw`, not `{other}`"
        )),
    }
}

/// The container of access node `id`, when its layout may change.
fn container(t: &dyn Transformation, p: &Program, id: NodeId) -> Result<String, NotApplicable> {
    let why = |r: String| refuse(t, id, r);
    let data = match p.node(id).map(|n| &n.kind) {
        Some(NodeKind::Access(d)) => d.clone(),
        Some(other) => {
            return Err(why(format!(
                "node is a {} node, not an access node",
                other.kind_name()
            )))
        }
        None => return Err(why("no such node".into())),
    };
    let desc = p
        .data
        .get(&data)
        .ok_or_else(|| why(format!("`{data}` is not declared")))?;
    if desc.rank() != 4 {
        return Err(why(format!(
            "`{data}` has rank {}; layouts NCHW and NHWC are 4-D",
            desc.rank()
        )));
    }
    if desc.kind != crate::ir::DataKind::Transient {
        return Err(why(format!(
            "`{data}` is a program {}, not a transient: the signature fixes its layout",
            desc.kind.name()
        )));
    }
    match fixed_by(&p.graph, &data) {
        Some((other, what)) => Err(why(format!(
            "`{data}` is {what} node {other}, which fixes its layout"
        ))),
        None => Ok(data),
    }
}

/// The first node whose semantics depend on the container's layout: a library node reading or
/// writing it, or another access node it is copied from or to (the copy pairs elements by
/// position).
fn fixed_by(g: &Graph, data: &str) -> Option<(NodeId, String)> {
    for idx in g.ordered() {
        let node = g.node(idx);
        match &node.kind {
            NodeKind::Access(d) if d == data => {
                let edges = g.in_edges(idx).into_iter().chain(g.out_edges(idx));
                for e in edges {
                    let other = g.node(e.other);
                    match &other.kind {
                        NodeKind::Library(l) => {
                            return Some((other.id, format!("accessed by the {} library", l.op)))
                        }
                        NodeKind::Access(_) => {
                            return Some((other.id, "copied from or to the access".into()))
                        }
                        _ => {}
                    }
                }
            }
            NodeKind::Map(m) => {
                if let Some(found) = fixed_by(&m.body, data) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

/// Permutes every memlet on `data` in `g` and its nested scopes, and the indices of element
/// reads through connectors that carry it; records the nodes whose edges changed.
fn permute_accesses(g: &mut Graph, data: &str, perm: &[usize; 4], touched: &mut Vec<NodeId>) {
    // A memlet of another rank is invalid anyway; validation reports it, so it is left as is.
    let permute = |s: &Subset| match s.rank() {
        4 => Subset(perm.iter().map(|&k| s.0[k].clone()).collect::<Vec<Dim>>()),
        _ => s.clone(),
    };
    let edges: Vec<_> = g.g.edge_indices().collect();
    for e in edges {
        if g.g[e].data != data {
            continue;
        }
        let (src, dst) = g.g.edge_endpoints(e).expect("edge exists");
        let memlet = &mut g.g[e];
        memlet.subset = permute(&memlet.subset);
        let conn = memlet.dst_conn.clone();
        touched.extend([g.node(src).id, g.node(dst).id]);
        if let (Some(conn), NodeKind::Tasklet(t)) = (conn, &mut g.node_mut(dst).kind) {
            for (_, expr) in &mut t.outputs {
                *expr = expr.rewrite(&|x| match x {
                    TExpr::Element(c, idx) if *c == conn && idx.len() == 4 => Some(TExpr::Element(
                        c.clone(),
                        perm.iter().map(|&k| idx[k].clone()).collect(),
                    )),
                    _ => None,
                });
            }
        }
    }
    for n in g.g.node_weights_mut() {
        if let NodeKind::Map(m) = &mut n.kind {
            permute_accesses(&mut m.body, data, perm, touched);
        }
    }
}
