//! Horizontal bar charts: one row per item, labelled with its name, one bar per series (e.g.
//! baseline and optimized), on a log or linear value axis with ticks, grid lines and a titled
//! unit; optional whiskers show a spread (min–max of repeated runs).

use super::figure::{panel_head, Panel, SERIES_COLOURS};
use super::scale::{Scale, Unit};
use super::svg::{Anchor, Doc};
use super::text_width;

/// One bar: its value and, optionally, the range a whisker spans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub whisker: Option<(f64, f64)>,
}

impl Bar {
    pub fn of(value: f64) -> Bar {
        Bar {
            value,
            whisker: None,
        }
    }
}

/// One labelled row: a bar per series (`None` where the series has no such item).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub label: String,
    pub bars: Vec<Option<Bar>>,
}

/// A horizontal bar chart.
#[derive(Clone, Debug)]
pub struct Bars {
    pub title: String,
    /// The value axis' title, with its unit, e.g. `DMD (Σ √reuse distance)`.
    pub axis_title: String,
    pub unit: Unit,
    /// Names of the series (shown as a legend when there are two or more).
    pub series: Vec<String>,
    pub rows: Vec<Row>,
    /// A log value axis (values spanning decades); linear from 0 otherwise.
    pub log: bool,
    /// Said under the chart, e.g. how many rows were left out.
    pub note: Option<String>,
}

const ROW_GAP: f64 = 6.0;
const BAR_H: f64 = 12.0;
const HEAD: f64 = 30.0;
const FOOT: f64 = 44.0;
/// Room for the value written after the longest bar.
const VALUE_ROOM: f64 = 70.0;

impl Bars {
    fn row_height(&self) -> f64 {
        BAR_H * self.series.len().max(1) as f64 + ROW_GAP
    }

    fn label_width(&self) -> f64 {
        let widest = (self.rows.iter())
            .map(|r| text_width(&r.label, 11.0))
            .fold(0.0, f64::max);
        widest.clamp(40.0, 260.0) + 12.0
    }

    fn scale(&self) -> Scale {
        let values = (self.rows.iter())
            .flat_map(|r| r.bars.iter().flatten())
            .flat_map(|b| {
                [
                    Some(b.value),
                    b.whisker.map(|w| w.0),
                    b.whisker.map(|w| w.1),
                ]
            })
            .flatten();
        let log = self.log.then(|| Scale::log_covering(10.0, values.clone()));
        match log.flatten() {
            Some(s) => s,
            None => Scale::linear_from_zero(values.fold(0.0, f64::max)),
        }
    }
}

/// Cuts `label` to `chars` characters, marking the cut with an ellipsis.
pub fn shorten(label: &str, chars: usize) -> String {
    if label.chars().count() <= chars {
        return label.to_string();
    }
    let head: String = label.chars().take(chars.saturating_sub(1)).collect();
    format!("{head}…")
}

impl Panel for Bars {
    fn height(&self, _width: f64) -> f64 {
        HEAD + self.row_height() * self.rows.len().max(1) as f64
            + FOOT
            + if self.note.is_some() { 14.0 } else { 0.0 }
    }

    fn draw(&self, doc: &mut Doc, x: f64, y: f64, width: f64) {
        let scale = self.scale();
        let left = x + self.label_width();
        let right = x + width - VALUE_ROOM;
        let plot_w = right - left;
        let top = y + HEAD;
        let bottom = top + self.row_height() * self.rows.len().max(1) as f64;
        panel_head(doc, (x, y), x + width - 12.0, &self.title, &self.series);
        for t in scale.ticks() {
            let tx = left + plot_w * scale.fraction(t);
            doc.line((tx, top - 4.0), (tx, bottom), "#e3e3e3", 1.0);
            doc.text(tx, bottom + 14.0, Anchor::Middle, "", &self.unit.format(t));
        }
        doc.line((left, top - 4.0), (left, bottom), "black", 1.0);
        doc.line((left, bottom), (right, bottom), "black", 1.0);
        let axis = format!(
            "{}{}",
            self.axis_title,
            if scale.is_log() { " — log scale" } else { "" }
        );
        doc.text(
            left + plot_w / 2.0,
            bottom + 32.0,
            Anchor::Middle,
            "",
            &axis,
        );
        if self.rows.is_empty() {
            doc.text(
                left + plot_w / 2.0,
                top + 10.0,
                Anchor::Middle,
                "fill=\"#555\"",
                "(nothing to show)",
            );
        }
        let chars = ((self.label_width() - 12.0) / 6.0) as usize;
        for (i, row) in self.rows.iter().enumerate() {
            let ry = top + self.row_height() * i as f64 + ROW_GAP / 2.0;
            let mid = ry + self.row_height() / 2.0 - ROW_GAP / 2.0 + 4.0;
            doc.text(
                left - 6.0,
                mid,
                Anchor::End,
                "",
                &shorten(&row.label, chars),
            );
            for (k, bar) in row.bars.iter().enumerate() {
                let Some(bar) = bar else { continue };
                let by = ry + BAR_H * k as f64;
                let w = plot_w * scale.fraction(bar.value);
                let series = self.series.get(k).map_or("", String::as_str);
                let title = format!(
                    "{}{}{}: {}",
                    row.label,
                    if series.is_empty() { "" } else { " — " },
                    series,
                    self.unit.format(bar.value)
                );
                doc.rect(
                    left,
                    by + 1.0,
                    w,
                    BAR_H - 2.0,
                    SERIES_COLOURS[k % 4],
                    Some(&title),
                );
                let mut end = left + w;
                if let Some((lo, hi)) = bar.whisker {
                    let (a, b) = (
                        left + plot_w * scale.fraction(lo),
                        left + plot_w * scale.fraction(hi),
                    );
                    let cy = by + BAR_H / 2.0;
                    doc.line((a, cy), (b, cy), "black", 1.2);
                    doc.line((a, cy - 4.0), (a, cy + 4.0), "black", 1.2);
                    doc.line((b, cy - 4.0), (b, cy + 4.0), "black", 1.2);
                    end = end.max(b);
                }
                doc.text(
                    end + 4.0,
                    by + BAR_H - 2.5,
                    Anchor::Start,
                    "font-size=\"10\" fill=\"#333\"",
                    &self.unit.format(bar.value),
                );
            }
        }
        if let Some(note) = &self.note {
            doc.text(left, bottom + 46.0, Anchor::Start, "fill=\"#555\"", note);
        }
    }
}
