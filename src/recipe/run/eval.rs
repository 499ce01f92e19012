//! Expressions: one evaluator for every [`ExprKind`], parameterised by what names, fields and
//! calls mean ([`Scope`]). The interpreter's scope sees variables, parameters, built-ins and the
//! program; [`eval_const`]'s sees only the names its caller gives (parameter defaults, domains
//! and constraints are evaluated with it before anything runs).
//!
//! Arithmetic is exact: integer overflow and division by zero are errors rather than wrapping,
//! `/` on integers floors (so `-7 / 2 == -4`, and `%` takes the divisor's sign), and an integer
//! meeting a float is promoted.

use super::failure::{runtime, Failure, Flow};
use super::value::Value;
use crate::recipe::ast::{self, BinaryOp, ExprKind, UnaryOp};
use crate::recipe::{Diagnostic, Span};

/// What names, fields and calls mean where an expression is evaluated.
pub trait Scope {
    fn name(&mut self, path: &ast::Path) -> Flow<Value>;
    /// `base.field`; the base is passed unevaluated so `baseline.dmd` needs no value for
    /// `baseline`.
    fn field(&mut self, base: &ast::Expr, field: &ast::Ident) -> Flow<Value>;
    fn call(&mut self, call: &ast::Call) -> Flow<Value>;
}

/// Evaluates `e` in `scope`.
pub fn eval<S: Scope + ?Sized>(scope: &mut S, e: &ast::Expr) -> Flow<Value> {
    match &e.kind {
        ExprKind::Int(i) => Ok(Value::Int(*i)),
        ExprKind::Float(x) => Ok(Value::Float(*x)),
        ExprKind::Bool(b) => Ok(Value::Bool(*b)),
        ExprKind::Str(s) => Ok(Value::Str(s.clone())),
        ExprKind::List(items) => {
            let values = items.iter().map(|i| eval(scope, i));
            Ok(Value::List(values.collect::<Flow<_>>()?))
        }
        ExprKind::Name(path) => scope.name(path),
        ExprKind::Wildcard => Err(runtime(e.span, "`_` only stands for \"any\" in patterns")),
        ExprKind::Field(base, field) => scope.field(base, field),
        ExprKind::Index(list, index) => {
            let l = eval(scope, list)?;
            let i = eval(scope, index)?;
            self::index(&l, &i, e.span)
        }
        ExprKind::Call(call) => scope.call(call),
        ExprKind::Unary(op, inner) => {
            let v = eval(scope, inner)?;
            unary(*op, v, e.span)
        }
        ExprKind::Binary(op @ (BinaryOp::And | BinaryOp::Or), a, b) => {
            // Short-circuit: the right side is evaluated only when it decides the result.
            let left = truth(&eval(scope, a)?, a.span)?;
            if left == (*op == BinaryOp::Or) {
                return Ok(Value::Bool(left));
            }
            Ok(Value::Bool(truth(&eval(scope, b)?, b.span)?))
        }
        ExprKind::Binary(op, a, b) => {
            let l = eval(scope, a)?;
            let r = eval(scope, b)?;
            binary(*op, &l, &r, e.span)
        }
    }
}

/// A boolean, or an error saying what was found instead.
pub fn truth(v: &Value, span: Span) -> Flow<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(runtime(
            span,
            format!("expected a boolean, found {} ({other})", other.kind()),
        )),
    }
}

/// Evaluates an expression that may only refer to the names `names` knows (parameters, for
/// defaults, domains and constraints): no program, no built-ins, no fields.
pub fn eval_const(
    e: &ast::Expr,
    names: &dyn Fn(&ast::Path) -> Option<Value>,
) -> Result<Value, Diagnostic> {
    struct Const<'n>(&'n dyn Fn(&ast::Path) -> Option<Value>);
    impl Scope for Const<'_> {
        fn name(&mut self, path: &ast::Path) -> Flow<Value> {
            (self.0)(path).ok_or_else(|| {
                Failure::definite(
                    Diagnostic::error(
                        super::failure::UNKNOWN_NAME,
                        path.span,
                        format!("`{}` is not known here", path.text()),
                    )
                    .label("not a parameter"),
                )
            })
        }
        fn field(&mut self, base: &ast::Expr, field: &ast::Ident) -> Flow<Value> {
            Err(runtime(
                base.span.to(field.span),
                "a constant expression cannot read fields",
            ))
        }
        fn call(&mut self, call: &ast::Call) -> Flow<Value> {
            Err(runtime(
                call.span,
                format!(
                    "`{}` cannot be called in a constant expression",
                    call.callee.text()
                ),
            ))
        }
    }
    eval(&mut Const(names), e).map_err(Failure::into_diagnostic)
}

