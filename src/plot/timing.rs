//! The benchmark chart: one bar per variant at its median wall time, with a whisker from the
//! fastest to the slowest run, on a linear axis from zero (times are compared as ratios, so the
//! bars' lengths must be proportional to them).

use super::bars::{Bar, Bars, Row};
use super::figure::figure;
use super::scale::Unit;

/// One timed variant: what `bench::Stats` holds for it, with its name.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// The variant's name as the report prints it (`baseline`, `optimized`, `onnxruntime`).
    pub label: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Timed repetitions behind the median.
    pub reps: usize,
}

/// A benchmark bar chart as a standalone SVG document: `title` (e.g. the program's name) on top,
/// then one row per variant in the given order — a bar at the median, a whisker over min–max,
/// the median written at the bar's end, and the repetitions in the row's label.
///
/// `dmove bench` and the demo pass their `bench::Stats` here, one [`Timing`] per variant.
pub fn bench_chart(title: &str, timings: &[Timing]) -> String {
    let rows = (timings.iter())
        .map(|t| Row {
            label: format!("{} ({} runs)", t.label, t.reps),
            bars: vec![Some(Bar {
                value: t.median_ms,
                whisker: Some((t.min_ms, t.max_ms)),
            })],
        })
        .collect();
    let chart = Bars {
        title: "Wall time per variant: median, whisker from fastest to slowest run".into(),
        axis_title: "wall time (ms)".into(),
        unit: Unit::Millis,
        series: vec!["median".into()],
        rows,
        log: false,
        note: None,
    };
    figure(title, "benchmark", &[&chart])
}
