//! A figure: a title line naming what is shown, then panels stacked top to bottom, each as wide
//! as the figure, so a reader sees every chart of a program in one file.

use super::svg::{Anchor, Doc};

/// One chart of a figure.
pub trait Panel {
    /// The height the panel needs at `width`.
    fn height(&self, width: f64) -> f64;
    /// Draws the panel with its top-left corner at (`x`, `y`).
    fn draw(&self, doc: &mut Doc, x: f64, y: f64, width: f64);
}

/// The figure's width in pixels: wide enough for long node labels and a readable plot area.
pub const WIDTH: f64 = 860.0;

/// Space between panels.
const GAP: f64 = 24.0;

/// `panels` under `title` (and a `subtitle` line in grey), as one SVG document.
pub fn figure(title: &str, subtitle: &str, panels: &[&dyn Panel]) -> String {
    let top = if subtitle.is_empty() { 34.0 } else { 52.0 };
    let heights: Vec<f64> = panels.iter().map(|p| p.height(WIDTH)).collect();
    let total =
        top + heights.iter().sum::<f64>() + GAP * panels.len().saturating_sub(1) as f64 + 8.0;
    let mut doc = Doc::new(WIDTH, total);
    doc.text(
        WIDTH / 2.0,
        22.0,
        Anchor::Middle,
        "font-size=\"15\" font-weight=\"bold\"",
        title,
    );
    if !subtitle.is_empty() {
        doc.text(WIDTH / 2.0, 40.0, Anchor::Middle, "fill=\"#555\"", subtitle);
    }
    let mut y = top;
    for (p, h) in panels.iter().zip(&heights) {
        p.draw(&mut doc, 0.0, y, WIDTH);
        y += h + GAP;
    }
    doc.finish()
}

/// Colours of the series of a chart, told apart also in grey print (dark blue, orange, …).
pub const SERIES_COLOURS: [&str; 4] = ["#3b6ea5", "#e8871e", "#5a9e4b", "#9b59b6"];

/// A panel's title at its top left (`x`, `y`) and, for two or more series, their legend
/// right-aligned at `right`.
pub fn panel_head(doc: &mut Doc, (x, y): (f64, f64), right: f64, title: &str, series: &[String]) {
    doc.text(
        x + 12.0,
        y + 14.0,
        Anchor::Start,
        "font-size=\"13\" font-weight=\"bold\"",
        title,
    );
    if series.len() > 1 {
        legend(doc, right, y + 14.0, series);
    }
}

/// A legend of the series' names, right-aligned on one line at `y`.
fn legend(doc: &mut Doc, right: f64, y: f64, names: &[String]) {
    let mut x = right;
    for (i, name) in names.iter().enumerate().rev() {
        let w = super::text_width(name, 11.0) + 22.0;
        x -= w;
        doc.rect(x, y - 9.0, 12.0, 10.0, SERIES_COLOURS[i % 4], None);
        doc.text(x + 16.0, y, Anchor::Start, "", name);
    }
}
