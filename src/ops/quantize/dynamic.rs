//! DynamicQuantizeLinear: uint8 parameters derived from the data, then QuantizeLinear's maps.
//!
//! Every step is `f32` arithmetic, as ONNX's reference computes it: the range
//! `[min(0, min x), max(0, max x)]`, `scale = (max − min) / 255` (1 / 255 for an empty range),
//! `zero_point = round(clamp(−min / scale, 0, 255))`. The expansion keeps each rounding where
//! the reference has it: the quotient `−min / scale` is stored to an `f32` transient before
//! the clamp and round that produce the uint8 zero point.

use super::{Granularity, QuantTypes, Quantize};
use crate::ir::{BinOp, DType, LibraryNode, TExpr, Tensor, UnOp, Wcr};
use crate::ops::support::{arg, element_map, fill_map, input_type, params_over, types_of, Read};
use crate::ops::{check_arity, ExpandCtx, OpError, Operator, TensorType};

/// `DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point)`, uint8.
pub struct DynamicQuantizeLinear;

/// A read of the one element of a scalar container.
fn one<'a>(conn: &'a str, data: &'a str) -> Read<'a> {
    Read::new(conn, data, Vec::new())
}

/// uint8's largest value, the width of DynamicQuantizeLinear's range.
const U8_MAX: f32 = 255.0;

impl Operator for DynamicQuantizeLinear {
    fn name(&self) -> &'static str {
        "DynamicQuantizeLinear"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn output_count(&self) -> usize {
        3
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(self.name(), inputs, 0)?;
        if x.dtype != DType::F32 {
            return Err(OpError::shape(
                self.name(),
                format!("expects float, got {}", x.dtype),
            ));
        }
        Ok(vec![
            TensorType::new(DType::U8, x.shape.clone()),
            TensorType::new(DType::F32, Vec::new()),
            TensorType::new(DType::U8, Vec::new()),
        ])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        self.infer(node, &types_of(inputs), &[])?;
        let x = arg(self.name(), inputs, 0)?;
        // f32 arithmetic throughout, step by step as ONNX's reference.
        let values: Vec<f32> = x.to_f64_vec().into_iter().map(|v| v as f32).collect();
        let hi = values.iter().copied().fold(0.0f32, f32::max);
        let lo = values.iter().copied().fold(0.0f32, f32::min);
        let scale = (if hi == lo { 1.0 } else { hi - lo }) / U8_MAX;
        let zero_point = (0.0 - lo / scale).clamp(0.0, U8_MAX).round_ties_even();
        let y: Vec<f64> = values
            .iter()
            .map(|&v| f64::from(((v / scale).round_ties_even() + zero_point).clamp(0.0, U8_MAX)))
            .collect();
        Ok(vec![
            Tensor::from_f64(DType::U8, x.shape.clone(), &y),
            Tensor::from_f64(DType::F32, Vec::new(), &[f64::from(scale)]),
            Tensor::from_f64(DType::U8, Vec::new(), &[f64::from(zero_point)]),
        ])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let label = ctx.label.clone();
        let scalar = |ctx: &mut ExpandCtx, i: usize, suffix: &str, dtype: DType| match ctx
            .outputs
            .get(i)
            .and_then(|o| o.as_ref())
        {
            Some((name, _)) => name.clone(),
            None => ctx
                .b
                .transient(&format!("{label}_{suffix}"), dtype, Vec::new()),
        };
        let scale = scalar(ctx, 1, "scale", DType::F32);
        let zp = scalar(ctx, 2, "zero_point", DType::U8);
        let b = &mut *ctx.b;
        let (params, idx) = params_over("i", &xd.shape);
        // The range always includes 0: both extremes start there.
        let mut extreme = |suffix: &str, wcr: Wcr| {
            let acc = b.transient(&format!("{label}_{suffix}"), DType::F32, Vec::new());
            fill_map(b, &format!("{acc}_init"), &acc, &[], 0.0);
            let reads = vec![Read::new("x", &x, idx.clone())];
            element_map(
                b,
                &acc,
                &params,
                reads,
                (&acc, Vec::new()),
                Some(wcr),
                TExpr::input("x"),
            );
            acc
        };
        let hi = extreme("max", Wcr::Max);
        let lo = extreme("min", Wcr::Min);
        let (h, l) = (TExpr::input("h"), TExpr::input("l"));
        let width = TExpr::select(
            TExpr::binary(BinOp::Eq, h.clone(), l.clone()),
            TExpr::Const(1.0),
            TExpr::binary(BinOp::Sub, h, l.clone()),
        );
        let value = TExpr::binary(BinOp::Div, width, TExpr::Const(f64::from(U8_MAX)));
        let reads = vec![one("h", &hi), one("l", &lo)];
        element_map(
            b,
            &format!("{label}_scale"),
            &[],
            reads,
            (&scale, Vec::new()),
            None,
            value,
        );
        // −min / scale in f32 (an f32 tasklet), then clamped and rounded into uint8.
        let shift = b.transient(&format!("{label}_shift"), DType::F32, Vec::new());
        let value = TExpr::binary(
            BinOp::Sub,
            TExpr::Const(0.0),
            TExpr::binary(BinOp::Div, l, TExpr::input("s")),
        );
        let reads = vec![one("l", &lo), one("s", &scale)];
        element_map(
            b,
            &format!("{label}_shift"),
            &[],
            reads,
            (&shift, Vec::new()),
            None,
            value,
        );
        let clamped = TExpr::binary(
            BinOp::Min,
            TExpr::binary(BinOp::Max, TExpr::input("v"), TExpr::Const(0.0)),
            TExpr::Const(f64::from(U8_MAX)),
        );
        let value = TExpr::unary(UnOp::Round, clamped);
        let reads = vec![one("v", &shift)];
        element_map(
            b,
            &format!("{label}_zero_point"),
            &[],
            reads,
            (&zp, Vec::new()),
            None,
            value,
        );
        Quantize {
            x: &x,
            shape: &xd.shape,
            grain: Granularity::Tensor,
            scale: (&scale, 0),
            zero_point: Some((&zp, 0)),
            y: &y,
            types: QuantTypes {
                target: DType::U8,
                quotient: DType::F32,
            },
            limit: None,
        }
        .append(b, &label);
        Ok(())
    }
}
