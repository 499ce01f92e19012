//! Linear quantization: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
//!
//! `QuantizeLinear(x, scale, zero_point?)` computes `q = x / scale` (in x's type, or in the type
//! `precision` names), then for an integer target `clamp(round_half_even(q) + zero_point)` to the
//! target's range, and for a float8 target `q` itself, clamped to the format's largest finite
//! value under `saturate` (default 1) and rounded to nearest even by the store. The target is
//! the zero point's type, else `output_dtype`, else uint8. `DequantizeLinear(x, scale,
//! zero_point?)` computes `(x − zero_point) · scale` in the scale's type (or `output_dtype`).
//!
//! Scale and zero point apply per tensor (a scalar or one element), per axis (a vector along
//! `axis`, default 1) or per block (`block_size` > 0: x's rank, with `⌈x[axis] / block_size⌉`
//! blocks along `axis`); [`Granularity`] maps each element of x to its parameter.
//!
//! `DynamicQuantizeLinear(x)` (`quantize/dynamic.rs`) derives uint8 parameters from the data
//! and quantizes with them through the same maps.
//!
//! Exactness: a tasklet that stores an integer computes in `f64`, so the expansions write the
//! quotient `x / scale` to a transient of the quotient's type first (rounding it exactly as the
//! reference does) and round, shift and clamp it in a second map, whose values are integers.

use super::logic::{dtype_of_onnx, saturate_value, saturated, saturation};
use super::support::{
    arg, element_map, input_type, opt_arg, params_over, require_float, resolve_axis, sym_shape,
    types_of, unravel, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::ScopeBuilder;
use crate::ir::scalar::stored;
use crate::ir::tensor::row_major_strides;
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor, UnOp};

mod dynamic;

pub static OPS: &[&dyn Operator] = &[
    &QuantizeLinear,
    &DequantizeLinear,
    &dynamic::DynamicQuantizeLinear,
];

/// How a scale (and its zero point) maps onto the elements of x.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Granularity {
    /// One value for the whole tensor (the parameter has rank 0 or one element).
    Tensor,
    /// One value per index along the axis.
    Axis(usize),
    /// One value per `block` consecutive indices along `axis`, per index elsewhere.
    Blocked { axis: usize, block: usize },
}

impl Granularity {
    /// The granularity of a parameter of `param` shape for x of `x` shape, from `axis` and
    /// `block_size`.
    fn of(op: &str, node: &LibraryNode, x: &[SymExpr], param: &[SymExpr]) -> Result<Self, OpError> {
        let known = |d: &SymExpr| d.as_int();
        let block = node.int("block_size").unwrap_or(0);
        if block < 0 {
            return Err(OpError::attr(
                op,
                "block_size",
                format!("must be positive, got {block}"),
            ));
        }
        if single(param) && block == 0 {
            return Ok(Granularity::Tensor);
        }
        if x.is_empty() {
            return Err(OpError::shape(op, "a scalar input takes a scalar scale"));
        }
        let axis = resolve_axis(op, "axis", node.int("axis").unwrap_or(1), x.len(), false)?;
        let mismatch = |what: String| {
            OpError::shape(
                op,
                format!("scale of shape {param:?} for input {x:?}: {what}"),
            )
        };
        if block == 0 {
            if param.len() != 1 {
                return Err(mismatch("a per-axis scale must be a vector".into()));
            }
            if let (Some(p), Some(n)) = (known(&param[0]), known(&x[axis])) {
                if p != n {
                    return Err(mismatch(format!("axis {axis} has {n} elements, not {p}")));
                }
            }
            return Ok(Granularity::Axis(axis));
        }
        if param.len() != x.len() {
            return Err(mismatch(
                "a blocked scale must have the input's rank".into(),
            ));
        }
        for (d, (p, n)) in param.iter().zip(x).enumerate() {
            let (Some(p), Some(n)) = (known(p), known(n)) else {
                continue;
            };
            let want = if d == axis {
                (n + block - 1) / block
            } else {
                n
            };
            if p != want {
                return Err(mismatch(format!(
                    "dimension {d} needs {want} element(s), not {p}"
                )));
            }
        }
        let block = usize::try_from(block).unwrap_or(usize::MAX);
        Ok(Granularity::Blocked { axis, block })
    }

