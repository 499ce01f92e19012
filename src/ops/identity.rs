//! Identity (and Dropout at inference, which is the identity on its first output).

use super::expand::{copy_map, elementwise_index};
use super::{first_input, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, Tensor};

pub static OPS: &[&dyn Operator] = &[&Identity];

/// `Y = X`. The expansion is one copy map, so expansion never leaves a library node behind.
pub struct Identity;

impl Operator for Identity {
    fn name(&self) -> &'static str {
        "Identity"
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
        Ok(vec![first_input(self.name(), inputs)?.clone()])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        let x = inputs
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| OpError::shape(self.name(), "missing input"))?;
        Ok(vec![x.clone()])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (params, idx) = elementwise_index(&desc.shape);
        copy_map(ctx.b, &ctx.label, params, &x, idx.clone(), &y, idx);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