/// `-v`, `not v`.
pub fn unary(op: UnaryOp, v: Value, span: Span) -> Flow<Value> {
    match (op, v) {
        (UnaryOp::Neg, Value::Int(i)) => (i.checked_neg().map(Value::Int))
            .ok_or_else(|| runtime(span, format!("-({i}) overflows a 64-bit integer"))),
        (UnaryOp::Neg, Value::Float(x)) => Ok(Value::Float(-x)),
        (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnaryOp::Neg, other) => Err(runtime(
            span,
            format!("cannot negate {} ({other})", other.kind()),
        )),
        (UnaryOp::Not, other) => Err(runtime(
            span,
            format!("`not` needs a boolean, found {} ({other})", other.kind()),
        )),
    }
}

/// `l[i]`, bounds-checked.
pub fn index(list: &Value, i: &Value, span: Span) -> Flow<Value> {
    let (Value::List(items), Value::Int(k)) = (list, i) else {
        return Err(runtime(
            span,
            format!(
                "indexing needs a list and an integer, found {} and {}",
                list.kind(),
                i.kind()
            ),
        ));
    };
    (usize::try_from(*k).ok().and_then(|k| items.get(k)).cloned()).ok_or_else(|| {
        runtime(
            span,
            format!(
                "index {k} is out of range for a list of {} entries",
                items.len()
            ),
        )
    })
}

/// Two numbers, with an integer promoted when it meets a float.
enum Num {
    Ints(i64, i64),
    Floats(f64, f64),
}

fn numbers(l: &Value, r: &Value) -> Option<Num> {
    match (l, r) {
        (Value::Int(a), Value::Int(b)) => Some(Num::Ints(*a, *b)),
        (Value::Int(a), Value::Float(b)) => Some(Num::Floats(*a as f64, *b)),
        (Value::Float(a), Value::Int(b)) => Some(Num::Floats(*a, *b as f64)),
        (Value::Float(a), Value::Float(b)) => Some(Num::Floats(*a, *b)),
        _ => None,
    }
}

/// `l op r` for every operator but the short-circuiting `and`/`or` (which [`eval`] handles;
/// here they take two booleans).
pub fn binary(op: BinaryOp, l: &Value, r: &Value, span: Span) -> Flow<Value> {
    let mismatch = || {
        runtime(
            span,
            format!(
                "`{}` does not apply to {} ({l}) and {} ({r})",
                op.symbol(),
                l.kind(),
                r.kind()
            ),
        )
    };
    match op {
        BinaryOp::And | BinaryOp::Or => {
            let (a, b) = (truth(l, span)?, truth(r, span)?);
            Ok(Value::Bool(if op == BinaryOp::And {
                a && b
            } else {
                a || b
            }))
        }
        BinaryOp::Eq => Ok(Value::Bool(equal(l, r))),
        BinaryOp::Ne => Ok(Value::Bool(!equal(l, r))),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let ord = match (numbers(l, r), l, r) {
                (Some(Num::Ints(a, b)), ..) => a.partial_cmp(&b),
                (Some(Num::Floats(a, b)), ..) => a.partial_cmp(&b),
                (None, Value::Str(a), Value::Str(b)) => a.partial_cmp(b),
                _ => return Err(mismatch()),
            };
            let holds = ord.is_some_and(|o| match op {
                BinaryOp::Lt => o.is_lt(),
                BinaryOp::Le => o.is_le(),
                BinaryOp::Gt => o.is_gt(),
                _ => o.is_ge(),
            });
            Ok(Value::Bool(holds))
        }
        BinaryOp::Add => match (l, r) {
            (Value::Str(a), Value::Str(b)) => Ok(Value::Str(format!("{a}{b}"))),
            (Value::List(a), Value::List(b)) => Ok(Value::List([a.clone(), b.clone()].concat())),
            _ => arithmetic(op, l, r, span).unwrap_or_else(|| Err(mismatch())),
        },
        BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
            arithmetic(op, l, r, span).unwrap_or_else(|| Err(mismatch()))
        }
    }
}

/// Equality: numbers compare by value across int and float; everything else structurally.
fn equal(l: &Value, r: &Value) -> bool {
    match numbers(l, r) {
        Some(Num::Ints(a, b)) => a == b,
        Some(Num::Floats(a, b)) => a == b,
        None => match (l, r) {
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
            }
            _ => l == r,
        },
    }
}

