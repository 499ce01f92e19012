//! MeanVarianceNormalization: `(X − E[X]) / (√Var[X] + 1e-9)` with mean and population
//! variance over `axes` (default `[0, 2, 3]`: per channel of an NCHW tensor). ONNX defines it as
//! a function whose epsilon is added to the standard deviation, not to the variance, so a
//! constant group gives 0 rather than a huge quotient.
//!
//! The expansion shares the normalizations' statistics passes (`support::Moments`): a mean and
//! a centred variance per group, then one pointwise map.

use super::movement::resolve_axes;
use super::support::{
    arg, dim_product, element_map, float_like_input, offset, params_over, per_output_element,
    unravel, Moments, Read,
};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::tensor::row_major_strides;
use crate::ir::{BinOp, LibraryNode, SymExpr, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&MeanVarianceNormalization];

/// Added to the standard deviation (the constant of ONNX's function body).
const EPSILON: f64 = 1e-9;

/// `MeanVarianceNormalization(X)`.
pub struct MeanVarianceNormalization;

impl MeanVarianceNormalization {
    /// Per dimension of X, whether it is normalised over.
    fn reduced(&self, node: &LibraryNode, rank: usize) -> Result<Vec<bool>, OpError> {
        let axes = node.ints("axes").unwrap_or(&[0, 2, 3]);
        let mut reduced = vec![false; rank];
        for d in resolve_axes(self.name(), axes, rank)? {
            reduced[d] = true;
        }
        Ok(reduced)
    }
}

/// `shape` with the reduced dimensions replaced by `one` (the statistics' shape or index).
fn kept<T: Clone>(shape: &[T], reduced: &[bool], one: T) -> Vec<T> {
    shape
        .iter()
        .zip(reduced)
        .map(|(d, &r)| if r { one.clone() } else { d.clone() })
        .collect()
}

impl Operator for MeanVarianceNormalization {
    fn name(&self) -> &'static str {
        "MeanVarianceNormalization"
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
        float_like_input(self, inputs, |rank| self.reduced(node, rank).map(drop))
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name(), inputs, 0)?;
        let reduced = self.reduced(node, x.shape.len())?;
        let stat_shape = kept(&x.shape, &reduced, 1);
        let groups: usize = stat_shape.iter().product();
        let count = (x.len() / groups.max(1)).max(1) as f64;
        let strides = row_major_strides(&stat_shape);
        // The statistics element of each element of X.
        let group: Vec<usize> = (0..x.len())
            .map(|e| {
                let idx = unravel(e, &x.shape);
                offset(&kept(&idx, &reduced, 0), &strides)
            })
            .collect();
        let mut mean = vec![0.0; groups];
        for (e, &g) in group.iter().enumerate() {
            mean[g] += x.get_f64(e) / count;
        }
        let mut var = vec![0.0; groups];
        for (e, &g) in group.iter().enumerate() {
            var[g] += (x.get_f64(e) - mean[g]).powi(2) / count;
        }
        let y: Vec<f64> = (group.iter().enumerate())
            .map(|(e, &g)| (x.get_f64(e) - mean[g]) / (var[g].sqrt() + EPSILON))
            .collect();
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let reduced = self.reduced(ctx.node, desc.shape.len())?;
        let (params, idx) = params_over("i", &desc.shape);
        let stat_shape = kept(&desc.shape, &reduced, SymExpr::Int(1));
        let stat_idx = kept(&idx, &reduced, SymExpr::Int(0));
        let reduced_dims: Vec<SymExpr> = (desc.shape.iter().zip(&reduced))
            .filter(|(_, &r)| r)
            .map(|(d, _)| d.clone())
            .collect();
        let count = dim_product(&reduced_dims);
        let label = ctx.label.clone();
        let b = &mut *ctx.b;
        let mean = b.transient(&format!("{label}_mean"), desc.dtype, stat_shape.clone());
        let var = b.transient(&format!("{label}_var"), desc.dtype, stat_shape.clone());
        let stats = Moments {
            x: &x,
            x_idx: &idx,
            params: &params,
            stat_shape: &stat_shape,
            stat_idx: &stat_idx,
            count: &count,
            epsilon: EPSILON,
        };
        stats.append_mean_var(b, &label, [&mean, &var]);
        let (mut reads, centred) = stats.centred(&mean);
        reads.push(Read::new("v", &var, stat_idx.clone()));
        let std = TExpr::unary(UnOp::Sqrt, TExpr::input("v"));
        let denom = TExpr::binary(BinOp::Add, std, TExpr::Const(EPSILON));
        let value = TExpr::binary(BinOp::Div, centred, denom);
        element_map(b, &label, &params, reads, (&y, idx.clone()), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        // Per element: mean (2), variance (4), normalisation (3).
        per_output_element(outputs, 9)
    }
}
