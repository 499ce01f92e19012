//! Mish: `x · tanh(softplus(x))`, YOLOv4's activation.
//!
//! The reference evaluates `softplus(x) = ln(1 + eˣ)` with `ln_1p` (switching to `x` where eˣ
//! would overflow); the tasklet uses the overflow-free form `max(x, 0) + ln(1 + e^−|x|)`, so the
//! expansion check compares two formulas.

use super::support::{arg, element_map, input_type, params_over, require_float, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&Mish];

const NAME: &str = "Mish";

/// Beyond this, `ln(1 + eˣ)` equals `x` in double precision.
const SOFTPLUS_LINEAR: f64 = 40.0;

/// `Mish(X)`.
pub struct Mish;

fn mish(x: f64) -> f64 {
    let softplus = if x > SOFTPLUS_LINEAR {
        x
    } else {
        x.exp().ln_1p()
    };
    x * softplus.tanh()
}

impl Operator for Mish {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(NAME, inputs, 0)?;
        require_float(NAME, x)?;
        Ok(vec![x.clone()])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let x = arg(NAME, inputs, 0)?;
        let values: Vec<f64> = x.to_f64_vec().into_iter().map(mish).collect();
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &xd.shape);
        let xv = TExpr::input("x");
        let tail = TExpr::unary(
            UnOp::Exp,
            TExpr::unary(UnOp::Neg, TExpr::unary(UnOp::Abs, xv.clone())),
        );
        let softplus = TExpr::binary(
            BinOp::Add,
            TExpr::binary(BinOp::Max, xv.clone(), TExpr::Const(0.0)),
            TExpr::unary(
                UnOp::Log,
                TExpr::binary(BinOp::Add, TExpr::Const(1.0), tail),
            ),
        );
        let value = TExpr::binary(BinOp::Mul, xv, TExpr::unary(UnOp::Tanh, softplus));
        let reads = vec![Read::new("x", &x, idx.clone())];
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }
}
