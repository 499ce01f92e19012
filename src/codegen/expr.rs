//! Printing symbolic integer expressions and tasklet expressions as C.
//!
//! Every compound sub-expression is parenthesised, so C precedence never changes the meaning.
//! Integer arithmetic is `int64_t`; floor division, modulo, min and max go through helpers (`helpers`)
//! because C's `/` and `%` truncate towards zero while the IR's floor towards −∞. Tasklet values
//! are computed in the tasklet's compute type ([`Precision`]): `float` arithmetic and the `f`
//! libm functions for `f32` tasklets, `double` and the plain ones for `f64` tasklets, exactly as
//! the interpreter evaluates them.
//!
//! An element read `conn[e0, …]` becomes an `int64_t` flat offset into the container. Each index
//! is truncated toward zero and then *clamped* into the memlet's subset (`dm_clamp`): a wrong
//! index reads a wrong but valid element instead of undefined memory. The interpreter, which
//! bounds-checks the same reads and reports them, is the oracle that catches such indices; ONNX
//! wrap-around of negative indices belongs to the operator's expansion, not here.

use super::emit::DataInfo;
use crate::ir::{BinOp, DType, Dim, Precision, Subset, SymExpr, TExpr, UnOp};
use std::collections::BTreeMap;

/// The C element type of a dtype (`bool` is stored as one byte, 0 or 1; narrow floats as their
/// bit patterns; 4-bit integers one per byte).
pub(crate) fn ctype(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "int64_t",
        DType::I32 => "int32_t",
        DType::I16 => "int16_t",
        DType::I8 | DType::I4 => "int8_t",
        DType::U64 => "uint64_t",
        DType::U32 => "uint32_t",
        DType::U16 | DType::F16 | DType::BF16 => "uint16_t",
        DType::Bool
        | DType::U8
        | DType::U4
        | DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ => "uint8_t",
    }
}

/// Short dtype tag used in helper names (`dm_atomic_max_f32`).
pub(crate) fn tag(d: DType) -> &'static str {
    d.name()
}

/// A symbolic integer expression as C; `resolve` names symbols (map parameters).
pub(crate) fn sym(e: &SymExpr, resolve: &mut dyn FnMut(&str) -> String) -> String {
    let mut join = |terms: &[SymExpr], op: &str| {
        let parts: Vec<String> = terms.iter().map(|t| sym(t, resolve)).collect();
        format!("({})", parts.join(op))
    };
    match e {
        SymExpr::Int(v) => int_literal(*v),
        SymExpr::Sym(s) => resolve(s),
        SymExpr::Add(t) => join(t, " + "),
        SymExpr::Mul(t) => join(t, " * "),
        SymExpr::FloorDiv(a, b) => call("dm_floordiv", a, b, resolve),
        SymExpr::Mod(a, b) => call("dm_mod", a, b, resolve),
        SymExpr::Min(a, b) => call("dm_min", a, b, resolve),
        SymExpr::Max(a, b) => call("dm_max", a, b, resolve),
    }
}

fn call(f: &str, a: &SymExpr, b: &SymExpr, resolve: &mut dyn FnMut(&str) -> String) -> String {
    let a = sym(a, resolve);
    let b = sym(b, resolve);
    format!("{f}({a}, {b})")
}

/// An integer literal that is `int64_t` whatever its size.
fn int_literal(v: i64) -> String {
    if i32::try_from(v).is_ok() {
        if v < 0 {
            format!("({v})")
        } else {
            v.to_string()
        }
    } else {
        format!("INT64_C({v})")
    }
}

/// An exact single-precision literal: Rust's shortest round-trip form parses back to the same
/// `float` in C; non-finite values use the `<math.h>` macros.
pub(crate) fn float_literal(v: f64) -> String {
    let f = v as f32;
    if f.is_nan() {
        "NAN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "INFINITY" } else { "(-INFINITY)" }.to_string()
    } else {
        let s = format!("{f:?}");
        let s = if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        };
        if f.is_sign_negative() {
            format!("({s}f)")
        } else {
            format!("{s}f")
        }
    }
}

