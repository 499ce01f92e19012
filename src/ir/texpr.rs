//! The tasklet expression language: scalar arithmetic over a tasklet's input connectors.
//!
//! Tasklets are never raw C: keeping them as a small typed tree lets the interpreter run them,
//! analyses inspect them and the C backend print them safely.
//!
//! # Compute type
//!
//! A tasklet computes in one floating-point type, its [`Precision`], decided by
//! [`Precision::of`] from the element types of the containers it reads and writes: `f64` as soon
//! as one of them is `f64` or an integer type (so integer indices, shapes and counts up to 2^53
//! stay exact), `f32` otherwise (`f32`, `bool` and the narrow float storage formats). Both backends call that one
//! function. Loads convert to the compute type, every intermediate result is a value of the
//! compute type (the interpreter rounds each one to `f32` in an `f32` tasklet, exactly like C
//! `float` arithmetic), comparisons and logic yield 1 or 0, and a store converts to the
//! container's type by the rules of [`super::scalar`] (integers truncate and wrap).

use super::data::DType;
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
    /// `conn[e0, e1, …]`: the element at computed indices inside the subset the connector's
    /// memlet covers (a range such as a whole lookup table), one index per memlet dimension,
    /// each relative to the subset's start (in steps of the range's step) and truncated toward
    /// zero to an integer. This is how data-dependent reads (Gather) are expressed; the memlet
    /// still states every element that *may* be read, so its volume is an upper bound.
    Element(String, Vec<TExpr>),
}

/// The floating-point type a tasklet computes in (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Precision {
    F32,
    F64,
}

impl Precision {
    /// The compute type of a tasklet whose edges carry containers of `dtypes`: `f64` when any
    /// is `f64` or an integer, else `f32`. The one place this rule is stated.
    pub fn of(dtypes: impl IntoIterator<Item = DType>) -> Precision {
        let wide = |d: DType| d == DType::F64 || d.is_int();
        if dtypes.into_iter().any(wide) {
            Precision::F64
        } else {
            Precision::F32
        }
    }

    /// `x` as a value of this type (rounded to the nearest `f32` for [`Precision::F32`]).
    pub fn round(self, x: f64) -> f64 {
        match self {
            Precision::F32 => f64::from(x as f32),
            Precision::F64 => x,
        }
    }
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
    /// Round half to even (C's `nearbyint` in the default rounding mode, ONNX's Round).
    Round,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
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
    /// C's `fmod`: the remainder of truncated division, with the sign of the dividend (exact).
    Fmod,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    /// Bitwise and, or, exclusive or of the operands as 64-bit two's-complement integers
    /// (truncated toward zero, saturating at the `i64` range, as a store to `int64` converts);
    /// a store to a narrower integer type then keeps the low bits, as C and numpy do.
    BitAnd,
    BitOr,
    BitXor,
}

/// The body of [`UnOp::apply`] and [`UnOp::apply_f64`]: one match whose arms read the same for
/// `f32` and `f64` (the methods of both types), after the type-specific `special` arms.
macro_rules! float_unary {
    ($op:expr, $x:ident, $($special:pat => $value:expr),+) => {
        match $op {
            $($special => $value,)+
            UnOp::Neg => -$x,
            UnOp::Abs => $x.abs(),
            UnOp::Exp => $x.exp(),
            UnOp::Log => $x.ln(),
            UnOp::Sqrt => $x.sqrt(),
            UnOp::Tanh => $x.tanh(),
            UnOp::Sigmoid => 1.0 / (1.0 + (-$x).exp()),
            UnOp::Floor => $x.floor(),
            UnOp::Ceil => $x.ceil(),
            UnOp::Recip => 1.0 / $x,
            UnOp::Round => $x.round_ties_even(),
            UnOp::Sin => $x.sin(),
            UnOp::Cos => $x.cos(),
            UnOp::Tan => $x.tan(),
            UnOp::Asin => $x.asin(),
            UnOp::Acos => $x.acos(),
            UnOp::Atan => $x.atan(),
            UnOp::Sinh => $x.sinh(),
            UnOp::Cosh => $x.cosh(),
            UnOp::Asinh => $x.asinh(),
            UnOp::Acosh => $x.acosh(),
            UnOp::Atanh => $x.atanh(),
        }
    };
}

