//! Graphviz DOT output, for pictures of a program.
//!
//! Map bodies become clusters headed by the map node itself (so the map's outer edges still
//! have an endpoint); node shapes tell kinds apart: access ellipse, library box, map header
//! `house`, tasklet octagon. Every string is escaped, since names come from model files.

use crate::ir::graph::{Graph, Program};
use crate::ir::node::{Memlet, Node, NodeKind};

/// The program as a DOT digraph.
pub fn to_dot(p: &Program) -> String {
    let mut out = format!(
        "digraph {} {{\n  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\"];\n",
        quoted(&p.name)
    );
    scope(&p.graph, 1, &mut out);
    out.push_str("}\n");
    out
}

/// `s` as a DOT double-quoted string. Backslashes are escaped so a name never injects a DOT
/// escape sequence such as `\N` or `\l`; newlines become DOT's `\n`.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            // A carriage return would only garble the rendered label.
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn scope(g: &Graph, level: usize, out: &mut String) {
    let pad = "  ".repeat(level);
    for idx in g.ordered() {
        let n = g.node(idx);
        match &n.kind {
            NodeKind::Map(m) => {
                let params: Vec<String> = m
                    .params
                    .iter()
                    .map(|p| format!("{} = {}", p.name, p.range))
                    .collect();
                let header = format!("{}\n[{}] {}", n.label, params.join(", "), m.schedule.name());
                out.push_str(&format!(
                    "{pad}subgraph cluster_{} {{\n{pad}  label={};\n{pad}  style=rounded;\n",
                    n.id,
                    quoted(&n.label)
                ));
                out.push_str(&format!(
                    "{pad}  {} [shape=house, label={}];\n",
                    n.id,
                    quoted(&header)
                ));
                scope(&m.body, level + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            _ => out.push_str(&format!("{pad}{};\n", node(n))),
        }
    }
    let mut edges: Vec<String> = g
        .edges()
        .map(|e| {
            format!(
                "{pad}{} -> {} [label={}];\n",
                g.node(e.from).id,
                g.node(e.to).id,
                quoted(&memlet(e.memlet))
            )
        })
        .collect();
    edges.sort();
    edges.into_iter().for_each(|e| out.push_str(&e));
}

fn node(n: &Node) -> String {
    let (shape, label) = match &n.kind {
        NodeKind::Access(d) if *d == n.label => ("ellipse", d.clone()),
        NodeKind::Access(d) => ("ellipse", format!("{d}\n({})", n.label)),
        NodeKind::Library(l) => ("box", format!("{}\n{}", n.label, l.op)),
        NodeKind::Tasklet(t) => {
            let body: Vec<String> = t
                .outputs
                .iter()
                .map(|(c, e)| format!("{c} = {e}"))
                .collect();
            ("octagon", format!("{}\n{}", n.label, body.join("\n")))
        }
        NodeKind::Map(_) => ("house", n.label.clone()),
    };
    format!("{} [shape={shape}, label={}]", n.id, quoted(&label))
}

/// `c -> C[i, j] -> in0 (wcr sum)`
fn memlet(m: &Memlet) -> String {
    let mut s = String::new();
    if let Some(c) = &m.src_conn {
        s.push_str(&format!("{c} -> "));
    }
    s.push_str(&format!("{}{}", m.data, m.subset));
    if let Some(c) = &m.dst_conn {
        s.push_str(&format!(" -> {c}"));
    }
    if let Some(w) = m.wcr {
        s.push_str(&format!(" (wcr {})", w.name()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::data::{DType, DataDesc, DataKind};
    use std::collections::BTreeMap;

    #[test]
    fn escapes_hostile_names() {
        assert_eq!(quoted("a\"b\\N\nc"), "\"a\\\"b\\\\N\\nc\"");
        let mut p = Program::new("x\"; evil");
        let name = "in\"}; X -> Y; \\";
        p.data.insert(
            name.into(),
            DataDesc::new(DType::F32, vec![4.into()], DataKind::Input),
        );
        p.build(|b| {
            b.library("lib\nline2", "Relu", BTreeMap::new(), &[Some(name)], &[]);
        });
        let dot = to_dot(&p);
        assert!(dot.starts_with("digraph \"x\\\"; evil\" {"));
        assert!(
            dot.contains("n1 [shape=ellipse, label=\"in\\\"}; X -> Y; \\\\\"];"),
            "{dot}"
        );
        assert!(
            dot.contains("n0 [shape=box, label=\"lib\\nline2\\nRelu\"];"),
            "{dot}"
        );
        assert!(
            dot.contains("n1 -> n0 [label=\"in\\\"}; X -> Y; \\\\[0:4] -> in0\"];"),
            "{dot}"
        );
        // Every quote that is not escaped opens or closes a string: they pair up on every line.
        for line in dot.lines() {
            let unescaped = line.replace("\\\\", "").replace("\\\"", "");
            assert_eq!(unescaped.matches('"').count() % 2, 0, "{line}");
        }
    }
}
