//! Type conversion and boolean logic: Cast, CastLike, Where, Not, And, Or, Xor.
//!
//! All are pointwise (Where, And and Or with multidirectional broadcasting), so each expansion is
//! one map over the output whose tasklet is a copy, a `select` or a logical operator. Cast relies
//! on the tasklet's typed compute: the value is loaded, carried in the compute type and converted
//! by the store (`ir::scalar`: truncation and wrap-around into integers, clip and round into
//! 4-bit ones, non-zero test into booleans, nearest-even into narrow floats). Only Cast's
//! `saturate` (float8 targets) needs more: a clamp to the format's range before the store.

use super::broadcast::{broadcast_concrete, broadcast_shapes, source_index, source_offsets};
use super::support::{arg, element_map, input_type, opt_arg, params_over, same_dtype, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::scalar::FloatFormat;
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&CAST, &CAST_LIKE, &Where, &NOT, &AND, &OR, &XOR];

/// ONNX `TensorProto.DataType` codes of the IR types (strings and complex numbers have none).
const ONNX_CODES: [(i64, DType); 19] = [
    (1, DType::F32),
    (2, DType::U8),
    (3, DType::I8),
    (4, DType::U16),
    (5, DType::I16),
    (6, DType::I32),
    (7, DType::I64),
    (9, DType::Bool),
    (10, DType::F16),
    (11, DType::F64),
    (12, DType::U32),
    (13, DType::U64),
    (16, DType::BF16),
    (17, DType::F8E4M3FN),
    (18, DType::F8E4M3FNUZ),
    (19, DType::F8E5M2),
    (20, DType::F8E5M2FNUZ),
    (21, DType::U4),
    (22, DType::I4),
];

/// The IR type of an ONNX `TensorProto.DataType` code, for the types dmove computes with.
pub fn dtype_of_onnx(code: i64) -> Option<DType> {
    ONNX_CODES.iter().find(|(c, _)| *c == code).map(|(_, d)| *d)
}

/// The ONNX `TensorProto.DataType` code of an IR type.
pub fn onnx_code(dtype: DType) -> i64 {
    ONNX_CODES
        .iter()
        .find(|(_, d)| *d == dtype)
        .map(|(c, _)| *c)
        .expect("every IR dtype has an ONNX code")
}

/// Requires a boolean input (ONNX type constraint `T: tensor(bool)`).
fn require_bool(op: &str, t: &TensorType, i: usize) -> Result<(), OpError> {
    if t.dtype == DType::Bool {
        Ok(())
    } else {
        Err(OpError::shape(
            op,
            format!("input {i} must be bool, got {}", t.dtype),
        ))
    }
}

/// One pointwise map over output 0 reading every input with broadcasting through connectors
/// `a0, a1, …` and writing `value` (over those connectors).
pub(super) fn expand_pointwise(ctx: &mut ExpandCtx, value: TExpr) -> Result<(), OpError> {
    let (y, y_desc) = ctx.output(0)?.clone();
    let (params, idx) = params_over("i", &y_desc.shape);
    let operands = (0..ctx.inputs.len())
        .map(|i| ctx.input(i).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let conns: Vec<String> = (0..operands.len()).map(|i| format!("a{i}")).collect();
    let reads = operands
        .iter()
        .zip(&conns)
        .map(|((name, desc), conn)| Read::new(conn, name, source_index(&desc.shape, &idx)))
        .collect();
    element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
    Ok(())
}

/// Broadcasting `eval`: `f` applied to the inputs' elements at every output position.
pub(super) fn eval_pointwise(
    op: &str,
    inputs: &[Option<&Tensor>],
    dtype: DType,
    f: impl Fn(&[f64]) -> f64,
) -> Result<Tensor, OpError> {
    let args = (0..inputs.len())
        .map(|i| arg(op, inputs, i))
        .collect::<Result<Vec<_>, _>>()?;
    let shapes: Vec<&[usize]> = args.iter().map(|t| t.shape.as_slice()).collect();
    let shape = broadcast_concrete(op, &shapes)?;
    let sources: Vec<Vec<usize>> = args
        .iter()
        .map(|t| source_offsets(&t.shape, &shape))
        .collect();
    let total: usize = shape.iter().product();
    let values: Vec<f64> = (0..total)
        .map(|e| {
            let xs: Vec<f64> = args
                .iter()
                .zip(&sources)
                .map(|(t, s)| t.get_f64(s[e]))
                .collect();
            f(&xs)
        })
        .collect();
    Ok(Tensor::from_f64(dtype, shape, &values))
}

/// `Cast(x)` to the ONNX type code `to`, or `CastLike(x, like)` to `like`'s element type (only
/// its type is used, never its values). Both saturate float8 results under `saturate`.
pub struct Cast {
    name: &'static str,
    /// The target type comes from input 1 (CastLike) rather than the `to` attribute.
    like: bool,
}

static CAST: Cast = Cast {
    name: "Cast",
    like: false,
};
static CAST_LIKE: Cast = Cast {
    name: "CastLike",
    like: true,
};

impl Cast {
    /// The target type: `like`'s (CastLike) or the `to` attribute's.
    fn target(&self, node: &LibraryNode, like: Option<DType>) -> Result<DType, OpError> {
        if self.like {
            return like.ok_or_else(|| OpError::shape(self.name, "missing input 1"));
        }
        let code = node
            .int("to")
            .ok_or_else(|| OpError::attr(self.name, "to", "is required"))?;
        dtype_of_onnx(code).ok_or_else(|| {
            OpError::attr(
                self.name,
                "to",
                format!("type code {code} is not supported (strings and complex numbers are not)"),
            )
        })
    }
}

/// The largest magnitude a conversion to `to` is clamped to: a float8 target's largest finite
/// value under `saturate` (default 1), so that out-of-range values and infinities saturate
/// instead of becoming NaN or infinity (Cast, QuantizeLinear).
pub(super) fn saturation(node: &LibraryNode, to: DType) -> Option<f64> {
    let float8 = !matches!(to, DType::F16 | DType::BF16);
    FloatFormat::of(to)
        .filter(|_| float8 && node.int("saturate").unwrap_or(1) != 0)
        .map(FloatFormat::max_finite)
}

/// `x` clamped to `[-limit, limit]` (the reference side of [`saturated`]); NaN stays NaN.
pub(super) fn saturate_value(x: f64, limit: Option<f64>) -> f64 {
    limit.map_or(x, |m| if x.is_nan() { x } else { x.clamp(-m, m) })
}

/// The tasklet expression clamping `x` to `[-limit, limit]` when a limit is given. NaN stays
/// NaN: `max`/`min` alone would replace it by the bound.
pub(super) fn saturated(x: TExpr, limit: Option<f64>) -> TExpr {
    match limit {
        Some(m) => TExpr::select(
            TExpr::binary(BinOp::Ne, x.clone(), x.clone()),
            x.clone(),
            TExpr::binary(
                BinOp::Max,
                TExpr::binary(BinOp::Min, x, TExpr::Const(m)),
                TExpr::Const(-m),
            ),
        ),
        None => x,
    }
}

impl Operator for Cast {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        let n = 1 + usize::from(self.like);
        (n, n)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(self.name, inputs, 0)?;
        let like = inputs.get(1).and_then(|t| t.as_ref()).map(|t| t.dtype);
        Ok(vec![TensorType::new(
            self.target(node, like)?,
            x.shape.clone(),
        )])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name, inputs, 0)?;
        let to = self.target(node, opt_arg(inputs, 1).map(Tensor::dtype))?;
        let limit = saturation(node, to);
        let mut y = Tensor::zeros(to, x.shape.clone());
        for i in 0..x.len() {
            y.set_f64(i, saturate_value(x.get_f64(i), limit));
        }
        Ok(vec![y])
    }

    /// One map reading `x` only (CastLike's second input contributes its type, which the
    /// output container already has).
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x_name, _) = ctx.input(0)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let value = saturated(TExpr::input("x"), saturation(ctx.node, y_desc.dtype));
        let (params, idx) = params_over("i", &y_desc.shape);
        let reads = vec![Read::new("x", &x_name, idx.clone())];
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `Where(condition, x, y)`: `x` where the condition holds, else `y`, with broadcasting.
pub struct Where;

