//! Parameter domains and values: the ordered values a domain declares (`in [..]`, `lo..hi`,
//! `pow2(lo..hi)`), a value read as a parameter's type (from the recipe or from `--set`), and
//! a domain shown in messages. The rules are documented in [`super::params`].

use super::eval::eval_const as eval;
use super::params::{ParamType, CODE};
use super::value::{ParamValue, Value};
use crate::recipe::ast;
use crate::recipe::diag::Diagnostic;

/// The largest domain a parameter may declare.
pub const MAX_DOMAIN: usize = 4096;

/// A domain for messages: every value up to 8, else the first six, `…`, the last and the count.
pub fn show_domain(values: &[ParamValue]) -> String {
    let shown: Vec<String> = if values.len() <= 8 {
        values.iter().map(|v| v.to_string()).collect()
    } else {
        let mut s: Vec<String> = values[..6].iter().map(|v| v.to_string()).collect();
        s.push("…".into());
        s.push(format!(
            "{} ({} values)",
            values[values.len() - 1],
            values.len()
        ));
        s
    };
    format!("[{}]", shown.join(", "))
}

/// The integers `lo..=hi`; an error when empty or larger than [`MAX_DOMAIN`].
pub fn range_values(lo: i64, hi: i64) -> Result<Vec<i64>, String> {
    if lo > hi {
        return Err(format!("the range {lo}..{hi} is empty"));
    }
    let len = i128::from(hi) - i128::from(lo) + 1;
    if len > MAX_DOMAIN as i128 {
        return Err(format!(
            "the range {lo}..{hi} has {len} values, more than {MAX_DOMAIN}"
        ));
    }
    Ok((lo..=hi).collect())
}

/// The powers of two in `[lo, hi]` (`lo ≥ 1`); an error when there is none.
pub fn pow2_values(lo: i64, hi: i64) -> Result<Vec<i64>, String> {
    if lo < 1 {
        return Err(format!(
            "pow2({lo}..{hi}) needs a lower bound of at least 1"
        ));
    }
    let v: Vec<i64> = (0..63)
        .map(|k| 1i64 << k)
        .filter(|x| (lo..=hi).contains(x))
        .collect();
    match v.is_empty() {
        true => Err(format!("there is no power of two between {lo} and {hi}")),
        false => Ok(v),
    }
}

/// A `--set` value, read as the parameter's type: integers, floats, `true`/`false`, an enum
/// name with or without double quotes.
pub fn parse_set(ty: &ParamType, text: &str) -> Result<ParamValue, String> {
    let t = text.trim();
    let value = match ty {
        ParamType::Int => t.parse().map(Value::Int).ok(),
        ParamType::Float => t
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Value::Float),
        ParamType::Bool => t.parse().map(Value::Bool).ok(),
        ParamType::Enum(_) => {
            let unquoted = (t.strip_prefix('"').and_then(|s| s.strip_suffix('"'))).unwrap_or(t);
            Some(Value::Str(unquoted.to_string()))
        }
    };
    let value = value.ok_or_else(|| match ty {
        ParamType::Bool => format!("`{t}` is not `true` or `false`"),
        _ => format!("`{t}` is not {} value", ty.word()),
    })?;
    typed(ty, value)
}

/// `v` as a value of type `ty` (an integer is a float where one is expected).
pub fn typed(ty: &ParamType, v: Value) -> Result<ParamValue, String> {
    match (ty, v) {
        (ParamType::Int, Value::Int(i)) => Ok(ParamValue::Int(i)),
        (ParamType::Float, Value::Int(i)) => Ok(ParamValue::Float(i as f64)),
        (ParamType::Float, Value::Float(x)) => Ok(ParamValue::Float(x)),
        (ParamType::Bool, Value::Bool(b)) => Ok(ParamValue::Bool(b)),
        (ParamType::Enum(names), Value::Str(s)) if names.contains(&s) => Ok(ParamValue::Str(s)),
        (ParamType::Enum(names), Value::Str(s)) => {
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            Err(format!("{s:?} is not one of {}", quoted.join(", ")))
        }
        (ty, v) => Err(format!("{} parameter cannot be {}", ty.word(), v.kind())),
    }
}

/// The values of a declared domain, in order.
pub fn domain(ty: &ParamType, d: &ast::Domain) -> Result<Vec<ParamValue>, Diagnostic> {
    let (lo, hi, span, pow2) = match d {
        ast::Domain::List(items, span) => {
            let mut values: Vec<ParamValue> = Vec::new();
            for e in items {
                let v = constant(ty, e)?;
                if values.contains(&v) {
                    return Err(
                        Diagnostic::error(CODE, e.span, format!("{v} is listed twice"))
                            .label("already in the domain"),
                    );
                }
                values.push(v);
            }
            if values.is_empty() || values.len() > MAX_DOMAIN {
                return Err(
                    Diagnostic::error(CODE, *span, "a domain needs 1 to 4096 values")
                        .label(format!("{} values", values.len())),
                );
            }
            return Ok(values);
        }
        ast::Domain::Range { lo, hi, span } => (lo, hi, *span, false),
        ast::Domain::Pow2 { lo, hi, span } => (lo, hi, *span, true),
    };
    if *ty != ParamType::Int {
        let form = if pow2 { "pow2(lo..hi)" } else { "lo..hi" };
        return Err(
            Diagnostic::error(CODE, span, format!("{form} is a domain of integers"))
                .label(format!("this is {} parameter", ty.word()))
                .help("list the values instead: `in [0.25, 0.5, 1.0]`"),
        );
    }
    let bound = |e: &ast::Expr| match eval(e, &|_| None)? {
        Value::Int(i) => Ok(i),
        other => Err(Diagnostic::error(
            CODE,
            e.span,
            "a bound of an integer domain must be an integer",
        )
        .label(format!("this is {}", other.kind()))),
    };
    let (lo, hi) = (bound(lo)?, bound(hi)?);
    let values = match pow2 {
        true => pow2_values(lo, hi),
        false => range_values(lo, hi),
    };
    let values = values.map_err(|e| Diagnostic::error(CODE, span, e).label("this domain"))?;
    Ok(values.into_iter().map(ParamValue::Int).collect())
}

/// A constant expression of the parameter's type (no names are in scope).
pub fn constant(ty: &ParamType, e: &ast::Expr) -> Result<ParamValue, Diagnostic> {
    let v = eval(e, &|_| None)?;
    typed(ty, v).map_err(|msg| Diagnostic::error(CODE, e.span, msg).label("this value"))
}
