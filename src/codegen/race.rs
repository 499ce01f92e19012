//! Can two threads (or two SIMD lanes) write the same element?
//!
//! The C backend asks this for every write inside a parallel or vector loop: when distinct
//! iterations of the distributed loop provably write disjoint elements, a write-conflict
//! resolution needs no atomic and a vector loop may carry `omp simd`; otherwise it emits an
//! atomic update (or drops the SIMD assertion). The proof is deliberately simple and sound:
//! the loops between the distributed one and the write are folded into per-dimension intervals
//! ([`Subset::propagate`]), and for every distributed parameter `q` some dimension's interval
//! must move strictly past itself when `q` advances by one step. `min`/`max` bounds, as tiling
//! produces, are handled by bounding them with one of their arguments.

use crate::ir::subset::ParamBounds;
use crate::ir::{Dim, MapParam, Subset, SymExpr};

/// True when iterations that differ in any of `distributed` write disjoint elements of
/// `subset`, whatever the parameters in `inner` (the loops inside, outermost first) do.
pub(crate) fn disjoint_across(
    subset: &Subset,
    shape: &[SymExpr],
    distributed: &[MapParam],
    inner: &[&MapParam],
) -> bool {
    let mut folded = subset.clone();
    for p in inner.iter().rev() {
        let bounds = [ParamBounds {
            name: &p.name,
            range: &p.range,
        }];
        folded = folded.propagate(&bounds, shape);
    }
    distributed
        .iter()
        .all(|q| folded.0.iter().any(|dim| separates(dim, q, distributed)))
}

/// Whether this dimension's interval, as a function of `q` alone among the distributed
/// parameters, is disjoint for distinct values of `q`.
fn separates(dim: &Dim, q: &MapParam, distributed: &[MapParam]) -> bool {
    let (lo, hi) = match dim {
        Dim::Index(e) => (e.clone(), e + 1),
        Dim::Range(r) => (r.start.clone(), r.end.clone()),
    };
    let mentions = |name: &str| lo.mentions(name) || hi.mentions(name);
    if !mentions(&q.name)
        || distributed
            .iter()
            .any(|o| o.name != q.name && mentions(&o.name))
    {
        return false;
    }
    let next = |e: &SymExpr| {
        e.substitute(
            &q.name,
            &(SymExpr::sym(q.name.as_str()) + q.range.step.clone()),
        )
    };
    let (lo_next, hi_next) = (next(&lo), next(&hi));
    let increasing = provably_nonneg(&(&lo_next - &hi), 4) && provably_nonneg(&(&lo_next - &lo), 4);
    let decreasing = provably_nonneg(&(&lo - &hi_next), 4) && provably_nonneg(&(&lo - &lo_next), 4);
    increasing || decreasing
}

/// A sound (incomplete) test for `e ≥ 0`: constants are decided; otherwise a term `−c·min(a, b)`
/// is bounded below by `−c·a` or `−c·b` (and `+c·max(a, b)` by `+c·a` or `+c·b`) and the bound
/// tried instead, up to `depth` replacements.
pub(crate) fn provably_nonneg(e: &SymExpr, depth: u8) -> bool {
    let e = e.simplify();
    if let Some(v) = e.as_int() {
        return v >= 0;
    }
    if depth == 0 {
        return false;
    }
    let terms = match &e {
        SymExpr::Add(t) => t.clone(),
        other => vec![other.clone()],
    };
    for (i, term) in terms.iter().enumerate() {
        let (coef, atom) = match term {
            SymExpr::Mul(f) if f.len() == 2 => match (&f[0], &f[1]) {
                (SymExpr::Int(c), atom) => (*c, atom),
                _ => continue,
            },
            atom => (1, atom),
        };
        let options = match atom {
            SymExpr::Min(a, b) if coef < 0 => [a, b],
            SymExpr::Max(a, b) if coef > 0 => [a, b],
            _ => continue,
        };
        for bound in options {
            let mut replaced = terms.clone();
            replaced[i] = bound.as_ref() * coef;
            if provably_nonneg(&SymExpr::Add(replaced), depth - 1) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Range;

    fn param(name: &str, range: Range) -> MapParam {
        MapParam {
            name: name.into(),
            range,
        }
    }

    fn s(n: &str) -> SymExpr {
        SymExpr::sym(n)
    }

    #[test]
    fn reduction_index_collides_and_row_index_does_not() {
        let i = param("i", Range::upto(8));
        let k = param("k", Range::upto(8));
        let shape = [SymExpr::Int(8)];
        let row = Subset::element([s("i")]);
        assert!(disjoint_across(&row, &shape, std::slice::from_ref(&i), &[&k]));
        assert!(!disjoint_across(&row, &shape, std::slice::from_ref(&k), &[]));
        let skew = Subset::element([s("i") + s("k")]);
        assert!(!disjoint_across(&skew, &[SymExpr::Int(16)], &[i], &[&k]));
    }

    #[test]
    fn tiles_with_min_bounds_are_disjoint() {
        let ii = param("ii", Range::upto(4));
        let it = param(
            "it",
            Range::new(s("ii") * 32, (s("ii") * 32 + 32).min(100.into())),
        );
        let shape = [SymExpr::Int(100)];
        let sub = Subset::element([s("it")]);
        assert!(disjoint_across(&sub, &shape, &[ii], &[&it]));
    }

    #[test]
    fn proves_simple_inequalities() {
        assert!(provably_nonneg(&SymExpr::Int(0), 1));
        assert!(!provably_nonneg(&SymExpr::Int(-1), 1));
        let e = s("q") * 32 + 32 - (s("q") * 32 + 32).min(s("n"));
        assert!(provably_nonneg(&e, 2));
        assert!(!provably_nonneg(&s("q"), 2));
    }
}
