//! How a scalar becomes an element of each [`DType`] and back: the one statement of the storage
//! rules that the interpreter, the constant readers and the C backend's helpers all follow.
//!
//! - Integers (except 4-bit ones) truncate toward zero and wrap around modulo 2^bits, as numpy's
//!   fixed-width integers and a C store through `int64_t` do (`uint8` 200 + 100 reads back 44).
//! - 4-bit integers clip to their range and round half to even (ONNX's Cast to INT4/UINT4).
//! - Narrow floats (f16, bf16, float8) are *storage* formats kept as bit patterns: values are
//!   first rounded to `f32` (tasklets compute in `f32`, ONNX converts float8 from `f32`), then
//!   rounded to nearest-even into the format. Overflow gives infinity where the format has one,
//!   NaN otherwise; ONNX Cast's `saturate` clamps before the store (see `ops::logic`).

use super::data::DType;

/// Whether a narrow float format has infinities and negative zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// IEEE 754 style: an all-ones exponent is infinity (zero mantissa) or NaN.
    Ieee,
    /// "Finite": no infinities; only the all-ones exponent with all-ones mantissa is NaN.
    Finite,
    /// "Finite, unsigned zero": no infinities, no −0; the −0 pattern is the only NaN.
    FiniteUnsignedZero,
}

/// A binary floating-point format with `exp_bits` exponent and `man_bits` mantissa bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatFormat {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    pub special: Special,
}

impl FloatFormat {
    /// The format of a narrow float dtype (f16, bf16, float8), `None` for the others.
    pub fn of(d: DType) -> Option<FloatFormat> {
        let f = |exp_bits, man_bits, bias, special| FloatFormat {
            exp_bits,
            man_bits,
            bias,
            special,
        };
        Some(match d {
            DType::F16 => f(5, 10, 15, Special::Ieee),
            DType::BF16 => f(8, 7, 127, Special::Ieee),
            DType::F8E4M3FN => f(4, 3, 7, Special::Finite),
            DType::F8E4M3FNUZ => f(4, 3, 8, Special::FiniteUnsignedZero),
            DType::F8E5M2 => f(5, 2, 15, Special::Ieee),
            DType::F8E5M2FNUZ => f(5, 2, 16, Special::FiniteUnsignedZero),
            _ => return None,
        })
    }

    fn sign_bit(self) -> u16 {
        1 << (self.exp_bits + self.man_bits)
    }

    fn exp_ones(self) -> u16 {
        ((1 << self.exp_bits) - 1) << self.man_bits
    }

    fn man_ones(self) -> u16 {
        (1 << self.man_bits) - 1
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        let top = i32::try_from((1u32 << self.exp_bits) - 1).expect("small exponent field");
        let (field, mantissa) = match self.special {
            Special::Ieee => (top - 1, f64::from(self.man_ones())),
            Special::Finite => (top, f64::from(self.man_ones() - 1)),
            Special::FiniteUnsignedZero => (top, f64::from(self.man_ones())),
        };
        let scale = f64::from(1u32 << self.man_bits);
        (1.0 + mantissa / scale) * 2f64.powi(field - self.bias)
    }

    /// The quiet NaN pattern with the given sign bit.
    fn nan(self, sign: u16) -> u16 {
        match self.special {
            Special::Ieee => sign | self.exp_ones() | (1 << (self.man_bits - 1)),
            Special::Finite => sign | self.exp_ones() | self.man_ones(),
            Special::FiniteUnsignedZero => self.sign_bit(),
        }
    }

    /// The value of the bit pattern `bits`.
    pub fn decode(self, bits: u16) -> f32 {
        let negative = bits & self.sign_bit() != 0;
        let field = (bits & self.exp_ones()) >> self.man_bits;
        let mantissa = bits & self.man_ones();
        let top = (1 << self.exp_bits) - 1;
        let nan = match self.special {
            Special::Ieee => field == top && mantissa != 0,
            Special::Finite => field == top && mantissa == self.man_ones(),
            Special::FiniteUnsignedZero => bits == self.sign_bit(),
        };
        if nan {
            return f32::NAN;
        }
        let magnitude = if self.special == Special::Ieee && field == top {
            f64::INFINITY
        } else if field == 0 {
            f64::from(mantissa) * 2f64.powi(1 - self.bias - self.man_bits as i32)
        } else {
            f64::from((1 << self.man_bits) | mantissa)
                * 2f64.powi(i32::from(field) - self.bias - self.man_bits as i32)
        };
        (if negative { -magnitude } else { magnitude }) as f32
    }

