//! MatMulAddToGemm: a 2-D MatMul followed by the addition of a bias becomes one Gemm.
//!
//! ```text
//! before:  T = MatMul(X, W)     Y = Add(T, b)       X: [M, K], W: [K, N], b: [N] (or [1, N], [M, 1], …)
//! after:   Y = Gemm(X, W, b)                        (keeps the MatMul's id; α = β = 1)
//! ```
//! Gemm initialises its accumulator with the broadcast bias instead of zero, so the product is
//! written once instead of written, read back and rewritten by the addition.

use crate::ir::{LibraryNode, NodeId, Program};
use crate::ops::broadcast::check_unidirectional;
use crate::transform::support::opgraph::{
    containers, declared, feeds, only_output, op_in, op_node, prune, set_inputs, set_op,
    set_output, shown, OpNode, Port,
};
use crate::transform::{
    builtin_sites, refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema,
    Transformation,
};
use std::collections::BTreeMap;

pub struct MatMulAddToGemm;

const SCHEMA: Schema = Schema {
    name: "MatMulAddToGemm",
    level: Level::Operator,
    doc: "replace a 2-D MatMul and the Add of a bias by one Gemm with that bias as C",
    site: &[
        Role::new(
            "matmul",
            NodeClass::Library { ops: &["MatMul"] },
            "the 2-D product; it becomes the Gemm (keeping its id)",
        ),
        Role::new(
            "add",
            NodeClass::Library { ops: &["Add"] },
            "the addition of a bias to the product; it disappears",
        ),
    ],
    params: &[],
};

/// A checked site: the product, the addition, and the bias and result the Gemm takes over.
struct Fusion {
    matmul: OpNode,
    add: OpNode,
    bias: Port,
    result: Port,
}

impl MatMulAddToGemm {
    fn fusion(
        &self,
        p: &Program,
        site: &[NodeId],
        legality: &mut Legality,
    ) -> Result<Fusion, NotApplicable> {
        let (a, b) = (site[0], site[1]);
        let (g, matmul) = op_node(self, p, a, &["MatMul"])?;
        let add = op_in(self, g, b, &["Add"])?;
        let mut ranks = Vec::new();
        for i in 0..2 {
            let (_, d) = matmul
                .input(i)
                .ok_or_else(|| refuse(self, a, format!("input {i} is not wired")))?;
            ranks.push(declared(self, p, d, a)?.rank());
        }
        if ranks != [2, 2] {
            return Err(refuse(
                self,
                a,
                format!(
                    "the operands have ranks {} and {}; Gemm multiplies matrices (rank 2) only",
                    ranks[0], ranks[1]
                ),
            ));
        }
        let (product, pos) = feeds(self, p, &matmul, &add, legality)?;
        let bias = 1usize
            .checked_sub(pos)
            .and_then(|other| add.input(other))
            .cloned()
            .ok_or_else(|| refuse(self, b, "the bias input is not wired"))?;
        let result = only_output(self, &add)?.clone();
        let (pd, bd) = (
            declared(self, p, &product.1, a)?,
            declared(self, p, &bias.1, b)?,
        );
        if bd.dtype != pd.dtype {
            return Err(refuse(
                self,
                b,
                format!(
                    "the bias `{}` is {} but the product is {}",
                    bias.1, bd.dtype, pd.dtype
                ),
            ));
        }
        check_unidirectional("Gemm", "the bias", &bd.shape, &pd.shape).map_err(|_| {
            refuse(
                self,
                b,
                format!(
                    "the bias `{}` of shape {} does not broadcast to the product's {} (Gemm's C \
                     broadcasts one way only)",
                    bias.1,
                    shown(&bd.shape),
                    shown(&pd.shape)
                ),
            )
        })?;
        Ok(Fusion {
            matmul,
            add,
            bias,
            result,
        })
    }
}

impl Transformation for MatMulAddToGemm {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        builtin_sites(self, "matmul_add", p, &[("matmul", "mm")])
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let f = self.fusion(p, site, legality)?;
        let touched = site.to_vec();
        Ok(Plan::new(move |p| {
            let id = f.matmul.id;
            let edit = p
                .edit(id)
                .ok_or_else(|| refuse(&MatMulAddToGemm, id, "gone"))?;
            let (g, data) = (&mut *edit.graph, &*edit.data);
            g.remove_node(f.add.idx);
            let mut inputs = f.matmul.inputs.clone();
            inputs.truncate(2);
            inputs.push(Some(f.bias.clone()));
            set_inputs(g, data, f.matmul.idx, &inputs);
            set_output(g, data, f.matmul.idx, &f.result);
            set_op(
                g,
                f.matmul.idx,
                LibraryNode {
                    op: "Gemm".into(),
                    attrs: BTreeMap::new(),
                },
            );
            prune(p, &containers(&[&f.matmul, &f.add]));
            Ok(touched)
        }))
    }
}
