//! Subsets of data containers: per dimension either one index or a strided range.
//!
//! A memlet's subset says exactly which elements move. Inside a map body subsets are written in
//! terms of the map parameters; [`Subset::propagate`] computes what a whole map moves, which is
//! the subset on the map's outer memlets.

use super::sym::{SymEnv, SymError, SymExpr};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A half-open range `start:end` with a positive step (printed `start:end:step` when step ≠ 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Range {
    pub start: SymExpr,
    pub end: SymExpr,
    pub step: SymExpr,
}

impl Range {
    pub fn new(start: impl Into<SymExpr>, end: impl Into<SymExpr>) -> Self {
        Range {
            start: start.into(),
            end: end.into(),
            step: SymExpr::Int(1),
        }
    }

    /// `0:extent`
    pub fn upto(extent: impl Into<SymExpr>) -> Self {
        Range::new(0, extent)
    }

    /// Number of points: `ceil((end - start) / step)`, never negative when evaluated.
    pub fn len(&self) -> SymExpr {
        if self.step == SymExpr::Int(1) {
            (&self.end - &self.start).simplify()
        } else {
            (&self.end - &self.start + &self.step - 1).floor_div(self.step.clone())
        }
    }

    /// Concrete `(start, end, step)`; `step` must be positive.
    pub fn eval(&self, env: &SymEnv) -> Result<(i64, i64, i64), SymError> {
        Ok((
            self.start.eval(env)?,
            self.end.eval(env)?,
            self.step.eval(env)?,
        ))
    }

    pub fn map_exprs(&self, f: &dyn Fn(&SymExpr) -> SymExpr) -> Range {
        Range {
            start: f(&self.start),
            end: f(&self.end),
            step: f(&self.step),
        }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.start, self.end)?;
        if self.step != SymExpr::Int(1) {
            write!(f, ":{}", self.step)?;
        }
        Ok(())
    }
}

/// One dimension of a subset.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dim {
    Index(SymExpr),
    Range(Range),
}

impl Dim {
    pub fn len(&self) -> SymExpr {
        match self {
            Dim::Index(_) => SymExpr::Int(1),
            Dim::Range(r) => r.len(),
        }
    }

    /// The lowest index this dimension touches.
    pub fn first(&self) -> &SymExpr {
        match self {
            Dim::Index(e) => e,
            Dim::Range(r) => &r.start,
        }
    }

    pub fn map_exprs(&self, f: &dyn Fn(&SymExpr) -> SymExpr) -> Dim {
        match self {
            Dim::Index(e) => Dim::Index(f(e)),
            Dim::Range(r) => Dim::Range(r.map_exprs(f)),
        }
    }

    /// The half-open interval of indices this dimension covers (its hull, ignoring the step),
    /// when its bounds are constants.
    fn interval(&self) -> Option<(i64, i64)> {
        match self {
            Dim::Index(e) => e.as_int().map(|i| (i, i + 1)),
            Dim::Range(r) => Some((r.start.as_int()?, r.end.as_int()?)),
        }
    }

    pub fn free_symbols(&self) -> Vec<String> {
        match self {
            Dim::Index(e) => e.free_symbols(),
            Dim::Range(r) => [&r.start, &r.end, &r.step]
                .iter()
                .flat_map(|e| e.free_symbols())
                .collect(),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Index(e) => write!(f, "{e}"),
            Dim::Range(r) => write!(f, "{r}"),
        }
    }
}

/// A subset of an n-dimensional container; a scalar container has zero dimensions.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Subset(pub Vec<Dim>);

/// A map parameter and its symbolic bounds, used when propagating subsets.
pub struct ParamBounds<'a> {
    pub name: &'a str,
    pub range: &'a Range,
}

impl Subset {
    /// The whole of a container with this shape.
    pub fn full(shape: &[SymExpr]) -> Self {
        Subset(
            shape
                .iter()
                .map(|d| Dim::Range(Range::upto(d.clone())))
                .collect(),
        )
    }

    /// No element of a container of rank `rank` (`0:0` on every axis): the subset of an
    /// ordering edge, which moves nothing and only orders its ends.
    pub fn empty(rank: usize) -> Self {
        Subset(vec![Dim::Range(Range::upto(SymExpr::Int(0))); rank])
    }

    /// A single element.
    pub fn element(idx: impl IntoIterator<Item = SymExpr>) -> Self {
        Subset(idx.into_iter().map(Dim::Index).collect())
    }

    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements moved.
    pub fn volume(&self) -> SymExpr {
        self.0
            .iter()
            .fold(SymExpr::Int(1), |acc, d| acc * d.len())
            .simplify()
    }

    /// True when every dimension is a single index.
    pub fn is_element(&self) -> bool {
        self.0.iter().all(|d| matches!(d, Dim::Index(_)))
    }

    pub fn map_exprs(&self, f: &dyn Fn(&SymExpr) -> SymExpr) -> Subset {
        Subset(self.0.iter().map(|d| d.map_exprs(f)).collect())
    }