    /// The pattern of `x` rounded to nearest-even; overflow is infinity or NaN (no saturation).
    pub fn encode(self, x: f32) -> u16 {
        let sign = if x.is_sign_negative() {
            self.sign_bit()
        } else {
            0
        };
        if x.is_nan() {
            return self.nan(sign);
        }
        let overflow = match self.special {
            Special::Ieee => sign | self.exp_ones(),
            _ => self.nan(sign),
        };
        let a = f64::from(x.abs());
        if a.is_infinite() {
            return overflow;
        }
        let zero = match self.special {
            Special::FiniteUnsignedZero => 0,
            _ => sign,
        };
        if a == 0.0 {
            return zero;
        }
        let m = self.man_bits as i32;
        // The exponent of `a`, not below the subnormal range; `a / 2^(e - m)` then has its
        // units digit at the format's last mantissa bit, so rounding it to an integer is exact
        // round-to-nearest-even (f64 holds every f32 scaled by a power of two exactly).
        let e = (libm::ilogb(a)).max(1 - self.bias);
        let q = (a * 2f64.powi(m - e)).round_ties_even();
        let rounded = q * 2f64.powi(e - m);
        if rounded > self.max_finite() {
            return overflow;
        }
        if rounded == 0.0 {
            return zero;
        }
        let e = libm::ilogb(rounded);
        let bits = if e < 1 - self.bias {
            // Subnormal: the mantissa counts units of 2^(1 - bias - m).
            (rounded * 2f64.powi(m - 1 + self.bias)) as u16
        } else {
            let field = u16::try_from(e + self.bias).expect("exponent within the format");
            let frac = (rounded * 2f64.powi(m - e)) as u16 - (1 << self.man_bits);
            (field << self.man_bits) | frac
        };
        sign | bits
    }
}

/// `x` converted to an integer of `d` as a store does (see the module documentation); `d` must
/// be an integer type. `u64` values above `i64::MAX` come back as their two's-complement `i64`.
// `max`/`min` rather than `clamp`: NaN goes to the lower bound, like C's `fmax`/`fmin`.
#[allow(clippy::manual_clamp)]
pub fn to_int(d: DType, x: f64) -> i64 {
    match d {
        DType::I4 => x.max(-8.0).min(7.0).round_ties_even() as i64,
        DType::U4 => x.max(0.0).min(15.0).round_ties_even() as i64,
        DType::U64 if x >= 9_223_372_036_854_775_808.0 => x as u64 as i64,
        _ => {
            let v = x as i64;
            match d {
                DType::I8 => i64::from(v as i8),
                DType::U8 => i64::from(v as u8),
                DType::I16 => i64::from(v as i16),
                DType::U16 => i64::from(v as u16),
                DType::I32 => i64::from(v as i32),
                DType::U32 => i64::from(v as u32),
                _ => v,
            }
        }
    }
}

/// The value of a stored integer of `d` (undoing `u64`'s two's-complement storage).
pub fn int_value(d: DType, v: i64) -> f64 {
    if d == DType::U64 {
        v as u64 as f64
    } else {
        v as f64
    }
}