    /// The parameter's index (of rank `param_rank`) for the element of x at `idx`.
    fn index(self, idx: &[SymExpr], param_rank: usize) -> Vec<SymExpr> {
        match self {
            Granularity::Tensor => vec![SymExpr::Int(0); param_rank],
            Granularity::Axis(a) => vec![idx[a].clone()],
            Granularity::Blocked { axis, block } => {
                let mut p = idx.to_vec();
                p[axis] = p[axis].clone().floor_div(SymExpr::from(block));
                p
            }
        }
    }

    /// The parameter's row-major offset (in a tensor of `param` shape) for x's element `idx`.
    fn offset(self, idx: &[usize], param: &[usize]) -> usize {
        match self {
            Granularity::Tensor => 0,
            Granularity::Axis(a) => idx[a],
            Granularity::Blocked { axis, block } => {
                let strides = row_major_strides(param);
                let at = |d: usize| if d == axis { idx[d] / block } else { idx[d] };
                (0..idx.len()).map(|d| at(d) * strides[d]).sum()
            }
        }
    }
}

/// Whether a parameter of `shape` holds one value (rank 0, or one element).
fn single(shape: &[SymExpr]) -> bool {
    shape.iter().all(|d| d.as_int() == Some(1)) && shape.len() <= 1
}

