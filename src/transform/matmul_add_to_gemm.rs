//! MatMulAddToGemm: a 2-D MatMul followed by the addition of a bias becomes one Gemm.
//!
//! ```text
//! before:  T = MatMul(X, W)     Y = Add(T, b)       X: [M, K], W: [K, N], b: [N] (or [1, N], [M, 1], …)
//! after:   Y = Gemm(X, W, b)                        (keeps the MatMul's id; α = β = 1)
//! ```
//! Gemm initialises its accumulator with the broadcast bias instead of zero, so the product is
//! written once instead of written, read back and rewritten by the addition.

use super::opgraph::{
    containers, feeds, op_in, op_node, pair, pairs, prune, set_inputs, set_op, set_output, shown,
    OpNode, Port,
};
use super::{refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{LibraryNode, NodeId, Program};
use crate::ops::broadcast::check_unidirectional;
use std::collections::BTreeMap;

pub struct MatMulAddToGemm;

/// A checked site: the product, the addition, and the bias and result the Gemm takes over.
struct Plan {
    matmul: OpNode,
    add: OpNode,
    bias: Port,
    result: Port,
}

impl MatMulAddToGemm {
    fn plan(&self, p: &Program, site: &[NodeId]) -> Result<Plan, NotApplicable> {
        let (a, b) = pair(self, site)?;
        let (g, matmul) = op_node(self, p, a, &["MatMul"])?;
        let add = op_in(self, g, b, &["Add"])?;
        let mut ranks = Vec::new();
        for i in 0..2 {
            let (_, d) = matmul
                .input(i)
                .ok_or_else(|| refuse(self, a, format!("input {i} is not wired")))?;
            ranks.push(p.data[d].rank());
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
        let (product, pos) = feeds(self, p, &matmul, &add)?;
        let bias = add
            .input(1 - pos)
            .cloned()
            .ok_or_else(|| refuse(self, b, "the bias input is not wired"))?;
        let result = super::opgraph::only_output(self, &add)?.clone();
        let (pd, bd) = (&p.data[&product.1], &p.data[&bias.1]);
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
        Ok(Plan {
            matmul,
            add,
            bias,
            result,
        })
    }
}

impl Transformation for MatMulAddToGemm {
    fn name(&self) -> &'static str {
        "MatMulAddToGemm"
    }

    fn level(&self) -> Level {
        Level::Operator
    }

    fn doc(&self) -> &'static str {
        "replace a 2-D MatMul and the Add of a bias by one Gemm with that bias as C"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        pairs(p, &["MatMul"], &["Add"])
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
        let id = plan.matmul.id;
        let edit = p.edit(id).ok_or_else(|| refuse(self, id, "gone"))?;
        let (g, data) = (&mut *edit.graph, &*edit.data);
        g.g.remove_node(plan.add.idx);
        let mut inputs = plan.matmul.inputs.clone();
        inputs.truncate(2);
        inputs.push(Some(plan.bias));
        set_inputs(g, data, plan.matmul.idx, &inputs);
        set_output(g, data, plan.matmul.idx, &plan.result);
        set_op(
            g,
            plan.matmul.idx,
            LibraryNode {
                op: "Gemm".into(),
                attrs: BTreeMap::new(),
            },
        );
        prune(p, &containers(&[&plan.matmul, &plan.add]));
        Ok(site.to_vec())
    }
}
