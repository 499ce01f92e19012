//! The tasklet expression language: scalar arithmetic over a tasklet's input connectors.
//!
//! Tasklets are never raw C: keeping them as a small typed tree lets the interpreter run them,
//! analyses inspect them and the C backend print them safely.

use super::sym::SymExpr;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A scalar expression evaluated once per tasklet execution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TExpr {
    /// A floating-point literal.
    Const(f64),
    /// The value read through an input connector.
    Input(String),
    /// An integer index expression (map parameters, symbols) used as a value.
    Index(SymExpr),
    Unary(UnOp, Box<TExpr>),
    Binary(BinOp, Box<TExpr>, Box<TExpr>),
    /// `select(cond, a, b)`: `a` where `cond` is non-zero, else `b`.
    Select(Box<TExpr>, Box<TExpr>, Box<TExpr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnOp {
    Neg,
    Not,
    Abs,
    Exp,
    Log,
    Sqrt,
    Tanh,
    Erf,
    Sigmoid,
    Floor,
    Ceil,
    Recip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Max,
    Min,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl UnOp {
    pub const ALL: [UnOp; 12] = [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Exp,
        UnOp::Log,
        UnOp::Sqrt,
        UnOp::Tanh,
        UnOp::Erf,
        UnOp::Sigmoid,
        UnOp::Floor,
        UnOp::Ceil,
        UnOp::Recip,
    ];

    /// Function-call name in the text form (`Neg` and `Not` print as prefix operators).
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
            UnOp::Exp => "exp",
            UnOp::Log => "log",
            UnOp::Sqrt => "sqrt",
            UnOp::Tanh => "tanh",
            UnOp::Erf => "erf",
            UnOp::Sigmoid => "sigmoid",
            UnOp::Floor => "floor",
            UnOp::Ceil => "ceil",
            UnOp::Recip => "recip",
        }
    }

    pub fn from_name(name: &str) -> Option<UnOp> {
        UnOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Applies the operation in single precision, as the generated C does.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            UnOp::Neg => -x,
            UnOp::Not => f32::from(x == 0.0),
            UnOp::Abs => x.abs(),
            UnOp::Exp => x.exp(),
            UnOp::Log => x.ln(),
            UnOp::Sqrt => x.sqrt(),
            UnOp::Tanh => x.tanh(),
            UnOp::Erf => libm::erff(x),
            UnOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnOp::Floor => x.floor(),
            UnOp::Ceil => x.ceil(),
            UnOp::Recip => 1.0 / x,
        }
    }
}

impl BinOp {
    /// Infix symbol, or `None` for operators printed as function calls (`pow`, `max`, `min`).
    pub fn symbol(self) -> Option<&'static str> {
        Some(match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Pow | BinOp::Max | BinOp::Min => return None,
        })
    }

    pub fn function_name(self) -> Option<&'static str> {
        match self {
            BinOp::Pow => Some("pow"),
            BinOp::Max => Some("max"),
            BinOp::Min => Some("min"),
            _ => None,
        }
    }

    /// Binding strength of infix operators; higher binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne => 3,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div => 6,
            BinOp::Pow | BinOp::Max | BinOp::Min => 9,
        }
    }

    /// Applies the operation in single precision; comparisons yield 1.0 or 0.0.
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            BinOp::Pow => a.powf(b),
            BinOp::Max => a.max(b),
            BinOp::Min => a.min(b),
            BinOp::Lt => f32::from(a < b),
            BinOp::Le => f32::from(a <= b),
            BinOp::Gt => f32::from(a > b),
            BinOp::Ge => f32::from(a >= b),
            BinOp::Eq => f32::from(a == b),
            BinOp::Ne => f32::from(a != b),
            BinOp::And => f32::from(a != 0.0 && b != 0.0),
            BinOp::Or => f32::from(a != 0.0 || b != 0.0),
        }
    }
}

impl TExpr {
    pub fn input(name: &str) -> TExpr {
        TExpr::Input(name.to_string())
    }

    pub fn unary(op: UnOp, x: TExpr) -> TExpr {
        TExpr::Unary(op, Box::new(x))
    }

    pub fn binary(op: BinOp, a: TExpr, b: TExpr) -> TExpr {
        TExpr::Binary(op, Box::new(a), Box::new(b))
    }

