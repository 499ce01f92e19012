//! SVG markup of a placed scene. Every box is a group in its scope's coordinates
//! (`transform="translate(x,y)"`), a map's body a nested scope group, so the HTML viewer can
//! move boxes and redraw edges without knowing the program; `data-w`/`data-h` keep each box's
//! own size (a map's header) and `data-layers` each scope's rows for its script.

use super::colour::Colouring;
use super::place::Placed;
use super::scene::{Edge, Item, Kind, Scope, LINE_H, PAD};
use crate::plot::svg::escape;
use std::fmt::Write;

/// Margin around the drawing.
pub const MARGIN: f64 = 16.0;

/// The style every picture carries (an SVG file shows the same as the HTML view).
pub const STYLE: &str = "\
.item>.box{stroke:#555;stroke-width:1}\
.item.map>.box{stroke:#6b7fa3;stroke-dasharray:4 2;fill-opacity:.55}\
.item.map.collapsed>.box{stroke-dasharray:none;stroke-width:2}\
.item.library>.box{stroke:#3b6ea5}\
.item.changed>.box{stroke:#1a9c3c;stroke-width:3}\
.item.removed>.box{stroke:#c0392b;stroke-width:3}\
.item text{font-family:monospace;font-size:11px}\
.item text.t0{font-weight:bold}\
.edge path{fill:none;stroke:#777;stroke-width:1.2}\
.edge text{font-family:monospace;font-size:9px;fill:#444;paint-order:stroke;stroke:white;stroke-width:3px}\
";

/// The whole picture as an SVG document.
pub fn document(title: &str, s: &Scope, p: &Placed, colouring: &Colouring) -> String {
    let (legend, legend_h) = legend(title, colouring);
    let width = (p.width + 2.0 * MARGIN).max(legend_width(colouring));
    let height = legend_h + p.height + 2.0 * MARGIN;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n"
    );
    let _ = writeln!(out, "<style>{STYLE}</style>");
    out.push_str(ARROW);
    out.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    out.push_str(&legend);
    let _ = writeln!(
        out,
        "<g class=\"scope root\" transform=\"translate({MARGIN:.1},{:.1})\" data-layers=\"{}\">",
        legend_h + MARGIN,
        layers_attr(s)
    );
    out.push_str(&scope_content(s, p));
    out.push_str("</g>\n</svg>\n");
    out
}

/// The arrowhead every edge ends with.
pub const ARROW: &str = "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0 0 L8 4 L0 8 z\" fill=\"#777\"/></marker></defs>\n";

/// `[[0,1],[2]]`: the scope's rows, for the viewer's script.
pub fn layers_attr(s: &Scope) -> String {
    let rows: Vec<String> = (s.layers.iter())
        .map(|l| {
            let v: Vec<String> = l.iter().map(|i| i.to_string()).collect();
            format!("[{}]", v.join(","))
        })
        .collect();
    format!("[{}]", rows.join(","))
}

/// The items of a placed scope, then its edges.
fn scope_content(s: &Scope, p: &Placed) -> String {
    let mut out = String::new();
    for (k, it) in s.items.iter().enumerate() {
        out.push_str(&item(it, p.size[k], p.bodies[k].as_ref(), Some(p.at[k])));
    }
    out.push_str("<g class=\"edges\">\n");
    for e in &s.edges {
        out.push_str(&edge(e, s, p));
    }
    out.push_str("</g>\n");
    out
}

