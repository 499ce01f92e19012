//! LpNormalization: `x / ‖x‖ₚ` along one `axis` (default −1), `p` 1 or 2 (default 2); a group
//! whose norm is 0 yields 0 (ONNX's reference, rather than 0 / 0).
//!
//! The expansion sums `|x|` or `x²` per group (a wcr-sum map into a transient), then divides
//! in a pointwise map, taking the square root there for `p = 2`.

use super::softmax::group_stats;
use super::support::{
    arg, element_map, fill_map, float_like_input, line_starts, params_over, per_output_element,
    resolve_axis, Read,
};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, TExpr, Tensor, UnOp, Wcr};

pub static OPS: &[&dyn Operator] = &[&LpNormalization];

/// `LpNormalization(input)`.
pub struct LpNormalization;

impl LpNormalization {
    /// The normalised axis and `p`.
    fn config(&self, node: &LibraryNode, rank: usize) -> Result<(usize, i64), OpError> {
        if rank == 0 {
            return Err(OpError::shape(
                self.name(),
                "input must have rank at least 1",
            ));
        }
        let axis = resolve_axis(
            self.name(),
            "axis",
            node.int("axis").unwrap_or(-1),
            rank,
            false,
        )?;
        match node.int("p").unwrap_or(2) {
            p @ (1 | 2) => Ok((axis, p)),
            p => Err(OpError::attr(
                self.name(),
                "p",
                format!("must be 1 or 2, got {p}"),
            )),
        }
    }
}

impl Operator for LpNormalization {
    fn name(&self) -> &'static str {
        "LpNormalization"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        float_like_input(self, inputs, |rank| self.config(node, rank).map(drop))
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name(), inputs, 0)?;
        let (axis, p) = self.config(node, x.shape.len())?;
        let n = x.shape[axis];
        let inner: usize = x.shape[axis + 1..].iter().product();
        let mut y = vec![0.0; x.len()];
        for base in line_starts(x.len(), n, inner) {
            let line = || (0..n).map(|r| base + r * inner);
            let norm = match p {
                1 => line().map(|e| x.get_f64(e).abs()).sum::<f64>(),
                _ => line().map(|e| x.get_f64(e).powi(2)).sum::<f64>().sqrt(),
            };
            for e in line() {
                y[e] = if norm == 0.0 {
                    0.0
                } else {
                    x.get_f64(e) / norm
                };
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (axis, p) = self.config(ctx.node, desc.shape.len())?;
        let (params, idx) = params_over("i", &desc.shape);
        let (stat_shape, stat_idx) = group_stats(&desc.shape, &idx, (axis, axis + 1));
        let label = ctx.label.clone();
        let b = &mut *ctx.b;
        let acc = b.transient(&format!("{label}_norm"), desc.dtype, stat_shape.clone());
        fill_map(b, &format!("{label}_init"), &acc, &stat_shape, 0.0);
        let xv = TExpr::input("x");
        let term = match p {
            1 => TExpr::unary(UnOp::Abs, xv.clone()),
            _ => TExpr::binary(BinOp::Mul, xv.clone(), xv.clone()),
        };
        let xi = || Read::new("x", &x, idx.clone());
        let dst = (acc.as_str(), stat_idx.clone());
        element_map(
            b,
            &format!("{label}_sum"),
            &params,
            vec![xi()],
            dst,
            Some(Wcr::Sum),
            term,
        );
        let sum = TExpr::input("s");
        let norm = match p {
            1 => sum.clone(),
            _ => TExpr::unary(UnOp::Sqrt, sum.clone()),
        };
        let zero = TExpr::binary(BinOp::Eq, sum, TExpr::Const(0.0));
        let value = TExpr::select(zero, TExpr::Const(0.0), TExpr::binary(BinOp::Div, xv, norm));
        let reads = vec![xi(), Read::new("s", &acc, stat_idx)];
        element_map(b, &label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        per_output_element(outputs, 3)
    }
}
