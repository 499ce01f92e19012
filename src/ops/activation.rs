//! Unary elementwise operators: activations and math functions.
//!
//! One generic [`Unary`] implements them all from a table row (this file's activations, and the
//! rows of `ops::math`): how its parameters are read
//! (float attributes with ONNX defaults, Gelu's approximation mode, Clip's bounds), the
//! reference function in `f64`, and the tasklet expression the expansion emits. The two are
//! written independently (e.g. Softplus is `ln(1 + eˣ)` in the reference and the overflow-free
//! `max(x, 0) + ln(1 + e^−|x|)` in the tasklet), so the expansion check compares two formulas.

use super::support::{arg, element_map, input_type, opt_arg, params_over, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor, UnOp};
use std::f64::consts::{FRAC_1_SQRT_2, PI};

pub static OPS: &[&dyn Operator] = &[
    &RELU,
    &SIGMOID,
    &TANH,
    &ERF,
    &SQRT,
    &EXP,
    &LOG,
    &NEG,
    &ABS,
    &RECIPROCAL,
    &FLOOR,
    &CEIL,
    &LEAKY_RELU,
    &ELU,
    &SELU,
    &HARD_SIGMOID,
    &HARD_SWISH,
    &SOFTPLUS,
    &GELU,
    &CLIP,
    &CELU,
    &THRESHOLDED_RELU,
    &SHRINK,
    &SOFTSIGN,
];

/// How an operator's scalar parameters are obtained; the kernels receive them as a slice.
pub(super) enum Params {
    None,
    /// Numeric attributes (floats, or integers read as floats) with their ONNX defaults, in
    /// kernel order.
    Attrs(&'static [(&'static str, f64)]),
    /// Gelu's `approximate`: `[0.0]` for "none" (exact, erf), `[1.0]` for "tanh".
    GeluMode,
    /// Clip's `[min, max]`: optional inputs 1 and 2 (opset ≥ 11), else attributes `min` / `max`
    /// (opset < 11), else unbounded.
    ClipBounds,
}

/// A unary elementwise operator.
pub struct Unary {
    pub(super) name: &'static str,
    pub(super) params: Params,
    /// Reference semantics of one element (predicates return 1.0 / 0.0).
    pub(super) f: fn(f64, &[f64]) -> f64,
    /// The tasklet expression computing the output from the input expression.
    pub(super) t: fn(TExpr, &[f64]) -> TExpr,
    /// The output is boolean (IsNaN, IsInf) rather than of the input's type.
    pub(super) predicate: bool,
}

pub(super) fn c(v: f64) -> TExpr {
    TExpr::Const(v)
}
pub(super) fn un(op: UnOp, x: TExpr) -> TExpr {
    TExpr::unary(op, x)
}
fn add(a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(BinOp::Add, a, b)
}
pub(crate) fn mul(a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(BinOp::Mul, a, b)
}
fn max(a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(BinOp::Max, a, b)
}
fn min(a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(BinOp::Min, a, b)
}
/// `select(x < 0, neg, pos)`; `le` makes the test `x <= 0` (Selu's definition).
fn if_negative(x: TExpr, le: bool, neg: TExpr, pos: TExpr) -> TExpr {
    let op = if le { BinOp::Le } else { BinOp::Lt };
    TExpr::select(TExpr::binary(op, x, c(0.0)), neg, pos)
}
/// The exact Gelu `0.5·x·(1 + erf(x/√2))` (reference side).
fn gelu_exact(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x * FRAC_1_SQRT_2))
}
/// `√(2/π)`, the tanh-approximation's scale.
fn gelu_k() -> f64 {
    (2.0 / PI).sqrt()
}

pub(super) const fn simple(
    name: &'static str,
    f: fn(f64, &[f64]) -> f64,
    t: fn(TExpr, &[f64]) -> TExpr,
) -> Unary {
    Unary {
        name,
        params: Params::None,
        f,
        t,
        predicate: false,
    }
}

