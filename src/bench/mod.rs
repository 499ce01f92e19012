//! Benchmark statistics and reports.
//!
//! Variants are measured in the same process run, one after another, so the report is a ratio
//! measured side by side; the median of the repetitions is the headline figure because the
//! machine is shared and noisy (min and max are kept to show the spread).

pub mod peer;
pub mod variants;

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
    /// Largest absolute difference from the reference interpreter's outputs.
    pub max_abs_error: Option<f64>,
    /// Why a variant has no figures (e.g. a peer that is not installed).
    pub note: Option<String>,
}

impl Row {
    pub fn measured(
        variant: &str,
        stats: Stats,
        flops: u64,
        baseline_ms: Option<f64>,
        max_abs_error: Option<f64>,
    ) -> Row {
        Row {
            variant: variant.to_string(),
            gflops: (stats.median_ms > 0.0).then(|| flops as f64 / (stats.median_ms * 1e6)),
            speedup: baseline_ms.map(|b| b / stats.median_ms),
            stats: Some(stats),
            max_abs_error,
            note: None,
        }
    }

    pub fn unavailable(variant: &str, why: impl Into<String>) -> Row {
        Row {
            variant: variant.to_string(),
            stats: None,
            gflops: None,
            speedup: None,
            max_abs_error: None,
            note: Some(why.into()),
        }
    }
}

/// A fixed-width table of rows.
pub fn render_table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<14} {:>11} {:>11} {:>11} {:>9} {:>9} {:>13}\n",
        "variant", "median ms", "min ms", "max ms", "GFLOP/s", "speedup", "max abs err"
    );
    for r in rows {
        match &r.stats {
            Some(s) => out.push_str(&format!(
                "{:<14} {:>11.3} {:>11.3} {:>11.3} {:>9} {:>9} {:>13}\n",
                r.variant,
                s.median_ms,
                s.min_ms,
                s.max_ms,
                r.gflops.map_or("-".into(), |g| format!("{g:.2}")),
                r.speedup.map_or("-".into(), |x| format!("{x:.2}x")),
                r.max_abs_error.map_or("-".into(), |e| format!("{e:.2e}")),
            )),
            None => out.push_str(&format!(
                "{:<14} {}\n",
                r.variant,
                r.note.as_deref().unwrap_or("not measured")
            )),
        }
    }
    out
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

    #[test]
    fn rows_compute_throughput_and_speedup() {
        let s = Stats::from_samples(&[2.0]).expect("some");
        let r = Row::measured("optimized", s, 4_000_000, Some(8.0), Some(1e-6));
        assert_eq!(r.gflops, Some(2.0));
        assert_eq!(r.speedup, Some(4.0));
        let table = render_table(&[r, Row::unavailable("onnxruntime", "python3 not found")]);
        assert!(table.contains("4.00x"));
        assert!(table.contains("onnxruntime    python3 not found"));
    }
}
