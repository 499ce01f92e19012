//! What a picture of a program shows, before any coordinates: one box per node (its text
//! lines, its hover details, its fill), a map's body as a nested scope, and one labelled edge
//! per memlet. Every scope is laid out on its own (`rank`, `place`), so a map's box is sized by
//! its body and collapsing it only moves its neighbours.

use super::colour::Colouring;
use super::rank::layers;
use crate::ir::{Attr, Graph, Memlet, NodeId, NodeKind, Program, Subset, SymEnv};
use crate::plot::bars::shorten;
use crate::plot::scale::Unit;
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

/// The kinds of boxes, as the CSS classes of the picture name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Access,
    Library,
    Map,
    Tasklet,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Access => "access",
            Kind::Library => "library",
            Kind::Map => "map",
            Kind::Tasklet => "tasklet",
        }
    }
}

/// One node's box.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub id: NodeId,
    pub kind: Kind,
    /// The lines written in the box (a map's header), the first in bold.
    pub lines: Vec<String>,
    /// What hovering shows: kind, label, id, shapes, memlets with volumes, data movement.
    pub details: String,
    /// The fill colour (arrays coloured by their data movement) and the text colour on it.
    pub fill: &'static str,
    pub ink: &'static str,
    /// The box's size, or a map's header size; a map's full size comes from its body.
    pub width: f64,
    pub height: f64,
    pub body: Option<Scope>,
}

/// A memlet between two items of the same scope.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// Positions in the scope's `items`.
    pub from: usize,
    pub to: usize,
    /// The subset and volume, shortened to fit.
    pub label: String,
    pub details: String,
}

/// One graph: its items, edges and the layers (rows) its items are placed in, each layer
/// listing item positions left to right.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    pub items: Vec<Item>,
    pub edges: Vec<Edge>,
    pub layers: Vec<Vec<usize>>,
}

/// Pixels per character of the 11 px monospace font, and per line.
pub const CHAR_W: f64 = 6.6;
pub const LINE_H: f64 = 14.0;
/// Padding inside boxes.
pub const PAD: f64 = 8.0;
const MAX_CHARS: usize = 48;
const LABEL_CHARS: usize = 40;

/// The scene of `p`'s top-level graph, coloured by `colouring`.
pub fn scene(p: &Program, colouring: &Colouring) -> Scope {
    let cx = Context {
        p,
        env: p.symbol_values(),
        colouring,
    };
    cx.scope(&p.graph)
}

struct Context<'a> {
    p: &'a Program,
    env: SymEnv,
    colouring: &'a Colouring,
}