    pub fn free_symbols(&self) -> Vec<String> {
        let mut v: Vec<String> = self.0.iter().flat_map(|d| d.free_symbols()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// True when the two subsets (of one container) provably share no element: in some
    /// dimension their constant bounding intervals do not meet. Symbolic bounds prove nothing,
    /// so subsets that cannot be evaluated without an environment count as overlapping.
    pub fn provably_disjoint(&self, other: &Subset) -> bool {
        self.rank() == other.rank()
            && self
                .0
                .iter()
                .zip(&other.0)
                .any(|(a, b)| match (a.interval(), b.interval()) {
                    (Some((a0, a1)), Some((b0, b1))) => a1 <= b0 || b1 <= a0,
                    _ => false,
                })
    }

    /// The subset touched by all iterations of a map with the given parameters.
    ///
    /// Each dimension that is affine in the parameters with unit-step parameter ranges becomes the
    /// exact hull `[min, max + 1)`; a dimension that is not affine in them falls back to the whole
    /// extent `0:shape[d]` (a sound over-approximation).
    pub fn propagate(&self, params: &[ParamBounds], shape: &[SymExpr]) -> Subset {
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        Subset(
            self.0
                .iter()
                .zip(shape)
                .map(|(dim, extent)| {
                    if !dim
                        .free_symbols()
                        .iter()
                        .any(|s| names.contains(&s.as_str()))
                    {
                        return dim.clone();
                    }
                    let bounds = match dim {
                        Dim::Index(e) => hull(e, params).map(|(lo, hi)| (lo, hi + 1)),
                        Dim::Range(r) if r.step == SymExpr::Int(1) => hull(&r.start, params)
                            .zip(hull(&(&r.end - 1), params))
                            .map(|((lo, _), (_, hi))| (lo, hi + 1)),
                        Dim::Range(_) => None,
                    };
                    match bounds {
                        Some((lo, hi)) => Dim::Range(Range::new(lo, hi)),
                        None => Dim::Range(Range::upto(extent.clone())),
                    }
                })
                .collect(),
        )
    }
}

/// Lowest and highest value of an affine expression over unit-step parameter ranges.
fn hull(e: &SymExpr, params: &[ParamBounds]) -> Option<(SymExpr, SymExpr)> {
    let names: Vec<&str> = params.iter().map(|p| p.name).collect();
    let (coeffs, rest) = e.affine_in(&names)?;
    let (mut lo, mut hi) = (rest.clone(), rest);
    for (name, c) in coeffs {
        let p = params.iter().find(|p| p.name == name)?;
        if p.range.step != SymExpr::Int(1) {
            return None;
        }
        let (first, last) = (p.range.start.clone(), &p.range.end - 1);
        if p.range.free_symbols_any(&names) {
            return None;
        }
        let (at_lo, at_hi) = if c >= 0 { (first, last) } else { (last, first) };
        lo = lo + at_lo * c;
        hi = hi + at_hi * c;
    }
    Some((lo, hi))
}

impl Range {
    fn free_symbols_any(&self, names: &[&str]) -> bool {
        [&self.start, &self.end, &self.step]
            .iter()
            .flat_map(|e| e.free_symbols())
            .any(|s| names.contains(&s.as_str()))
    }
}

impl fmt::Display for Subset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjointness_needs_one_separated_dimension_with_constant_bounds() {
        let rows =
            |a: i64, b: i64| Subset(vec![Dim::Range(Range::new(a, b)), Dim::Index(3.into())]);
        assert!(rows(0, 4).provably_disjoint(&rows(4, 8)));
        assert!(!rows(0, 5).provably_disjoint(&rows(4, 8)));
        let column = |j: i64| Subset(vec![Dim::Range(Range::new(0, 8)), Dim::Index(j.into())]);
        assert!(column(2).provably_disjoint(&column(3)));
        assert!(!column(2).provably_disjoint(&column(2)));
        let symbolic = Subset(vec![
            Dim::Range(Range::upto(SymExpr::sym("N"))),
            Dim::Index(9.into()),
        ]);
        assert!(
            symbolic.provably_disjoint(&rows(0, 4)),
            "the constant dimension separates them"
        );
        let symbolic = Subset(vec![
            Dim::Range(Range::new(SymExpr::sym("N"), 8)),
            Dim::Index(3.into()),
        ]);
        assert!(
            !symbolic.provably_disjoint(&rows(0, 4)),
            "a symbolic bound proves nothing"
        );
    }

    #[test]
    fn propagates_affine_indices_over_params() {
        let i = Range::upto(64);
        let k = Range::upto(SymExpr::sym("K"));
        let params = [
            ParamBounds {
                name: "i",
                range: &i,
            },
            ParamBounds {
                name: "k",
                range: &k,
            },
        ];
        let sub = Subset::element([SymExpr::sym("i") * 2 + 1, SymExpr::sym("k")]);
        let shape = [SymExpr::Int(130), SymExpr::sym("K")];
        assert_eq!(sub.propagate(&params, &shape).to_string(), "[1:128, 0:K]");
        let nonaffine = Subset::element([SymExpr::sym("i").modulo(3.into()), SymExpr::Int(0)]);
        assert_eq!(
            nonaffine.propagate(&params, &shape).to_string(),
            "[0:130, 0]"
        );
    }

    #[test]
    fn volume_multiplies_lengths() {
        let s = Subset(vec![
            Dim::Range(Range::new(2, 10)),
            Dim::Index(SymExpr::sym("j")),
            Dim::Range(Range::upto(SymExpr::sym("n"))),
        ]);
        assert_eq!(s.volume().to_string(), "8*n");
    }
}
