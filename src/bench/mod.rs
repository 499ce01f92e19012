//! Benchmark statistics and reports.
//!
//! Variants are measured in the same process run, one after another, so the report is a ratio
//! measured side by side; the median of the repetitions is the headline figure because the
//! machine is shared and noisy (min and max are kept to show the spread).

pub mod calibrate;
pub mod load;
pub mod machine;
pub mod peer;
pub mod report;
pub mod variants;
pub mod workload;

use load::ForeignLoad;
use serde::Serialize;

/// Summary of repeated wall-time measurements, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub reps: usize,
}

impl Stats {
    /// Summarises samples; `None` when there are none.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median_ms: median,
            min_ms: v[0],
            max_ms: v[n - 1],
            reps: n,
        })
    }
}

/// One line of a benchmark report.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub variant: String,
    pub stats: Option<Stats>,
    pub gflops: Option<f64>,
    /// Baseline median / this median.
    pub speedup: Option<f64>,
    /// Largest absolute difference from the reference outputs.
    pub max_abs_error: Option<f64>,
    /// Why the outputs do not agree with the reference (beyond `numerics`' tolerance, or of
    /// another shape); `None` when they agree.
    pub disagreement: Option<String>,
    /// Cores' worth of CPU other processes used while this variant ran (see [`load`]).
    pub foreign_load: Option<ForeignLoad>,
    /// Bytes moved by the program's top-level nodes (dmove's variants; unknown for peers).
    pub bytes_moved: Option<u64>,
    /// The peer's version.
    pub version: Option<String>,
    /// Why a variant has no figures (e.g. a peer that is not installed).
    pub note: Option<String>,
}

impl Row {
    pub fn measured(variant: &str, stats: Stats, flops: u64, baseline_ms: Option<f64>) -> Row {
        Row {
            gflops: (stats.median_ms > 0.0).then(|| flops as f64 / (stats.median_ms * 1e6)),
            speedup: baseline_ms.map(|b| b / stats.median_ms),
            stats: Some(stats),
            ..Row::empty(variant)
        }
    }

    pub fn unavailable(variant: &str, why: impl Into<String>) -> Row {
        Row {
            note: Some(why.into()),
            ..Row::empty(variant)
        }
    }

    fn empty(variant: &str) -> Row {
        Row {
            variant: variant.to_string(),
            stats: None,
            gflops: None,
            speedup: None,
            max_abs_error: None,
            disagreement: None,
            foreign_load: None,
            bytes_moved: None,
            version: None,
            note: None,
        }
    }

    pub fn median_ms(&self) -> Option<f64> {
        self.stats.as_ref().map(|s| s.median_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_counts() {
        let s = Stats::from_samples(&[5.0, 1.0, 3.0]).expect("some");
        assert_eq!(
            (s.median_ms, s.min_ms, s.max_ms, s.reps),
            (3.0, 1.0, 5.0, 3)
        );
        let s = Stats::from_samples(&[4.0, 1.0, 2.0, 3.0]).expect("some");
        assert_eq!(s.median_ms, 2.5);
        assert!(Stats::from_samples(&[]).is_none());
    }
}
