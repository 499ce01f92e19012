//! A small SVG writer: the document frame, text, shapes and escaping, shared by every chart and
//! by `dmove view`'s pictures (so every string from a model file is escaped in one place).

use std::fmt::Write;

/// Text safe inside an SVG/XML element or a double-quoted attribute.
pub fn escape(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newline are not allowed in XML 1.0.
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// Where a text's anchor point is: its start, middle or end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being written; [`Doc::finish`] closes it.
pub struct Doc {
    out: String,
}

impl Doc {
    /// A `width` × `height` document on a white background, sans-serif 11 px by default.
    pub fn new(width: f64, height: f64) -> Doc {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"sans-serif\" font-size=\"11\">",
            w = width,
            h = height
        );
        out.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        Doc { out }
    }

    /// Text at (`x`, `y`) (the baseline), with extra attributes such as `font-size="13"`.
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, attrs: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{}\"{}{attrs}>{}</text>",
            anchor.name(),
            if attrs.is_empty() { "" } else { " " },
            escape(text)
        );
    }

    /// Text rotated a quarter turn anticlockwise about its anchor (a vertical axis title).
    pub fn vertical_text(&mut self, x: f64, y: f64, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {x:.1} {y:.1})\">{}</text>",
            escape(text)
        );
    }

    /// A rectangle, with a hover title when `title` is given.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        let _ = write!(
            self.out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"",
            w.max(0.0),
            h.max(0.0)
        );
        match title {
            Some(t) => {
                let _ = writeln!(self.out, "><title>{}</title></rect>", escape(t));
            }
            None => self.out.push_str("/>\n"),
        }
    }

    /// A straight line.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>"
        );
    }

    /// An open polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, title: &str) {
        let pts: Vec<String> = (points.iter())
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            self.out,
            "<polyline points=\"{}\" stroke=\"{stroke}\" stroke-width=\"2\" fill=\"none\"><title>{}</title></polyline>",
            pts.join(" "),
            escape(title)
        );
    }

    /// A small filled circle (a data point) with its value as hover title.
    pub fn dot(&mut self, (x, y): (f64, f64), fill: &str, title: &str) {
        let _ = writeln!(
            self.out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{fill}\"><title>{}</title></circle>",
            escape(title)
        );
    }

    /// Closes the document.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_control_characters() {
        assert_eq!(escape("a<b>&\"c'\u{1}\n"), "a&lt;b&gt;&amp;&quot;c&#39;\n");
    }
}
