//! Unary math functions: trigonometric and hyperbolic functions and their inverses, Round (half
//! to even), Sign, Swish, and the predicates IsNaN and IsInf.
//!
//! They are rows of the generic [`Unary`] of `ops::activation`. The trigonometric rows map onto
//! one libm function each, in both the reference (`f64`) and the tasklet (the compute type);
//! Sign and the predicates are written as comparisons and selects in the tasklet so that the
//! expansion is checked against a differently written reference (`signum`, `is_nan`).

use super::activation::{c, mul, simple, un, Params, Unary};
use super::Operator;
use crate::ir::{BinOp, TExpr, UnOp};

pub static OPS: &[&dyn Operator] = &[
    &SIN, &COS, &TAN, &ASIN, &ACOS, &ATAN, &SINH, &COSH, &ASINH, &ACOSH, &ATANH, &ROUND, &SIGN,
    &SWISH, &IS_NAN, &IS_INF,
];

static SIN: Unary = simple("Sin", |x, _| x.sin(), |x, _| un(UnOp::Sin, x));
static COS: Unary = simple("Cos", |x, _| x.cos(), |x, _| un(UnOp::Cos, x));
static TAN: Unary = simple("Tan", |x, _| x.tan(), |x, _| un(UnOp::Tan, x));
static ASIN: Unary = simple("Asin", |x, _| x.asin(), |x, _| un(UnOp::Asin, x));
static ACOS: Unary = simple("Acos", |x, _| x.acos(), |x, _| un(UnOp::Acos, x));
static ATAN: Unary = simple("Atan", |x, _| x.atan(), |x, _| un(UnOp::Atan, x));
static SINH: Unary = simple("Sinh", |x, _| x.sinh(), |x, _| un(UnOp::Sinh, x));
static COSH: Unary = simple("Cosh", |x, _| x.cosh(), |x, _| un(UnOp::Cosh, x));
static ASINH: Unary = simple("Asinh", |x, _| x.asinh(), |x, _| un(UnOp::Asinh, x));
static ACOSH: Unary = simple("Acosh", |x, _| x.acosh(), |x, _| un(UnOp::Acosh, x));
static ATANH: Unary = simple("Atanh", |x, _| x.atanh(), |x, _| un(UnOp::Atanh, x));
static ROUND: Unary = simple(
    "Round",
    |x, _| x.round_ties_even(),
    |x, _| un(UnOp::Round, x),
);
/// −1, 0 or 1; NaN stays NaN (numpy's `sign`, ONNX's reference).
static SIGN: Unary = simple(
    "Sign",
    |x, _| {
        if x == 0.0 || x.is_nan() {
            x
        } else {
            x.signum()
        }
    },
    |x, _| {
        let negative = TExpr::select(cmp(BinOp::Lt, x.clone(), 0.0), c(-1.0), x.clone());
        TExpr::select(cmp(BinOp::Gt, x, 0.0), c(1.0), negative)
    },
);
/// `x·sigmoid(αx)` (opset 24; α defaults to 1).
pub(super) static SWISH: Unary = Unary {
    name: "Swish",
    params: Params::Attrs(&[("alpha", 1.0)]),
    predicate: false,
    f: |x, p| x / (1.0 + (-p[0] * x).exp()),
    t: |x, p| mul(x.clone(), un(UnOp::Sigmoid, mul(c(p[0]), x))),
};
static IS_NAN: Unary = Unary {
    predicate: true,
    // NaN is the one value unequal to itself.
    ..simple(
        "IsNaN",
        |x, _| f64::from(u8::from(x.is_nan())),
        |x, _| TExpr::binary(BinOp::Ne, x.clone(), x),
    )
};
/// Infinities of the signs `detect_positive` and `detect_negative` select (both by default).
static IS_INF: Unary = Unary {
    name: "IsInf",
    params: Params::Attrs(&[("detect_negative", 1.0), ("detect_positive", 1.0)]),
    predicate: true,
    f: |x, p| {
        let hit = x.is_infinite() && if x > 0.0 { p[1] != 0.0 } else { p[0] != 0.0 };
        f64::from(u8::from(hit))
    },
    t: |x, p| {
        let tests: Vec<TExpr> = [(p[0], f64::NEG_INFINITY), (p[1], f64::INFINITY)]
            .into_iter()
            .filter(|(on, _)| *on != 0.0)
            .map(|(_, inf)| cmp(BinOp::Eq, x.clone(), inf))
            .collect();
        tests
            .into_iter()
            .reduce(|a, b| TExpr::binary(BinOp::Or, a, b))
            .unwrap_or(c(0.0))
    },
};

/// `x op v` for a constant `v`.
fn cmp(op: BinOp, x: TExpr, v: f64) -> TExpr {
    TExpr::binary(op, x, c(v))
}