    pub fn select(c: TExpr, a: TExpr, b: TExpr) -> TExpr {
        TExpr::Select(Box::new(c), Box::new(a), Box::new(b))
    }

    /// Input connectors the expression reads, in first-use order.
    pub fn inputs(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let TExpr::Input(n) = e {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        });
        out
    }

    /// Calls `f` on every sub-expression, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&TExpr)) {
        f(self);
        match self {
            TExpr::Const(_) | TExpr::Input(_) | TExpr::Index(_) => {}
            TExpr::Unary(_, x) => x.visit(f),
            TExpr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            TExpr::Select(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
        }
    }

    /// Rewrites bottom-up with `f` (used to rename connectors or substitute inputs).
    pub fn rewrite(&self, f: &dyn Fn(&TExpr) -> Option<TExpr>) -> TExpr {
        let rebuilt = match self {
            TExpr::Const(_) | TExpr::Input(_) | TExpr::Index(_) => self.clone(),
            TExpr::Unary(op, x) => TExpr::unary(*op, x.rewrite(f)),
            TExpr::Binary(op, a, b) => TExpr::binary(*op, a.rewrite(f), b.rewrite(f)),
            TExpr::Select(c, a, b) => TExpr::select(c.rewrite(f), a.rewrite(f), b.rewrite(f)),
        };
        f(&rebuilt).unwrap_or(rebuilt)
    }

    /// Floating-point operations one evaluation performs (transcendentals count as one).
    pub fn flops(&self) -> u64 {
        let mut n = 0;
        self.visit(&mut |e| {
            if matches!(e, TExpr::Unary(..) | TExpr::Binary(..) | TExpr::Select(..)) {
                n += 1;
            }
        });
        n
    }

    fn precedence(&self) -> u8 {
        match self {
            TExpr::Binary(op, ..) => op.precedence(),
            TExpr::Const(c) if *c < 0.0 => 7,
            TExpr::Unary(UnOp::Neg | UnOp::Not, _) => 8,
            _ => 10,
        }
    }
}

/// Prints a float so that it parses back to the same value and always reads as a float.
pub fn format_float(v: f64) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        let s = format!("{v:?}");
        if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        }
    }
}

impl fmt::Display for TExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wrap = |f: &mut fmt::Formatter<'_>, e: &TExpr, min: u8| {
            if e.precedence() < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        };
        match self {
            TExpr::Const(v) => f.write_str(&format_float(*v)),
            TExpr::Input(n) => f.write_str(n),
            TExpr::Index(e) => write!(f, "idx({e})"),
            TExpr::Unary(UnOp::Neg, x) => {
                f.write_str("-")?;
                wrap(f, x, 8)
            }
            TExpr::Unary(UnOp::Not, x) => {
                f.write_str("!")?;
                wrap(f, x, 8)
            }
            TExpr::Unary(op, x) => write!(f, "{}({x})", op.name()),
            TExpr::Binary(op, a, b) => match op.symbol() {
                Some(sym) => {
                    let p = op.precedence();
                    wrap(f, a, p)?;
                    write!(f, " {sym} ")?;
                    wrap(f, b, p + 1)
                }
                None => write!(f, "{}({a}, {b})", op.function_name().unwrap_or("?")),
            },
            TExpr::Select(c, a, b) => write!(f, "select({c}, {a}, {b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_with_minimal_parentheses() {
        let e = TExpr::binary(
            BinOp::Mul,
            TExpr::binary(BinOp::Add, TExpr::input("a"), TExpr::Const(1.0)),
            TExpr::unary(
                UnOp::Erf,
                TExpr::binary(BinOp::Sub, TExpr::input("b"), TExpr::input("c")),
            ),
        );
        assert_eq!(e.to_string(), "(a + 1.0) * erf(b - c)");
        let s = TExpr::binary(
            BinOp::Sub,
            TExpr::input("a"),
            TExpr::binary(BinOp::Sub, TExpr::input("b"), TExpr::input("c")),
        );
        assert_eq!(s.to_string(), "a - (b - c)");
        assert_eq!(e.inputs(), vec!["a", "b", "c"]);
    }

    #[test]
    fn floats_always_print_as_floats() {
        assert_eq!(format_float(2.0), "2.0");
        assert_eq!(format_float(1e-30), "1e-30");
        assert_eq!(format_float(f64::NEG_INFINITY), "-inf");
    }
}
