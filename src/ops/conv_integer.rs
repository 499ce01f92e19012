//! Quantized convolutions: ConvInteger and QLinearConv, over Conv's geometry.
//!
//! `ConvInteger(x, w, x_zero_point?, w_zero_point?)` is the exact int32 convolution
//! `Σ (x − x₀)·(w − w₀)` of 8-bit operands, with padding reading zero after the subtraction (as in
//! ONNX's reference). `QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
//! y_zero_point, B?)` adds the int32 bias to that sum and requantizes it as QLinearMatMul does
//! (`qmatmul::Requantize`): `clamp(round_half_even(acc · x_scale · w_scale / y_scale) + y₀)`,
//! with `w_scale` and `w_zero_point` either per tensor or one per output channel.
//!
//! Both share Conv's shape rules (`conv::ConvShape`), its reference loop (`conv::reference`,
//! with the zero points as offsets) and its direct accumulation map (`conv::accumulate`, the
//! zero points subtracted in the tasklet); nothing about windows is repeated here.

use super::conv::{accumulate, reference, Channels, ConvShape, Offsets, Operands, ZeroPoint};
use super::qmatmul::{
    integer_range, multiplier, requantized, require_8bit, require_single, single, Requantize,
};
use super::support::{arg, fill_map, input_type, opt_arg, types_of};
use super::window::bias_init;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, DataDesc, LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&ConvInteger, &QLinearConv];

/// How a weight parameter (zero point or scale) is given: one value, or one per output channel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Granularity {
    Tensor,
    Channel,
}

/// Checks a weight parameter of `M` output channels: one value or a 1-D tensor of `M`, of type
/// `like` when given.
fn weight_param(
    op: &str,
    t: &TensorType,
    what: &str,
    like: Option<DType>,
    channels: i64,
) -> Result<Granularity, OpError> {
    if let [d] = t.shape.as_slice() {
        if channels != 1 && d.as_int() == Some(channels) {
            if let Some(like) = like.filter(|l| *l != t.dtype) {
                return Err(OpError::shape(
                    op,
                    format!("{what} has type {} but needs {like}", t.dtype),
                ));
            }
            return Ok(Granularity::Channel);
        }
    }
    require_single(op, t, what, like).map_err(|_| {
        OpError::shape(
            op,
            format!(
                "{what} must hold one value or one per output channel ({channels}), got shape {:?} \
                 of type {}",
                t.shape, t.dtype
            ),
        )
    })?;
    Ok(Granularity::Tensor)
}

/// The values of a weight parameter the reference offsets by (empty when absent).
fn weight_values(t: Option<&Tensor>) -> Vec<f64> {
    t.map_or(Vec::new(), |t| (0..t.len()).map(|i| t.get_f64(i)).collect())
}

/// A zero point input of an expansion.
fn zero_point(zp: &(String, DataDesc), granularity: Granularity) -> ZeroPoint<'_> {
    ZeroPoint {
        name: &zp.0,
        rank: zp.1.shape.len(),
        per_channel: granularity == Granularity::Channel,
    }
}

/// The output channels `M` of W (its first dimension), which must be a number.
fn out_channels(op: &str, w: &TensorType) -> Result<i64, OpError> {
    let m = w
        .shape
        .first()
        .ok_or_else(|| OpError::shape(op, "weights W must have rank at least 3"))?;
    m.as_int()
        .ok_or_else(|| OpError::symbolic(op, "W's output channels", m))
}

/// `ConvInteger(x, w, x_zero_point?, w_zero_point?)`.
pub struct ConvInteger;

const CONV_INTEGER: &str = "ConvInteger";

impl ConvInteger {
    /// Checks the types and returns Y's shape and how `w_zero_point` is given.
    fn check(
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
    ) -> Result<(Vec<SymExpr>, Granularity), OpError> {
        let op = CONV_INTEGER;
        let (x, w) = (input_type(op, inputs, 0)?, input_type(op, inputs, 1)?);
        require_8bit(op, x, "x")?;
        require_8bit(op, w, "w")?;
        if let Some(Some(zp)) = inputs.get(2) {
            require_single(op, zp, "x_zero_point", Some(x.dtype))?;
        }
        let m = out_channels(op, w)?;
        let granularity = match inputs.get(3) {
            Some(Some(zp)) => weight_param(op, zp, "w_zero_point", Some(w.dtype), m)?,
            _ => Granularity::Tensor,
        };
        let shape = ConvShape::new(op, node, &x.shape, &w.shape, None)?;
        Ok((shape.output_shape(), granularity))
    }
}