/// `x` as it reads back after a store to an element of `d`.
pub fn stored(d: DType, x: f64) -> f64 {
    match d {
        DType::F32 => f64::from(x as f32),
        DType::F64 => x,
        DType::I64 => x as i64 as f64,
        DType::Bool => f64::from(u8::from(x != 0.0)),
        _ => match FloatFormat::of(d) {
            Some(f) => f64::from(f.decode(f.encode(x as f32))),
            None => int_value(d, to_int(d, x)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(d: DType) -> FloatFormat {
        FloatFormat::of(d).unwrap()
    }

    #[test]
    fn largest_values_match_the_onnx_tables() {
        assert_eq!(fmt(DType::F16).max_finite(), 65504.0);
        assert_eq!(fmt(DType::F8E4M3FN).max_finite(), 448.0);
        assert_eq!(fmt(DType::F8E4M3FNUZ).max_finite(), 240.0);
        assert_eq!(fmt(DType::F8E5M2).max_finite(), 57344.0);
        assert_eq!(fmt(DType::F8E5M2FNUZ).max_finite(), 57344.0);
        assert_eq!(
            fmt(DType::BF16).max_finite(),
            f64::from(f32::from_bits(0x7f7f_0000))
        );
    }

    #[test]
    fn half_precision_rounds_to_nearest_even() {
        let h = fmt(DType::F16);
        assert_eq!(h.encode(1.0 / 3.0), 0x3555);
        assert_eq!(h.decode(0x3555), 0.333_251_95);
        assert_eq!(h.encode(1.0), 0x3c00);
        assert_eq!(h.encode(-2.0), 0xc000);
        // 2049 lies halfway between 2048 and 2050: ties to the even mantissa (2048).
        assert_eq!(h.decode(h.encode(2049.0)), 2048.0);
        assert_eq!(h.decode(h.encode(2051.0)), 2052.0);
        assert_eq!(h.encode(65520.0), 0x7c00);
        assert_eq!(h.encode(5.960_464_5e-8), 0x0001);
        assert_eq!(h.encode(-0.0), 0x8000);
        assert!(h.decode(h.encode(f32::NAN)).is_nan());
        assert_eq!(h.decode(0x7c00), f32::INFINITY);
    }

    #[test]
    fn bfloat16_matches_the_bit_trick_of_onnx() {
        let b = fmt(DType::BF16);
        for x in [
            1.0f32,
            1.0 / 3.0,
            -3.140_625,
            1e-40,
            3.4e38,
            0.5 + 1.0 / 512.0,
        ] {
            let bits = x.to_bits();
            let expected = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
            assert_eq!(b.encode(x), expected, "{x}");
        }
    }

    #[test]
    fn float8_overflow_and_signed_zero_follow_the_format() {
        let e4 = fmt(DType::F8E4M3FN);
        assert_eq!(e4.encode(448.0), 0x7e);
        assert_eq!(e4.encode(464.0), 0x7e);
        assert!(e4.decode(e4.encode(465.0)).is_nan());
        assert!(e4.decode(e4.encode(f32::INFINITY)).is_nan());
        assert_eq!(e4.encode(-0.0), 0x80);
        assert_eq!(e4.decode(0x01), 2f32.powi(-9));
        let uz = fmt(DType::F8E4M3FNUZ);
        assert_eq!(uz.encode(-0.0), 0x00);
        assert_eq!(uz.encode(-1e-9), 0x00);
        assert!(uz.decode(0x80).is_nan());
        let e5 = fmt(DType::F8E5M2);
        assert_eq!(e5.encode(1e6), 0x7c);
        assert_eq!(e5.decode(0xfc), f32::NEG_INFINITY);
        let e5uz = fmt(DType::F8E5M2FNUZ);
        assert_eq!(e5uz.decode(e5uz.encode(57344.0)), 57344.0);
        assert_eq!(e5uz.encode(-1.0), 0x80 | (16 << 2));
    }

    #[test]
    fn integers_wrap_except_four_bit_ones_which_clip() {
        assert_eq!(to_int(DType::U8, 300.0), 44);
        assert_eq!(to_int(DType::I8, 130.0), -126);
        assert_eq!(to_int(DType::U16, -1.0), 65535);
        assert_eq!(to_int(DType::I32, -7.9), -7);
        assert_eq!(to_int(DType::I4, 9.0), 7);
        assert_eq!(to_int(DType::I4, 2.5), 2);
        assert_eq!(to_int(DType::U4, -3.0), 0);
        assert_eq!(int_value(DType::U64, to_int(DType::U64, 1.8e19)), 1.8e19);
        assert_eq!(
            int_value(DType::U64, to_int(DType::U64, -1.0)),
            18_446_744_073_709_551_615.0
        );
    }
}
