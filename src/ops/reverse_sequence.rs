//! ReverseSequence (opsets 10 and 28, which only added bfloat16): for each batch entry `b`,
//! the first `sequence_lens[b]` steps along the time axis are reversed and the rest copied:
//! `y[b, t] = x[b, L − 1 − t]` for `t < L = sequence_lens[b]`, else `x[b, t]`. The batch and
//! time axes are 0 and 1 in either order (defaults `batch_axis = 1`, `time_axis = 0`).
//!
//! `sequence_lens` is a run-time input, so the expansion reads it per element and reads the
//! input at the computed time step: one map over Y whose tasklet sees the whole time axis of X
//! (like GatherElements) and picks `select(t < L, L − 1 − t, t)`, clamped into the axis so that
//! a length beyond it stays in bounds (`eval` rejects such lengths).

use super::index::{axis_window, lookup_map, window_indices};
use super::movement::copy_element;
use super::support::{arg, input_type, params_over, unravel};
use super::window::same_dim;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::In;
use crate::ir::{BinOp, DType, LibraryNode, Subset, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&ReverseSequence];

/// `ReverseSequence(input, sequence_lens)`.
pub struct ReverseSequence;

impl ReverseSequence {
    /// `(batch_axis, time_axis)`: 0 and 1 in some order.
    fn axes(&self, node: &LibraryNode) -> Result<(usize, usize), OpError> {
        let read = |name: &str, default: i64| match node.int(name).unwrap_or(default) {
            0 => Ok(0),
            1 => Ok(1),
            v => Err(OpError::attr(
                self.name(),
                name,
                format!("must be 0 or 1, got {v}"),
            )),
        };
        let (batch, time) = (read("batch_axis", 1)?, read("time_axis", 0)?);
        if batch == time {
            return Err(OpError::attr(
                self.name(),
                "time_axis",
                format!("equals batch_axis ({batch})"),
            ));
        }
        Ok((batch, time))
    }
}

impl Operator for ReverseSequence {
    fn name(&self) -> &'static str {
        "ReverseSequence"
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
        let op = self.name();
        let x = input_type(op, inputs, 0)?;
        let lens = input_type(op, inputs, 1)?;
        let (batch, _) = self.axes(node)?;
        if x.shape.len() < 2 {
            return Err(OpError::shape(
                op,
                format!(
                    "input must have rank at least 2, got rank {}",
                    x.shape.len()
                ),
            ));
        }
        if lens.dtype != DType::I64 {
            return Err(OpError::shape(
                op,
                format!("sequence_lens must be int64, got {}", lens.dtype),
            ));
        }
        let [n] = lens.shape.as_slice() else {
            return Err(OpError::shape(
                op,
                format!(
                    "sequence_lens must have rank 1, got rank {}",
                    lens.shape.len()
                ),
            ));
        };
        same_dim(op, n, &x.shape[batch], || {
            format!(
                "sequence_lens has {n} entries but the batch axis has {}",
                x.shape[batch]
            )
        })?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name(), inputs, 0)?;
        let lens = arg(self.name(), inputs, 1)?;
        self.infer(node, &super::support::types_of(inputs), &[])?;
        let (batch, time) = self.axes(node)?;
        let steps = x.shape[time];
        let lens = lens.to_i64_vec();
        if let Some(bad) = lens.iter().find(|&&l| l < 0 || l as usize > steps) {
            return Err(OpError::shape(
                self.name(),
                format!("sequence length {bad} is outside [0, {steps}]"),
            ));
        }
        let strides = x.strides();
        let mut y = Tensor::zeros(x.dtype(), x.shape.clone());
        for e in 0..x.len() {
            let idx = unravel(e, &x.shape);
            let (t, len) = (idx[time], lens[idx[batch]] as usize);
            let source = if t < len { len - 1 - t } else { t };
            copy_element(
                x,
                e - (t * strides[time]) + source * strides[time],
                &mut y,
                e,
            );
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (lens, _) = ctx.input(1)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (batch, time) = self.axes(ctx.node)?;
        let (params, idx) = params_over("i", &desc.shape);
        let t = TExpr::Index(idx[time].clone());
        let len = TExpr::input("l");
        let reversed = TExpr::binary(
            BinOp::Sub,
            TExpr::binary(BinOp::Sub, len.clone(), TExpr::Const(1.0)),
            t.clone(),
        );
        let source = TExpr::select(TExpr::binary(BinOp::Lt, t.clone(), len), reversed, t);
        let last = TExpr::Index(&desc.shape[time] - SymExpr::Int(1));
        let clamped = TExpr::binary(
            BinOp::Max,
            TExpr::binary(BinOp::Min, source, last),
            TExpr::Const(0.0),
        );
        let rank = desc.shape.len();
        let value = TExpr::element("t", window_indices(rank, time, clamped));
        let inputs = vec![
            In("l", &lens, Subset::element([idx[batch].clone()])),
            In("t", &x, axis_window(&desc.shape, &idx, time)),
        ];
        lookup_map(ctx.b, &ctx.label, &params, inputs, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