/// Converts a C expression of type `d` to the compute type `p`.
pub(crate) fn to_compute(value: &str, d: DType, p: Precision) -> String {
    let float = if d.is_narrow_float() {
        format!("dm_dec_{}({value})", tag(d))
    } else {
        value.to_string()
    };
    match (p, d) {
        (Precision::F32, DType::F32) | (Precision::F64, DType::F64) => value.to_string(),
        (Precision::F32, _) => format!("((float){float})"),
        (Precision::F64, _) => format!("((double){float})"),
    }
}

/// Converts a C expression of the compute type `p` to a value of `d` by the store rules of
/// `ir::scalar`: integers truncate toward zero and wrap (through `dm_to_i64`), 4-bit integers
/// clip and round half to even, booleans test for non-zero, narrow floats round to nearest-even.
pub(crate) fn from_compute(value: &str, d: DType, p: Precision) -> String {
    let zero = if p == Precision::F32 { "0.0f" } else { "0.0" };
    match d {
        DType::F32 if p == Precision::F32 => value.to_string(),
        DType::F64 if p == Precision::F64 => value.to_string(),
        DType::F32 | DType::F64 => format!("({})({value})", ctype(d)),
        DType::Bool => format!("(uint8_t)(({value}) != {zero})"),
        DType::I64 => format!("dm_to_i64((double)({value}))"),
        DType::U64 => format!("dm_to_u64((double)({value}))"),
        DType::I4 | DType::U4 => {
            let (lo, hi) = d.int_range().expect("4-bit integer range");
            format!(
                "({})nearbyint(fmin(fmax((double)({value}), {}), {}))",
                ctype(d),
                double_literal(lo),
                double_literal(hi)
            )
        }
        _ if d.is_narrow_float() => format!("dm_enc_{}((float)({value}))", tag(d)),
        _ => format!("({})dm_to_i64((double)({value}))", ctype(d)),
    }
}

/// An exact double-precision literal (shortest round-trip form, which C parses back exactly).
pub(crate) fn double_literal(v: f64) -> String {
    if v.is_nan() {
        "NAN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "INFINITY" } else { "(-INFINITY)" }.to_string()
    } else {
        let s = crate::ir::texpr::format_float(v);
        if v.is_sign_negative() {
            format!("({s})")
        } else {
            s
        }
    }
}

/// A connector read by element: the container and, per memlet dimension, the C `int64_t`
/// expressions of the subset's start, number of points and step.
pub(crate) struct WindowC<'a> {
    pub info: &'a DataInfo,
    pub dims: Vec<[String; 3]>,
}

impl<'a> WindowC<'a> {
    /// The window of `subset` (of the same rank as `info`), printing index expressions with
    /// `c_sym`; a single index is a window of one point.
    pub fn new(
        info: &'a DataInfo,
        subset: &Subset,
        c_sym: &mut dyn FnMut(&SymExpr) -> String,
    ) -> Self {
        let dims = subset
            .0
            .iter()
            .map(|dim| match dim {
                Dim::Index(e) => [c_sym(e), "1".to_string(), "1".to_string()],
                Dim::Range(r) => [c_sym(&r.start), c_sym(&r.len()), c_sym(&r.step)],
            })
            .collect();
        WindowC { info, dims }
    }
}

/// How a tasklet expression reaches its connectors in C.
pub(crate) struct TaskletC<'a> {
    pub precision: Precision,
    /// Plain inputs: connector → C expression already of the compute type.
    pub inputs: &'a BTreeMap<String, String>,
    /// Element reads: connector → the subset it may read.
    pub windows: &'a BTreeMap<String, WindowC<'a>>,
}

