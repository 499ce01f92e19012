//! SwiGLU (opset 28): `Y = Swish_α(A) · B = A · sigmoid(α·A) · B`, the gated activation of
//! Llama-style feed-forward blocks (`alpha` default 1). ONNX defines it as its function body
//! `Mul(Swish<alpha>(A), B)`: A and B have identical shapes and types, without broadcasting.
//!
//! Both the reference and the tasklet reuse Swish's row of `ops::math` for the gate, so the two
//! operators cannot drift apart; the expansion is one pointwise map.

use super::logic::{eval_pointwise, expand_pointwise};
use super::math::SWISH;
use super::support::{arg, input_type, require_float, same_dtype};
use super::window::same_dim;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&SwiGlu];

/// `SwiGLU(A, B)`.
pub struct SwiGlu;

/// Swish's parameters (`[alpha]`) as its row reads them from the same attribute.
fn gate_params(node: &LibraryNode) -> Result<Vec<f64>, OpError> {
    SWISH.resolve(node, &|_| Ok(None))
}

impl Operator for SwiGlu {
    fn name(&self) -> &'static str {
        "SwiGLU"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name();
        let a = input_type(op, inputs, 0)?;
        let b = input_type(op, inputs, 1)?;
        require_float(op, a)?;
        same_dtype(op, a, b, 1)?;
        let mismatch = || {
            format!(
                "A and B must have identical shapes (no broadcasting), got {:?} and {:?}",
                a.shape, b.shape
            )
        };
        if a.shape.len() != b.shape.len() {
            return Err(OpError::shape(op, mismatch()));
        }
        for (da, db) in a.shape.iter().zip(&b.shape) {
            same_dim(op, da, db, mismatch)?;
        }
        Ok(vec![a.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        self.infer(node, &super::support::types_of(inputs), &[])?;
        let dtype = arg(self.name(), inputs, 0)?.dtype();
        let params = gate_params(node)?;
        let y = eval_pointwise(self.name(), inputs, dtype, |v| {
            (SWISH.f)(v[0], &params) * v[1]
        })?;
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let gate = (SWISH.t)(TExpr::input("a0"), &gate_params(ctx.node)?);
        expand_pointwise(ctx, TExpr::binary(BinOp::Mul, gate, TExpr::input("a1")))
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        super::support::per_output_element(outputs, 5)
    }
}