impl Operator for ConvInteger {
    fn name(&self) -> &'static str {
        CONV_INTEGER
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 4)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let (shape, _) = Self::check(node, inputs)?;
        Ok(vec![TensorType::new(DType::I32, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        Self::check(node, &types_of(inputs))?;
        let (x, w) = (arg(op, inputs, 0)?, arg(op, inputs, 1)?);
        let zero = Offsets {
            x: single(opt_arg(inputs, 2)),
            w: weight_values(opt_arg(inputs, 3)),
        };
        let (y, shape) = reference(op, node, [x, w], None, zero)?;
        Ok(vec![Tensor::from_f64(DType::I32, shape, &y)])
    }

    /// A zero fill of Y, then Conv's direct accumulation with the zero points subtracted.
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (_, granularity) = Self::check(ctx.node, &ctx.input_types())?;
        let (x, xd) = ctx.input(0)?.clone();
        let (w, wd) = ctx.input(1)?.clone();
        let zp = |i: usize| ctx.inputs.get(i).cloned().flatten();
        let (x0, w0) = (zp(2), zp(3));
        let (y, yd) = ctx.output(0)?.clone();
        let shape = ConvShape::new(self.name(), ctx.node, &xd.shape, &wd.shape, None)?;
        let label = ctx.label.clone();
        fill_map(ctx.b, &format!("{label}_init"), &y, &yd.shape, 0.0);
        let operands = Operands {
            x: &x,
            w: &w,
            x_zero: x0.as_ref().map(|z| zero_point(z, Granularity::Tensor)),
            w_zero: w0.as_ref().map(|z| zero_point(z, granularity)),
            x_padded: false,
        };
        accumulate(ctx.b, &label, &shape, Channels::First, operands, &y);
        Ok(())
    }

    /// Like Conv: a multiply and an add per weight per output element.
    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        super::conv::Conv.flops(node, inputs, outputs)
    }
}

/// `QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?)`.
pub struct QLinearConv;

const QLINEAR_CONV: &str = "QLinearConv";

/// Input positions of QLinearConv.
const X: usize = 0;
const X_SCALE: usize = 1;
const X_ZP: usize = 2;
const W: usize = 3;
const W_SCALE: usize = 4;
const W_ZP: usize = 5;
const Y_SCALE: usize = 6;
const Y_ZP: usize = 7;
const BIAS: usize = 8;

/// What QLinearConv's checks find: Y's type and how `w_scale` and `w_zero_point` are given.
struct QShape {
    y: TensorType,
    w_scale: Granularity,
    w_zero: Granularity,
}

impl QLinearConv {
    fn check(node: &LibraryNode, inputs: &[Option<TensorType>]) -> Result<QShape, OpError> {
        let op = QLINEAR_CONV;
        let t = |i: usize| input_type(op, inputs, i);
        let (x, w, y0) = (t(X)?, t(W)?, t(Y_ZP)?);
        require_8bit(op, x, "x")?;
        require_8bit(op, w, "w")?;
        require_8bit(op, y0, "y_zero_point")?;
        let scale = t(X_SCALE)?;
        if scale.dtype != DType::F32 {
            return Err(OpError::shape(
                op,
                format!("x_scale must be float, got {}", scale.dtype),
            ));
        }
        for (i, what, like) in [
            (X_SCALE, "x_scale", scale.dtype),
            (Y_SCALE, "y_scale", scale.dtype),
            (X_ZP, "x_zero_point", x.dtype),
            (Y_ZP, "y_zero_point", y0.dtype),
        ] {
            require_single(op, t(i)?, what, Some(like))?;
        }
        let m = out_channels(op, w)?;
        let w_scale = weight_param(op, t(W_SCALE)?, "w_scale", Some(scale.dtype), m)?;
        let w_zero = weight_param(op, t(W_ZP)?, "w_zero_point", Some(w.dtype), m)?;
        let bias = match inputs.get(BIAS) {
            Some(Some(b)) => {
                if b.dtype != DType::I32 {
                    return Err(OpError::shape(
                        op,
                        format!("bias B must be int32, got {}", b.dtype),
                    ));
                }
                Some(b.shape.as_slice())
            }
            _ => None,
        };
        let shape = ConvShape::new(op, node, &x.shape, &w.shape, bias)?;
        Ok(QShape {
            y: TensorType::new(y0.dtype, shape.output_shape()),
            w_scale,
            w_zero,
        })
    }
}

