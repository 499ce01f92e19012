//! Upsample (opsets 7 and 9; opset 10 deprecated it in favour of Resize): `mode` `nearest`
//! (default) or `linear` by per-dimension `scales` of at least 1, given as an attribute (opset 7)
//! or as a constant input (opset 9). Output extents are `floor(n · scale)`.
//!
//! Upsample is Resize's opset-10 form (`X, scales`: asymmetric coordinates, nearest rounding
//! down), so it checks its own parameters and hands shape inference, the reference and the
//! expansion to [`Resize`] with the scales as its second, constant, input.

use super::resize::Resize;
use super::support::{arg, input_type};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, DataDesc, DataKind, LibraryNode, SymExpr, Tensor};
use std::collections::BTreeMap;

pub static OPS: &[&dyn Operator] = &[&Upsample];

/// `Upsample(X, scales?)`.
pub struct Upsample;

impl Upsample {
    /// The scales as Resize's `scales` input: the attribute (opset 7) or the constant input
    /// (opset 9), checked against X's rank and the schema's range.
    fn scales(
        &self,
        node: &LibraryNode,
        rank: usize,
        input: Option<Option<&Tensor>>,
    ) -> Result<Tensor, OpError> {
        let op = self.name();
        match node.str("mode").unwrap_or("nearest") {
            "nearest" | "linear" => {}
            other => {
                return Err(OpError::attr(
                    op,
                    "mode",
                    format!("must be `nearest` or `linear`, got `{other}`"),
                ))
            }
        }
        let values: Vec<f64> = match (input, node.floats("scales")) {
            (Some(_), Some(_)) => {
                return Err(OpError::shape(
                    op,
                    "scales given both as an attribute and as an input",
                ))
            }
            (Some(Some(t)), None) => t.to_f64_vec(),
            (Some(None), None) => {
                return Err(OpError::unsupported(
                    op,
                    "scales must be a constant (output shapes depend on it)",
                ))
            }
            (None, Some(s)) => s.to_vec(),
            (None, None) => return Err(OpError::attr(op, "scales", "is required")),
        };
        if values.len() != rank {
            return Err(OpError::shape(
                op,
                format!("scales has {} entries for rank {rank}", values.len()),
            ));
        }
        if let Some(bad) = values
            .iter()
            .find(|s| s.is_nan() || **s < 1.0 || s.is_infinite())
        {
            return Err(OpError::shape(
                op,
                format!("scale {bad} is below 1 (Upsample only enlarges; Resize shrinks)"),
            ));
        }
        let data = values.iter().map(|&v| v as f32).collect();
        Ok(Tensor::f32(vec![rank], data))
    }
}

impl Operator for Upsample {
    fn name(&self) -> &'static str {
        "Upsample"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(self.name(), inputs, 0)?;
        let given = (inputs.len() == 2).then(|| consts.get(1).copied().flatten());
        if given.is_some() {
            let t = input_type(self.name(), inputs, 1)?;
            if t.dtype != DType::F32 {
                return Err(OpError::shape(
                    self.name(),
                    format!("scales must be float, got {}", t.dtype),
                ));
            }
        }
        let scales = self.scales(node, x.shape.len(), given)?;
        let scales_type = TensorType::new(DType::F32, vec![SymExpr::from(scales.len())]);
        Resize.infer(
            node,
            &[Some(x.clone()), Some(scales_type)],
            &[None, Some(&scales)],
        )
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name(), inputs, 0)?;
        let given = (inputs.len() == 2).then(|| inputs[1]);
        let scales = self.scales(node, x.shape.len(), given)?;
        Resize.eval(node, &[Some(x), Some(&scales)])
    }

    fn expand(&self, implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let x = ctx.input(0)?.clone();
        let given = (ctx.inputs.len() == 2).then(|| ctx.constant_input(1));
        let scales = self.scales(ctx.node, x.1.shape.len(), given)?;
        if given.is_some() {
            return Resize.expand(implementation, ctx);
        }
        // Resize reads its scales as a constant input (nothing else from `constants`): name one,
        // which no map reads as a container.
        let name = format!("{}_scales", ctx.label);
        let desc = DataDesc::new(
            DType::F32,
            vec![SymExpr::from(scales.len())],
            DataKind::Constant,
        );
        let constants = BTreeMap::from([(name.clone(), scales.into())]);
        let mut resize = ExpandCtx {
            node: ctx.node,
            inputs: vec![Some(x), Some((name, desc))],
            outputs: ctx.outputs.clone(),
            constants: &constants,
            b: &mut *ctx.b,
            label: ctx.label.clone(),
        };
        Resize.expand(implementation, &mut resize)
    }

    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        Resize.flops(node, inputs, outputs)
    }
}
