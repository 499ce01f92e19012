//! Program → text. The output is deterministic (sorted declarations, nodes in
//! [`Graph::ordered`] order, edges sorted by their endpoints' positions), so two programs print
//! the same exactly when they are the same.

use super::lex::{name, quote};
use super::values::{hex_blob, inline, inline_is_exact, INLINE_LIMIT};
use crate::ir::constant::Constant;
use crate::ir::data::{DataDesc, Storage};
use crate::ir::graph::{EdgeView, Graph, Program};
use crate::ir::node::{Attr, Memlet, Node, NodeKind};
use crate::ir::texpr::format_float;
use petgraph::stable_graph::NodeIndex;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// The human form: constants with more than [`INLINE_LIMIT`] elements appear only as their
/// sha256 digest and element count.
pub fn print(p: &Program) -> String {
    Printer {
        values: Values::Human,
    }
    .program(p)
}

/// The exact form: every constant value is included, so parsing gives the program back.
pub fn print_exact(p: &Program) -> String {
    Printer {
        values: Values::Exact,
    }
    .program(p)
}

/// The text the program hash reads: the exact form with every constant value replaced by its
/// sha256 digest, and the graph by [`scope_digest`] of the top-level scope. Two programs print
/// alike here exactly when their exact forms are alike (up to a digest collision); a
/// constant's digest is computed once per value ([`Constant`]) and a scope's once per version
/// of it ([`Graph`] keeps it), so hashing after a step costs the declarations and the scopes
/// the step changed, not the weights or the untouched scopes.
pub fn print_for_hash(p: &Program) -> String {
    Printer {
        values: Values::Digests,
    }
    .program(p)
}

/// The part of [`print_for_hash`] before the graph line: a program whose declarations,
/// constants and signature are the same has the same one, so a caller that knows this can
/// reuse the hashing state after it (see `transform::engine::program_hash`).
pub fn print_hash_header(p: &Program) -> String {
    print_hash_header_with(p, &mut DeclLines::default())
}

/// The declaration lines of [`print_hash_header`] kept from one program to the next: a checked
/// step adds or changes a few declarations, so the engine prints only those again.
#[derive(Clone, Debug, Default)]
pub struct DeclLines(HashMap<String, (DataDesc, String)>);

impl DeclLines {
    /// The line of declaration `name`, printed again only when it is not the one kept.
    fn line(&mut self, name: &str, d: &DataDesc) -> String {
        match self.0.get(name) {
            Some((kept, line)) if kept == d => line.clone(),
            _ => {
                let line = data_line(name, d);
                self.0.insert(name.to_string(), (d.clone(), line.clone()));
                line
            }
        }
    }
}

/// [`print_hash_header`] with the declaration lines `lines` keeps.
pub fn print_hash_header_with(p: &Program, lines: &mut DeclLines) -> String {
    Printer {
        values: Values::Digests,
    }
    .header(p, &mut |n, d| lines.line(n, d))
}

/// One `data` line of a header.
fn data_line(n: &str, d: &DataDesc) -> String {
    let storage = match d.storage {
        Storage::Global => String::new(),
        s => format!(" {}", s.name()),
    };
    format!(
        "data {}: {}[{}] {}{storage}\n",
        name(n),
        d.dtype,
        join(&d.shape),
        d.kind.name()
    )
}

/// The last line of [`print_for_hash`]: the top-level scope by its digest.
pub fn hash_graph_line(g: &Graph) -> String {
    format!("graph sha256:{}\n", hex::encode(scope_digest(g)))
}

/// The sha256 of one scope: of each node's [`node_digest`], in id order. Two scopes have the
/// same digest exactly when they print alike (every node line and every edge line is inside
/// some node's digest), and a nested scope hashes alike wherever it sits. Kept by the graph
/// until it changes, as each node's digest is.
pub fn scope_digest(g: &Graph) -> [u8; 32] {
    g.digest_with(|| {
        let mut nodes: Vec<_> = g.node_indices().map(|i| (g.node(i).id, i)).collect();
        nodes.sort_unstable();
        let mut h = Sha256::new();
        for (_, idx) in nodes {
            h.update(node_digest(g, idx));
        }
        h.finalize().into()
    })
}

