//! Operators that generate tensors from shapes and scalars: Shape, Size, ConstantOfShape, Range.
//!
//! Their outputs' *shapes* must be known when the program is built, so the inputs that determine
//! them (ConstantOfShape's shape, Range's start / limit / delta) must be constants; the values
//! of Shape and Size may be symbolic and are written as index expressions (`idx(N)`), which
//! both backends evaluate exactly in the `f64` compute type of an `i64` output.

use super::support::{
    arg, dim_product, element_count, fill_map, input_type, params_over, sym_shape, MAX_ELEMENTS,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, Out};
use crate::ir::{Attr, BinOp, DType, LibraryNode, Subset, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Shape, &Size, &ConstantOfShape, &RangeOp];

/// One tasklet per output element `k` writing `values[k]` (an index expression) to `y[k]`.
fn write_indices(ctx: &mut ExpandCtx, values: Vec<SymExpr>) -> Result<(), OpError> {
    let (y, y_desc) = ctx.output(0)?.clone();
    let scalar = y_desc.shape.is_empty();
    for (k, v) in values.into_iter().enumerate() {
        let at = if scalar {
            Subset::element([])
        } else {
            Subset::element([SymExpr::from(k)])
        };
        ctx.b.tasklet(
            &format!("{}_{k}", ctx.label),
            vec![],
            vec![Out("y", &y, at, None, TExpr::Index(v))],
        );
    }
    Ok(())
}

/// `Shape(data)`: the dimensions `[start, end)` of the input as an `i64` vector. Negative
/// bounds count from the back; out-of-range bounds are clamped (opset 15).
pub struct Shape;

impl Shape {
    fn bounds(node: &LibraryNode, rank: usize) -> (usize, usize) {
        let r = i64::try_from(rank).unwrap_or(i64::MAX);
        let clamp = |v: i64| {
            let v = if v < 0 { v + r } else { v };
            usize::try_from(v.clamp(0, r)).unwrap_or(0)
        };
        let start = clamp(node.int("start").unwrap_or(0));
        let end = clamp(node.int("end").unwrap_or(r));
        (start, end.max(start))
    }
}

