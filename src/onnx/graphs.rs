//! The structure of nested ONNX graphs: the subgraphs of control-flow nodes (`If` branches,
//! `Loop` and `Scan` bodies), which names a graph defines itself and which it reads from the
//! enclosing scopes, and renaming those outer references.
//!
//! A subgraph reads every name it does not define (an input, an initializer or a node output
//! of its own) from the scopes around it; a name it defines shadows an outer one. The importer
//! inlines subgraphs by renaming what they define to fresh names and what they read to the
//! containers that hold those values (see `import::subgraph`).

use super::load::node_label;
use super::proto::{GraphProto, NodeProto};
use std::collections::{BTreeMap, BTreeSet};

/// The graph attributes of `node` (single graphs and graph lists).
pub fn subgraphs(node: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    node.attribute
        .iter()
        .flat_map(|a| a.g.iter().chain(&a.graphs))
}

/// Every node of `graph` and of its subgraphs, each with its label: the node's own label inside
/// its graph, prefixed by the labels of the nodes whose subgraphs contain it (`loop/body_add`).
pub fn labelled_nodes(graph: &GraphProto) -> Vec<(String, &NodeProto)> {
    let mut out = Vec::new();
    collect_nodes(graph, "", &mut out);
    out
}

fn collect_nodes<'g>(graph: &'g GraphProto, prefix: &str, out: &mut Vec<(String, &'g NodeProto)>) {
    for (i, node) in graph.node.iter().enumerate() {
        let label = format!("{prefix}{}", node_label(node, i));
        out.push((label.clone(), node));
        for g in subgraphs(node) {
            collect_nodes(g, &format!("{label}/"), out);
        }
    }
}

/// The names `graph` defines itself: its inputs, initializers and node outputs.
pub fn local_names(graph: &GraphProto) -> BTreeSet<String> {
    let inputs = graph.input.iter().filter_map(|v| v.name.clone());
    let initializers = graph.initializer.iter().filter_map(|t| t.name.clone());
    let produced = graph.node.iter().flat_map(|n| n.output.iter().cloned());
    inputs
        .chain(initializers)
        .chain(produced)
        .filter(|n| !n.is_empty())
        .collect()
}

/// Every tensor name `graph` and its subgraphs mention, so generated names can avoid them.
pub fn mentioned_names(graph: &GraphProto) -> BTreeSet<String> {
    let declared = graph
        .input
        .iter()
        .chain(&graph.output)
        .chain(&graph.value_info)
        .filter_map(|v| v.name.clone());
    let initializers = graph.initializer.iter().filter_map(|t| t.name.clone());
    let mut names: BTreeSet<String> = declared.chain(initializers).collect();
    for node in &graph.node {
        names.extend(node.input.iter().chain(&node.output).cloned());
        for g in subgraphs(node) {
            names.extend(mentioned_names(g));
        }
    }
    names
}

/// The names `graph` reads: node inputs (also those of nested subgraphs) and graph outputs.
pub fn read_names(graph: &GraphProto) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = graph.output.iter().filter_map(|v| v.name.clone()).collect();
    for node in &graph.node {
        names.extend(node.input.iter().cloned());
        for g in subgraphs(node) {
            names.extend(read_names(g));
        }
    }
    names
}

/// `node` with every input and output named in `renames` renamed, and inside its subgraphs
/// every outer reference to such a name (where the subgraph does not shadow it).
pub fn rename_node(node: &NodeProto, renames: &BTreeMap<String, String>) -> NodeProto {
    let rename = |name: &String| renames.get(name).unwrap_or(name).clone();
    let mut out = node.clone();
    out.input = node.input.iter().map(rename).collect();
    out.output = node.output.iter().map(rename).collect();
    for a in &mut out.attribute {
        if let Some(g) = &mut a.g {
            *g = rename_graph(g, renames);
        }
        for g in &mut a.graphs {
            *g = rename_graph(g, renames);
        }
    }
    out
}

/// `graph` with its outer references renamed by `renames`, minus the names it shadows.
fn rename_graph(graph: &GraphProto, renames: &BTreeMap<String, String>) -> GraphProto {
    let local = local_names(graph);
    let outer: BTreeMap<String, String> = renames
        .iter()
        .filter(|(from, _)| !local.contains(*from))
        .map(|(from, to)| (from.clone(), to.clone()))
        .collect();
    let mut out = graph.clone();
    if outer.is_empty() {
        return out;
    }
    out.node = graph.node.iter().map(|n| rename_node(n, &outer)).collect();
    for v in &mut out.output {
        if let Some(to) = v.name.as_ref().and_then(|n| outer.get(n)) {
            v.name = Some(to.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::writer::ModelBuilder;

    #[test]
    fn renaming_reaches_outer_references_in_subgraphs_but_not_shadowed_names() {
        // The inner graph reads outer `a` and defines its own `b`.
        let inner = ModelBuilder::new("inner", 17)
            .input("b", [1])
            .node("Add", &["a", "b"], &["c"], vec![])
            .output("a", [1])
            .output("c", [1])
            .into_graph();
        let outer = ModelBuilder::new("outer", 17)
            .control_node(
                "If",
                &["cond"],
                &["y"],
                vec![("then_branch", inner)],
                vec![],
            )
            .into_graph();
        let renames = BTreeMap::from([
            ("a".to_string(), "A".to_string()),
            ("b".to_string(), "B".to_string()),
            ("cond".to_string(), "COND".to_string()),
        ]);
        let node = rename_node(&outer.node[0], &renames);
        assert_eq!(node.input, ["COND"]);
        let g = node.attribute[0].g.as_ref().expect("branch");
        assert_eq!(g.node[0].input, ["A", "b"]);
        let outputs: Vec<_> = g.output.iter().filter_map(|v| v.name.clone()).collect();
        assert_eq!(outputs, ["A", "c"]);
        let labels: Vec<String> = labelled_nodes(&outer).into_iter().map(|(l, _)| l).collect();
        assert_eq!(labels, ["If_0", "If_0/Add_0"]);
        assert_eq!(
            read_names(g),
            BTreeSet::from(["A".into(), "b".into(), "c".into()])
        );
    }
}