/// One box (and a map's body) of size `size`, at `at` in its scope, or without a position (the
/// HTML viewer places top-level boxes of each step itself).
pub fn item(it: &Item, size: (f64, f64), body: Option<&Placed>, at: Option<(f64, f64)>) -> String {
    let (w, h) = size;
    let mut out = format!(
        "<g class=\"item {}\" data-id=\"{}\" data-w=\"{:.1}\" data-h=\"{:.1}\"",
        it.kind.name(),
        it.id,
        it.width,
        it.height
    );
    if let Some((x, y)) = at {
        let _ = write!(out, " transform=\"translate({x:.1},{y:.1})\"");
    }
    let rx = match it.kind {
        Kind::Access => it.height / 2.0,
        Kind::Tasklet => 9.0,
        Kind::Map => 6.0,
        Kind::Library => 2.0,
    };
    let _ = writeln!(
        out,
        "><title>{}</title><rect class=\"box\" width=\"{w:.1}\" height=\"{h:.1}\" rx=\"{rx:.1}\" fill=\"{}\"/>",
        escape(&it.details),
        it.fill
    );
    for (k, line) in it.lines.iter().enumerate() {
        let y = PAD / 2.0 + LINE_H * (k as f64 + 1.0) - 3.0;
        let (x, anchor) = match it.kind {
            Kind::Map => (PAD, "start"),
            _ => (w / 2.0, "middle"),
        };
        let _ = writeln!(
            out,
            "<text class=\"t{k}\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" fill=\"{}\">{}</text>",
            it.ink,
            escape(line)
        );
    }
    if let (Some(s), Some(p)) = (&it.body, body) {
        let _ = writeln!(
            out,
            "<g class=\"scope\" transform=\"translate({PAD:.1},{:.1})\" data-layers=\"{}\">",
            it.height,
            layers_attr(s)
        );
        out.push_str(&scope_content(s, p));
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n");
    out
}

/// An edge from the bottom centre of its source to the top centre of its target.
fn edge(e: &Edge, s: &Scope, p: &Placed) -> String {
    let centre = |k: usize| p.at[k].0 + p.size[k].0 / 2.0;
    let (x1, y1) = (centre(e.from), p.at[e.from].1 + p.size[e.from].1);
    let (x2, y2) = (centre(e.to), p.at[e.to].1);
    let outs = s.edges.iter().filter(|o| o.from == e.from).count();
    let ins = s.edges.iter().filter(|o| o.to == e.to).count();
    let label = label_at(((x1, y1), (x2, y2)), outs, ins);
    edge_markup(e, ((x1, y1), (x2, y2)), label)
}

/// Where an edge's label goes: under its source when the source has only this edge, else
/// above its target when the target has only this one, else halfway — so labels of edges
/// that meet at a box do not pile up there. (`viewer.js` follows the same rule.)
pub fn label_at(ends: ((f64, f64), (f64, f64)), outs: usize, ins: usize) -> (f64, f64) {
    let ((x1, y1), (x2, y2)) = ends;
    if outs == 1 {
        (x1, y1 + 12.0)
    } else if ins == 1 {
        (x2, y2 - 6.0)
    } else {
        ((x1 + x2) / 2.0, (y1 + y2) / 2.0 + 3.0)
    }
}

/// The markup of an edge between two points with its label at `label` (the HTML view's step
/// frames write it at the origin and let the script place it).
pub fn edge_markup(e: &Edge, ends: ((f64, f64), (f64, f64)), label: (f64, f64)) -> String {
    let ((x1, y1), (x2, y2)) = ends;
    let ym = (y1 + y2) / 2.0;
    format!(
        "<g class=\"edge\" data-from=\"{}\" data-to=\"{}\"><title>{}</title><path d=\"M{x1:.1} {y1:.1} C{x1:.1} {ym:.1} {x2:.1} {ym:.1} {x2:.1} {y2:.1}\" marker-end=\"url(#arrow)\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></g>\n",
        e.from,
        e.to,
        escape(&e.details),
        label.0,
        label.1,
        escape(&e.label)
    )
}

const SWATCH_W: f64 = 150.0;

pub fn legend_width(c: &Colouring) -> f64 {
    2.0 * MARGIN + 200.0 + SWATCH_W * c.legend().len() as f64
}

/// The title line and the colour legend, and the height they take.
pub fn legend(title: &str, c: &Colouring) -> (String, f64) {
    let mut out = String::from("<g class=\"legend\">\n");
    let _ = writeln!(
        out,
        "<text x=\"{MARGIN}\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        escape(title)
    );
    let _ = writeln!(
        out,
        "<text x=\"{MARGIN}\" y=\"44\">arrays coloured by {}:</text>",
        escape(c.metric)
    );
    for (k, (fill, ink, range)) in c.legend().into_iter().enumerate() {
        let x = MARGIN + 200.0 + SWATCH_W * k as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{x:.1}\" y=\"31\" width=\"{:.1}\" height=\"18\" rx=\"9\" fill=\"{fill}\" stroke=\"#555\"/><text x=\"{:.1}\" y=\"44\" text-anchor=\"middle\" fill=\"{ink}\">{}</text>",
            SWATCH_W - 8.0,
            x + (SWATCH_W - 8.0) / 2.0,
            escape(&range)
        );
    }
    out.push_str("</g>\n");
    (out, 56.0)
}
