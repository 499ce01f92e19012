//! The geometry of one resized axis: which input coordinate an output position samples.
//!
//! [`Axis::coordinate`] computes it in `f64` exactly as ONNX's reference implementation does; the
//! reference `eval` uses that. Expansions need the same map as integer index arithmetic on the
//! map parameter, so [`Axis::exact`] restates it as a fraction `(P·o + Q) / D` computed from the
//! exact value of the scale (an `f32` scale is a dyadic fraction; a scale derived from `sizes` is
//! `out / in`). Floors and ceilings of that fraction are [`SymExpr`] floor divisions.

use crate::ir::SymExpr;

/// How an output position maps to an input coordinate (ONNX
/// `coordinate_transformation_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordMode {
    HalfPixel,
    /// Half-pixel about the centre of the input: the output's rounding to whole elements
    /// (`floor(s·n) ≠ s·n`) is split evenly between both ends.
    HalfPixelSymmetric,
    PytorchHalfPixel,
    Asymmetric,
    AlignCorners,
}

/// How `nearest` rounds a coordinate to an input position (ONNX `nearest_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

/// The scale of an axis, as ONNX computes with it and as an exact fraction `num / den`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub value: f64,
    num: i128,
    den: i128,
}

impl Scale {
    /// `output / input`, from the `sizes` input.
    pub fn ratio(output: i64, input: i64) -> Scale {
        Scale {
            value: output as f64 / input as f64,
            num: i128::from(output),
            den: i128::from(input),
        }
    }

    /// A scale given as a float; `None` when it is not finite or needs more than 62 bits.
    pub fn float(value: f64) -> Option<Scale> {
        if !value.is_finite() {
            return None;
        }
        let bits = value.abs().to_bits();
        let exponent = i64::try_from((bits >> 52) & 0x7ff).ok()?;
        let fraction = i128::from(bits & ((1u64 << 52) - 1));
        let (mantissa, exp) = match exponent {
            0 => (fraction, -1074),
            e => (fraction | (1i128 << 52), e - 1075),
        };
        let sign = if value < 0.0 { -1 } else { 1 };
        // Shifts past these bounds cannot end below 2⁶² after reduction.
        let (num, den) = match exp {
            0..=9 => (mantissa << exp, 1),
            -120..=-1 => (mantissa, 1i128 << -exp),
            _ => return None,
        };
        let g = gcd(num, den);
        let (num, den) = (sign * num / g.max(1), den / g.max(1));
        (num.abs() < 1 << 62 && den < 1 << 62).then_some(Scale { value, num, den })
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One resized axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    pub input: i64,
    pub output: i64,
    pub scale: Scale,
    pub mode: CoordMode,
}

/// The coordinate of an axis as the exact fraction `(p·o + q) / d` of the output position `o`,
/// with `d > 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Affine {
    pub p: i64,
    pub q: i64,
    pub d: i64,
}

impl Affine {
    /// `floor((p·o + q + add) / (d·mul))` for the parameter `o`.
    fn floor(&self, o: &SymExpr, add: i64, mul: i64) -> SymExpr {
        (o * (self.p * mul) + (self.q * mul + add)).floor_div(SymExpr::Int(self.d * mul))
    }

    /// The input position `nearest` picks, before clamping.
    pub fn rounded(&self, o: &SymExpr, rounding: Rounding) -> SymExpr {
        let d = self.d;
        match rounding {
            Rounding::Floor => self.floor(o, 0, 1),
            Rounding::Ceil => self.floor(o, d - 1, 1),
            // ceil(x − ½) = floor((2·(p·o + q) − d + 2d − 1) / 2d)
            Rounding::RoundPreferFloor => self.floor(o, d - 1, 2),
            // floor(x + ½) = floor((2·(p·o + q) + d) / 2d)
            Rounding::RoundPreferCeil => self.floor(o, d, 2),
        }
    }

    /// `ceil(x) − 1` and the numerator of `x − (ceil(x) − 1)` (over `d`, in `1..=d`): the base
    /// and ratio of the ONNX reference's neighbourhoods, which take a ratio of 1 rather than 0
    /// at whole coordinates.
    pub fn split_above(&self, o: &SymExpr) -> (SymExpr, SymExpr) {
        let base = self.floor(o, self.d - 1, 1) - 1;
        let num = o * self.p + self.q - &base * self.d;
        (base, num)
    }

    /// `floor(x)` and the numerator of `x − floor(x)` (over `d`).
    pub fn split(&self, o: &SymExpr) -> (SymExpr, SymExpr) {
        let x = o * self.p + self.q;
        (self.floor(o, 0, 1), x.modulo(SymExpr::Int(self.d)))
    }
}

impl Axis {
    /// The extent of the output written `s · input` in ONNX's reference (used by the modes that
    /// special-case a single output position).
    fn output_width(&self) -> f64 {
        self.scale.value * self.input as f64
    }

