//! Resize mode `nearest` in the expansion: the input index each output position reads.

use super::super::movement::to_usize;
use super::axis::{Axis, Rounding};
use super::clamped;
use crate::ir::{SymEnv, SymExpr};

/// The input index `nearest` reads along `axis` for the map parameter `o` (named `name`): the
/// closed form when it rounds exactly like the reference at every position, else a sum of
/// steps that reproduces the reference's table.
pub fn nearest_index(axis: &Axis, rounding: Rounding, name: &str, o: &SymExpr) -> SymExpr {
    let table: Vec<i64> = (0..axis.output)
        .map(|p| axis.nearest(p, rounding))
        .collect();
    let at = |e: &SymExpr, p: i64| e.eval(&SymEnv::from([(name.to_string(), p)])).ok();
    if let Some(affine) = axis.exact() {
        let e = clamped(affine.rounded(o, rounding), axis.input);
        if (0..axis.output).all(|p| at(&e, p) == Some(table[to_usize(p)])) {
            return e;
        }
    }
    let mut e = SymExpr::Int(table.first().copied().unwrap_or(0));
    for (p, w) in table.windows(2).enumerate() {
        if w[1] != w[0] {
            let t = p as i64 + 1;
            let step = (o - (t - 1)).max(SymExpr::Int(0)).min(SymExpr::Int(1));
            e = e + step * (w[1] - w[0]);
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::resize::axis::{CoordMode, Scale};

    /// The expansion's index reproduces the reference's rounding at every position, through
    /// the closed form or, where float rounding differs from exact arithmetic, the step sum.
    #[test]
    fn nearest_index_reproduces_the_reference_table() {
        let modes = [
            CoordMode::HalfPixel,
            CoordMode::HalfPixelSymmetric,
            CoordMode::PytorchHalfPixel,
            CoordMode::Asymmetric,
            CoordMode::AlignCorners,
        ];
        let roundings = [
            Rounding::RoundPreferFloor,
            Rounding::RoundPreferCeil,
            Rounding::Floor,
            Rounding::Ceil,
        ];
        let o = SymExpr::sym("o");
        let mut fallbacks = 0;
        for input in 1..=8 {
            for output in 1..=17 {
                let scales = [
                    Scale::ratio(output, input),
                    Scale::float(f64::from(output as f32 / input as f32)).expect("finite"),
                ];
                for (scale, mode, rounding) in scales.iter().flat_map(|&s| {
                    modes
                        .iter()
                        .flat_map(move |&m| roundings.map(|r| (s, m, r)))
                }) {
                    let axis = Axis {
                        input,
                        output,
                        scale,
                        mode,
                    };
                    let e = nearest_index(&axis, rounding, "o", &o);
                    let closed = axis
                        .exact()
                        .map(|a| clamped(a.rounded(&o, rounding), input));
                    fallbacks += usize::from(closed.as_ref() != Some(&e));
                    for p in 0..output {
                        let got = e.eval(&SymEnv::from([("o".to_string(), p)]));
                        assert_eq!(
                            got,
                            Ok(axis.nearest(p, rounding)),
                            "{axis:?} {rounding:?} at {p}"
                        );
                    }
                }
            }
        }
        assert!(fallbacks > 0, "the sweep no longer exercises the step sum");
    }
}
