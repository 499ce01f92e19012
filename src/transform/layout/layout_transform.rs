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

use crate::ir::{DataKind, Dim, Graph, NodeId, NodeKind, Program, Subset, SymExpr, TExpr};
use crate::transform::{
    refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan, Role,
    Schema, Transformation,
};

pub struct LayoutTransform;

/// `NCHW → NHWC`: the new dimension `k` is the old dimension `TO_NHWC[k]`.
const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
/// `NHWC → NCHW`.
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

const SCHEMA: Schema = Schema {
    name: "LayoutTransform",
    level: Level::InterOperator,
    doc: "store a 4-D transient NHWC or NCHW, permuting its shape and every access in every scope",
    site: &[Role::new(
        "data",
        NodeClass::Access,
        "any access node of the container to store in the new layout",
    )],
    params: &[ParamDecl {
        name: "to",
        kind: ParamKind::Enum {
            values: &["nhwc", "nchw"],
        },
        default: Default::Str("nhwc"),
        doc: "the layout to store the container in (default nhwc)",
    }],
};

impl Transformation for LayoutTransform {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        p.graph.walk(&mut |n| {
            if let NodeKind::Access(d) = &n.kind {
                let free = || fixed_by(&p.graph, d).is_none();
                if !seen.contains(d) && container(self, p, n.id).is_ok() && free() {
                    seen.push(d.clone());
                    out.push(vec![n.id]);
                }
            }
        });
        out
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p,
            site,
            args,
            legality,
        } = call;
        let id = site[0];
        let perm = match args.str("to")? {
            "nchw" => TO_NCHW,
            _ => TO_NHWC,
        };
        let (data, shape) = container(self, p, id)?;
        legality.holds(match fixed_by(&p.graph, &data) {
            Some((other, what)) => Err(refuse(
                self,
                id,
                format!("`{data}` is {what} node {other}, which fixes its layout"),
            )),
            None => Ok(()),
        })?;
        let shape: Vec<SymExpr> = perm.iter().map(|&k| shape[k].clone()).collect();
        Ok(Plan::new(move |p| {
            let desc = (p.data.get_mut(&data))
                .ok_or_else(|| refuse(&LayoutTransform, id, "the container is not declared"))?;
            desc.shape = shape;
            let mut touched = Vec::new();
            permute_accesses(&mut p.graph, &data, &perm, &mut touched);
            touched.sort();
            touched.dedup();
            Ok(touched)
        }))
    }
}

/// The container of access node `id` and its (4-D) shape, when it is a transient whose layout
/// the program's signature does not fix.
fn container(
    t: &dyn Transformation,
    p: &Program,
    id: NodeId,
) -> Result<(String, [SymExpr; 4]), NotApplicable> {
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
    let Ok(shape) = <[SymExpr; 4]>::try_from(desc.shape.clone()) else {
        return Err(why(format!(
            "`{data}` has rank {}; layouts NCHW and NHWC are 4-D",
            desc.rank()
        )));
    };
    if desc.kind != DataKind::Transient {
        return Err(why(format!(
            "`{data}` is a program {}, not a transient: the signature fixes its layout",
            desc.kind.name()
        )));
    }
    Ok((data, shape))
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
    let edges: Vec<_> = (g.edges())
        .filter(|e| e.memlet.data == data)
        .map(|e| (e.id, e.from, e.to))
        .collect();
    for (e, src, dst) in edges {
        let memlet = g.memlet_mut(e);
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
    for n in g.nodes_mut() {
        if let NodeKind::Map(m) = &mut n.kind {
            permute_accesses(&mut m.body, data, perm, touched);
        }
    }
}
