//! Value axes: linear and logarithmic scales with "nice" ticks, and tick labels in units a
//! reader knows (bytes in KiB/MiB, counts with k/M/G, milliseconds).

/// What an axis measures, which decides how its values are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain quantity (DMD, accesses, elements): `1.5k`, `2M`, `3.2G`.
    Count,
    /// Bytes, in powers of 1024: `512 B`, `4 KiB`, `1.5 MiB`.
    Bytes,
    /// Locations counted in powers of 1024 (cache capacities in elements): `512`, `4Ki`, `1Mi`.
    Locations,
    /// Wall time in milliseconds: `0.25 ms`, `12 ms`, `1.2 s`.
    Millis,
    /// A fraction in [0, 1], written as a percentage: `25%`.
    Ratio,
}

impl Unit {
    /// `v` written for a tick or a bar label.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Count => format_count(v),
            Unit::Bytes => format_binary(v, " ", "B"),
            Unit::Locations => format_binary(v, "", ""),
            Unit::Millis if v.abs() >= 1000.0 => format!("{} s", trim(v / 1000.0)),
            Unit::Millis => format!("{} ms", trim(v)),
            Unit::Ratio => format!("{}%", trim(v * 100.0)),
        }
    }
}

/// Up to three significant digits, without trailing zeros.
fn trim(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn format_count(v: f64) -> String {
    let a = v.abs();
    if a < 1000.0 {
        if a != 0.0 && a < 0.01 {
            return format!("{v:.1e}");
        }
        return trim(v);
    }
    for (scale, suffix) in [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if a >= scale {
            return format!("{}{suffix}", trim(v / scale));
        }
    }
    trim(v)
}

/// `v` in powers of 1024 with binary prefixes, `sep` between number and prefix, then `unit`.
fn format_binary(v: f64, sep: &str, unit: &str) -> String {
    let a = v.abs();
    for (k, prefix) in [(5, "Pi"), (4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki")] {
        let scale = 1024f64.powi(k);
        if a >= scale {
            return format!("{}{sep}{prefix}{unit}", trim(v / scale));
        }
    }
    let sep = if unit.is_empty() { "" } else { sep };
    format!("{}{sep}{unit}", trim(v))
}

/// Maps values onto [0, 1] along an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// From `lo` to `hi`, evenly.
    Linear { lo: f64, hi: f64 },
    /// From `base^lo` to `base^hi`, evenly in the exponent (so every decade, or every doubling,
    /// gets the same room and small values stay visible next to large ones).
    Log { base: f64, lo: i32, hi: i32 },
}

impl Scale {
    /// A linear scale from 0 to a nice round value at or above `max`.
    pub fn linear_from_zero(max: f64) -> Scale {
        let max = if max > 0.0 && max.is_finite() {
            max
        } else {
            1.0
        };
        let step = nice_step(max, 5);
        Scale::Linear {
            lo: 0.0,
            hi: (max / step).ceil() * step,
        }
    }

    /// A logarithmic scale covering the positive values of `values` in whole powers of
    /// `base` (one power when there is only one value); `None` when no value is positive.
    pub fn log_covering(base: f64, values: impl IntoIterator<Item = f64>) -> Option<Scale> {
        let positive: Vec<f64> = (values.into_iter())
            .filter(|v| *v > 0.0 && v.is_finite())
            .collect();
        let min = positive.iter().copied().reduce(f64::min)?;
        let max = positive.iter().copied().reduce(f64::max)?;
        let lo = (min.log(base) + 1e-9).floor() as i32;
        let hi = ((max.log(base) - 1e-9).ceil() as i32).max(lo + 1);
        Some(Scale::Log { base, lo, hi })
    }

    /// Where `v` falls, from 0 (the low end) to 1 (the high end), clamped; non-positive values
    /// sit at the low end of a log scale.
    pub fn fraction(&self, v: f64) -> f64 {
        let f = match *self {
            Scale::Linear { lo, hi } => (v - lo) / (hi - lo),
            Scale::Log { base, lo, hi } if v > 0.0 => (v.log(base) - lo as f64) / (hi - lo) as f64,
            Scale::Log { .. } => 0.0,
        };
        f.clamp(0.0, 1.0)
    }

    /// Tick values from the low end to the high end: 1-2-5 steps for linear scales, whole
    /// powers (every one, or every k-th so there are at most about eight) for log scales.
    pub fn ticks(&self) -> Vec<f64> {
        match *self {
            Scale::Linear { lo, hi } => {
                let step = nice_step(hi - lo, 5);
                let n = ((hi - lo) / step + 1e-9).floor() as usize;
                (0..=n).map(|k| lo + step * k as f64).collect()
            }
            Scale::Log { base, lo, hi } => {
                let every = ((hi - lo) as usize).div_ceil(8).max(1);
                (lo..=hi).step_by(every).map(|k| base.powi(k)).collect()
            }
        }
    }

    pub fn is_log(&self) -> bool {
        matches!(self, Scale::Log { .. })
    }
}

/// A step of 1, 2 or 5 times a power of ten that cuts `range` into about `target` parts.
pub fn nice_step(range: f64, target: usize) -> f64 {
    let raw = range / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
    let nice = if r <= 1.0 {
        1.0
    } else if r <= 2.0 {
        2.0
    } else if r <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_like_a_person_writes_them() {
        assert_eq!(Unit::Count.format(0.0), "0");
        assert_eq!(Unit::Count.format(1500.0), "1.5k");
        assert_eq!(Unit::Count.format(5.131988e10), "51.3G");
        assert_eq!(Unit::Count.format(12.0), "12");
        assert_eq!(Unit::Bytes.format(4096.0), "4 KiB");
        assert_eq!(Unit::Bytes.format(1.5 * 1024.0 * 1024.0), "1.5 MiB");
        assert_eq!(Unit::Bytes.format(64.0), "64 B");
        assert_eq!(Unit::Locations.format(4096.0), "4Ki");
        assert_eq!(Unit::Locations.format(512.0), "512");
        assert_eq!(Unit::Millis.format(0.25), "0.25 ms");
        assert_eq!(Unit::Millis.format(1234.0), "1.23 s");
        assert_eq!(Unit::Ratio.format(0.25), "25%");
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_maximum() {
        let s = Scale::linear_from_zero(7.3);
        assert_eq!(s, Scale::Linear { lo: 0.0, hi: 8.0 });
        assert_eq!(s.ticks(), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(s.fraction(4.0), 0.5);
    }

    #[test]
    fn log_scales_give_small_values_room() {
        let s = Scale::log_covering(10.0, [3e3, 2e9, 0.0]).unwrap();
        assert_eq!(
            s,
            Scale::Log {
                base: 10.0,
                lo: 3,
                hi: 10
            }
        );
        assert_eq!(s.ticks().len(), 8);
        // The smallest value is still well away from the axis.
        assert!(s.fraction(3e3) > 0.05);
        assert_eq!(s.fraction(0.0), 0.0);
        let capacities = Scale::log_covering(2.0, [1.0, 1048576.0]).unwrap();
        assert_eq!(
            capacities.ticks().len(),
            7,
            "every third power of two from 2^0 to 2^20"
        );
        assert!(Scale::log_covering(10.0, [0.0, -1.0]).is_none());
    }
}
