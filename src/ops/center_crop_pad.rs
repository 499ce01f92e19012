//! CenterCropPad (opset 18): each listed axis (attribute `axes`, default all) is cropped or
//! zero-padded, centred, to the extent the constant input `shape` gives it.
//!
//! This is a Pad in another form: an axis of extent `n` brought to `t` is padded by
//! `begin = (t − n) / 2` (truncated towards zero) and `end = t − n − begin`, a negative pad
//! cropping. Truncation puts the odd element at the end both ways, as the ONNX reference does:
//! cropping 5 to 2 keeps positions 1 and 2, padding 2 to 5 writes the input at positions 1 and
//! 2. So the operator builds Pad's plan and shares its reference implementation and
//! expansion (`pad::Plan`) instead of restating them.
//!
//! `shape` must be a constant, since the output shape depends on it; a computed one is refused
//! by name. The cropped or padded axes must have numeric extents for the same reason.

use super::movement::{resolve_axes, type_of, Param};
use super::pad::Plan;
use super::support::{arg, input_type};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&CenterCropPad];

const OP: &str = "CenterCropPad";

/// `Y = center_crop_pad(X, shape)`.
pub struct CenterCropPad;

/// Pad's plan for input extents `shape`, with the targets from input 1.
fn plan(node: &LibraryNode, shape: &[SymExpr], target: Param) -> Result<Plan, OpError> {
    let target = target
        .ints(OP, "shape")?
        .ok_or_else(|| OpError::shape(OP, "missing input 1 (`shape`)"))?;
    let rank = shape.len();
    let axes = match node.ints("axes") {
        Some(a) => resolve_axes(OP, a, rank)?,
        None => (0..rank).collect(),
    };
    if target.len() != axes.len() {
        return Err(OpError::shape(
            OP,
            format!(
                "`shape` has {} entries, expected one per axis ({})",
                target.len(),
                axes.len()
            ),
        ));
    }
    let (mut begin, mut end) = (vec![0; rank], vec![0; rank]);
    for (&d, &t) in axes.iter().zip(&target) {
        if t < 0 {
            return Err(OpError::shape(
                OP,
                format!("`shape` asks for the negative extent {t} on axis {d}"),
            ));
        }
        let n = shape[d]
            .as_int()
            .ok_or_else(|| OpError::symbolic(OP, format!("the extent of axis {d}"), &shape[d]))?;
        let diff = t - n;
        begin[d] = diff / 2;
        end[d] = diff - begin[d];
    }
    Ok(Plan::zeros(begin, end))
}

impl Operator for CenterCropPad {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        let plan = plan(node, &x.shape, Param::of_infer(inputs, consts, 1))?;
        Ok(vec![plan.out_type(x)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let plan = plan(node, &type_of(x).shape, Param::of_eval(inputs, 1))?;
        Ok(vec![plan.eval(x, 0.0)?])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let x_shape = ctx.input(0)?.1.shape.clone();
        let plan = plan(ctx.node, &x_shape, Param::of_expand(ctx, 1))?;
        plan.expand(ctx, None, 0.0)
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
