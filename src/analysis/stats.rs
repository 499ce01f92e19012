//! Accumulated data-movement statistics of a set of accesses (a program, a node or an array).

use serde::{Deserialize, Serialize};

/// The cost of one access, computed once and recorded into several accumulators.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    sqrt: f64,
    bin: usize,
    first: bool,
    /// Cache levels the access misses, innermost first (see [`super::caches`]).
    missed: usize,
}

impl Cost {
    /// The cost of an access at reuse distance `distance` (≥ 1; fractional for sampled traces).
    #[inline]
    pub fn of(distance: f64, first: bool) -> Self {
        Cost {
            sqrt: distance.sqrt(),
            bin: log_bin(distance),
            first,
            missed: 0,
        }
    }

    /// The same cost, for a hierarchy of `capacities` (in locations, innermost first): the
    /// access misses every level smaller than its distance, and every level when it is a first
    /// access.
    #[inline]
    pub fn in_caches(mut self, distance: f64, capacities: &[u64]) -> Self {
        self.missed = if self.first {
            capacities.len()
        } else {
            capacities.partition_point(|&c| (c as f64) < distance)
        };
        self
    }
}

/// Histogram bin of a distance: bin 0 holds distance 1 and bin k the distances in
/// (2^(k−1), 2^k], so "hits in an LRU cache of 2^k locations" is exactly bins 0..=k.
#[inline]
fn log_bin(distance: f64) -> usize {
    let d = distance.ceil().max(1.0) as u64;
    (64 - (d - 1).leading_zeros()) as usize
}

/// Totals of a set of accesses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dmd {
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    /// Accesses to a location never accessed before (= distinct locations, the footprint).
    pub first_accesses: u64,
    /// Σ sqrt(reuse distance) over accesses that are not first accesses.
    pub dmd_warm: f64,
    /// Σ of the cold-access convention's cost over first accesses (see [`super`]).
    pub dmd_cold: f64,
    /// Warm accesses per log bin of reuse distance (see [`log_bin`]).
    pub histogram: Vec<u64>,
    /// Misses per cache level, innermost first, when the analysis models caches (trailing
    /// levels without a miss are left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub level_misses: Vec<u64>,
    /// Data-TLB misses, when the analysis models a TLB.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tlb_misses: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One point of the LRU miss-ratio curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissRatio {
    /// Cache capacity in locations (elements or lines).
    pub capacity: u64,
    /// Fraction of accesses that miss in a fully associative LRU cache of that capacity
    /// (first accesses always miss).
    pub ratio: f64,
}

impl Dmd {
    /// DMD with the cold-access convention: warm plus cold.
    pub fn dmd(&self) -> f64 {
        self.dmd_warm + self.dmd_cold
    }

    #[inline]
    pub fn record(&mut self, cost: &Cost, write: bool) {
        self.accesses += 1;
        if write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
        if self.level_misses.len() < cost.missed {
            self.level_misses.resize(cost.missed, 0);
        }
        for m in &mut self.level_misses[..cost.missed] {
            *m += 1;
        }
        if cost.first {
            self.first_accesses += 1;
            self.dmd_cold += cost.sqrt;
        } else {
            self.dmd_warm += cost.sqrt;
            if self.histogram.len() <= cost.bin {
                self.histogram.resize(cost.bin + 1, 0);
            }
            self.histogram[cost.bin] += 1;
        }
    }

    /// Scales every total by `factor` (a sampled trace stands for `1/rate` times as many
    /// accesses); counts are rounded to the nearest integer.
    pub fn scale(&mut self, factor: f64) {
        let s = |v: &mut u64| *v = (*v as f64 * factor).round() as u64;
        s(&mut self.accesses);
        s(&mut self.reads);
        s(&mut self.writes);
        s(&mut self.first_accesses);
        self.histogram.iter_mut().for_each(s);
        self.level_misses.iter_mut().for_each(s);
        self.dmd_warm *= factor;
        self.dmd_cold *= factor;
    }

    /// The miss ratio at every power-of-two capacity up to the largest distance seen.
    pub fn miss_ratio_curve(&self) -> Vec<MissRatio> {
        if self.accesses == 0 {
            return Vec::new();
        }
        let mut hits = 0u64;
        self.histogram
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                hits += n;
                MissRatio {
                    capacity: 1u64 << k,
                    ratio: 1.0 - hits as f64 / self.accesses as f64,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_closed_above_at_powers_of_two() {
        let bins: Vec<usize> = [1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 9.0]
            .iter()
            .map(|&d| log_bin(d))
            .collect();
        assert_eq!(bins, [0, 1, 2, 2, 3, 3, 4]);
    }

    #[test]
    fn miss_ratio_counts_first_accesses_as_misses() {
        // a b b c a: distances 1* 2* 1 3* 3 (* = first).
        let mut d = Dmd::default();
        for (dist, first) in [
            (1.0, true),
            (2.0, true),
            (1.0, false),
            (3.0, true),
            (3.0, false),
        ] {
            d.record(&Cost::of(dist, first), false);
        }
        assert_eq!(d.first_accesses, 3);
        assert!((d.dmd_warm - (1.0 + 3f64.sqrt())).abs() < 1e-12);
        let curve: Vec<(u64, f64)> = d
            .miss_ratio_curve()
            .iter()
            .map(|m| (m.capacity, m.ratio))
            .collect();
        // Capacity 1: only the b re-access hits; 2: same; 4: the a re-access hits too.
        assert_eq!(curve, [(1, 0.8), (2, 0.8), (4, 0.6)]);
    }
}