static RELU: Unary = simple("Relu", |x, _| x.max(0.0), |x, _| max(x, c(0.0)));
static SIGMOID: Unary = simple(
    "Sigmoid",
    |x, _| 1.0 / (1.0 + (-x).exp()),
    |x, _| un(UnOp::Sigmoid, x),
);
static TANH: Unary = simple("Tanh", |x, _| x.tanh(), |x, _| un(UnOp::Tanh, x));
static ERF: Unary = simple("Erf", |x, _| libm::erf(x), |x, _| un(UnOp::Erf, x));
static SQRT: Unary = simple("Sqrt", |x, _| x.sqrt(), |x, _| un(UnOp::Sqrt, x));
static EXP: Unary = simple("Exp", |x, _| x.exp(), |x, _| un(UnOp::Exp, x));
static LOG: Unary = simple("Log", |x, _| x.ln(), |x, _| un(UnOp::Log, x));
static NEG: Unary = simple("Neg", |x, _| -x, |x, _| un(UnOp::Neg, x));
static ABS: Unary = simple("Abs", |x, _| x.abs(), |x, _| un(UnOp::Abs, x));
static RECIPROCAL: Unary = simple("Reciprocal", |x, _| 1.0 / x, |x, _| un(UnOp::Recip, x));
static FLOOR: Unary = simple("Floor", |x, _| x.floor(), |x, _| un(UnOp::Floor, x));
static CEIL: Unary = simple("Ceil", |x, _| x.ceil(), |x, _| un(UnOp::Ceil, x));
static LEAKY_RELU: Unary = Unary {
    name: "LeakyRelu",
    params: Params::Attrs(&[("alpha", 0.01)]),
    predicate: false,
    f: |x, p| if x < 0.0 { p[0] * x } else { x },
    t: |x, p| if_negative(x.clone(), false, mul(c(p[0]), x.clone()), x),
};
static ELU: Unary = Unary {
    name: "Elu",
    params: Params::Attrs(&[("alpha", 1.0)]),
    predicate: false,
    f: |x, p| if x < 0.0 { p[0] * (x.exp() - 1.0) } else { x },
    t: |x, p| {
        let em1 = add(un(UnOp::Exp, x.clone()), c(-1.0));
        if_negative(x.clone(), false, mul(c(p[0]), em1), x)
    },
};
static SELU: Unary = Unary {
    name: "Selu",
    params: Params::Attrs(&[
        ("alpha", 1.673_263_192_176_818_8),
        ("gamma", 1.050_701_022_148_132_3),
    ]),
    predicate: false,
    f: |x, p| {
        if x <= 0.0 {
            p[1] * (p[0] * x.exp() - p[0])
        } else {
            p[1] * x
        }
    },
    t: |x, p| {
        let neg = add(
            mul(c(p[1] * p[0]), un(UnOp::Exp, x.clone())),
            c(-p[1] * p[0]),
        );
        if_negative(x.clone(), true, neg, mul(c(p[1]), x))
    },
};
static HARD_SIGMOID: Unary = Unary {
    name: "HardSigmoid",
    params: Params::Attrs(&[("alpha", 0.2), ("beta", 0.5)]),
    predicate: false,
    f: |x, p| (p[0] * x + p[1]).clamp(0.0, 1.0),
    t: |x, p| max(c(0.0), min(c(1.0), add(mul(c(p[0]), x), c(p[1])))),
};
static HARD_SWISH: Unary = simple(
    "HardSwish",
    |x, _| x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
    |x, _| {
        let gate = max(
            c(0.0),
            min(c(1.0), add(mul(c(1.0 / 6.0), x.clone()), c(0.5))),
        );
        mul(x, gate)
    },
);
static SOFTPLUS: Unary = simple(
    "Softplus",
    // ln(1 + eˣ) = x + ln(1 + e⁻ˣ) ≈ x + e⁻ˣ for large x, where eˣ would overflow.
    |x, _| {
        if x > 30.0 {
            x + (-x).exp()
        } else {
            x.exp().ln_1p()
        }
    },
    |x, _| {
        let tail = un(UnOp::Exp, un(UnOp::Neg, un(UnOp::Abs, x.clone())));
        add(max(x, c(0.0)), un(UnOp::Log, add(c(1.0), tail)))
    },
);
static GELU: Unary = Unary {
    name: "Gelu",
    params: Params::GeluMode,
    predicate: false,
    f: |x, p| {
        if p[0] == 0.0 {
            gelu_exact(x)
        } else {
            0.5 * x * (1.0 + (gelu_k() * (x + 0.044715 * x.powi(3))).tanh())
        }
    },
    t: |x, p| {
        let inner = if p[0] == 0.0 {
            un(UnOp::Erf, mul(x.clone(), c(FRAC_1_SQRT_2)))
        } else {
            let cube = mul(mul(x.clone(), x.clone()), x.clone());
            let arg = mul(c(gelu_k()), add(x.clone(), mul(c(0.044715), cube)));
            un(UnOp::Tanh, arg)
        };
        mul(mul(c(0.5), x), add(c(1.0), inner))
    },
};
static CLIP: Unary = Unary {
    name: "Clip",
    params: Params::ClipBounds,
    predicate: false,
    f: |x, p| x.max(p[0]).min(p[1]),
    t: |x, p| {
        // Unbounded sides emit no operation, so no infinity reaches the generated code.
        let finite = |v: f64| v.is_finite().then(|| c(v));
        clamp(x, finite(p[0]), finite(p[1]))
    },
};