impl UnOp {
    pub const ALL: [UnOp; 24] = [
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
        UnOp::Round,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Asin,
        UnOp::Acos,
        UnOp::Atan,
        UnOp::Sinh,
        UnOp::Cosh,
        UnOp::Asinh,
        UnOp::Acosh,
        UnOp::Atanh,
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
            UnOp::Round => "round",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tan => "tan",
            UnOp::Asin => "asin",
            UnOp::Acos => "acos",
            UnOp::Atan => "atan",
            UnOp::Sinh => "sinh",
            UnOp::Cosh => "cosh",
            UnOp::Asinh => "asinh",
            UnOp::Acosh => "acosh",
            UnOp::Atanh => "atanh",
        }
    }

    pub fn from_name(name: &str) -> Option<UnOp> {
        UnOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Applies the operation in single precision, as the generated C does.
    pub fn apply(self, x: f32) -> f32 {
        float_unary!(self, x, UnOp::Not => f32::from(x == 0.0), UnOp::Erf => libm::erff(x))
    }

    /// Applies the operation in double precision, as the generated C does for `f64` tasklets.
    pub fn apply_f64(self, x: f64) -> f64 {
        float_unary!(
            self,
            x,
            UnOp::Not => f64::from(u8::from(x == 0.0)),
            UnOp::Erf => libm::erf(x)
        )
    }

    /// Applies the operation in `precision` to a value of that type.
    pub fn apply_in(self, precision: Precision, x: f64) -> f64 {
        match precision {
            Precision::F32 => f64::from(self.apply(x as f32)),
            Precision::F64 => self.apply_f64(x),
        }
    }
}