/// A tasklet expression as a C expression of the compute type; callers check that every
/// connector used is present.
pub(crate) fn texpr(e: &TExpr, cx: &TaskletC, resolve: &mut dyn FnMut(&str) -> String) -> String {
    let p = cx.precision;
    match e {
        TExpr::Const(v) => match p {
            Precision::F32 => float_literal(*v),
            Precision::F64 => double_literal(*v),
        },
        TExpr::Input(c) => cx
            .inputs
            .get(c)
            .cloned()
            .unwrap_or_else(|| "NAN".to_string()),
        TExpr::Index(s) => format!("(({}){})", ftype(p), sym(s, resolve)),
        TExpr::Unary(op, x) => unary(*op, &texpr(x, cx, resolve), p),
        TExpr::Binary(op, a, b) => {
            let a = texpr(a, cx, resolve);
            let b = texpr(b, cx, resolve);
            binary(*op, &a, &b, p)
        }
        TExpr::Select(c, a, b) => {
            let c = texpr(c, cx, resolve);
            let a = texpr(a, cx, resolve);
            let b = texpr(b, cx, resolve);
            format!("({c} != {} ? {a} : {b})", lit(0, p))
        }
        TExpr::Element(c, idx) => match cx.windows.get(c) {
            Some(w) if w.dims.len() == idx.len() => {
                let parts: Vec<String> = idx
                    .iter()
                    .zip(&w.dims)
                    .map(|(x, [start, len, step])| {
                        let k = format!(
                            "dm_clamp((int64_t)({}), 0, {len} - 1)",
                            texpr(x, cx, resolve)
                        );
                        if step == "1" {
                            format!("({start} + {k})")
                        } else {
                            format!("({start} + {k} * {step})")
                        }
                    })
                    .collect();
                to_compute(
                    &w.info.element(&flat(&parts, &w.info.shape)),
                    w.info.dtype,
                    p,
                )
            }
            _ => "NAN".to_string(),
        },
    }
}

/// `((i0 * d1 + i1) * d2 + i2)` from per-dimension C index expressions.
pub(crate) fn flat(parts: &[String], shape: &[usize]) -> String {
    let mut it = parts.iter().zip(shape);
    let Some((first, _)) = it.next() else {
        return "0".to_string();
    };
    it.fold(first.clone(), |acc, (p, d)| format!("({acc} * {d} + {p})"))
}

/// The C type of the compute type.
fn ftype(p: Precision) -> &'static str {
    match p {
        Precision::F32 => "float",
        Precision::F64 => "double",
    }
}

/// The small integer literal `v` as a constant of the compute type (`1.0f` / `1.0`).
fn lit(v: u8, p: Precision) -> String {
    match p {
        Precision::F32 => format!("{v}.0f"),
        Precision::F64 => format!("{v}.0"),
    }
}

/// C's fused multiply-add in the compute type `p`.
pub(crate) fn fma(p: Precision) -> String {
    libm("fma", p)
}

/// `exp` in the compute type: the vectorizable `dm_expf` helper in single precision, libm's
/// `exp` in double.
fn exp(p: Precision) -> &'static str {
    match p {
        Precision::F32 => "dm_expf",
        Precision::F64 => "exp",
    }
}

/// A libm function name for the compute type (`expf` / `exp`).
fn libm(base: &str, p: Precision) -> String {
    match p {
        Precision::F32 => format!("{base}f"),
        Precision::F64 => base.to_string(),
    }
}

/// The `dm_max_<t>` / `dm_min_<t>` helper of the compute type.
fn minmax(op: &str, p: Precision) -> String {
    match p {
        Precision::F32 => format!("dm_{op}_{}", tag(DType::F32)),
        Precision::F64 => format!("dm_{op}_{}", tag(DType::F64)),
    }
}

fn unary(op: UnOp, x: &str, p: Precision) -> String {
    let (zero, one) = (lit(0, p), lit(1, p));
    let f = match op {
        UnOp::Neg => return format!("(-{x})"),
        UnOp::Not => return format!("({x} == {zero} ? {one} : {zero})"),
        UnOp::Sigmoid => return format!("({one} / ({one} + {}(-{x})))", exp(p)),
        UnOp::Exp => return format!("{}({x})", exp(p)),
        UnOp::Recip => return format!("({one} / {x})"),
        UnOp::Abs => "fabs",
        // In the default rounding mode (which generated programs never change): half to even.
        UnOp::Round => "nearbyint",
        // The IR names the other functions as C99's <math.h> does (fixed names, never a model's).
        _ => op.name(),
    };
    format!("{}({x})", libm(f, p))
}

