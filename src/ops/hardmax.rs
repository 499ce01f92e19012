//! Hardmax: 1 at the first largest element of each group, 0 elsewhere.
//!
//! Groups are Softmax's (`ops::softmax::group_axes`): one axis (default −1) from opset 13, all
//! axes from `axis` (default 1) before. The expansion reduces twice, like ArgMax: the group's
//! maximum, then the first position holding it (a min over positions with the group size as
//! sentinel), and writes `position == first` in a pointwise map.

use super::softmax::{group_axes, group_stats};
use super::support::{
    arg, dim_product, element_map, fill_map, input_type, line_starts, params_over, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&Hardmax];

/// `Hardmax(input)`.
pub struct Hardmax;

/// The position of the element at `idx` within its group of axes `[first, end)` (row-major).
fn position(shape: &[SymExpr], idx: &[SymExpr], (first, end): (usize, usize)) -> SymExpr {
    (first..end)
        .fold(SymExpr::Int(0), |acc, d| {
            acc * shape[d].clone() + idx[d].clone()
        })
        .simplify()
}

impl Operator for Hardmax {
    fn name(&self) -> &'static str {
        "Hardmax"
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
        check_arity(self, inputs.len())?;
        let x = input_type(self.name(), inputs, 0)?;
        if x.dtype == DType::Bool {
            return Err(OpError::shape(
                self.name(),
                "expects a numeric input, got bool",
            ));
        }
        group_axes(self.name(), node, x.shape.len())?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name(), inputs, 0)?;
        let (first, end) = group_axes(self.name(), node, x.shape.len())?;
        let group: usize = x.shape[first..end].iter().product();
        let inner: usize = x.shape[end..].iter().product();
        let mut y = vec![0.0; x.len()];
        for base in line_starts(x.len(), group, inner) {
            let at = |r: usize| base + r * inner;
            let best = (1..group).fold(0, |b, r| {
                if x.get_f64(at(r)) > x.get_f64(at(b)) {
                    r
                } else {
                    b
                }
            });
            y[at(best)] = 1.0;
        }
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let axes = group_axes(self.name(), ctx.node, desc.shape.len())?;
        let (params, idx) = params_over("i", &desc.shape);
        let (stat_shape, stat_idx) = group_stats(&desc.shape, &idx, axes);
        let label = ctx.label.clone();
        let b = &mut *ctx.b;
        let max = b.transient(&format!("{label}_max"), desc.dtype, stat_shape.clone());
        let first = b.transient(&format!("{label}_first"), DType::I64, stat_shape.clone());
        let size = dim_product(&desc.shape[axes.0..axes.1]);
        let at = TExpr::Index(position(&desc.shape, &idx, axes));
        let xi = || Read::new("x", &x, idx.clone());
        let lowest = f64::from(Wcr::Max.identity());
        fill_map(b, &format!("{label}_max_init"), &max, &stat_shape, lowest);
        let dst = (max.as_str(), stat_idx.clone());
        let value = TExpr::input("x");
        element_map(
            b,
            &format!("{label}_max"),
            &params,
            vec![xi()],
            dst,
            Some(Wcr::Max),
            value,
        );
        let (init_params, init_idx) = params_over("i", &stat_shape);
        let sentinel = TExpr::Index(size.clone());
        let init = (first.as_str(), init_idx);
        element_map(
            b,
            &format!("{label}_first_init"),
            &init_params,
            vec![],
            init,
            None,
            sentinel.clone(),
        );
        let reads = vec![xi(), Read::new("m", &max, stat_idx.clone())];
        let is_max = TExpr::binary(BinOp::Eq, TExpr::input("x"), TExpr::input("m"));
        let value = TExpr::select(is_max, at.clone(), sentinel);
        let dst = (first.as_str(), stat_idx.clone());
        element_map(
            b,
            &format!("{label}_first"),
            &params,
            reads,
            dst,
            Some(Wcr::Min),
            value,
        );
        let reads = vec![Read::new("f", &first, stat_idx)];
        let value = TExpr::binary(BinOp::Eq, at, TExpr::input("f"));
        element_map(b, &label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        super::support::per_output_element(outputs, 3)
    }
}
