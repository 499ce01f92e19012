//! Symbolic integer expressions: shapes, map ranges and memlet indices.
//!
//! Expressions are kept in a canonical form by [`SymExpr::simplify`]: sums and products are
//! flattened, constants folded and like terms collected, so two affine expressions that are equal
//! compare equal. Division and modulo are *floor* division and modulo (Python semantics), which is
//! what index arithmetic on non-negative values needs and what the C backend reproduces.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A symbolic integer expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SymExpr {
    Int(i64),
    Sym(String),
    Add(Vec<SymExpr>),
    Mul(Vec<SymExpr>),
    FloorDiv(Box<SymExpr>, Box<SymExpr>),
    Mod(Box<SymExpr>, Box<SymExpr>),
    Min(Box<SymExpr>, Box<SymExpr>),
    Max(Box<SymExpr>, Box<SymExpr>),
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SymError {
    #[error("symbol `{0}` has no value")]
    Unbound(String),
    #[error("division by zero in `{0}`")]
    DivByZero(String),
    #[error("integer overflow in `{0}`")]
    Overflow(String),
}

/// Values bound to symbols during evaluation.
pub type SymEnv = BTreeMap<String, i64>;

impl SymExpr {
    pub fn int(v: i64) -> Self {
        SymExpr::Int(v)
    }

    pub fn sym(name: impl Into<String>) -> Self {
        SymExpr::Sym(name.into())
    }

    pub fn floor_div(self, rhs: SymExpr) -> Self {
        SymExpr::FloorDiv(Box::new(self), Box::new(rhs)).simplify()
    }

    pub fn modulo(self, rhs: SymExpr) -> Self {
        SymExpr::Mod(Box::new(self), Box::new(rhs)).simplify()
    }

    pub fn min(self, rhs: SymExpr) -> Self {
        SymExpr::Min(Box::new(self), Box::new(rhs)).simplify()
    }

    pub fn max(self, rhs: SymExpr) -> Self {
        SymExpr::Max(Box::new(self), Box::new(rhs)).simplify()
    }

    /// The constant value, if the expression is a literal.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            SymExpr::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// Evaluates with every symbol bound in `env`.
    pub fn eval(&self, env: &SymEnv) -> Result<i64, SymError> {
        self.eval_with(&|name| env.get(name).copied())
    }

