//! Spatial sampling of traces (SHARDS, Waldspurger et al., FAST 2015), for traces far too long
//! to measure exactly (10^10 accesses).
//!
//! A location is kept when a hash of its address falls below `rate · 2^24`, so either every
//! access to a location is kept or none is: the sampled trace is the exact trace of a random
//! `rate` fraction of the locations. A reuse distance measured in it counts only sampled
//! locations, so its count of *other* locations estimates the true count times `rate` (the
//! estimate is `1 + (d − 1)/rate`); each sampled access stands for `1/rate` accesses. [`super::collect::analyze`] scales both. The estimate is unbiased for
//! the histogram and miss-ratio curve; DMD (a concave function of the distance) is estimated with
//! a small bias. Measured error against the exact engine on real traces is in
//! `docs/dmd-vs-time.md` and checked by `tests/suite/analysis/`.

use super::reuse::mix64;

/// Hash bits compared against the threshold.
const BITS: u32 = 24;

/// Decides which locations a sampled trace keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampler {
    threshold: u64,
    rate: f64,
}

impl Sampler {
    /// A sampler keeping about `rate` of all locations; `rate` must be in (0, 1].
    pub fn new(rate: f64) -> Option<Sampler> {
        if !(rate > 0.0 && rate <= 1.0) {
            return None;
        }
        let threshold = ((rate * (1u64 << BITS) as f64).round() as u64).max(1);
        Some(Sampler {
            threshold,
            rate: threshold as f64 / (1u64 << BITS) as f64,
        })
    }

    /// The rate actually used (the requested one rounded to the hash resolution).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    #[inline]
    pub fn keeps(&self, addr: u64) -> bool {
        mix64(addr) >> (64 - BITS) < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_about_the_rate() {
        let s = Sampler::new(0.1).expect("valid rate");
        let kept = (0..100_000u64).filter(|&a| s.keeps(a)).count();
        assert!((9_000..11_000).contains(&kept), "kept {kept}");
        assert!(Sampler::new(0.0).is_none());
        assert!(Sampler::new(1.5).is_none());
        assert!(Sampler::new(f64::NAN).is_none());
    }
}