/// `+ - * / %` on numbers; `None` when an operand is not a number.
fn arithmetic(op: BinaryOp, l: &Value, r: &Value, span: Span) -> Option<Flow<Value>> {
    let overflow = || {
        runtime(
            span,
            format!("{l} {} {r} overflows a 64-bit integer", op.symbol()),
        )
    };
    let by_zero = || runtime(span, format!("{l} {} {r} divides by zero", op.symbol()));
    Some(match numbers(l, r)? {
        Num::Ints(a, b) => {
            let v = match op {
                BinaryOp::Add => a.checked_add(b),
                BinaryOp::Sub => a.checked_sub(b),
                BinaryOp::Mul => a.checked_mul(b),
                _ if b == 0 => return Some(Err(by_zero())),
                BinaryOp::Div => floor_div(a, b),
                _ => floor_rem(a, b),
            };
            v.map(Value::Int).ok_or_else(overflow)
        }
        Num::Floats(a, b) => match op {
            BinaryOp::Add => Ok(Value::Float(a + b)),
            BinaryOp::Sub => Ok(Value::Float(a - b)),
            BinaryOp::Mul => Ok(Value::Float(a * b)),
            _ if b == 0.0 => Err(by_zero()),
            BinaryOp::Div => Ok(Value::Float(a / b)),
            _ => Ok(Value::Float(a - b * (a / b).floor())),
        },
    })
}

fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn floor_rem(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::ast::{Expr, Ident, Path};

    fn e(kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: Span::default(),
        }
    }
    fn int(i: i64) -> Expr {
        e(ExprKind::Int(i))
    }
    fn bin(op: BinaryOp, a: Expr, b: Expr) -> Expr {
        e(ExprKind::Binary(op, Box::new(a), Box::new(b)))
    }
    fn name(n: &str) -> Expr {
        e(ExprKind::Name(Path {
            segments: vec![Ident {
                name: n.into(),
                span: Span::default(),
            }],
            span: Span::default(),
        }))
    }
    fn none(_: &Path) -> Option<Value> {
        None
    }

    #[test]
    fn integer_division_floors_and_remainder_follows_the_divisor() {
        let v = |op, a, b| eval_const(&bin(op, int(a), int(b)), &none).map_err(|d| d.message);
        assert_eq!(v(BinaryOp::Div, -7, 2), Ok(Value::Int(-4)));
        assert_eq!(v(BinaryOp::Div, 7, 2), Ok(Value::Int(3)));
        assert_eq!(v(BinaryOp::Rem, -7, 2), Ok(Value::Int(1)));
        assert_eq!(v(BinaryOp::Rem, 7, -2), Ok(Value::Int(-1)));
        assert!(v(BinaryOp::Div, 1, 0)
            .unwrap_err()
            .contains("divides by zero"));
        assert!(v(BinaryOp::Mul, i64::MAX, 2)
            .unwrap_err()
            .contains("overflows"));
        assert!(v(BinaryOp::Div, i64::MIN, -1)
            .unwrap_err()
            .contains("overflows"));
    }

    #[test]
    fn ints_meeting_floats_are_promoted_and_compare_by_value() {
        let half = e(ExprKind::Float(0.5));
        let got = eval_const(&bin(BinaryOp::Mul, int(3), half), &none);
        assert_eq!(got, Ok(Value::Float(1.5)));
        let eq = eval_const(&bin(BinaryOp::Eq, int(2), e(ExprKind::Float(2.0))), &none);
        assert_eq!(eq, Ok(Value::Bool(true)));
    }

    #[test]
    fn names_come_from_the_caller_and_unknown_ones_are_errors() {
        let tile = |p: &Path| (p.text() == "tile").then_some(Value::Int(16));
        let got = eval_const(&bin(BinaryOp::Mul, name("tile"), int(4)), &tile);
        assert_eq!(got, Ok(Value::Int(64)));
        let err = eval_const(&name("cols"), &tile).unwrap_err();
        assert_eq!(err.code, super::super::failure::UNKNOWN_NAME);
    }

    #[test]
    fn and_or_short_circuit() {
        // `false and <unknown>` never looks at the unknown name.
        let f = bin(BinaryOp::And, e(ExprKind::Bool(false)), name("nope"));
        assert_eq!(eval_const(&f, &none), Ok(Value::Bool(false)));
        let t = bin(BinaryOp::Or, e(ExprKind::Bool(true)), name("nope"));
        assert_eq!(eval_const(&t, &none), Ok(Value::Bool(true)));
        assert!(eval_const(&bin(BinaryOp::Or, int(1), int(2)), &none).is_err());
    }

    #[test]
    fn indexing_is_bounds_checked() {
        let list = e(ExprKind::List(vec![int(4), int(5)]));
        let at = |i| e(ExprKind::Index(Box::new(list.clone()), Box::new(int(i))));
        assert_eq!(eval_const(&at(1), &none), Ok(Value::Int(5)));
        let err = eval_const(&at(2), &none).unwrap_err();
        assert!(err.message.contains("out of range"), "{}", err.message);
        assert!(eval_const(&at(-1), &none).is_err());
    }

    #[test]
    fn mismatched_operands_are_runtime_errors() {
        let s = e(ExprKind::Str("a".into()));
        let err = eval_const(&bin(BinaryOp::Sub, s, int(1)), &none).unwrap_err();
        assert_eq!(err.code, super::super::failure::RUNTIME);
        assert!(err.message.contains("a string"), "{}", err.message);
    }
}
