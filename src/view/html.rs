//! The interactive page: one HTML file with its style, script and data inline (no network).
//!
//! Each frame (a step of the recipe, or the one program) is the list of its top-level boxes and
//! edges as SVG markup, stored once per distinct markup — a step rewrites a few maps, so the
//! frames share every box it did not touch and the file grows by what each step changed. The
//! script (`viewer.js`) inserts a frame's boxes, places them with the rules of `place` and
//! handles pan/zoom, collapsing maps, hover details and the step slider.

use super::colour::{Colouring, Metric};
use super::history::History;
use super::{draw, place, scene, ViewError};
use crate::plot::svg::escape;
use serde::Serialize;
use std::collections::HashMap;

const SCRIPT: &str = include_str!("viewer.js");
const STYLE: &str = include_str!("viewer.css");

/// One frame as the script reads it.
#[derive(Serialize)]
struct FrameData {
    title: String,
    /// Indices into the fragments: the top-level boxes, in scope order, then the edges.
    items: Vec<usize>,
    edges: Vec<usize>,
    layers: Vec<Vec<usize>>,
    changed: Vec<String>,
    replaced: Vec<String>,
}

#[derive(Serialize)]
struct PageData {
    fragments: Vec<String>,
    frames: Vec<FrameData>,
}

/// Interns markup so identical boxes of different frames are stored once.
#[derive(Default)]
struct Fragments {
    list: Vec<String>,
    index: HashMap<String, usize>,
}

impl Fragments {
    fn add(&mut self, markup: String) -> usize {
        if let Some(&i) = self.index.get(&markup) {
            return i;
        }
        self.list.push(markup.clone());
        self.index.insert(markup, self.list.len() - 1);
        self.list.len() - 1
    }
}

/// The page of `h`, arrays coloured by `metric` (one legend for every frame).
pub fn page(h: &History, metric: Metric) -> Result<String, ViewError> {
    let programs: Vec<_> = h.frames.iter().map(|f| &f.program).collect();
    let colourings = Colouring::measure(metric, &programs).map_err(ViewError::Measure)?;
    let mut fragments = Fragments::default();
    let mut frames = Vec::new();
    for (f, colouring) in h.frames.iter().zip(&colourings) {
        let s = scene::scene(&f.program, colouring);
        let p = place::place(&s);
        let items = (s.items.iter().enumerate())
            .map(|(k, it)| fragments.add(draw::item(it, p.size[k], p.bodies[k].as_ref(), None)))
            .collect();
        let edges = (s.edges.iter())
            .map(|e| fragments.add(draw::edge_markup(e, ((0.0, 0.0), (0.0, 0.0)), (0.0, 0.0))))
            .collect();
        let ids = |v: &[crate::ir::NodeId]| v.iter().map(|i| i.to_string()).collect();
        frames.push(FrameData {
            title: f.title.clone(),
            items,
            edges,
            layers: s.layers.clone(),
            changed: ids(&f.changed),
            replaced: ids(&f.replaced),
        });
    }
    let data = PageData {
        fragments: fragments.list,
        frames,
    };
    // `</` inside a script element would end it: JSON lets `/` be escaped.
    let json = serde_json::to_string(&data)
        .expect("page data serializes")
        .replace("</", "<\\/");
    let last = colourings.last().expect("a history has a frame");
    let name = h.frames.last().map_or("", |f| f.program.name.as_str());
    let title = format!("{} — {}", name, h.origin);
    let (legend, legend_h) = draw::legend(&title, last);
    Ok(format!(
        include_str!("page.html"),
        title = escape(&title),
        style = STYLE,
        svg_style = draw::STYLE,
        arrow = draw::ARROW,
        legend = legend,
        top = legend_h + draw::MARGIN,
        margin = draw::MARGIN,
        stepper = if h.frames.len() > 1 { "" } else { " hidden" },
        steps = match h.steps {
            0 => String::new(),
            n => format!(
                " · {n} recipe step(s): the boxes a step added or changed are outlined in green, \
                 and with “before” what it changed or removed in red"
            ),
        },
        last = h.frames.len() - 1,
        data = json,
        script = SCRIPT,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, DataDesc, DataKind, Program};
    use std::collections::BTreeMap;

    #[test]
    fn names_from_a_model_cannot_end_the_pages_script_or_inject_markup() {
        let mut p = Program::new("evil</script><script>alert(1)</script>");
        let name = "x</script><b onmouseover=alert(2)>";
        p.data.insert(
            name.into(),
            DataDesc::new(DType::F32, vec![4.into()], DataKind::Input),
        );
        p.build(|b| {
            b.library(
                "</title><svg onload=alert(3)>",
                "Relu",
                BTreeMap::new(),
                &[Some(name)],
                &[],
            );
        });
        let page = page(&super::super::history::single(p, "m.onnx"), Metric::Bytes).unwrap();
        assert_eq!(
            page.matches("</script>").count(),
            3,
            "the page's own three script elements"
        );
        assert!(!page.contains("<b onmouseover"));
        assert!(!page.contains("<svg onload"));
        assert!(
            page.contains("x&lt;/script&gt;"),
            "escaped inside the frames' markup"
        );
    }
}
