//! Quantized matrix products: MatMulInteger and QLinearMatMul (per-tensor zero points and
//! scales).
//!
//! `MatMulInteger(A, B, a_zero_point?, b_zero_point?)` is the exact int32 product
//! `(A − a₀) · (B − b₀)` of 8-bit operands. `QLinearMatMul(a, a_scale, a_zero_point, b,
//! b_scale, b_zero_point, y_scale, y_zero_point)` requantizes that product as ONNX's reference
//! does: `clamp(round_half_even(C · (a_scale · b_scale / y_scale)) + y₀)` — the multiplier
//! computed in the scales' type, one operation at a time, the rest in double precision — into
//! the type of `y_zero_point`.
//!
//! Both expand to MatMul's accumulation (`ops::matmul::append_product`) with the zero points
//! subtracted in the tasklet, into an int64 transient for QLinearMatMul, followed by the
//! multiplier maps and one requantizing map.

use super::matmul::{append_product, product_shape, product_values, Operand};
use super::support::{
    arg, element_map, input_type, opt_arg, params_over, require_float, types_of, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::scalar::stored;
use crate::ir::{BinOp, DType, DataDesc, LibraryNode, SymExpr, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&MatMulInteger, &QLinearMatMul];

/// Requires an 8-bit integer operand.
pub(super) fn require_8bit(op: &str, t: &TensorType, what: &str) -> Result<(), OpError> {
    match t.dtype {
        DType::I8 | DType::U8 => Ok(()),
        other => Err(OpError::shape(
            op,
            format!("{what} must be int8 or uint8, got {other}"),
        )),
    }
}

/// The range of the integer output type `dtype` (inference requires one).
pub(super) fn integer_range(op: &str, dtype: DType) -> Result<(f64, f64), OpError> {
    (dtype.int_range()).ok_or_else(|| {
        OpError::shape(
            op,
            format!("the output must be an integer type, got {dtype}"),
        )
    })
}

/// Requires a per-tensor parameter (one element) of `like`'s type when `like` is given.
pub(super) fn require_single(
    op: &str,
    t: &TensorType,
    what: &str,
    like: Option<DType>,
) -> Result<(), OpError> {
    if t.shape.len() > 1 || t.shape.first().is_some_and(|d| d.as_int() != Some(1)) {
        return Err(OpError::unsupported(
            op,
            format!("{what} must hold one value (per-row or per-column parameters are not supported), got shape {:?}", t.shape),
        ));
    }
    match like {
        Some(d) if d != t.dtype => Err(OpError::shape(
            op,
            format!("{what} has type {} but needs {d}", t.dtype),
        )),
        _ => Ok(()),
    }
}

/// The one value of an optional per-tensor parameter (0 when absent).
pub(super) fn single(t: Option<&Tensor>) -> f64 {
    t.map_or(0.0, |t| t.get_f64(0))
}

/// An operand of the expansion with its zero point input, if present.
fn operand<'a>(x: &'a (String, DataDesc), zp: Option<&'a (String, DataDesc)>) -> Operand<'a> {
    Operand {
        name: &x.0,
        shape: x.1.shape.clone(),
        zero_point: zp.map(|(n, d)| (n.as_str(), d.shape.len())),
    }
}

/// `MatMulInteger(A, B, a_zero_point?, b_zero_point?)`.
pub struct MatMulInteger;

impl Operator for MatMulInteger {
    fn name(&self) -> &'static str {
        "MatMulInteger"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 4)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name();
        let (a, b) = (input_type(op, inputs, 0)?, input_type(op, inputs, 1)?);
        require_8bit(op, a, "A")?;
        require_8bit(op, b, "B")?;
        for (i, (what, of)) in [(2, ("a_zero_point", a)), (3, ("b_zero_point", b))] {
            if let Some(Some(zp)) = inputs.get(i) {
                require_single(op, zp, what, Some(of.dtype))?;
            }
        }
        let shape = product_shape(op, &a.shape, &b.shape)?;
        Ok(vec![TensorType::new(DType::I32, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let types = types_of(inputs);
        self.infer(node, &types, &[])?;
        let (a, b) = (arg(op, inputs, 0)?, arg(op, inputs, 1)?);
        let a0 = single(opt_arg(inputs, 2));
        let b0 = single(opt_arg(inputs, 3));
        let (values, shape) = product_values(op, (a, a0), (b, b0))?;
        Ok(vec![Tensor::from_f64(DType::I32, shape, &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (a, b) = (ctx.input(0)?.clone(), ctx.input(1)?.clone());
        let zp = |i: usize| ctx.inputs.get(i).cloned().flatten();
        let (a0, b0) = (zp(2), zp(3));
        let (y, yd) = ctx.output(0)?.clone();
        let operands = [operand(&a, a0.as_ref()), operand(&b, b0.as_ref())];
        append_product(ctx.b, &ctx.label, operands, (&y, &yd.shape))
    }
}

/// `QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)`.
pub struct QLinearMatMul;

/// Input positions of QLinearMatMul.
const A: usize = 0;
const A_SCALE: usize = 1;
const A_ZP: usize = 2;
const B: usize = 3;
const B_SCALE: usize = 4;
const B_ZP: usize = 5;
const Y_SCALE: usize = 6;
const Y_ZP: usize = 7;

impl Operator for QLinearMatMul {
    fn name(&self) -> &'static str {
        "QLinearMatMul"
    }

    fn input_count(&self) -> (usize, usize) {
        (8, 8)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name();
        let t = |i: usize| input_type(op, inputs, i);
        let (a, b, y0) = (t(A)?, t(B)?, t(Y_ZP)?);
        require_8bit(op, a, "a")?;
        require_8bit(op, b, "b")?;
        require_8bit(op, y0, "y_zero_point")?;
        let scale = t(A_SCALE)?;
        require_float(op, scale)?;
        for (i, what, like) in [
            (A_SCALE, "a_scale", scale.dtype),
            (B_SCALE, "b_scale", scale.dtype),
            (Y_SCALE, "y_scale", scale.dtype),
            (A_ZP, "a_zero_point", a.dtype),
            (B_ZP, "b_zero_point", b.dtype),
            (Y_ZP, "y_zero_point", y0.dtype),
        ] {
            require_single(op, t(i)?, what, Some(like))?;
        }
        let shape = product_shape(op, &a.shape, &b.shape)?;
        Ok(vec![TensorType::new(y0.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let types = types_of(inputs);
        let out = self.infer(node, &types, &[])?.remove(0);
        let v = |i: usize| arg(op, inputs, i).map(|t| t.get_f64(0));
        let scale_type = arg(op, inputs, A_SCALE)?.dtype();
        let (a, b) = (arg(op, inputs, A)?, arg(op, inputs, B)?);
        let (product, shape) = product_values(op, (a, v(A_ZP)?), (b, v(B_ZP)?))?;
        let multiplier = multiplier(scale_type, [v(A_SCALE)?, v(B_SCALE)?, v(Y_SCALE)?]);
        let range = integer_range(op, out.dtype)?;
        let y0 = v(Y_ZP)?;
        let values: Vec<f64> = product
            .iter()
            .map(|&c| requantized(c, multiplier, y0, range))
            .collect();
        Ok(vec![Tensor::from_f64(out.dtype, shape, &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let input = |i: usize| ctx.input(i).cloned();
        let (a, b) = (input(A)?, input(B)?);
        let (a0, b0) = (input(A_ZP)?, input(B_ZP)?);
        let (scale_a, scale_b, scale_y) = (input(A_SCALE)?, input(B_SCALE)?, input(Y_SCALE)?);
        let y0 = input(Y_ZP)?;
        let (y, yd) = ctx.output(0)?.clone();
        let label = ctx.label.clone();
        let builder = &mut *ctx.b;
        let acc = builder.transient(&format!("{label}_product"), DType::I64, yd.shape.clone());
        let operands = [operand(&a, Some(&a0)), operand(&b, Some(&b0))];
        append_product(builder, &label, operands, (&acc, &yd.shape))?;
        let range = integer_range(self.name(), yd.dtype)?;
        let requantize = Requantize {
            acc: &acc,
            scales: [&scale_a, &scale_b, &scale_y],
            y_zero: &y0,
            y: (&y, &yd.shape),
            channel_axis: None,
            range,
        };
        requantize.append(builder, &label);
        Ok(())
    }
}

/// The requantization multiplier `a_scale · b_scale / y_scale` as ONNX's reference computes it:
/// in the scales' type `dtype`, rounded after each operation.
pub(super) fn multiplier(dtype: DType, [a, b, y]: [f64; 3]) -> f64 {
    stored(dtype, stored(dtype, a * b) / y)
}

/// One requantized value: `clamp(round_half_even(c · multiplier) + y₀)` into `lo..=hi`.
pub(super) fn requantized(c: f64, multiplier: f64, y0: f64, (lo, hi): (f64, f64)) -> f64 {
    ((c * multiplier).round_ties_even() + y0).clamp(lo, hi)
}

/// The maps that requantize an exact integer accumulation into the output (QLinearMatMul,
/// QLinearConv): the multiplier in the scales' type — one element, or one per channel when the
/// second scale has one value per channel — and one map rounding, shifting and saturating.
pub(super) struct Requantize<'a> {
    /// The accumulation, of Y's shape.
    pub acc: &'a str,
    /// `[a_scale, b_scale, y_scale]`; only the second may hold one value per channel.
    pub scales: [&'a (String, DataDesc); 3],
    pub y_zero: &'a (String, DataDesc),
    pub y: (&'a str, &'a [SymExpr]),
    /// The axis of Y indexing the channels of a per-channel second scale (`None`: per tensor).
    pub channel_axis: Option<usize>,
    /// The output type's range.
    pub range: (f64, f64),
}

impl Requantize<'_> {
    pub(super) fn append(&self, builder: &mut crate::ir::build::ScopeBuilder, label: &str) {
        let [scale_a, scale_b, scale_y] = self.scales;
        let dtype = scale_a.1.dtype;
        let one = |x: &(String, DataDesc)| vec![SymExpr::Int(0); x.1.shape.len()];
        // a_scale · b_scale, then / y_scale, each stored in the scales' type.
        let (m_shape, m_params, m_idx, b_idx) = match self.channel_axis {
            Some(_) => {
                let (params, idx) = params_over("c", &scale_b.1.shape);
                (scale_b.1.shape.clone(), params, idx.clone(), idx)
            }
            None => (Vec::new(), Vec::new(), Vec::new(), one(scale_b)),
        };
        let ab = builder.transient(&format!("{label}_scales"), dtype, m_shape.clone());
        let multiplier = builder.transient(&format!("{label}_multiplier"), dtype, m_shape);
        let reads = vec![
            Read::new("s", &scale_a.0, one(scale_a)),
            Read::new("t", &scale_b.0, b_idx),
        ];
        let value = TExpr::binary(BinOp::Mul, TExpr::input("s"), TExpr::input("t"));
        let dst = (ab.as_str(), m_idx.clone());
        element_map(builder, &ab, &m_params, reads, dst, None, value);
        let reads = vec![
            Read::new("s", &ab, m_idx.clone()),
            Read::new("t", &scale_y.0, one(scale_y)),
        ];
        let value = TExpr::binary(BinOp::Div, TExpr::input("s"), TExpr::input("t"));
        let dst = (multiplier.as_str(), m_idx);
        element_map(builder, &multiplier, &m_params, reads, dst, None, value);
        let (y, y_shape) = self.y;
        let (lo, hi) = self.range;
        let (params, idx) = params_over("i", y_shape);
        let m_at = self
            .channel_axis
            .map_or(Vec::new(), |a| vec![idx[a].clone()]);
        let reads = vec![
            Read::new("c", self.acc, idx.clone()),
            Read::new("m", &multiplier, m_at),
            Read::new("z", &self.y_zero.0, one(self.y_zero)),
        ];
        let scaled = TExpr::binary(BinOp::Mul, TExpr::input("c"), TExpr::input("m"));
        let shifted = TExpr::binary(
            BinOp::Add,
            TExpr::unary(UnOp::Round, scaled),
            TExpr::input("z"),
        );
        let value = TExpr::binary(
            BinOp::Min,
            TExpr::binary(BinOp::Max, shifted, TExpr::Const(lo)),
            TExpr::Const(hi),
        );
        element_map(builder, label, &params, reads, (y, idx), None, value);
    }
}
