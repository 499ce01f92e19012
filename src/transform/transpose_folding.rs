//! TransposeFolding: compose consecutive transposes, and fold a matrix transpose into the
//! transposition flags of the product that reads it.
//!
//! ```text
//! two transposes (site = [t1, t2]):
//!   before:  A = Transpose(X, perm=p)    B = Transpose(A, perm=q)
//!   after:   B = Transpose(X, perm=p∘q)          (keeps t2's id)
//!            or, when p∘q is the identity, readers of B read X and both nodes disappear
//! into a product (site = [t, mm]):
//!   before:  Wt = Transpose(W)           Y = MatMul(X, Wt)        X, W: 2-D
//!   after:   Y = Gemm(X, W, transB=1)            (keeps mm's id)
//! ```
//! A transpose is a full copy with a strided read; a GEMM reads its operand transposed for free
//! (the expansion just swaps the index), and two transposes in a row are one copy at most.

use super::opgraph::{
    containers, feeds, forwardable, op_in, op_node, pair, pairs, prune, redirect_readers,
    set_inputs, set_op, OpNode, Port,
};
use super::{refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{Attr, LibraryNode, NodeId, Program};
use std::collections::BTreeMap;

pub struct TransposeFolding;

/// What a checked site rewrites.
enum Plan {
    /// Readers of `result` read `source`; both transposes go.
    Remove {
        first: OpNode,
        second: OpNode,
        source: Port,
        result: Port,
    },
    /// `second` becomes one transpose of `source` by `perm`.
    Compose {
        first: OpNode,
        second: OpNode,
        source: Port,
        perm: Vec<usize>,
    },
    /// `consumer` becomes a Gemm reading `source` at input `pos` with that operand's flag flipped.
    IntoGemm {
        transpose: OpNode,
        consumer: OpNode,
        source: Port,
        pos: usize,
    },
}

impl TransposeFolding {
    /// The permutation of a Transpose node over a tensor of rank `rank` (reversed by default).
    pub(super) fn perm(&self, node: &OpNode, rank: usize) -> Result<Vec<usize>, NotApplicable> {
        let Some(perm) = node.lib.ints("perm") else {
            return Ok((0..rank).rev().collect());
        };
        let valid: Option<Vec<usize>> = perm
            .iter()
            .map(|&d| usize::try_from(d).ok().filter(|&d| d < rank))
            .collect();
        match valid {
            Some(v) if v.len() == rank && (0..rank).all(|d| v.contains(&d)) => Ok(v),
            _ => Err(refuse(
                self,
                node.id,
                format!("perm {perm:?} is not a permutation of 0..{rank}"),
            )),
        }
    }

    fn plan(&self, p: &Program, site: &[NodeId]) -> Result<Plan, NotApplicable> {
        let (a, b) = pair(self, site)?;
        let (g, first) = op_node(self, p, a, &["Transpose"])?;
        let second = op_in(self, g, b, &["Transpose", "MatMul", "Gemm"])?;
        let (link, pos) = feeds(self, p, &first, &second)?;
        let source = first
            .input(0)
            .cloned()
            .ok_or_else(|| refuse(self, a, "the data input is not wired"))?;
        let rank = p.data[&source.1].rank();
        let p1 = self.perm(&first, rank)?;
        if second.lib.op == "Transpose" {
            let p2 = self.perm(&second, rank)?;
            // B[i] = A[i∘p2⁻¹] and A[j] = X[j∘p1⁻¹]: axis d of B is axis p1[p2[d]] of X.
            let perm: Vec<usize> = p2.iter().map(|&d| p1[d]).collect();
            let result = super::opgraph::only_output(self, &second)?.clone();
            let identity = perm.iter().enumerate().all(|(d, &q)| d == q);
            if identity && forwardable(self, p, g, &source, &result, b).is_ok() {
                return Ok(Plan::Remove {
                    first,
                    second,
                    source,
                    result,
                });
            }
            return Ok(Plan::Compose {
                first,
                second,
                source,
                perm,
            });
        }
        if rank != 2 || p1 != [1, 0] {
            return Err(refuse(
                self,
                a,
                format!(
                    "transposes a rank-{rank} tensor by {p1:?}; Gemm's flags only swap the two axes \
                     of a matrix"
                ),
            ));
        }
        if pos == 2 {
            return Err(refuse(
                self,
                b,
                format!(
                    "reads `{}` as Gemm's C, which has no transposition flag",
                    link.1
                ),
            ));
        }
        if let Some((_, other)) = second.input(1 - pos) {
            let other_rank = p.data[other].rank();
            if other_rank != 2 {
                return Err(refuse(
                    self,
                    b,
                    format!(
                        "the other operand `{other}` has rank {other_rank}; Gemm multiplies \
                         matrices only"
                    ),
                ));
            }
        }
        Ok(Plan::IntoGemm {
            transpose: first,
            consumer: second,
            source,
            pos,
        })
    }
}

/// The Gemm that `consumer` (a MatMul or Gemm) becomes when operand `pos` is read transposed.
fn flipped_gemm(consumer: &LibraryNode, pos: usize) -> LibraryNode {
    let mut attrs = match consumer.op.as_str() {
        "Gemm" => consumer.attrs.clone(),
        _ => BTreeMap::new(),
    };
    let flag = if pos == 0 { "transA" } else { "transB" };
    let was = consumer.int(flag).unwrap_or(0) != 0;
    attrs.insert(flag.to_string(), Attr::Int(i64::from(!was)));
    LibraryNode {
        op: "Gemm".into(),
        attrs,
    }
}

impl Transformation for TransposeFolding {
    fn name(&self) -> &'static str {
        "TransposeFolding"
    }

    fn level(&self) -> Level {
        Level::Operator
    }

    fn doc(&self) -> &'static str {
        "compose consecutive transposes (removing identities); fold a matrix transpose into Gemm's transA/transB"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        pairs(p, &["Transpose"], &["Transpose", "MatMul", "Gemm"])
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
        let anchor = site[1];
        let edit = p.edit(anchor).ok_or_else(|| refuse(self, anchor, "gone"))?;
        let (g, data) = (&mut *edit.graph, &*edit.data);
        let names = match plan {
            Plan::Remove {
                first,
                second,
                source,
                result,
            } => {
                redirect_readers(g, &result, &source);
                g.g.remove_node(second.idx);
                g.g.remove_node(first.idx);
                containers(&[&first, &second])
            }
            Plan::Compose {
                first,
                second,
                source,
                perm,
            } => {
                set_inputs(g, data, second.idx, &[Some(source)]);
                let perm = perm.iter().map(|&d| d as i64).collect();
                let lib = LibraryNode {
                    op: "Transpose".into(),
                    attrs: BTreeMap::from([("perm".to_string(), Attr::Ints(perm))]),
                };
                set_op(g, second.idx, lib);
                g.g.remove_node(first.idx);
                containers(&[&first])
            }
            Plan::IntoGemm {
                transpose,
                consumer,
                source,
                pos,
            } => {
                let mut inputs = consumer.inputs.clone();
                inputs[pos] = Some(source);
                set_inputs(g, data, consumer.idx, &inputs);
                set_op(g, consumer.idx, flipped_gemm(&consumer.lib, pos));
                g.g.remove_node(transpose.idx);
                containers(&[&transpose])
            }
        };
        prune(p, &names);
        Ok(site.to_vec())
    }
}
