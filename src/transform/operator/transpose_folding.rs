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

use crate::ir::{Attr, DataDesc, Graph, LibraryNode, NodeId, Program};
use crate::transform::support::opgraph::{
    containers, declared, feeds, forwardable, only_output, op_in, op_node, pairs, prune,
    redirect_readers, set_inputs, set_op, transpose_perm, OpNode, Port,
};
use crate::transform::{
    refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use std::collections::BTreeMap;

pub struct TransposeFolding;

/// The operators a transpose folds into.
const CONSUMERS: &[&str] = &["Transpose", "MatMul", "Gemm"];

const SCHEMA: Schema = Schema {
    name: "TransposeFolding",
    level: Level::Operator,
    doc: "compose consecutive transposes (removing identities); fold a matrix transpose into Gemm's transA/transB",
    site: &[
        Role::new(
            "transpose",
            NodeClass::Library {
                ops: &["Transpose"],
            },
            "the transpose to fold away",
        ),
        Role::new(
            "consumer",
            NodeClass::Library { ops: CONSUMERS },
            "the transpose it composes with, or the product that reads it as A or B",
        ),
    ],
    params: &[],
};

/// What a checked site rewrites.
enum Rewrite {
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
    fn rewrite(
        &self,
        p: &Program,
        site: &[NodeId],
        legality: &mut Legality,
    ) -> Result<Rewrite, NotApplicable> {
        let (a, b) = (site[0], site[1]);
        let (g, first) = op_node(self, p, a, &["Transpose"])?;
        let second = op_in(self, g, b, CONSUMERS)?;
        let (link, pos) = feeds(self, p, &first, &second, legality)?;
        let source = first
            .input(0)
            .cloned()
            .ok_or_else(|| refuse(self, a, "the data input is not wired"))?;
        let rank = declared(self, p, &source.1, a)?.rank();
        let p1 = transpose_perm(self, &first, rank)?;
        if second.lib.op == "Transpose" {
            let p2 = transpose_perm(self, &second, rank)?;
            // B[i] = A[i∘p2⁻¹] and A[j] = X[j∘p1⁻¹]: axis d of B is axis p1[p2[d]] of X.
            let perm: Vec<usize> = p2.iter().map(|&d| p1[d]).collect();
            let result = only_output(self, &second)?.clone();
            let identity = perm.iter().enumerate().all(|(d, &q)| d == q);
            // A choice between two rewrites, not a precondition: when the result cannot be
            // forwarded, the identity is kept as one transpose.
            if identity && forwardable(self, p, g, &source, &result, b).is_ok() {
                return Ok(Rewrite::Remove {
                    first,
                    second,
                    source,
                    result,
                });
            }
            return Ok(Rewrite::Compose {
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
        if pos >= 2 {
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
            let other_rank = declared(self, p, other, b)?.rank();
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
        Ok(Rewrite::IntoGemm {
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
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        pairs(p, &["Transpose"], CONSUMERS)
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let rewrite = self.rewrite(p, site, legality)?;
        let (anchor, touched) = (site[1], site.to_vec());
        Ok(Plan::new(move |p| {
            let edit = p
                .edit(anchor)
                .ok_or_else(|| refuse(&TransposeFolding, anchor, "gone"))?;
            let names = run(edit.graph, edit.data, rewrite);
            prune(p, &names);
            Ok(touched)
        }))
    }
}

/// Performs `rewrite` in its scope `g`; returns the containers to prune.
fn run(g: &mut Graph, data: &BTreeMap<String, DataDesc>, rewrite: Rewrite) -> Vec<String> {
    match rewrite {
        Rewrite::Remove {
            first,
            second,
            source,
            result,
        } => {
            redirect_readers(g, &result, &source);
            g.remove_node(second.idx);
            g.remove_node(first.idx);
            containers(&[&first, &second])
        }
        Rewrite::Compose {
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
            g.remove_node(first.idx);
            containers(&[&first])
        }
        Rewrite::IntoGemm {
            transpose,
            consumer,
            source,
            pos,
        } => {
            let mut inputs = consumer.inputs.clone();
            if let Some(slot) = inputs.get_mut(pos) {
                *slot = Some(source);
            }
            set_inputs(g, data, consumer.idx, &inputs);
            set_op(g, consumer.idx, flipped_gemm(&consumer.lib, pos));
            g.remove_node(transpose.idx);
            containers(&[&transpose])
        }
    }
}