    /// Evaluates, looking symbols up through `lookup`.
    pub fn eval_with(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, SymError> {
        let overflow = || SymError::Overflow(self.to_string());
        Ok(match self {
            SymExpr::Int(v) => *v,
            SymExpr::Sym(s) => lookup(s).ok_or_else(|| SymError::Unbound(s.clone()))?,
            SymExpr::Add(terms) => terms.iter().try_fold(0i64, |acc, t| {
                acc.checked_add(t.eval_with(lookup)?).ok_or_else(overflow)
            })?,
            SymExpr::Mul(terms) => terms.iter().try_fold(1i64, |acc, t| {
                acc.checked_mul(t.eval_with(lookup)?).ok_or_else(overflow)
            })?,
            SymExpr::FloorDiv(a, b) => {
                let (a, b) = (a.eval_with(lookup)?, b.eval_with(lookup)?);
                floor_div_int(a, b).ok_or_else(|| SymError::DivByZero(self.to_string()))?
            }
            SymExpr::Mod(a, b) => {
                let (a, b) = (a.eval_with(lookup)?, b.eval_with(lookup)?);
                floor_mod_int(a, b).ok_or_else(|| SymError::DivByZero(self.to_string()))?
            }
            SymExpr::Min(a, b) => a.eval_with(lookup)?.min(b.eval_with(lookup)?),
            SymExpr::Max(a, b) => a.eval_with(lookup)?.max(b.eval_with(lookup)?),
        })
    }

    /// Replaces every occurrence of symbol `name` with `value`, then simplifies.
    pub fn substitute(&self, name: &str, value: &SymExpr) -> SymExpr {
        self.substitute_all(&|s| (s == name).then(|| value.clone()))
    }

    /// Replaces symbols for which `f` returns a value, then simplifies.
    pub fn substitute_all(&self, f: &dyn Fn(&str) -> Option<SymExpr>) -> SymExpr {
        self.map_syms(f).simplify()
    }

    fn map_syms(&self, f: &dyn Fn(&str) -> Option<SymExpr>) -> SymExpr {
        let bx = |e: &SymExpr| Box::new(e.map_syms(f));
        match self {
            SymExpr::Int(_) => self.clone(),
            SymExpr::Sym(s) => f(s).unwrap_or_else(|| self.clone()),
            SymExpr::Add(t) => SymExpr::Add(t.iter().map(|e| e.map_syms(f)).collect()),
            SymExpr::Mul(t) => SymExpr::Mul(t.iter().map(|e| e.map_syms(f)).collect()),
            SymExpr::FloorDiv(a, b) => SymExpr::FloorDiv(bx(a), bx(b)),
            SymExpr::Mod(a, b) => SymExpr::Mod(bx(a), bx(b)),
            SymExpr::Min(a, b) => SymExpr::Min(bx(a), bx(b)),
            SymExpr::Max(a, b) => SymExpr::Max(bx(a), bx(b)),
        }
    }

    /// Every symbol the expression mentions, sorted.
    pub fn free_symbols(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_symbols(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_symbols(&self, out: &mut Vec<String>) {
        match self {
            SymExpr::Int(_) => {}
            SymExpr::Sym(s) => out.push(s.clone()),
            SymExpr::Add(t) | SymExpr::Mul(t) => t.iter().for_each(|e| e.collect_symbols(out)),
            SymExpr::FloorDiv(a, b)
            | SymExpr::Mod(a, b)
            | SymExpr::Min(a, b)
            | SymExpr::Max(a, b) => {
                a.collect_symbols(out);
                b.collect_symbols(out);
            }
        }
    }

    pub fn mentions(&self, name: &str) -> bool {
        self.free_symbols().iter().any(|s| s == name)
    }

    /// Canonical form: flattened, constants folded, like terms collected, terms sorted.
    pub fn simplify(&self) -> SymExpr {
        Poly::from_expr(self).into_expr()
    }

    /// If the expression is affine in `vars` (`Σ cᵢ·varᵢ + rest`, with `rest` free of them),
    /// returns the integer coefficients and the rest.
    pub fn affine_in(&self, vars: &[&str]) -> Option<(BTreeMap<String, i64>, SymExpr)> {
        let poly = Poly::from_expr(self);
        let mut coeffs = BTreeMap::new();
        let mut rest = Poly::default();
        for (mono, c) in poly.terms {
            let hits: Vec<_> = mono.iter().filter(|a| a.mentions_any(vars)).collect();
            match hits.as_slice() {
                [] => {
                    rest.terms.insert(mono, c);
                }
                [SymExpr::Sym(v)] if mono.len() == 1 => {
                    coeffs.insert(v.clone(), c);
                }
                _ => return None,
            }
        }
        Some((coeffs, rest.into_expr()))
    }

    fn mentions_any(&self, vars: &[&str]) -> bool {
        self.free_symbols()
            .iter()
            .any(|s| vars.contains(&s.as_str()))
    }

    /// Precedence for printing: 0 sum, 1 product, 2 atom.
    fn precedence(&self) -> u8 {
        match self {
            SymExpr::Add(_) => 0,
            SymExpr::Mul(_) | SymExpr::FloorDiv(..) | SymExpr::Mod(..) => 1,
            SymExpr::Int(v) if *v < 0 => 0,
            _ => 2,
        }
    }
}

/// Floor modulo: the result has the sign of the divisor.
/// `a // b` rounded toward negative infinity, as the IR's floor division means it (`None` when
/// `b` is 0): the one integer rule symbolic folding, evaluation and the interpreter share.
pub fn floor_div_int(a: i64, b: i64) -> Option<i64> {
    (b != 0).then(|| a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0))
}

/// `a mod b` with the sign of `b` (`None` when `b` is 0), the remainder of [`floor_div_int`].
pub fn floor_mod_int(a: i64, b: i64) -> Option<i64> {
    (b != 0).then(|| floor_mod(a, b))
}

fn floor_mod(a: i64, b: i64) -> i64 {
    let r = a % b;
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

/// Sum of monomials; a monomial is a sorted product of atoms (symbols or opaque sub-terms).
#[derive(Default, Debug)]
struct Poly {
    terms: BTreeMap<Vec<SymExpr>, i64>,
}

impl Poly {
    fn constant(v: i64) -> Self {
        let mut p = Poly::default();
        if v != 0 {
            p.terms.insert(Vec::new(), v);
        }
        p
    }

    fn atom(e: SymExpr) -> Self {
        let mut p = Poly::default();
        p.terms.insert(vec![e], 1);
        p
    }

    fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    fn add(mut self, other: Poly) -> Poly {
        for (m, c) in other.terms {
            let e = self.terms.entry(m).or_insert(0);
            *e = e.wrapping_add(c);
        }
        self.terms.retain(|_, c| *c != 0);
        self
    }

    fn mul(self, other: &Poly) -> Poly {
        let mut out = Poly::default();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                let mut m: Vec<SymExpr> = m1.iter().chain(m2).cloned().collect();
                m.sort();
                let mut single = Poly::default();
                single.terms.insert(m, c1.wrapping_mul(*c2));
                out = out.add(single);
            }
        }
        out
    }

    fn from_expr(e: &SymExpr) -> Poly {
        match e {
            SymExpr::Int(v) => Poly::constant(*v),
            SymExpr::Sym(_) => Poly::atom(e.clone()),
            SymExpr::Add(t) => t
                .iter()
                .fold(Poly::default(), |acc, x| acc.add(Poly::from_expr(x))),
            SymExpr::Mul(t) => t
                .iter()
                .fold(Poly::constant(1), |acc, x| acc.mul(&Poly::from_expr(x))),
            SymExpr::FloorDiv(a, b) => Self::binary(a, b, e, floor_div_int),
            SymExpr::Mod(a, b) => Self::binary(a, b, e, floor_mod_int),
            SymExpr::Min(a, b) => Self::binary(a, b, e, |a, b| Some(a.min(b))),
            SymExpr::Max(a, b) => Self::binary(a, b, e, |a, b| Some(a.max(b))),
        }
    }

    /// Folds a non-polynomial operator when both sides are constant; otherwise keeps it as an
    /// opaque atom with simplified operands (plus the identities `x // 1 = x`, `x % 1 = 0`,
    /// `min(x, x) = max(x, x) = x`).
    fn binary(
        a: &SymExpr,
        b: &SymExpr,
        whole: &SymExpr,
        fold: impl Fn(i64, i64) -> Option<i64>,
    ) -> Poly {
        let (pa, pb) = (Poly::from_expr(a), Poly::from_expr(b));
        if let (Some(x), Some(y)) = (pa.as_const(), pb.as_const()) {
            if let Some(v) = fold(x, y) {
                return Poly::constant(v);
            }
        }
        let (sa, sb) = (Box::new(pa.into_expr()), Box::new(pb.into_expr()));
        let rebuilt = match whole {
            SymExpr::FloorDiv(..) if *sb == SymExpr::Int(1) => return Poly::from_expr(&sa),
            SymExpr::Mod(..) if *sb == SymExpr::Int(1) => return Poly::constant(0),
            SymExpr::Min(..) | SymExpr::Max(..) if sa == sb => return Poly::from_expr(&sa),
            SymExpr::FloorDiv(..) => SymExpr::FloorDiv(sa, sb),
            SymExpr::Mod(..) => SymExpr::Mod(sa, sb),
            SymExpr::Min(..) => SymExpr::Min(sa, sb),
            _ => SymExpr::Max(sa, sb),
        };
        Poly::atom(rebuilt)
    }

    fn into_expr(self) -> SymExpr {
        let mut constant = 0;
        let mut terms: Vec<SymExpr> = Vec::new();
        for (mono, c) in self.terms {
            if mono.is_empty() {
                constant = c;
                continue;
            }
            let mut factors = Vec::new();
            if c != 1 {
                factors.push(SymExpr::Int(c));
            }
            factors.extend(mono);
            terms.push(if factors.len() == 1 {
                factors.pop().expect("one factor")
            } else {
                SymExpr::Mul(factors)
            });
        }
        if constant != 0 || terms.is_empty() {
            terms.push(SymExpr::Int(constant));
        }
        if terms.len() == 1 {
            terms.pop().expect("one term")
        } else {
            SymExpr::Add(terms)
        }
    }
}

impl From<i64> for SymExpr {
    fn from(v: i64) -> Self {
        SymExpr::Int(v)
    }
}

impl From<i32> for SymExpr {
    fn from(v: i32) -> Self {
        SymExpr::Int(i64::from(v))
    }
}

impl From<&SymExpr> for SymExpr {
    fn from(v: &SymExpr) -> Self {
        v.clone()
    }
}

impl From<usize> for SymExpr {
    fn from(v: usize) -> Self {
        SymExpr::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<&str> for SymExpr {
    fn from(v: &str) -> Self {
        SymExpr::Sym(v.to_string())
    }
}

macro_rules! sym_binop {
    ($trait:ident, $method:ident, $build:expr) => {
        impl<T: Into<SymExpr>> std::ops::$trait<T> for SymExpr {
            type Output = SymExpr;
            fn $method(self, rhs: T) -> SymExpr {
                let build: fn(SymExpr, SymExpr) -> SymExpr = $build;
                build(self, rhs.into()).simplify()
            }
        }
        impl<T: Into<SymExpr>> std::ops::$trait<T> for &SymExpr {
            type Output = SymExpr;
            fn $method(self, rhs: T) -> SymExpr {
                std::ops::$trait::$method(self.clone(), rhs)
            }
        }
    };
}

sym_binop!(Add, add, |a, b| SymExpr::Add(vec![a, b]));
sym_binop!(Sub, sub, |a, b| SymExpr::Add(vec![
    a,
    SymExpr::Mul(vec![SymExpr::Int(-1), b])
]));
sym_binop!(Mul, mul, |a, b| SymExpr::Mul(vec![a, b]));

impl fmt::Display for SymExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wrap = |f: &mut fmt::Formatter<'_>, e: &SymExpr, min: u8| {
            if e.precedence() < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        };
        match self {
            SymExpr::Int(v) => write!(f, "{v}"),
            SymExpr::Sym(s) => write!(f, "{s}"),
            SymExpr::Add(t) => {
                for (i, e) in t.iter().enumerate() {
                    match (i, negated(e)) {
                        (0, _) => wrap(f, e, 0)?,
                        (_, Some(pos)) => {
                            f.write_str(" - ")?;
                            wrap(f, &pos, 1)?;
                        }
                        (_, None) => {
                            f.write_str(" + ")?;
                            wrap(f, e, 1)?;
                        }
                    }
                }
                Ok(())
            }
            SymExpr::Mul(t) => {
                for (i, e) in t.iter().enumerate() {
                    if i > 0 {
                        f.write_str("*")?;
                    }
                    wrap(f, e, 2)?;
                }
                Ok(())
            }
            SymExpr::FloorDiv(a, b) => {
                wrap(f, a, 1)?;
                f.write_str(" / ")?;
                wrap(f, b, 2)
            }
            SymExpr::Mod(a, b) => {
                wrap(f, a, 1)?;
                f.write_str(" % ")?;
                wrap(f, b, 2)
            }
            SymExpr::Min(a, b) => write!(f, "min({a}, {b})"),
            SymExpr::Max(a, b) => write!(f, "max({a}, {b})"),
        }
    }
}

