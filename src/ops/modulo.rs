//! `Mod(a, b)` with broadcasting: the remainder of a division, with ONNX's two conventions.
//!
//! `fmod = 1` is C's `fmod` (truncated division: the remainder has the sign of the dividend),
//! one exact [`BinOp::Fmod`] in the tasklet. `fmod = 0` is Python's `%` (floored division: the
//! sign of the divisor), obtained from the truncated remainder `r` by adding `b` when `r` is
//! non-zero and its sign differs from `b`'s; opset 28 defines it for floating-point inputs too,
//! with the special cases this gives (NaN for an infinite `a` or a zero `b`, `b` itself for a
//! finite `a` of the other sign than an infinite `b`). Integers compute in `f64` (see
//! `ir::texpr`), where `fmod` is exact, so both conventions are exact for them.

use super::broadcast::broadcast_shapes;
use super::logic::{eval_pointwise, expand_pointwise};
use super::support::{arg, input_type, same_dtype};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Mod];

/// `Mod(a, b)`; attribute `fmod` (0 or 1, default 0).
pub struct Mod;

impl Mod {
    /// Whether the remainder follows C's `fmod` (else Python's `%`).
    fn truncated(node: &LibraryNode) -> Result<bool, OpError> {
        match node.int("fmod").unwrap_or(0) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(OpError::attr(
                "Mod",
                "fmod",
                format!("must be 0 or 1, got {v}"),
            )),
        }
    }
}

/// Python's remainder from C's: `r + b` when `r ≠ 0` and the signs of `r` and `b` differ.
fn floored(r: f64, b: f64) -> f64 {
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

impl Operator for Mod {
    fn name(&self) -> &'static str {
        "Mod"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let a = input_type("Mod", inputs, 0)?;
        let b = input_type("Mod", inputs, 1)?;
        same_dtype("Mod", a, b, 1)?;
        Self::truncated(node)?;
        let shape = broadcast_shapes("Mod", &[&a.shape, &b.shape])?;
        Ok(vec![TensorType::new(a.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let dtype = arg("Mod", inputs, 0)?.dtype();
        let truncated = Self::truncated(node)?;
        let y = eval_pointwise("Mod", inputs, dtype, |v| {
            let r = v[0] % v[1];
            if truncated {
                r
            } else {
                floored(r, v[1])
            }
        })?;
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (a, b) = (TExpr::input("a0"), TExpr::input("a1"));
        let r = TExpr::binary(BinOp::Fmod, a, b.clone());
        let value = if Self::truncated(ctx.node)? {
            r
        } else {
            let negative = |x: TExpr| TExpr::binary(BinOp::Lt, x, TExpr::Const(0.0));
            let adjust = TExpr::binary(
                BinOp::And,
                TExpr::binary(BinOp::Ne, r.clone(), TExpr::Const(0.0)),
                TExpr::binary(BinOp::Ne, negative(r.clone()), negative(b.clone())),
            );
            TExpr::select(adjust, TExpr::binary(BinOp::Add, r.clone(), b), r)
        };
        expand_pointwise(ctx, value)
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        outputs
            .iter()
            .filter_map(|t| t.static_shape())
            .map(|s| s.iter().product::<usize>() as u64)
            .sum()
    }
}