/// The sha256 of node `idx` of `g`: its line in the exact form (a map's body as its
/// [`scope_digest`]) and the lines of its incoming and outgoing edges, so a node whose digest
/// did not change kept its content, its body and its edges.
pub fn node_digest(g: &Graph, idx: NodeIndex) -> [u8; 32] {
    g.node_digest_with(idx, || {
        let mut text = String::new();
        node(g.node(idx), 0, Bodies::Digests, &mut text);
        let line = |e: &EdgeView, incoming: bool| {
            let (this, other) = (g.node(idx).id.to_string(), g.node(e.other).id.to_string());
            match incoming {
                true => edge(&other, &this, e.memlet),
                false => edge(&this, &other, e.memlet),
            }
        };
        for (edges, incoming) in [(g.in_edges(idx), true), (g.out_edges(idx), false)] {
            let mut lines: Vec<String> = edges.iter().map(|e| line(e, incoming)).collect();
            lines.sort_unstable();
            for l in lines {
                text.push('\n');
                text.push_str(&l);
            }
            text.push('\n');
        }
        Sha256::digest(text.as_bytes()).into()
    })
}

/// One node in the human form, a map with its whole body: what `dmove repl`'s `:show` prints.
pub fn print_node(n: &Node) -> String {
    let mut out = String::new();
    node(n, 0, Bodies::Inline, &mut out);
    out
}

struct Printer {
    values: Values,
}

/// How constant values print.
#[derive(Clone, Copy, PartialEq)]
enum Values {
    /// Small ones inline, large ones by digest and element count.
    Human,
    /// All of them, exactly.
    Exact,
    /// All of them by digest.
    Digests,
}

/// How a map's body prints.
#[derive(Clone, Copy, PartialEq)]
enum Bodies {
    /// Whole, nested inside the map.
    Inline,
    /// As `sha256:<scope_digest of the body>`.
    Digests,
}

/// Comma-separated names in parentheses.
fn name_list(names: &[String]) -> String {
    let v: Vec<String> = names.iter().map(|n| name(n)).collect();
    format!("({})", v.join(", "))
}

fn join<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Printer {
    fn program(&self, p: &Program) -> String {
        let mut text = self.header(p, &mut data_line);
        match self.values {
            Values::Digests => text.push_str(&hash_graph_line(&p.graph)),
            Values::Human | Values::Exact => {
                text.push_str("graph ");
                scope(&p.graph, 0, &mut text);
                text.push('\n');
            }
        }
        text
    }

    /// Everything before the graph: the name, symbols, declarations, signature and constants,
    /// each section followed by a blank line.
    fn header(&self, p: &Program, data_line: &mut dyn FnMut(&str, &DataDesc) -> String) -> String {
        let mut sections = vec![format!("program {}\n", quote(&p.name))];
        let symbols: String = p
            .symbols
            .iter()
            .map(|(s, v)| match v {
                Some(v) => format!("symbol {s} = {v}\n"),
                None => format!("symbol {s}\n"),
            })
            .collect();
        let data: String = p.data.iter().map(|(n, d)| data_line(n, d)).collect();
        let signature = format!(
            "signature {} -> {}\n",
            name_list(&p.inputs),
            name_list(&p.outputs)
        );
        let constants: String = p
            .constants
            .iter()
            .map(|(n, t)| {
                format!(
                    "const {}: {}[{}] = {}\n",
                    name(n),
                    t.dtype(),
                    join(&t.shape),
                    self.value(t)
                )
            })
            .collect();
        sections.extend([symbols, data, signature, constants]);
        sections.retain(|s| !s.is_empty());
        sections.join("\n") + "\n"
    }

    fn value(&self, c: &Constant) -> String {
        let small = c.len() <= INLINE_LIMIT;
        match self.values {
            Values::Exact if small && inline_is_exact(c) => inline(c),
            Values::Exact => hex_blob(c),
            Values::Human if small => inline(c),
            Values::Human => format!("sha256:{} ({} values)", c.digest(), c.len()),
            Values::Digests => format!("sha256:{}", c.digest()),
        }
    }
}