/// Checks that the zero point (input 2), when given, has the scale's shape (one value each,
/// per tensor, may be written with rank 0 or 1 independently).
fn check_zero_point(op: &str, scale: &TensorType, zp: Option<&TensorType>) -> Result<(), OpError> {
    match zp {
        Some(z) if z.shape != scale.shape && !(single(&z.shape) && single(&scale.shape)) => {
            Err(OpError::shape(
                op,
                format!(
                    "the zero point has shape {:?} but the scale {:?}",
                    z.shape, scale.shape
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// The type named by the integer attribute `attr` (an ONNX type code; 0 or absent: none).
fn type_attr(op: &str, node: &LibraryNode, attr: &str) -> Result<Option<DType>, OpError> {
    match node.int(attr).unwrap_or(0) {
        0 => Ok(None),
        code => dtype_of_onnx(code)
            .map(Some)
            .ok_or_else(|| OpError::attr(op, attr, format!("type code {code} is not supported"))),
    }
}

/// The types of one QuantizeLinear application.
struct QuantTypes {
    /// The quantized type.
    target: DType,
    /// The type `x / scale` is computed in.
    quotient: DType,
}

/// Whether QuantizeLinear can produce `d`: integers of at most 16 bits and float8.
fn quantizable(d: DType) -> bool {
    matches!(
        d,
        DType::U8 | DType::I8 | DType::U16 | DType::I16 | DType::U4 | DType::I4
    ) || (d.is_narrow_float() && !matches!(d, DType::F16 | DType::BF16))
}

/// The wider of two float types (numpy's promotion of the division's operands).
fn wider(a: DType, b: DType) -> DType {
    match (a, b) {
        _ if a == b => a,
        (DType::F64, _) | (_, DType::F64) => DType::F64,
        _ => DType::F32,
    }
}

impl QuantTypes {
    fn of(node: &LibraryNode, inputs: &[Option<TensorType>]) -> Result<Self, OpError> {
        let op = "QuantizeLinear";
        let x = input_type(op, inputs, 0)?;
        let scale = input_type(op, inputs, 1)?;
        require_float(op, x)?;
        require_float(op, scale)?;
        let zp = inputs.get(2).and_then(Option::as_ref);
        let declared = type_attr(op, node, "output_dtype")?;
        let target = match (zp.map(|z| z.dtype), declared) {
            (Some(z), Some(d)) if z != d => {
                return Err(OpError::attr(
                    op,
                    "output_dtype",
                    format!("{d} differs from the zero point's type {z}"),
                ))
            }
            (Some(z), _) => z,
            (None, d) => d.unwrap_or(DType::U8),
        };
        if !quantizable(target) {
            return Err(OpError::unsupported(
                op,
                format!("cannot quantize to {target}"),
            ));
        }
        let quotient = match type_attr(op, node, "precision")? {
            Some(p) if p.is_float() => p,
            Some(p) => {
                return Err(OpError::attr(
                    op,
                    "precision",
                    format!("{p} is not a float type"),
                ))
            }
            None => wider(x.dtype, scale.dtype),
        };
        Ok(QuantTypes { target, quotient })
    }
}

/// The quantized value of the quotient `q` (already in the quotient's type) for `target`.
fn quantize_value(q: f64, zero_point: f64, target: DType, limit: Option<f64>) -> f64 {
    match target.int_range() {
        Some((lo, hi)) => (q.round_ties_even() + zero_point).clamp(lo, hi),
        None => saturate_value(q, limit),
    }
}

/// The maps one quantization appends: the quotient into a transient, then the quantized value.
struct Quantize<'a> {
    x: &'a str,
    shape: &'a [SymExpr],
    /// How scale and zero point apply to the elements of x.
    grain: Granularity,
    /// The scale and its rank.
    scale: (&'a str, usize),
    /// The zero point and its rank, if any; float8 targets ignore it.
    zero_point: Option<(&'a str, usize)>,
    y: &'a str,
    types: QuantTypes,
    limit: Option<f64>,
}

impl Quantize<'_> {
    fn append(&self, b: &mut ScopeBuilder, label: &str) {
        let (params, idx) = params_over("i", self.shape);
        let (scale, rank) = self.scale;
        let pidx = self.grain.index(&idx, rank);
        let q = b.transient(
            &format!("{label}_quotient"),
            self.types.quotient,
            self.shape.to_vec(),
        );
        let reads = vec![
            Read::new("x", self.x, idx.clone()),
            Read::new("s", scale, pidx.clone()),
        ];
        let quotient = TExpr::binary(BinOp::Div, TExpr::input("x"), TExpr::input("s"));
        element_map(
            b,
            &format!("{label}_div"),
            &params,
            reads,
            (&q, idx.clone()),
            None,
            quotient,
        );
        let mut reads = vec![Read::new("q", &q, idx.clone())];
        let value = match self.types.target.int_range() {
            Some((lo, hi)) => {
                let mut v = TExpr::unary(UnOp::Round, TExpr::input("q"));
                if let Some((zp, rank)) = self.zero_point {
                    reads.push(Read::new("z", zp, self.grain.index(&idx, rank)));
                    v = TExpr::binary(BinOp::Add, v, TExpr::input("z"));
                }
                let v = TExpr::binary(BinOp::Max, v, TExpr::Const(lo));
                TExpr::binary(BinOp::Min, v, TExpr::Const(hi))
            }
            None => saturated(TExpr::input("q"), self.limit),
        };
        element_map(
            b,
            &format!("{label}_quantize"),
            &params,
            reads,
            (self.y, idx),
            None,
            value,
        );
    }
}

/// `QuantizeLinear(x, y_scale, y_zero_point?)`.
pub struct QuantizeLinear;

impl Operator for QuantizeLinear {
    fn name(&self) -> &'static str {
        "QuantizeLinear"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name();
        let types = QuantTypes::of(node, inputs)?;
        let x = input_type(op, inputs, 0)?;
        let scale = input_type(op, inputs, 1)?;
        check_zero_point(op, scale, inputs.get(2).and_then(Option::as_ref))?;
        Granularity::of(op, node, &x.shape, &scale.shape)?;
        Ok(vec![TensorType::new(types.target, x.shape.clone())])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let out = self.infer(node, &types_of(inputs), &[])?.remove(0);
        let types = QuantTypes::of(node, &types_of(inputs))?;
        let (x, scale) = (arg(op, inputs, 0)?, arg(op, inputs, 1)?);
        let zp = opt_arg(inputs, 2);
        let grain = Granularity::of(op, node, &sym_shape(&x.shape), &sym_shape(&scale.shape))?;
        let limit = saturation(node, types.target);
        let values: Vec<f64> = (0..x.len())
            .map(|e| {
                let p = grain.offset(&unravel(e, &x.shape), &scale.shape);
                let q = stored(types.quotient, x.get_f64(e) / scale.get_f64(p));
                let z = zp.map_or(0.0, |z| z.get_f64(p));
                quantize_value(q, z, types.target, limit)
            })
            .collect();
        Ok(vec![Tensor::from_f64(out.dtype, x.shape.clone(), &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let op = self.name();
        let (x, xd) = ctx.input(0)?.clone();
        let (scale, sd) = ctx.input(1)?.clone();
        let zp = ctx.inputs.get(2).cloned().flatten();
        let (y, yd) = ctx.output(0)?.clone();
        let types = QuantTypes::of(ctx.node, &ctx.input_types())?;
        let grain = Granularity::of(op, ctx.node, &xd.shape, &sd.shape)?;
        Quantize {
            x: &x,
            shape: &xd.shape,
            grain,
            scale: (&scale, sd.shape.len()),
            zero_point: zp.as_ref().map(|(n, d)| (n.as_str(), d.shape.len())),
            y: &y,
            limit: saturation(ctx.node, yd.dtype),
            types,
        }
        .append(ctx.b, &ctx.label);
        Ok(())
    }
}

/// `DequantizeLinear(x, x_scale, x_zero_point?)`.
pub struct DequantizeLinear;

impl DequantizeLinear {
    fn output_type(node: &LibraryNode, scale: &TensorType) -> Result<DType, OpError> {
        let op = "DequantizeLinear";
        require_float(op, scale)?;
        let out = type_attr(op, node, "output_dtype")?.unwrap_or(scale.dtype);
        if !out.is_float() {
            return Err(OpError::attr(
                op,
                "output_dtype",
                format!("{out} is not a float type"),
            ));
        }
        Ok(out)
    }
}

impl Operator for DequantizeLinear {
    fn name(&self) -> &'static str {
        "DequantizeLinear"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 3)
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
        let scale = input_type(op, inputs, 1)?;
        let zp = inputs.get(2).and_then(Option::as_ref);
        if !(quantizable(x.dtype) || x.dtype == DType::I32) {
            return Err(OpError::unsupported(
                op,
                format!("cannot dequantize {}", x.dtype),
            ));
        }
        if let Some(z) = zp.filter(|z| z.dtype != x.dtype) {
            return Err(OpError::shape(
                op,
                format!("the zero point has type {} but x {}", z.dtype, x.dtype),
            ));
        }
        check_zero_point(op, scale, zp)?;
        Granularity::of(op, node, &x.shape, &scale.shape)?;
        let out = Self::output_type(node, scale)?;
        Ok(vec![TensorType::new(out, x.shape.clone())])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let out = self.infer(node, &types_of(inputs), &[])?.remove(0);
        let (x, scale) = (arg(op, inputs, 0)?, arg(op, inputs, 1)?);
        let zp = opt_arg(inputs, 2);
        let grain = Granularity::of(op, node, &sym_shape(&x.shape), &sym_shape(&scale.shape))?;
        let values: Vec<f64> = (0..x.len())
            .map(|e| {
                let p = grain.offset(&unravel(e, &x.shape), &scale.shape);
                let z = zp.map_or(0.0, |z| z.get_f64(p));
                (x.get_f64(e) - z) * scale.get_f64(p)
            })
            .collect();
        Ok(vec![Tensor::from_f64(out.dtype, x.shape.clone(), &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (scale, sd) = ctx.input(1)?.clone();
        let zp = ctx.inputs.get(2).cloned().flatten();
        let (y, _) = ctx.output(0)?.clone();
        let grain = Granularity::of(self.name(), ctx.node, &xd.shape, &sd.shape)?;
        let (params, idx) = params_over("i", &xd.shape);
        let pidx = grain.index(&idx, sd.shape.len());
        let mut reads = vec![
            Read::new("x", &x, idx.clone()),
            Read::new("s", &scale, pidx.clone()),
        ];
        let mut shifted = TExpr::input("x");
        if let Some((z, zd)) = &zp {
            reads.push(Read::new("z", z, grain.index(&idx, zd.shape.len())));
            shifted = TExpr::binary(BinOp::Sub, shifted, TExpr::input("z"));
        }
        let value = TExpr::binary(BinOp::Mul, shifted, TExpr::input("s"));
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }
}