fn binary(op: BinOp, a: &str, b: &str, p: Precision) -> String {
    let (zero, one) = (lit(0, p), lit(1, p));
    let truth = |cond: String| format!("({cond} ? {one} : {zero})");
    match op {
        BinOp::Add => format!("({a} + {b})"),
        BinOp::Sub => format!("({a} - {b})"),
        BinOp::Mul => format!("({a} * {b})"),
        BinOp::Div => format!("({a} / {b})"),
        BinOp::Pow => format!("{}({a}, {b})", libm("pow", p)),
        BinOp::Fmod => format!("{}({a}, {b})", libm("fmod", p)),
        // `fmax`'s result (a NaN operand ignored) as the compare-and-select helpers compute
        // it: a libm call is not inlined without -ffast-math, so every ReLU/Clip loop would
        // stay scalar (MobileNetV2's ReLU6 maps: 11% of its run time in calls to fmaxf/fminf).
        BinOp::Max => format!("{}({a}, {b})", minmax("max", p)),
        BinOp::Min => format!("{}({a}, {b})", minmax("min", p)),
        BinOp::Lt => truth(format!("{a} < {b}")),
        BinOp::Le => truth(format!("{a} <= {b}")),
        BinOp::Gt => truth(format!("{a} > {b}")),
        BinOp::Ge => truth(format!("{a} >= {b}")),
        BinOp::Eq => truth(format!("{a} == {b}")),
        BinOp::Ne => truth(format!("{a} != {b}")),
        BinOp::And => truth(format!("{a} != {zero} && {b} != {zero}")),
        BinOp::Or => truth(format!("{a} != {zero} || {b} != {zero}")),
        BinOp::BitAnd => bitwise(a, "&", b, p),
        BinOp::BitOr => bitwise(a, "|", b, p),
        BinOp::BitXor => bitwise(a, "^", b, p),
    }
}

/// `a op b` on the operands converted to `int64_t` by `dm_to_i64` (the interpreter's `as i64`),
/// back in the compute type.
fn bitwise(a: &str, op: &str, b: &str, p: Precision) -> String {
    format!(
        "(({})(dm_to_i64((double)({a})) {op} dm_to_i64((double)({b}))))",
        ftype(p)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_exact_and_typed() {
        assert_eq!(float_literal(1.0), "1.0f");
        assert_eq!(float_literal(0.1), "0.1f");
        assert_eq!(float_literal(-2.5), "(-2.5f)");
        assert_eq!(float_literal(1e-30), "1e-30f");
        assert_eq!(float_literal(f64::NEG_INFINITY), "(-INFINITY)");
        assert_eq!(int_literal(-3), "(-3)");
        assert_eq!(int_literal(1 << 40), "INT64_C(1099511627776)");
        assert_eq!(double_literal(0.1), "0.1");
        assert_eq!(double_literal(-3.0), "(-3.0)");
        assert_eq!(double_literal(16_777_217.0), "16777217.0");
    }

    #[test]
    fn compute_type_selects_float_or_double_functions() {
        let e = TExpr::binary(
            BinOp::Max,
            TExpr::unary(UnOp::Exp, TExpr::input("a")),
            TExpr::Const(1.0),
        );
        let inputs = BTreeMap::from([("a".to_string(), "c_a".to_string())]);
        let windows = BTreeMap::new();
        let print = |precision| {
            let cx = TaskletC {
                precision,
                inputs: &inputs,
                windows: &windows,
            };
            texpr(&e, &cx, &mut |s| s.to_string())
        };
        assert_eq!(print(Precision::F32), "dm_max_f32(dm_expf(c_a), 1.0f)");
        assert_eq!(print(Precision::F64), "dm_max_f64(exp(c_a), 1.0)");
    }

    #[test]
    fn floor_operators_use_helpers() {
        let e = SymExpr::sym("i").floor_div(4.into()) + SymExpr::sym("i").modulo(4.into());
        let c = sym(&e, &mut |s| format!("p_{s}"));
        assert_eq!(c, "(dm_floordiv(p_i, 4) + dm_mod(p_i, 4))");
    }
}