impl BinOp {
    /// Infix symbol, or `None` for operators printed as function calls (`pow`, `max`, `min`,
    /// `fmod`, the bitwise ones).
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
            BinOp::Pow
            | BinOp::Max
            | BinOp::Min
            | BinOp::Fmod
            | BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor => return None,
        })
    }

    pub fn function_name(self) -> Option<&'static str> {
        match self {
            BinOp::Pow => Some("pow"),
            BinOp::Fmod => Some("fmod"),
            BinOp::Max => Some("max"),
            BinOp::Min => Some("min"),
            BinOp::BitAnd => Some("bitand"),
            BinOp::BitOr => Some("bitor"),
            BinOp::BitXor => Some("bitxor"),
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
            BinOp::Pow
            | BinOp::Max
            | BinOp::Min
            | BinOp::Fmod
            | BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor => 9,
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
            BinOp::Fmod => a % b,
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
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                self.apply_f64(f64::from(a), f64::from(b)) as f32
            }
        }
    }

    /// Applies the operation in double precision; comparisons yield 1.0 or 0.0.
    pub fn apply_f64(self, a: f64, b: f64) -> f64 {
        let truth = |c: bool| f64::from(u8::from(c));
        match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            BinOp::Pow => a.powf(b),
            BinOp::Fmod => a % b,
            BinOp::Max => a.max(b),
            BinOp::Min => a.min(b),
            BinOp::Lt => truth(a < b),
            BinOp::Le => truth(a <= b),
            BinOp::Gt => truth(a > b),
            BinOp::Ge => truth(a >= b),
            BinOp::Eq => truth(a == b),
            BinOp::Ne => truth(a != b),
            BinOp::And => truth(a != 0.0 && b != 0.0),
            BinOp::Or => truth(a != 0.0 || b != 0.0),
            // `as i64` truncates and saturates (NaN to 0), like the C helper `dm_to_i64`.
            BinOp::BitAnd => ((a as i64) & (b as i64)) as f64,
            BinOp::BitOr => ((a as i64) | (b as i64)) as f64,
            BinOp::BitXor => ((a as i64) ^ (b as i64)) as f64,
        }
    }

    /// Applies the operation in `precision` to values of that type.
    pub fn apply_in(self, precision: Precision, a: f64, b: f64) -> f64 {
        match precision {
            Precision::F32 => f64::from(self.apply(a as f32, b as f32)),
            Precision::F64 => self.apply_f64(a, b),
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

    /// `conn[indices…]`, an element read at computed indices.
    pub fn element(conn: &str, indices: Vec<TExpr>) -> TExpr {
        TExpr::Element(conn.to_string(), indices)
    }

    /// Input connectors the expression reads, plainly or by element, in first-use order.
    pub fn inputs(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let TExpr::Input(n) | TExpr::Element(n, _) = e {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        });
        out
    }

    /// Connectors read as a whole value (`TExpr::Input`): their memlets must be one element.
    pub fn plain_inputs(&self) -> Vec<String> {
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

    /// Every element read `(connector, number of indices)`, in visiting order.
    pub fn element_reads(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let TExpr::Element(n, idx) = e {
                out.push((n.clone(), idx.len()));
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
            TExpr::Element(_, idx) => idx.iter().for_each(|i| i.visit(f)),
        }
    }

    /// Rewrites bottom-up with `f` (used to rename connectors or substitute inputs).
    pub fn rewrite(&self, f: &dyn Fn(&TExpr) -> Option<TExpr>) -> TExpr {
        let rebuilt = match self {
            TExpr::Const(_) | TExpr::Input(_) | TExpr::Index(_) => self.clone(),
            TExpr::Unary(op, x) => TExpr::unary(*op, x.rewrite(f)),
            TExpr::Binary(op, a, b) => TExpr::binary(*op, a.rewrite(f), b.rewrite(f)),
            TExpr::Select(c, a, b) => TExpr::select(c.rewrite(f), a.rewrite(f), b.rewrite(f)),
            TExpr::Element(n, idx) => {
                TExpr::Element(n.clone(), idx.iter().map(|i| i.rewrite(f)).collect())
            }
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
            TExpr::Element(n, idx) => {
                let parts: Vec<String> = idx.iter().map(ToString::to_string).collect();
                write!(f, "{n}[{}]", parts.join(", "))
            }
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

    #[test]
    fn element_reads_print_and_list_their_connectors() {
        let e = TExpr::binary(
            BinOp::Add,
            TExpr::element(
                "t",
                vec![TExpr::input("i"), TExpr::Index(SymExpr::sym("d"))],
            ),
            TExpr::input("b"),
        );
        assert_eq!(e.to_string(), "t[i, idx(d)] + b");
        assert_eq!(e.inputs(), vec!["t", "i", "b"]);
        assert_eq!(e.plain_inputs(), vec!["i", "b"]);
        assert_eq!(e.element_reads(), vec![("t".to_string(), 2)]);
    }

    #[test]
    fn compute_type_widens_for_integers_and_doubles() {
        assert_eq!(Precision::of([DType::F32, DType::Bool]), Precision::F32);
        assert_eq!(Precision::of([DType::F16, DType::BF16]), Precision::F32);
        assert_eq!(Precision::of([]), Precision::F32);
        for wide in [DType::F64, DType::I64, DType::I32, DType::U8, DType::I4] {
            assert_eq!(Precision::of([DType::F32, wide]), Precision::F64);
        }
        // 2^24 + 1 is not an f32: an f32 tasklet rounds it, an f64 one keeps it.
        let x = 16_777_217.0;
        assert_eq!(Precision::F32.round(x), 16_777_216.0);
        assert_eq!(BinOp::Add.apply_in(Precision::F64, x, 1.0), 16_777_218.0);
    }
}
