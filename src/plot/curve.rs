//! Line charts over a log₂ x axis: the LRU miss-ratio curve of one or several programs against
//! cache capacity, with the capacity written in its unit (bytes, or elements).

use super::figure::{panel_head, Panel, SERIES_COLOURS};
use super::scale::{Scale, Unit};
use super::svg::{Anchor, Doc};

/// One named curve: (x, y) points with x > 0, in increasing x.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart of curves; y runs linearly from 0 to 1 (a ratio).
#[derive(Clone, Debug)]
pub struct Curves {
    pub title: String,
    pub x_title: String,
    pub x_unit: Unit,
    pub y_title: String,
    pub series: Vec<Series>,
}

const HEIGHT: f64 = 280.0;
/// Room around the plot area: tick labels and the y title on the left, the title on top, tick
/// labels and the x title below.
const MARGINS: Margins = Margins {
    left: 70.0,
    right: 30.0,
    top: 34.0,
    bottom: 50.0,
};

struct Margins {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Panel for Curves {
    fn height(&self, _width: f64) -> f64 {
        HEIGHT
    }

    fn draw(&self, doc: &mut Doc, x: f64, y: f64, width: f64) {
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let xscale = Scale::log_covering(2.0, xs).unwrap_or(Scale::Log {
            base: 2.0,
            lo: 0,
            hi: 1,
        });
        let yscale = Scale::Linear { lo: 0.0, hi: 1.0 };
        let (left, right) = (x + MARGINS.left, x + width - MARGINS.right);
        let (top, bottom) = (y + MARGINS.top, y + HEIGHT - MARGINS.bottom);
        let at = |(px, py): (f64, f64)| {
            (
                left + (right - left) * xscale.fraction(px),
                bottom - (bottom - top) * yscale.fraction(py),
            )
        };
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        panel_head(doc, (x, y), right, &self.title, &names);
        for t in xscale.ticks() {
            let (tx, _) = at((t, 0.0));
            doc.line((tx, top), (tx, bottom), "#e3e3e3", 1.0);
            doc.text(
                tx,
                bottom + 14.0,
                Anchor::Middle,
                "",
                &self.x_unit.format(t),
            );
        }
        for t in yscale.ticks() {
            let (_, ty) = at((1.0, t));
            doc.line((left, ty), (right, ty), "#e3e3e3", 1.0);
            doc.text(
                left - 6.0,
                ty + 4.0,
                Anchor::End,
                "",
                &Unit::Ratio.format(t),
            );
        }
        doc.line((left, top), (left, bottom), "black", 1.0);
        doc.line((left, bottom), (right, bottom), "black", 1.0);
        doc.text(
            (left + right) / 2.0,
            bottom + 34.0,
            Anchor::Middle,
            "",
            &format!("{} — log₂ scale", self.x_title),
        );
        doc.vertical_text(x + 18.0, (top + bottom) / 2.0, &self.y_title);
        for (k, s) in self.series.iter().enumerate() {
            let colour = SERIES_COLOURS[k % 4];
            let pts: Vec<(f64, f64)> = s.points.iter().map(|&p| at(p)).collect();
            doc.polyline(&pts, colour, &s.name);
            for (&p, &xy) in s.points.iter().zip(&pts) {
                let title = format!(
                    "{}: {} at {}",
                    s.name,
                    Unit::Ratio.format(p.1),
                    self.x_unit.format(p.0)
                );
                doc.dot(xy, colour, &title);
            }
        }
    }
}