    /// The input coordinate of output position `o`, in `f64` like ONNX's reference.
    pub fn coordinate(&self, o: i64) -> f64 {
        let (o, s, n) = (o as f64, self.scale.value, self.input as f64);
        match self.mode {
            CoordMode::HalfPixel => (o + 0.5) / s - 0.5,
            CoordMode::HalfPixelSymmetric => {
                let adjustment = self.output as f64 / self.output_width();
                n / 2.0 * (1.0 - adjustment) + (o + 0.5) / s - 0.5
            }
            CoordMode::PytorchHalfPixel if self.output_width() == 1.0 => -0.5,
            CoordMode::PytorchHalfPixel => (o + 0.5) / s - 0.5,
            CoordMode::Asymmetric => o / s,
            CoordMode::AlignCorners if self.output_width() == 1.0 => 0.0,
            CoordMode::AlignCorners => o * (n - 1.0) / (self.output_width() - 1.0),
        }
    }

    /// Clamps an input position to the axis (the reference pads with the edge values).
    pub fn clamp(&self, i: i64) -> i64 {
        i.max(0).min(self.input - 1)
    }

    /// The input position `nearest` reads for output position `o`.
    pub fn nearest(&self, o: i64, rounding: Rounding) -> i64 {
        let x = self.coordinate(o);
        let lo = x.floor();
        let frac = x - lo;
        let up = match rounding {
            Rounding::RoundPreferFloor => frac > 0.5,
            Rounding::RoundPreferCeil => frac >= 0.5,
            Rounding::Floor => false,
            Rounding::Ceil => frac > 0.0,
        };
        self.clamp(lo as i64 + i64::from(up))
    }

    /// The two input positions `linear` blends for output position `o`, and the weight of the
    /// second.
    pub fn linear(&self, o: i64) -> (i64, i64, f64) {
        let x = self.coordinate(o);
        let lo = x.floor();
        (self.clamp(lo as i64), self.clamp(lo as i64 + 1), x - lo)
    }

    /// The coordinate as an exact fraction of `o`, or `None` when its terms overflow `i64` for
    /// the positions of this axis.
    pub fn exact(&self) -> Option<Affine> {
        let (a, b) = (self.scale.num, self.scale.den);
        let n = i128::from(self.input);
        // Each mode's formula with s = a / b, over a common denominator.
        let (p, q, d) = match self.mode {
            CoordMode::PytorchHalfPixel if self.output_width() == 1.0 => (0, -1, 2),
            CoordMode::HalfPixel | CoordMode::PytorchHalfPixel => (2 * b, b - a, 2 * a),
            // n/2·(1 − out·b/(a·n)) + (o + ½)·b/a − ½ = (2b·o + n·a − out·b + b − a) / 2a
            CoordMode::HalfPixelSymmetric => {
                let out = i128::from(self.output);
                (2 * b, n * a - out * b + b - a, 2 * a)
            }
            CoordMode::Asymmetric => (b, 0, a),
            CoordMode::AlignCorners if self.output_width() == 1.0 => (0, 0, 1),
            CoordMode::AlignCorners => ((n - 1) * b, 0, a * n - b),
        };
        let (p, q, d) = if d < 0 { (-p, -q, -d) } else { (p, q, d) };
        let g = gcd(gcd(p, q), d).max(1);
        let (p, q, d) = (p / g, q / g, d / g);
        // Every intermediate of `rounded` stays below 2⁶².
        let largest = 2 * (p.abs() * i128::from(self.output.max(1)) + q.abs() + d);
        if d == 0 || largest >= 1 << 62 {
            return None;
        }
        Some(Affine {
            p: i64::try_from(p).ok()?,
            q: i64::try_from(q).ok()?,
            d: i64::try_from(d).ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_scales_are_exact_fractions() {
        let s = Scale::float(0.75).expect("finite");
        assert_eq!((s.num, s.den), (3, 4));
        let s = Scale::float(3.0).expect("finite");
        assert_eq!((s.num, s.den), (3, 1));
        let third = f64::from(1.0f32 / 3.0);
        let s = Scale::float(third).expect("finite");
        assert_eq!(s.num as f64 / s.den as f64, third);
        assert!(Scale::float(f64::NAN).is_none());
        assert!(Scale::float(1e-300).is_none());
    }

    /// The exact fraction rounds like the f64 formula wherever the f64 value is exact.
    #[test]
    fn exact_form_agrees_with_the_float_formula() {
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
        for (input, output) in [(4, 8), (4, 3), (5, 2), (3, 7), (1, 4), (6, 1)] {
            for mode in modes {
                let axis = Axis {
                    input,
                    output,
                    scale: Scale::ratio(output, input),
                    mode,
                };
                let affine = axis.exact().expect("small");
                for rounding in roundings {
                    for o in 0..output {
                        let e = affine.rounded(&SymExpr::Int(o), rounding);
                        let e = axis.clamp(e.as_int().expect("literal"));
                        assert_eq!(
                            e,
                            axis.nearest(o, rounding),
                            "{input}->{output} {mode:?} {rounding:?} at {o}"
                        );
                    }
                }
            }
        }
    }
}