/// `max(0, x) + min(0, α(e^(x/α) − 1))` (opset 12; α defaults to 1).
static CELU: Unary = Unary {
    name: "Celu",
    params: Params::Attrs(&[("alpha", 1.0)]),
    predicate: false,
    f: |x, p| x.max(0.0) + (p[0] * ((x / p[0]).exp() - 1.0)).min(0.0),
    t: |x, p| {
        let em1 = add(un(UnOp::Exp, mul(x.clone(), c(1.0 / p[0]))), c(-1.0));
        if_negative(x.clone(), false, mul(c(p[0]), em1), x)
    },
};
/// `x` above α, else 0 (α defaults to 1).
static THRESHOLDED_RELU: Unary = Unary {
    name: "ThresholdedRelu",
    params: Params::Attrs(&[("alpha", 1.0)]),
    predicate: false,
    f: |x, p| if x > p[0] { x } else { 0.0 },
    t: |x, p| TExpr::select(TExpr::binary(BinOp::Gt, x.clone(), c(p[0])), x, c(0.0)),
};
/// `x + bias` below −λ, `x − bias` above λ, else 0 (λ = `lambd` = 0.5, `bias` = 0 by default).
static SHRINK: Unary = Unary {
    name: "Shrink",
    params: Params::Attrs(&[("lambd", 0.5), ("bias", 0.0)]),
    predicate: false,
    f: |x, p| {
        if x < -p[0] {
            x + p[1]
        } else if x > p[0] {
            x - p[1]
        } else {
            0.0
        }
    },
    t: |x, p| {
        let above = TExpr::select(
            TExpr::binary(BinOp::Gt, x.clone(), c(p[0])),
            add(x.clone(), c(-p[1])),
            c(0.0),
        );
        let below = TExpr::binary(BinOp::Lt, x.clone(), c(-p[0]));
        TExpr::select(below, add(x, c(p[1])), above)
    },
};
/// `x / (1 + |x|)`.
static SOFTSIGN: Unary = simple(
    "Softsign",
    |x, _| x / (1.0 + x.abs()),
    |x, _| mul(x.clone(), un(UnOp::Recip, add(c(1.0), un(UnOp::Abs, x)))),
);

/// `min(max(x, lo), hi)` with an absent side left out (the order of `numpy.clip`, so `lo > hi`
/// yields `hi` as ONNX's reference does).
fn clamp(x: TExpr, lo: Option<TExpr>, hi: Option<TExpr>) -> TExpr {
    let lower = lo.map_or(x.clone(), |lo| max(x, lo));
    hi.map_or(lower.clone(), |hi| min(lower, hi))
}

/// Clip's expansion. A bound given as a non-constant input is read from its one-element array
/// by the tasklet at run time (so the generated C takes it as an argument); a constant bound is
/// folded into the expression; an absent one (no input, no legacy attribute) emits nothing.
fn expand_clip(ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let (x, desc) = ctx.input(0)?.clone();
    let (y, _) = ctx.output(0)?.clone();
    let (params, idx) = params_over("i", &desc.shape);
    // (connector, container, element index) of the run-time bounds.
    let mut runtime: Vec<(&str, String, Vec<SymExpr>)> = Vec::new();
    let mut bounds = Vec::new();
    for (i, attr, conn) in [(1, "min", "lo"), (2, "max", "hi")] {
        let bound = match ctx.inputs.get(i) {
            Some(Some((name, d))) => match ctx.constant_input(i) {
                Some(t) => Some(scalar(CLIP.name, i, t)?)
                    .filter(|v| v.is_finite())
                    .map(c),
                None => {
                    runtime.push((conn, name.clone(), vec![SymExpr::Int(0); d.shape.len()]));
                    Some(TExpr::input(conn))
                }
            },
            _ => ctx.node.float(attr).filter(|v| v.is_finite()).map(c),
        };
        bounds.push(bound);
    }
    let hi = bounds.pop().flatten();
    let lo = bounds.pop().flatten();
    let value = clamp(TExpr::input("x"), lo, hi);
    let mut reads = vec![Read::new("x", &x, idx.clone())];
    reads.extend(
        runtime
            .iter()
            .map(|(conn, data, at)| Read::new(conn, data, at.clone())),
    );
    element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
    Ok(())
}