impl Operator for QLinearConv {
    fn name(&self) -> &'static str {
        QLINEAR_CONV
    }

    fn input_count(&self) -> (usize, usize) {
        (8, 9)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        Ok(vec![Self::check(node, inputs)?.y])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let out = Self::check(node, &types_of(inputs))?.y;
        let v = |i: usize| arg(op, inputs, i).map(|t| t.get_f64(0));
        let (x, w) = (arg(op, inputs, X)?, arg(op, inputs, W)?);
        let zero = Offsets {
            x: v(X_ZP)?,
            w: weight_values(opt_arg(inputs, W_ZP)),
        };
        let (acc, shape) = reference(op, node, [x, w], opt_arg(inputs, BIAS), zero)?;
        let scale_type = arg(op, inputs, X_SCALE)?.dtype();
        let w_scales = weight_values(opt_arg(inputs, W_SCALE));
        let (xs, ys) = (v(X_SCALE)?, v(Y_SCALE)?);
        let multipliers: Vec<f64> = (w_scales.iter())
            .map(|&ws| multiplier(scale_type, [xs, ws, ys]))
            .collect();
        let range = integer_range(op, out.dtype)?;
        let y0 = v(Y_ZP)?;
        let per_channel: usize = shape[2..].iter().product();
        let m_count = shape[1];
        let values: Vec<f64> = (acc.iter().enumerate())
            .map(|(i, &c)| {
                let m = (i / per_channel.max(1)) % m_count.max(1);
                let mult = multipliers[if multipliers.len() == 1 { 0 } else { m }];
                requantized(c, mult, y0, range)
            })
            .collect();
        Ok(vec![Tensor::from_f64(out.dtype, shape, &values)])
    }

    /// The bias (or zero) into an int64 accumulation, Conv's direct accumulation with the zero
    /// points subtracted, then QLinearMatMul's requantization (per channel when `w_scale` is).
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let checked = Self::check(ctx.node, &ctx.input_types())?;
        let input = |i: usize| ctx.input(i).cloned();
        let (x, w) = (input(X)?, input(W)?);
        let (x0, w0, y0) = (input(X_ZP)?, input(W_ZP)?, input(Y_ZP)?);
        let scales = [input(X_SCALE)?, input(W_SCALE)?, input(Y_SCALE)?];
        let bias = ctx.inputs.get(BIAS).cloned().flatten();
        let (y, yd) = ctx.output(0)?.clone();
        let shape = ConvShape::new(
            self.name(),
            ctx.node,
            &x.1.shape,
            &w.1.shape,
            bias.as_ref().map(|(_, d)| d.shape.as_slice()),
        )?;
        let label = ctx.label.clone();
        let b = &mut *ctx.b;
        let acc = b.transient(&format!("{label}_sum"), DType::I64, yd.shape.clone());
        bias_init(
            b,
            &label,
            &acc,
            &yd.shape,
            bias.as_ref().map(|(n, _)| n.as_str()),
        );
        let operands = Operands {
            x: &x.0,
            w: &w.0,
            x_zero: Some(zero_point(&x0, Granularity::Tensor)),
            w_zero: Some(zero_point(&w0, checked.w_zero)),
            x_padded: false,
        };
        accumulate(b, &label, &shape, Channels::First, operands, &acc);
        let requantize = Requantize {
            acc: &acc,
            scales: [&scales[0], &scales[1], &scales[2]],
            y_zero: &y0,
            y: (&y, &yd.shape),
            channel_axis: (checked.w_scale == Granularity::Channel).then_some(1),
            range: integer_range(self.name(), yd.dtype)?,
        };
        requantize.append(b, &label);
        Ok(())
    }

    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let mut conv_inputs = vec![inputs.get(X).cloned().flatten()];
        conv_inputs.push(inputs.get(W).cloned().flatten());
        super::conv::Conv.flops(node, &conv_inputs, outputs)
    }
}
