//! Local arrays and scalars: declared in the body of the innermost map that holds every use,
//! zeroed like every container — unless the first thing that body does with a local array is
//! overwrite all of it.
//!
//! A register tile's buffer is loaded from the output before its reduction loop:
//!
//! ```c
//! float ymat_local[256];                     // no `= {0}`: the copy below writes all 256
//! for (c1 = m_tile; c1 < m_tile + 8; c1++)
//!     for (c2 = o_tile; c2 < o_tile + 32; c2++)
//!         ymat_local[(c1 - m_tile) * 32 + (c2 - o_tile)] = ymat[…];
//! ```
//!
//! The zeroing was a `memset` of every tile before that copy (`memset` as a whole, these and
//! the padding maps, was 3.9% of MobileNetV2's samples). It is
//! left out only when the overwrite is proven: the first node of the body that touches the
//! array is a map that does not read it, whose body is one tasklet writing it without
//! resolution at `[q₀ − s₀, q₁ − s₁, …]`, each parameter `qᵢ` running over `sᵢ : sᵢ + nᵢ` with
//! `nᵢ` the dimension's extent (a dimension of extent 1 may take the constant 0 instead).

use super::Emitter;
use crate::codegen::emit::Class;
use crate::codegen::expr::ctype;
use crate::codegen::names::comment_text;
use crate::ir::{Dim, Graph, NodeId, NodeKind, SymExpr};

impl Emitter<'_> {
    /// Declares the local arrays and scalars that live in the scope `path` (map ids, outermost
    /// first; empty for the top of `dm_run`), whose body is `body`.
    pub fn declare_scope(&mut self, path: &[NodeId], body: &Graph) {
        for (name, d) in self.data {
            let t = ctype(d.dtype);
            match &d.class {
                Class::Local { scope } if scope == path => {
                    let zeroed = match overwritten_first(body, name, &d.shape) {
                        true => "",
                        false => " = {0}",
                    };
                    self.w.line(format!(
                        "{t} {}[{}]{zeroed}; /* {} */",
                        d.cname,
                        d.elements().max(1),
                        comment_text(name)
                    ))
                }
                Class::Scalar { scope } if scope == path => {
                    self.w
                        .line(format!("{t} {} = 0; /* {} */", d.cname, comment_text(name)))
                }
                _ => {}
            }
        }
    }
}

/// Whether the first node of `body` that moves `name` is a map writing every element of it
/// before anything reads it (see the module).
fn overwritten_first(body: &Graph, name: &str, shape: &[usize]) -> bool {
    let moves = |idx| {
        (body.in_edges(idx).into_iter())
            .chain(body.out_edges(idx))
            .any(|e| e.memlet.data == name)
    };
    let Some(first) = body.ordered().into_iter().find(|&i| moves(i)) else {
        return false;
    };
    let NodeKind::Map(m) = &body.node(first).kind else {
        return false;
    };
    if (body.in_edges(first).iter()).any(|e| e.memlet.data == name) {
        return false;
    }
    let writes: Vec<_> = (m.body.edges()).filter(|e| e.memlet.data == name).collect();
    let [write] = writes.as_slice() else {
        return false;
    };
    let tasklet = matches!(m.body.node(write.from).kind, NodeKind::Tasklet(_));
    if !tasklet || write.memlet.wcr.is_some() || write.memlet.subset.rank() != shape.len() {
        return false;
    }
    let mut used = Vec::new();
    let covers = |(dim, &extent): (&Dim, &usize)| {
        let Dim::Index(index) = dim else {
            return false;
        };
        if extent == 1 && *index == SymExpr::Int(0) {
            return true;
        }
        m.params.iter().any(|q| {
            let r = &q.range;
            let offset =
                (index.clone() - SymExpr::sym(q.name.as_str()) + r.start.clone()).simplify();
            let len = (r.end.clone() - r.start.clone()).simplify().as_int();
            let fresh = !used.contains(&q.name);
            let whole = offset == SymExpr::Int(0)
                && r.step == SymExpr::Int(1)
                && len == i64::try_from(extent).ok();
            if whole && fresh {
                used.push(q.name.clone());
            }
            whole && fresh
        })
    };
    write.memlet.subset.0.iter().zip(shape).all(covers)
}