/// The single value of a Clip bound tensor.
fn scalar(op: &str, i: usize, t: &Tensor) -> Result<f64, OpError> {
    if t.len() == 1 {
        Ok(t.get_f64(0))
    } else {
        Err(OpError::shape(
            op,
            format!("input {i} must hold one value, it has shape {:?}", t.shape),
        ))
    }
}

impl Unary {
    /// The kernel parameters. `bound(i)` yields the value of optional input `i` when the node
    /// has it (an error when its value is unknown where it is needed).
    pub(super) fn resolve(
        &self,
        node: &LibraryNode,
        bound: &dyn Fn(usize) -> Result<Option<f64>, OpError>,
    ) -> Result<Vec<f64>, OpError> {
        match &self.params {
            Params::None => Ok(Vec::new()),
            Params::Attrs(attrs) => Ok(attrs
                .iter()
                .map(|(name, default)| node.float(name).unwrap_or(*default))
                .collect()),
            Params::GeluMode => match node.str("approximate").unwrap_or("none") {
                "none" => Ok(vec![0.0]),
                "tanh" => Ok(vec![1.0]),
                other => Err(OpError::attr(
                    self.name,
                    "approximate",
                    format!("must be \"none\" or \"tanh\", got \"{other}\""),
                )),
            },
            Params::ClipBounds => [(1, "min", f64::NEG_INFINITY), (2, "max", f64::INFINITY)]
                .into_iter()
                .map(|(i, attr, unbounded)| {
                    Ok(bound(i)?.unwrap_or_else(|| node.float(attr).unwrap_or(unbounded)))
                })
                .collect(),
        }
    }

    fn output_dtype(&self, x: DType) -> DType {
        if self.predicate {
            DType::Bool
        } else {
            x
        }
    }

    fn max_inputs(&self) -> usize {
        match self.params {
            Params::ClipBounds => 3,
            _ => 1,
        }
    }
}

impl Operator for Unary {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (1, self.max_inputs())
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(self.name, inputs, 0)?;
        for (i, t) in inputs.iter().enumerate().skip(1) {
            let Some(t) = t else { continue };
            if t.static_shape()
                .is_some_and(|s| s.iter().product::<usize>() != 1)
            {
                return Err(OpError::shape(
                    self.name,
                    format!("input {i} must be a scalar"),
                ));
            }
        }
        let constant = |i: usize| {
            consts
                .get(i)
                .copied()
                .flatten()
                .map(|t| scalar(self.name, i, t))
                .transpose()
        };
        self.resolve(node, &constant)?;
        Ok(vec![TensorType::new(
            self.output_dtype(x.dtype),
            x.shape.clone(),
        )])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name, inputs, 0)?;
        let value = |i: usize| {
            opt_arg(inputs, i)
                .map(|t| scalar(self.name, i, t))
                .transpose()
        };
        let p = self.resolve(node, &value)?;
        let values: Vec<f64> = x
            .to_f64_vec()
            .into_iter()
            .map(|v| (self.f)(v, &p))
            .collect();
        Ok(vec![Tensor::from_f64(
            self.output_dtype(x.dtype()),
            x.shape.clone(),
            &values,
        )])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        if matches!(self.params, Params::ClipBounds) {
            return expand_clip(ctx);
        }
        // Only Clip has parameter inputs, and it expands above.
        let p = self.resolve(ctx.node, &|_| Ok(None))?;
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &desc.shape);
        let value = (self.t)(TExpr::input("x"), &p);
        let reads = vec![Read::new("x", &x, idx.clone())];
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, node: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        // Cost of the emitted tasklet per element. Clip's bound values are not known here, so
        // both of its sides are counted.
        let Ok(p) = self.resolve(node, &|_| Ok(Some(0.0))) else {
            return 0;
        };
        let per = (self.t)(TExpr::input("x"), &p).flops();
        outputs
            .iter()
            .filter_map(|t| t.static_shape())
            .map(|s| s.iter().product::<usize>() as u64 * per)
            .sum()
    }
}

/// The activation rows a recurrent operator (LSTM, GRU, RNN) may name in its `activations`
/// attribute, looked up case-insensitively as ONNX Runtime does; Affine and ScaledTanh, which
/// exist only there, live in `ops::recurrent`.
pub(super) fn recurrent_row(name: &str) -> Option<&'static Unary> {
    let rows: [&'static Unary; 9] = [
        &RELU,
        &SIGMOID,
        &TANH,
        &LEAKY_RELU,
        &THRESHOLDED_RELU,
        &HARD_SIGMOID,
        &ELU,
        &SOFTSIGN,
        &SOFTPLUS,
    ];
    rows.into_iter().find(|r| r.name.eq_ignore_ascii_case(name))
}
