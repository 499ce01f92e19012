//! Floating-point tolerances, stated once for the whole tool, and tensor comparison.
//!
//! Generated code and rewritten programs may reassociate sums (tiling, parallel reductions,
//! vector lanes) and use the C library's transcendental functions, so results are compared
//! with a mixed tolerance: |a − b| ≤ atol + rtol·|b|. The values below accept reassociation error
//! of f32 sums of a few thousand terms and a few ULPs of libm differences, and reject any real
//! indexing or semantic error (which shows up as O(1) relative error).

use crate::ir::{DType, Tensor};

/// Tolerance for one element type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

/// The tolerance used for every comparison of `dtype` values.
pub fn tolerance(dtype: DType) -> Tolerance {
    match dtype {
        DType::F32 => Tolerance {
            atol: 1e-4,
            rtol: 1e-3,
        },
        DType::F64 => Tolerance {
            atol: 1e-9,
            rtol: 1e-7,
        },
        // One unit in the last place of f16 at 1 is 2^-10 ≈ 1e-3: one rounding step of the
        // result (reassociated sums, libm differences seen through f16) is accepted, a wrong
        // value is not.
        DType::F16 => Tolerance {
            atol: 1e-3,
            rtol: 1e-3,
        },
        // bf16 keeps 8 significant bits: one ulp at 1 is 2^-7.
        DType::BF16 => Tolerance {
            atol: 1e-2,
            rtol: 8e-3,
        },
        // float8 values are only produced by Cast, which both sides round the same way; one
        // step of the coarsest mantissa (2 bits, a quarter) covers an input differing by an ulp.
        DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2 | DType::F8E5M2FNUZ => Tolerance {
            atol: 1e-2,
            rtol: 0.25,
        },
        _ => Tolerance {
            atol: 0.0,
            rtol: 0.0,
        },
    }
}

/// Outcome of comparing an actual tensor with an expected one.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub max_abs_error: f64,
    /// Index of the worst element (by excess over the tolerance).
    pub worst_index: Option<usize>,
    pub within_tolerance: bool,
    /// Why the tensors cannot be compared at all (shape or type mismatch).
    pub mismatch: Option<String>,
}

/// Compares `actual` with `expected` under the tolerance of `expected`'s dtype. NaN matches NaN
/// (both sides computing an undefined value agree); NaN against a number is a failure. Values of
/// different element types never match: a wrong output type is a semantic error.
pub fn compare(actual: &Tensor, expected: &Tensor) -> Comparison {
    let mismatch = if actual.dtype() != expected.dtype() {
        Some(format!(
            "element type {} where {} was expected",
            actual.dtype(),
            expected.dtype()
        ))
    } else if actual.shape != expected.shape {
        Some(format!(
            "shape {:?} where {:?} was expected",
            actual.shape, expected.shape
        ))
    } else {
        None
    };
    if mismatch.is_some() {
        return Comparison {
            max_abs_error: f64::INFINITY,
            worst_index: None,
            within_tolerance: false,
            mismatch,
        };
    }
    let tol = tolerance(expected.dtype());
    let mut max_abs: f64 = 0.0;
    let mut worst = None;
    let mut worst_excess = f64::NEG_INFINITY;
    let mut ok = true;
    for i in 0..expected.len() {
        let (a, e) = (actual.get_f64(i), expected.get_f64(i));
        let (diff, excess) = if a.is_nan() && e.is_nan() || a == e {
            (0.0, f64::NEG_INFINITY)
        } else if a.is_nan() || e.is_nan() {
            (f64::INFINITY, f64::INFINITY)
        } else {
            let d = (a - e).abs();
            (d, d - (tol.atol + tol.rtol * e.abs()))
        };
        max_abs = max_abs.max(diff);
        if excess > 0.0 {
            ok = false;
        }
        if excess > worst_excess {
            worst_excess = excess;
            worst = Some(i);
        }
    }
    Comparison {
        max_abs_error: max_abs,
        worst_index: worst,
        within_tolerance: ok,
        mismatch: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rounding_and_rejects_real_errors() {
        let e = Tensor::f32(vec![3], vec![1.0, 1000.0, 0.0]);
        let close = Tensor::f32(vec![3], vec![1.00001, 1000.5, 5e-5]);
        assert!(compare(&close, &e).within_tolerance);
        let wrong = Tensor::f32(vec![3], vec![1.0, 1002.0, 0.0]);
        let c = compare(&wrong, &e);
        assert!(!c.within_tolerance);
        assert_eq!(c.worst_index, Some(1));
        assert_eq!(c.max_abs_error, 2.0);
        let nan = Tensor::f32(vec![3], vec![f32::NAN, 1000.0, 0.0]);
        assert!(!compare(&nan, &e).within_tolerance);
        assert!(compare(&Tensor::f32(vec![1], vec![0.0]), &e)
            .mismatch
            .is_some());
        let ints = Tensor::i64(vec![3], vec![1, 1000, 0]);
        assert!(
            compare(&ints, &Tensor::f32(vec![3], vec![1.0, 1000.0, 0.0]))
                .mismatch
                .is_some()
        );
    }
}