impl Context<'_> {
    fn scope(&self, g: &Graph) -> Scope {
        let order = g.ordered();
        let position: BTreeMap<NodeIndex, usize> =
            order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let items: Vec<Item> = order.iter().map(|&idx| self.item(g, idx)).collect();
        let mut edges: Vec<Edge> = g
            .edges()
            .map(|e| Edge {
                from: position[&e.from],
                to: position[&e.to],
                label: shorten(&self.edge_label(e.memlet), LABEL_CHARS),
                details: self.memlet_details(e.memlet),
            })
            .collect();
        edges.sort_by(|a, b| (a.from, a.to, &a.label).cmp(&(b.from, b.to, &b.label)));
        let pairs: Vec<(usize, usize)> = edges.iter().map(|e| (e.from, e.to)).collect();
        Scope {
            layers: layers(items.len(), &pairs),
            items,
            edges,
        }
    }

    fn item(&self, g: &Graph, idx: NodeIndex) -> Item {
        let n = g.node(idx);
        let mut details = vec![format!("{} {} \"{}\"", n.kind.kind_name(), n.id, n.label)];
        let (kind, lines, fill, body) = match &n.kind {
            NodeKind::Access(data) => {
                let shape = self.p.data.get(data).map_or_else(String::new, |d| {
                    let dims: Vec<String> = d.shape.iter().map(|s| s.to_string()).collect();
                    details.push(format!(
                        "container {data}: {}[{}] {}",
                        d.dtype.name(),
                        dims.join(", "),
                        d.kind.name()
                    ));
                    format!("{}[{}]", d.dtype.name(), dims.join(", "))
                });
                if let Some(v) = self.colouring.value(data) {
                    details.push(format!(
                        "{}: {}",
                        self.colouring.metric,
                        self.colouring.unit.format(v)
                    ));
                }
                let mut lines = vec![data.clone(), shape];
                if *data != n.label {
                    lines.insert(1, format!("({})", n.label));
                }
                (Kind::Access, lines, self.colouring.fill(data), None)
            }
            NodeKind::Library(l) => {
                details.push(format!("operator {}", l.op));
                for (k, v) in &l.attrs {
                    details.push(format!("  {k} = {}", attr_text(v)));
                }
                (
                    Kind::Library,
                    vec![n.label.clone(), l.op.clone()],
                    ("#dfe9f5", "black"),
                    None,
                )
            }
            NodeKind::Tasklet(t) => {
                details.push(format!("inputs ({})", t.inputs.join(", ")));
                let mut lines = vec![n.label.clone()];
                for (c, e) in &t.outputs {
                    details.push(format!("  {c} = {e}"));
                    lines.push(format!("{c} = {e}"));
                }
                (Kind::Tasklet, lines, ("#eaf4e4", "black"), None)
            }
            NodeKind::Map(m) => {
                let params: Vec<String> = (m.params.iter())
                    .map(|p| format!("{} = {}", p.name, p.range))
                    .collect();
                details.push(format!("[{}] {}", params.join(", "), m.schedule.name()));
                let header = vec![
                    n.label.clone(),
                    format!("[{}] {}", params.join(", "), m.schedule.name()),
                ];
                (
                    Kind::Map,
                    header,
                    ("#fbfbfb", "black"),
                    Some(self.scope(&m.body)),
                )
            }
        };
        for e in g.in_edges(idx) {
            details.push(format!("reads  {}", self.memlet_label(e.memlet)));
        }
        for e in g.out_edges(idx) {
            details.push(format!("writes {}", self.memlet_label(e.memlet)));
        }
        let lines: Vec<String> = lines
            .iter()
            .take(4)
            .map(|l| shorten(l, MAX_CHARS))
            .collect();
        let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(1);
        Item {
            id: n.id,
            kind,
            width: (widest as f64 * CHAR_W + 2.0 * PAD).max(48.0),
            height: lines.len() as f64 * LINE_H + PAD,
            lines,
            details: details.join("\n"),
            fill: fill.0,
            ink: fill.1,
            body,
        }
    }

    /// `x[0:128, k] · 128 el` (`· wcr sum` for resolved writes); a memlet of a whole array is
    /// `x (all) · 32.8k el`, which keeps labels short where operators meet (the exact subset is
    /// in the details).
    fn edge_label(&self, m: &Memlet) -> String {
        let whole = self
            .p
            .data
            .get(&m.data)
            .is_some_and(|d| Subset::full(&d.shape) == m.subset);
        if whole {
            let full = self.memlet_label(m);
            let tail = full.split_once(" · ").map_or("", |(_, t)| t);
            format!("{} (all) · {tail}", m.data)
        } else {
            self.memlet_label(m)
        }
    }

    /// `x[0:128, k] · 128 el` (`· wcr sum` for resolved writes).
    fn memlet_label(&self, m: &Memlet) -> String {
        let volume = m.subset.volume();
        let volume = match volume.eval(&self.env) {
            Ok(v) => Unit::Count.format(v as f64),
            Err(_) => volume.to_string(),
        };
        let wcr = m
            .wcr
            .map_or_else(String::new, |w| format!(" · wcr {}", w.name()));
        format!("{}{} · {volume} el{wcr}", m.data, m.subset)
    }

    fn memlet_details(&self, m: &Memlet) -> String {
        let mut lines = vec![format!("memlet {}{}", m.data, m.subset)];
        let volume = m.subset.volume();
        match volume.eval(&self.env) {
            Ok(v) => {
                let bytes = self
                    .p
                    .data
                    .get(&m.data)
                    .map(|d| d.dtype.size_bytes() as f64 * v as f64);
                lines.push(format!(
                    "volume {v} elements{}",
                    bytes.map_or_else(String::new, |b| format!(" ({})", Unit::Bytes.format(b)))
                ));
            }
            Err(_) => lines.push(format!("volume {volume}")),
        }
        if let Some(w) = m.wcr {
            lines.push(format!("write-conflict resolution: {}", w.name()));
        }
        for (what, c) in [
            ("from connector", &m.src_conn),
            ("to connector", &m.dst_conn),
        ] {
            if let Some(c) = c {
                lines.push(format!("{what} {c}"));
            }
        }
        lines.join("\n")
    }
}

fn attr_text(a: &Attr) -> String {
    let list = |v: Vec<String>| format!("[{}]", v.join(", "));
    match a {
        Attr::Int(v) => v.to_string(),
        Attr::Float(v) => v.to_string(),
        Attr::Str(s) => format!("\"{s}\""),
        Attr::Ints(v) => list(v.iter().map(|x| x.to_string()).collect()),
        Attr::Floats(v) => list(v.iter().map(|x| x.to_string()).collect()),
        Attr::Strs(v) => list(v.iter().map(|s| format!("\"{s}\"")).collect()),
    }
}
