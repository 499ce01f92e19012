//! Resize mode `linear` in the expansion: the `2ᵏ` corners around the coordinate and their
//! weights, from the exact coordinate fraction.

use super::super::OpError;
use super::axis::Axis;
use super::{clamped, unsupported};
use crate::ir::{BinOp, SymExpr, TExpr};

/// Tasklet reads of `X`: connector and index.
pub type Reads = Vec<(String, Vec<SymExpr>)>;

/// Tasklet reads and value of multilinear interpolation over the resized
/// axes, for the output index `idx`.
pub fn linear_corners(axes: &[Option<Axis>], idx: &[SymExpr]) -> Result<(Reads, TExpr), OpError> {
    // Per blended axis: the two indices and the weight of the upper one.
    let mut taps: Vec<(usize, SymExpr, SymExpr, TExpr)> = Vec::new();
    let mut base = idx.to_vec();
    for (d, a) in axes.iter().enumerate() {
        let Some(a) = a else { continue };
        let affine = a.exact().ok_or_else(|| {
            unsupported(&format!(
                "the scale {} of dimension {d} (too fine a fraction)",
                a.scale.value
            ))
        })?;
        let (floor, num) = affine.split(&idx[d]);
        if affine.d == 1 {
            base[d] = clamped(floor, a.input);
            continue;
        }
        let weight = TExpr::binary(BinOp::Div, TExpr::Index(num), TExpr::Const(affine.d as f64));
        let hi = clamped(&floor + 1, a.input);
        taps.push((d, clamped(floor, a.input), hi, weight));
    }
    let mut reads = Vec::new();
    let mut value: Option<TExpr> = None;
    for corner in 0..1usize << taps.len() {
        let conn = format!("x{corner}");
        let mut src = base.clone();
        let mut term = TExpr::input(&conn);
        for (k, (d, lo, hi, w)) in taps.iter().enumerate() {
            let upper = corner >> k & 1 == 1;
            src[*d] = if upper { hi.clone() } else { lo.clone() };
            let w = match upper {
                true => w.clone(),
                false => TExpr::binary(BinOp::Sub, TExpr::Const(1.0), w.clone()),
            };
            term = TExpr::binary(BinOp::Mul, w, term);
        }
        value = Some(match value {
            None => term,
            Some(acc) => TExpr::binary(BinOp::Add, acc, term),
        });
        reads.push((conn, src));
    }
    Ok((reads, value.unwrap_or_else(|| TExpr::input("x0"))))
}
