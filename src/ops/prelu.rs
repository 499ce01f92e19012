//! PRelu: `x` where it is non-negative, `slope · x` where it is negative, with `slope`
//! broadcast to x's shape (unidirectionally: the output has x's shape, opset 7 on).
//!
//! The reference tests the sign of `x`; the expansion is one pointwise map whose tasklet is a
//! select over the broadcast reads, as the other pointwise operators of `ops::logic`.

use super::broadcast::check_unidirectional;
use super::logic::{eval_pointwise, expand_pointwise};
use super::support::{arg, input_type, same_dtype};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&PRelu];

/// `PRelu(X, slope)`.
pub struct PRelu;

impl Operator for PRelu {
    fn name(&self) -> &'static str {
        "PRelu"
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
        let x = input_type(self.name(), inputs, 0)?;
        let slope = input_type(self.name(), inputs, 1)?;
        same_dtype(self.name(), x, slope, 1)?;
        check_unidirectional(self.name(), "slope", &slope.shape, &x.shape)?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, _: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let dtype = arg(self.name(), inputs, 0)?.dtype();
        let y = eval_pointwise(self.name(), inputs, dtype, |v| {
            if v[0] < 0.0 {
                v[1] * v[0]
            } else {
                v[0]
            }
        })?;
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let x = TExpr::input("a0");
        let negative = TExpr::binary(BinOp::Lt, x.clone(), TExpr::Const(0.0));
        let scaled = TExpr::binary(BinOp::Mul, TExpr::input("a1"), x.clone());
        expand_pointwise(ctx, TExpr::select(negative, scaled, x))
    }
}
