//! Dropout at inference: the identity on the data, and an all-true mask.
//!
//! `Dropout(data, ratio?, training_mode?) -> (output, mask?)`. Only inference is supported: the
//! ratio is irrelevant there, and a training mode that is known to be true (a constant input at
//! shape inference, the actual value at evaluation) is rejected rather than silently ignored,
//! because training-mode dropout is random. A training-mode input that is computed at run time
//! is taken to be false, as in every exported inference graph.

use super::expand::copy_map;
use super::support::{arg, fill_map, input_type, opt_arg, params_over};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, LibraryNode, Tensor};

pub static OPS: &[&dyn Operator] = &[&Dropout];

const NAME: &str = "Dropout";

/// `Dropout(data, ratio?, training_mode?)`.
pub struct Dropout;

/// Rejects a training mode known to be true.
fn check_training(mode: Option<&Tensor>) -> Result<(), OpError> {
    match mode {
        Some(t) if t.to_f64_vec().iter().any(|v| *v != 0.0) => Err(OpError::unsupported(
            NAME,
            "training_mode is true: only inference (the identity) is supported",
        )),
        _ => Ok(()),
    }
}

impl Operator for Dropout {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 3)
    }

    fn output_count(&self) -> usize {
        2
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(NAME, inputs, 0)?;
        check_training(consts.get(2).copied().flatten())?;
        let mask = TensorType::new(DType::Bool, x.shape.clone());
        Ok(vec![x.clone(), mask])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let x = arg(NAME, inputs, 0)?;
        check_training(opt_arg(inputs, 2))?;
        let mask = Tensor::from_f64(DType::Bool, x.shape.clone(), &vec![1.0; x.len()]);
        Ok(vec![x.clone(), mask])
    }

    /// A copy map for the output and, when the node has a mask, a map filling it with true.
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        check_training(ctx.constant_input(2))?;
        if let Some((y, _)) = ctx.outputs.first().cloned().flatten() {
            let (params, idx) = params_over("i", &xd.shape);
            copy_map(ctx.b, &ctx.label, params, &x, idx.clone(), &y, idx);
        }
        if let Some((mask, md)) = ctx.outputs.get(1).cloned().flatten() {
            fill_map(ctx.b, &format!("{}_mask", ctx.label), &mask, &md.shape, 1.0);
        }
        Ok(())
    }

    /// Moving data is not floating-point work.
    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