/// `-x` for a term of the form `-c·x` or `-c`, so sums print as `a - b`.
fn negated(e: &SymExpr) -> Option<SymExpr> {
    match e {
        SymExpr::Int(v) if *v < 0 => Some(SymExpr::Int(-v)),
        SymExpr::Mul(t) => match t.first() {
            Some(SymExpr::Int(c)) if *c < 0 => {
                let mut rest = t[1..].to_vec();
                if *c != -1 {
                    rest.insert(0, SymExpr::Int(-c));
                }
                Some(if rest.len() == 1 {
                    rest.pop().expect("one")
                } else {
                    SymExpr::Mul(rest)
                })
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: &str) -> SymExpr {
        SymExpr::sym(n)
    }

    #[test]
    fn collects_like_terms() {
        let e = (s("i") * 4 + s("j")) + (s("i") * 2) - 3;
        assert_eq!(e.to_string(), "6*i + j - 3");
        assert_eq!((s("n") - s("n")).to_string(), "0");
    }

    #[test]
    fn evaluates_floor_semantics() {
        let env: SymEnv = [("a".to_string(), -7)].into();
        assert_eq!(s("a").floor_div(2.into()).eval(&env), Ok(-4));
        assert_eq!(s("a").modulo(2.into()).eval(&env), Ok(1));
        assert_eq!(
            s("a").floor_div(0.into()).eval(&env),
            Err(SymError::DivByZero("a / 0".into()))
        );
        assert_eq!(s("b").eval(&env), Err(SymError::Unbound("b".into())));
    }

    #[test]
    fn substitution_and_affine_form() {
        let e = s("i") * 3 + s("j") + s("n");
        let sub = e.substitute("i", &(s("ii") * 32 + s("it")));
        assert_eq!(sub.to_string(), "96*ii + 3*it + j + n");
        let (coeffs, rest) = sub.affine_in(&["ii", "it", "j"]).expect("affine");
        assert_eq!(coeffs["ii"], 96);
        assert_eq!(coeffs["it"], 3);
        assert_eq!(rest, s("n"));
        assert!((s("i") * s("j")).affine_in(&["i"]).is_none());
    }

    #[test]
    fn folds_constants_in_opaque_operators() {
        assert_eq!(SymExpr::int(7).floor_div(2.into()), SymExpr::Int(3));
        assert_eq!(s("x").floor_div(1.into()), s("x"));
        assert_eq!(s("x").min(s("x")), s("x"));
        assert_eq!(SymExpr::int(3).max(9.into()), SymExpr::Int(9));
    }
}