/// Appends `{ nodes… edges… }` of one scope, indented one level deeper than `level`.
fn scope(g: &Graph, level: usize, out: &mut String) {
    let order = g.ordered();
    if order.is_empty() {
        out.push_str("{}");
        return;
    }
    let pad = "  ".repeat(level + 1);
    out.push_str("{\n");
    for &idx in &order {
        out.push_str(&pad);
        node(g.node(idx), level + 1, Bodies::Inline, out);
        out.push('\n');
    }
    let position: BTreeMap<_, _> = order.iter().enumerate().map(|(i, idx)| (*idx, i)).collect();
    let mut edges: Vec<(usize, usize, String)> = g
        .edges()
        .map(|e| {
            let (s, d) = (e.from, e.to);
            let line = edge(
                &g.node(s).id.to_string(),
                &g.node(d).id.to_string(),
                e.memlet,
            );
            (position[&s], position[&d], line)
        })
        .collect();
    edges.sort();
    for (_, _, line) in edges {
        out.push_str(&pad);
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&"  ".repeat(level));
    out.push('}');
}

fn node(n: &Node, level: usize, bodies: Bodies, out: &mut String) {
    out.push_str(&format!("{} ", n.id));
    match &n.kind {
        NodeKind::Access(d) => {
            out.push_str(&format!("access {}", name(d)));
            if n.label != *d {
                out.push_str(&format!(" {}", quote(&n.label)));
            }
        }
        NodeKind::Library(lib) => {
            out.push_str(&format!("library {} {}", quote(&n.label), name(&lib.op)));
            if !lib.attrs.is_empty() {
                let attrs: Vec<String> = lib
                    .attrs
                    .iter()
                    .map(|(k, v)| format!("{} = {}", name(k), attr(v)))
                    .collect();
                out.push_str(&format!(" {{ {} }}", attrs.join(", ")));
            }
        }
        NodeKind::Map(m) => {
            let params: Vec<String> = m
                .params
                .iter()
                .map(|p| format!("{} = {}", name(&p.name), p.range))
                .collect();
            out.push_str(&format!(
                "map {} [{}] {} ",
                quote(&n.label),
                params.join(", "),
                m.schedule.name()
            ));
            if m.min_work != 0 {
                out.push_str(&format!("min_work {} ", m.min_work));
            }
            match bodies {
                Bodies::Inline => scope(&m.body, level, out),
                Bodies::Digests => {
                    out.push_str(&format!("sha256:{}", hex::encode(scope_digest(&m.body))))
                }
            }
        }
        NodeKind::Tasklet(t) => {
            let inputs: Vec<String> = t.inputs.iter().map(|c| name(c)).collect();
            let outputs: Vec<String> = t
                .outputs
                .iter()
                .map(|(c, e)| format!("{} = {e}", name(c)))
                .collect();
            let body = if outputs.is_empty() {
                "{}".to_string()
            } else {
                format!("{{ {} }}", outputs.join("; "))
            };
            out.push_str(&format!(
                "tasklet {} ({}) {body}",
                quote(&n.label),
                inputs.join(", ")
            ));
        }
    }
}

fn attr(a: &Attr) -> String {
    let floats = |v: &[f64]| v.iter().map(|x| format_float(*x)).collect::<Vec<_>>();
    match a {
        Attr::Int(v) => v.to_string(),
        Attr::Float(v) => format_float(*v),
        Attr::Str(s) => quote(s),
        Attr::Ints(v) if v.is_empty() => "ints[]".to_string(),
        Attr::Floats(v) if v.is_empty() => "floats[]".to_string(),
        Attr::Ints(v) => format!("[{}]", join(v)),
        Attr::Floats(v) => format!("[{}]", floats(v).join(", ")),
        Attr::Strs(v) if v.is_empty() => "strings[]".to_string(),
        Attr::Strs(v) => format!(
            "[{}]",
            v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `n0 -> n3 [src ->] X[0:4] [-> dst] [wcr sum]`
fn edge(src: &str, dst: &str, m: &Memlet) -> String {
    let mut s = format!("{src} -> {dst} ");
    if let Some(c) = &m.src_conn {
        s.push_str(&format!("{} -> ", name(c)));
    }
    s.push_str(&format!("{}{}", name(&m.data), m.subset));
    if let Some(c) = &m.dst_conn {
        s.push_str(&format!(" -> {}", name(c)));
    }
    if let Some(w) = m.wcr {
        s.push_str(&format!(" wcr {}", w.name()));
    }
    s
}