impl Operator for Where {
    fn name(&self) -> &'static str {
        "Where"
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let c = input_type("Where", inputs, 0)?;
        let x = input_type("Where", inputs, 1)?;
        let y = input_type("Where", inputs, 2)?;
        require_bool("Where", c, 0)?;
        same_dtype("Where", x, y, 2)?;
        let shape = broadcast_shapes("Where", &[&c.shape, &x.shape, &y.shape])?;
        Ok(vec![TensorType::new(x.dtype, shape)])
    }

    fn eval(&self, _: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let dtype = arg("Where", inputs, 1)?.dtype();
        let y = eval_pointwise("Where", inputs, dtype, |v| {
            if v[0] != 0.0 {
                v[1]
            } else {
                v[2]
            }
        })?;
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let value = TExpr::select(TExpr::input("a0"), TExpr::input("a1"), TExpr::input("a2"));
        expand_pointwise(ctx, value)
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// A boolean operator on one or two (broadcast) boolean inputs.
pub struct Logical {
    name: &'static str,
    arity: usize,
    /// Reference semantics on truth values.
    f: fn(bool, bool) -> bool,
    /// The tasklet over connectors `a0` (and `a1`).
    value: fn() -> TExpr,
}

static NOT: Logical = Logical {
    name: "Not",
    arity: 1,
    f: |a, _| !a,
    value: || TExpr::unary(UnOp::Not, TExpr::input("a0")),
};
static AND: Logical = Logical {
    name: "And",
    arity: 2,
    f: |a, b| a && b,
    value: || TExpr::binary(BinOp::And, TExpr::input("a0"), TExpr::input("a1")),
};
static OR: Logical = Logical {
    name: "Or",
    arity: 2,
    f: |a, b| a || b,
    value: || TExpr::binary(BinOp::Or, TExpr::input("a0"), TExpr::input("a1")),
};
/// Truth values are 0 or 1, so "exactly one holds" is inequality.
static XOR: Logical = Logical {
    name: "Xor",
    arity: 2,
    f: |a, b| a != b,
    value: || TExpr::binary(BinOp::Ne, TExpr::input("a0"), TExpr::input("a1")),
};

impl Operator for Logical {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (self.arity, self.arity)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let mut shapes: Vec<&[SymExpr]> = Vec::new();
        for i in 0..inputs.len() {
            let t = input_type(self.name, inputs, i)?;
            require_bool(self.name, t, i)?;
            shapes.push(&t.shape);
        }
        let shape = broadcast_shapes(self.name, &shapes)?;
        Ok(vec![TensorType::new(DType::Bool, shape)])
    }

    fn eval(&self, _: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let y = eval_pointwise(self.name, inputs, DType::Bool, |v| {
            let b = v.get(1).is_some_and(|x| *x != 0.0);
            f64::from(u8::from((self.f)(v[0] != 0.0, b)))
        })?;
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        expand_pointwise(ctx, (self.value)())
    }
}
