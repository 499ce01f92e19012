//! Printing symbolic integer expressions and tasklet expressions as C.
//!
//! Every compound sub-expression is parenthesised, so C precedence never changes the meaning.
//! Integer arithmetic is `int64_t`; floor division, modulo, min and max go through helpers
//! because C's `/` and `%` truncate towards zero while the IR's floor towards −∞. Tasklet values
//! are computed in single precision, as the interpreter does.

use crate::ir::{BinOp, DType, SymExpr, TExpr, UnOp};
use std::collections::BTreeMap;

/// Integer and min/max helpers every generated program starts with.
pub(crate) const HELPERS: &str = r#"static inline int64_t dm_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t dm_mod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t dm_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t dm_max(int64_t a, int64_t b) { return a > b ? a : b; }
"#;

/// The C element type of a dtype (`bool` is stored as one byte, 0 or 1).
pub(crate) fn ctype(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "int64_t",
        DType::I32 => "int32_t",
        DType::Bool => "uint8_t",
    }
}

/// Short dtype tag used in helper names (`dm_atomic_max_f32`).
pub(crate) fn tag(d: DType) -> &'static str {
    d.name()
}

/// Converts a `float` C expression to a value of `d`.
pub(crate) fn from_float(value: &str, d: DType) -> String {
    match d {
        DType::F32 => value.to_string(),
        DType::Bool => format!("(uint8_t)(({value}) != 0.0f)"),
        _ => format!("({})({value})", ctype(d)),
    }
}

/// Converts a C expression of type `d` to `float`.
pub(crate) fn to_float(value: &str, d: DType) -> String {
    match d {
        DType::F32 => value.to_string(),
        _ => format!("((float){value})"),
    }
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

/// A tasklet expression as a C `float` expression. `inputs` maps each connector to a C
/// expression of type `float`; callers check that every connector used is present.
pub(crate) fn texpr(
    e: &TExpr,
    inputs: &BTreeMap<String, String>,
    resolve: &mut dyn FnMut(&str) -> String,
) -> String {
    match e {
        TExpr::Const(v) => float_literal(*v),
        TExpr::Input(c) => inputs.get(c).cloned().unwrap_or_else(|| "NAN".to_string()),
        TExpr::Index(s) => format!("((float){})", sym(s, resolve)),
        TExpr::Unary(op, x) => unary(*op, &texpr(x, inputs, resolve)),
        TExpr::Binary(op, a, b) => {
            let a = texpr(a, inputs, resolve);
            let b = texpr(b, inputs, resolve);
            binary(*op, &a, &b)
        }
        TExpr::Select(c, a, b) => {
            let c = texpr(c, inputs, resolve);
            let a = texpr(a, inputs, resolve);
            let b = texpr(b, inputs, resolve);
            format!("({c} != 0.0f ? {a} : {b})")
        }
    }
}

fn unary(op: UnOp, x: &str) -> String {
    let f = match op {
        UnOp::Neg => return format!("(-{x})"),
        UnOp::Not => return format!("({x} == 0.0f ? 1.0f : 0.0f)"),
        UnOp::Sigmoid => return format!("(1.0f / (1.0f + expf(-{x})))"),
        UnOp::Recip => return format!("(1.0f / {x})"),
        UnOp::Abs => "fabsf",
        UnOp::Exp => "expf",
        UnOp::Log => "logf",
        UnOp::Sqrt => "sqrtf",
        UnOp::Tanh => "tanhf",
        UnOp::Erf => "erff",
        UnOp::Floor => "floorf",
        UnOp::Ceil => "ceilf",
    };
    format!("{f}({x})")
}

fn binary(op: BinOp, a: &str, b: &str) -> String {
    let truth = |cond: String| format!("({cond} ? 1.0f : 0.0f)");
    match op {
        BinOp::Add => format!("({a} + {b})"),
        BinOp::Sub => format!("({a} - {b})"),
        BinOp::Mul => format!("({a} * {b})"),
        BinOp::Div => format!("({a} / {b})"),
        BinOp::Pow => format!("powf({a}, {b})"),
        BinOp::Max => format!("fmaxf({a}, {b})"),
        BinOp::Min => format!("fminf({a}, {b})"),
        BinOp::Lt => truth(format!("{a} < {b}")),
        BinOp::Le => truth(format!("{a} <= {b}")),
        BinOp::Gt => truth(format!("{a} > {b}")),
        BinOp::Ge => truth(format!("{a} >= {b}")),
        BinOp::Eq => truth(format!("{a} == {b}")),
        BinOp::Ne => truth(format!("{a} != {b}")),
        BinOp::And => truth(format!("{a} != 0.0f && {b} != 0.0f")),
        BinOp::Or => truth(format!("{a} != 0.0f || {b} != 0.0f")),
    }
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
    }

    #[test]
    fn floor_operators_use_helpers() {
        let e = SymExpr::sym("i").floor_div(4.into()) + SymExpr::sym("i").modulo(4.into());
        let c = sym(&e, &mut |s| format!("p_{s}"));
        assert_eq!(c, "(dm_floordiv(p_i, 4) + dm_mod(p_i, 4))");
    }
}
