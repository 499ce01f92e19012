//! Charts as hand-written SVG: figures of stacked panels (`figure`), horizontal bar charts with
//! several series and whiskers (`bars`), log₂ curves (`curve`), the benchmark chart (`timing`),
//! value axes with units (`scale`) and the SVG writer every picture uses (`svg`).
//!
//! Hand-written SVG keeps the tool free of plotting dependencies. This layer knows nothing of
//! programs or analyses: `analysis::svg` and `dmove view` turn their data into these charts.

pub mod bars;
pub mod curve;
pub mod figure;
pub mod scale;
pub mod svg;
pub mod timing;

pub use timing::{bench_chart, Timing};

/// The width of `text` in pixels at `size` px, estimated (about 0.6 em per character in the
/// default sans-serif and monospace fonts), for layouts that must leave room for labels.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}