impl Operator for Shape {
    fn name(&self) -> &'static str {
        "Shape"
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
        let x = input_type("Shape", inputs, 0)?;
        let (start, end) = Self::bounds(node, x.shape.len());
        Ok(vec![TensorType::new(
            DType::I64,
            vec![SymExpr::from(end - start)],
        )])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Shape", inputs, 0)?;
        let (start, end) = Self::bounds(node, x.shape.len());
        let dims: Vec<i64> = x.shape[start..end]
            .iter()
            .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
            .collect();
        Ok(vec![Tensor::i64(vec![dims.len()], dims)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let shape = ctx.input(0)?.1.shape.clone();
        let (start, end) = Self::bounds(ctx.node, shape.len());
        write_indices(ctx, shape[start..end].to_vec())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `Size(data)`: the number of elements, as an `i64` scalar.
pub struct Size;

impl Operator for Size {
    fn name(&self) -> &'static str {
        "Size"
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
        check_arity(self, inputs.len())?;
        input_type("Size", inputs, 0)?;
        Ok(vec![TensorType::new(DType::I64, vec![])])
    }

    fn eval(&self, _: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Size", inputs, 0)?;
        let n = i64::try_from(x.len()).unwrap_or(i64::MAX);
        Ok(vec![Tensor::i64(vec![], vec![n])])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let n = dim_product(&ctx.input(0)?.1.shape);
        write_indices(ctx, vec![n])
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `ConstantOfShape(shape)`: a tensor of the given (constant) shape filled with `value`.
///
/// ONNX's `value` is a one-element tensor attribute; the importer turns it into `value` (an
/// int or float) and `value_type` (the IR dtype name, e.g. `"i64"`). Without it the output is
/// `f32` zeros.
pub struct ConstantOfShape;

impl ConstantOfShape {
    fn fill(node: &LibraryNode) -> Result<(DType, f64), OpError> {
        let dtype = match node.str("value_type") {
            None => DType::F32,
            Some(name) => DType::from_name(name).ok_or_else(|| {
                OpError::attr(
                    "ConstantOfShape",
                    "value_type",
                    format!("unknown type `{name}`"),
                )
            })?,
        };
        let value = match node.attrs.get("value") {
            None => 0.0,
            Some(Attr::Int(v)) => *v as f64,
            Some(Attr::Float(v)) => *v,
            Some(_) => {
                return Err(OpError::attr(
                    "ConstantOfShape",
                    "value",
                    "must be one number",
                ))
            }
        };
        Ok((dtype, value))
    }

    /// The output dimensions from the shape tensor's values.
    fn dims(shape: &Tensor) -> Result<Vec<usize>, OpError> {
        if shape.shape.len() != 1 {
            return Err(OpError::shape(
                "ConstantOfShape",
                format!(
                    "the shape input must be 1-D, got rank {}",
                    shape.shape.len()
                ),
            ));
        }
        shape
            .to_i64_vec()
            .into_iter()
            .map(|d| {
                usize::try_from(d).map_err(|_| {
                    OpError::shape("ConstantOfShape", format!("negative dimension {d}"))
                })
            })
            .collect()
    }
}

impl Operator for ConstantOfShape {
    fn name(&self) -> &'static str {
        "ConstantOfShape"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let t = input_type("ConstantOfShape", inputs, 0)?;
        if t.dtype != DType::I64 {
            return Err(OpError::shape(
                "ConstantOfShape",
                format!("the shape input must be int64, got {}", t.dtype),
            ));
        }
        let shape = consts.first().copied().flatten().ok_or_else(|| {
            OpError::unsupported("ConstantOfShape", "the shape input must be a constant")
        })?;
        let (dtype, _) = Self::fill(node)?;
        Ok(vec![TensorType::new(dtype, sym_shape(&Self::dims(shape)?))])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let dims = Self::dims(arg("ConstantOfShape", inputs, 0)?)?;
        let (dtype, value) = Self::fill(node)?;
        let n = element_count("ConstantOfShape", &dims)?;
        Ok(vec![Tensor::from_f64(dtype, dims, &vec![value; n])])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (_, value) = Self::fill(ctx.node)?;
        let (y, y_desc) = ctx.output(0)?.clone();
        fill_map(ctx.b, &ctx.label, &y, &y_desc.shape, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `Range(start, limit, delta)`: `start + i·delta` for `i` in `0..max(ceil((limit − start) /
/// delta), 0)`. The scalars must be constants (they decide the output's length).
pub struct RangeOp;

impl RangeOp {
    fn length(start: f64, limit: f64, delta: f64) -> Result<usize, OpError> {
        if delta == 0.0 || !delta.is_finite() || !start.is_finite() || !limit.is_finite() {
            return Err(OpError::shape(
                "Range",
                format!("cannot count from {start} to {limit} in steps of {delta}"),
            ));
        }
        let n = ((limit - start) / delta).ceil().max(0.0);
        if n > MAX_ELEMENTS as f64 {
            return Err(OpError::shape(
                "Range",
                format!("counting from {start} to {limit} in steps of {delta} gives more than {MAX_ELEMENTS} elements"),
            ));
        }
        Ok(n as usize)
    }

    fn scalars(ts: [&Tensor; 3]) -> Result<[f64; 3], OpError> {
        let mut out = [0.0; 3];
        for (i, t) in ts.iter().enumerate() {
            if t.shape.iter().product::<usize>() != 1 || t.shape.len() > 1 {
                return Err(OpError::shape(
                    "Range",
                    format!("input {i} must be a scalar, got shape {:?}", t.shape),
                ));
            }
            out[i] = t.get_f64(0);
        }
        Ok(out)
    }
}

impl Operator for RangeOp {
    fn name(&self) -> &'static str {
        "Range"
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let first = input_type("Range", inputs, 0)?;
        // Opset 27's `stash_type = 0` accumulates 16-bit floats in their own precision; the
        // values here are computed exactly and rounded once, which is the default `stash_type`.
        let half = matches!(first.dtype, DType::F16 | DType::BF16);
        if half && node.int("stash_type") == Some(0) {
            return Err(OpError::attr(
                "Range",
                "stash_type",
                format!("0 (accumulate in {}) is not supported", first.dtype),
            ));
        }
        for i in 0..3 {
            let t = input_type("Range", inputs, i)?;
            super::support::same_dtype("Range", first, t, i)?;
            // A one-element vector is read as its scalar, as ONNX Runtime and the reference
            // do (ONNX's own function bodies, AffineGrid's among them, pass one).
            let one_element = match t.shape.as_slice() {
                [] => true,
                [n] => n.as_int() == Some(1),
                _ => false,
            };
            if !one_element {
                return Err(OpError::shape(
                    "Range",
                    format!("input {i} must be a scalar, got rank {}", t.shape.len()),
                ));
            }
        }
        let values = |i: usize| consts.get(i).copied().flatten();
        let (Some(s), Some(l), Some(d)) = (values(0), values(1), values(2)) else {
            return Err(OpError::unsupported(
                "Range",
                "start, limit and delta must be constants (they decide the output's length)",
            ));
        };
        let [s, l, d] = Self::scalars([s, l, d])?;
        let n = Self::length(s, l, d)?;
        Ok(vec![TensorType::new(first.dtype, vec![SymExpr::from(n)])])
    }

    fn eval(&self, _: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let ts = [
            arg("Range", inputs, 0)?,
            arg("Range", inputs, 1)?,
            arg("Range", inputs, 2)?,
        ];
        let [s, l, d] = Self::scalars(ts)?;
        let n = Self::length(s, l, d)?;
        let values: Vec<f64> = (0..n).map(|i| s + i as f64 * d).collect();
        Ok(vec![Tensor::from_f64(ts[0].dtype(), vec![n], &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (start, start_desc) = ctx.input(0)?.clone();
        let (delta, delta_desc) = ctx.input(2)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &y_desc.shape);
        // The one element of a scalar or of a one-element vector.
        let first = |rank: usize| Subset::element(vec![SymExpr::Int(0); rank]);
        let value = TExpr::binary(
            BinOp::Add,
            TExpr::input("s"),
            TExpr::binary(BinOp::Mul, TExpr::Index(idx[0].clone()), TExpr::input("d")),
        );
        let inputs = vec![
            In("s", &start, first(start_desc.shape.len())),
            In("d", &delta, first(delta_desc.shape.len())),
        ];
        super::index::lookup_map(ctx.b, &ctx.label, &params, inputs, (&y, idx), None, value);
        Ok(())
    }
}
