//! Replacing a library node by one of its expansions, and helpers that expansions share.
//!
//! The operator appends its maps to a detached scope whose first access node of each input
//! container stands for the library node's input, and whose last access node of each output
//! container stands for its output. Splicing maps those onto the existing access nodes, so the
//! surrounding graph is untouched and every other node keeps its id.

use super::{lookup, ExpandCtx, OpError};
use crate::ir::build::{In, Out, ScopeBuilder};
use crate::ir::{
    Graph, LibraryNode, NodeId, NodeKind, Program, Range, Schedule, Subset, SymExpr, TExpr,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// Why a node could not be expanded.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum ExpandError {
    #[error("node {0} does not exist")]
    NoSuchNode(NodeId),
    #[error("node {0} is not a library node")]
    NotLibrary(NodeId),
    #[error("node {id} uses operator `{op}`, which dmove does not know")]
    UnknownOp { id: NodeId, op: String },
    #[error("node {id} ({op}): an edge on connector `{conn}` is not attached to an access node")]
    Unwired {
        id: NodeId,
        op: String,
        conn: String,
    },
    #[error("expanding node {id}: {source}")]
    Op {
        id: NodeId,
        #[source]
        source: OpError,
    },
}

/// Expands library node `id` with `implementation` (the operator's default when `None`) and
/// returns the ids of the nodes that replaced it.
pub fn expand_node(
    p: &mut Program,
    id: NodeId,
    implementation: Option<&str>,
) -> Result<Vec<NodeId>, ExpandError> {
    let (scope, idx) = p.graph.locate(id).ok_or(ExpandError::NoSuchNode(id))?;
    let NodeKind::Library(lib) = &scope.node(idx).kind else {
        return Err(ExpandError::NotLibrary(id));
    };
    let lib = lib.clone();
    let label = sanitize_label(&scope.node(idx).label);
    let op = lookup(&lib.op).ok_or_else(|| ExpandError::UnknownOp {
        id,
        op: lib.op.clone(),
    })?;
    let implementation = implementation.unwrap_or(op.expansions()[0]);
    if !op.expansions().contains(&implementation) {
        return Err(ExpandError::Op {
            id,
            source: OpError::NoSuchExpansion {
                op: lib.op.clone(),
                name: implementation.to_string(),
                available: op.expansions().join(", "),
            },
        });
    }
    let (ins, outs) = wiring(scope, idx, &lib, id)?;
    let ins_named: Vec<Option<String>> = ins
        .iter()
        .map(|x| x.as_ref().map(|(_, d)| d.clone()))
        .collect();
    let outs_named: Vec<Option<String>> = outs
        .iter()
        .map(|x| x.as_ref().map(|(_, d)| d.clone()))
        .collect();

    let (data, next_id, constants) = p.builder_parts();
    let inputs = ins_named
        .iter()
        .map(|x| {
            x.as_ref()
                .and_then(|d| data.get(d).map(|desc| (d.clone(), desc.clone())))
        })
        .collect();
    let outputs = outs_named
        .iter()
        .map(|x| {
            x.as_ref()
                .and_then(|d| data.get(d).map(|desc| (d.clone(), desc.clone())))
        })
        .collect();
    let mut b = ScopeBuilder::resume(data, next_id, Graph::default());
    for d in ins_named.iter().flatten() {
        b.read_node(d);
    }
    let mut ctx = ExpandCtx {
        node: &lib,
        inputs,
        outputs,
        constants,
        b: &mut b,
        label,
    };
    op.expand(implementation, &mut ctx)
        .map_err(|source| ExpandError::Op { id, source })?;
    let mut sub = b.graph;
    let taken: BTreeSet<String> = p.symbols.keys().chain(p.data.keys()).cloned().collect();
    rename_clashing_params(&mut sub, &taken);

    let (scope, idx) = p.graph.locate_mut(id).ok_or(ExpandError::NoSuchNode(id))?;
    let anchors_in: BTreeMap<String, NodeIndex> =
        ins.into_iter().flatten().map(|(i, d)| (d, i)).collect();
    let anchors_out: BTreeMap<String, NodeIndex> =
        outs.into_iter().flatten().map(|(i, d)| (d, i)).collect();
    let added = splice(scope, sub, &anchors_in, &anchors_out);
    scope.remove_node(idx);
    Ok(added)
}

/// Access node and container of each input and output connector, by position (`None` where an
/// optional connector is not wired).
pub(crate) type Wiring = (
    Vec<Option<(NodeIndex, String)>>,
    Vec<Option<(NodeIndex, String)>>,
);

/// The access nodes attached to each input and output connector of a library node.
pub(crate) fn wiring(
    g: &Graph,
    idx: NodeIndex,
    lib: &LibraryNode,
    id: NodeId,
) -> Result<Wiring, ExpandError> {
    let mut ins: Vec<Option<(NodeIndex, String)>> = Vec::new();
    for e in g.in_edges(idx) {
        let conn = e.memlet.dst_conn.clone().unwrap_or_default();
        let unwired = || ExpandError::Unwired {
            id,
            op: lib.op.clone(),
            conn: conn.clone(),
        };
        let pos = LibraryNode::connector_index(&conn, "in").ok_or_else(unwired)?;
        let NodeKind::Access(d) = &g.node(e.other).kind else {
            return Err(unwired());
        };
        if ins.len() <= pos {
            ins.resize(pos + 1, None);
        }
        ins[pos] = Some((e.other, d.clone()));
    }
    let mut outs: Vec<Option<(NodeIndex, String)>> = Vec::new();
    for e in g.out_edges(idx) {
        let conn = e.memlet.src_conn.clone().unwrap_or_default();
        let unwired = || ExpandError::Unwired {
            id,
            op: lib.op.clone(),
            conn: conn.clone(),
        };
        let pos = LibraryNode::connector_index(&conn, "out").ok_or_else(unwired)?;
        let NodeKind::Access(d) = &g.node(e.other).kind else {
            return Err(unwired());
        };
        if outs.len() <= pos {
            outs.resize(pos + 1, None);
        }
        outs[pos] = Some((e.other, d.clone()));
    }
    Ok((ins, outs))
}

/// Moves `sub` into `scope`. In `sub`, the first access node of an input container becomes the
/// existing input anchor and the last access node of an output container the output anchor.
fn splice(
    scope: &mut Graph,
    sub: Graph,
    anchors_in: &BTreeMap<String, NodeIndex>,
    anchors_out: &BTreeMap<String, NodeIndex>,
) -> Vec<NodeId> {
    let order = sub.ordered();
    let mut first: BTreeMap<String, NodeIndex> = BTreeMap::new();
    let mut last: BTreeMap<String, NodeIndex> = BTreeMap::new();
    for &i in &order {
        if let NodeKind::Access(d) = &sub.node(i).kind {
            first.entry(d.clone()).or_insert(i);
            last.insert(d.clone(), i);
        }
    }
    let mut map: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    for (d, anchor) in anchors_in {
        if let Some(&i) = first.get(d) {
            if sub.in_edges(i).is_empty() {
                map.insert(i, *anchor);
            }
        }
    }
    for (d, anchor) in anchors_out {
        if let Some(&i) = last.get(d) {
            map.insert(i, *anchor);
        }
    }
    let mut added = Vec::new();
    for &i in &order {
        if let std::collections::btree_map::Entry::Vacant(slot) = map.entry(i) {
            let node = sub.node(i).clone();
            added.push(node.id);
            slot.insert(scope.add_node(node));
        }
    }
    for e in sub.edges() {
        scope.add_edge(map[&e.from], map[&e.to], e.memlet.clone());
    }
    added
}

/// Expands every library node, repeatedly (an expansion may itself produce library nodes), in
/// topological order. Returns how many nodes were expanded.
pub fn expand_all(p: &mut Program) -> Result<usize, ExpandError> {
    let mut count = 0;
    loop {
        let mut next = None;
        p.graph.walk(&mut |n| {
            if next.is_none() && matches!(n.kind, NodeKind::Library(_)) {
                next = Some(n.id);
            }
        });
        let Some(id) = next else { return Ok(count) };
        expand_node(p, id, None)?;
        count += 1;
    }
}

/// Renames map parameters that would shadow a program symbol or container (an expansion's `k`
/// meeting a model dimension called `k`), in the parameter list and everywhere in the body.
fn rename_clashing_params(g: &mut Graph, taken: &BTreeSet<String>) {
    for node in g.nodes_mut() {
        let NodeKind::Map(m) = &mut node.kind else {
            continue;
        };
        for i in 0..m.params.len() {
            let old = m.params[i].name.clone();
            if !taken.contains(&old) {
                continue;
            }
            let used: BTreeSet<String> = m.params.iter().map(|q| q.name.clone()).collect();
            let new = (1..)
                .map(|k| format!("{old}_{k}"))
                .find(|n| !taken.contains(n) && !used.contains(n))
                .expect("unbounded names");
            let to = SymExpr::sym(new.as_str());
            let rename = |s: &str| (s == old).then(|| to.clone());
            // Sibling ranges keep the old name: there it means the program's symbol.
            m.params[i].name = new.clone();
            crate::ir::rewrite::substitute_symbols(&mut m.body, &rename);
        }
        rename_clashing_params(&mut m.body, taken);
    }
}

/// Turns a model-supplied label into a short identifier-safe prefix for generated names.
pub fn sanitize_label(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    let s = s.trim_matches('_').to_string();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("op_{s}")
    } else {
        s
    }
}

/// Map parameters `i0, i1, …` spanning `shape`, and the matching element index.
pub fn elementwise_index(shape: &[SymExpr]) -> (Vec<(String, Range)>, Vec<SymExpr>) {
    let params = shape
        .iter()
        .enumerate()
        .map(|(d, extent)| (format!("i{d}"), Range::upto(extent.clone())))
        .collect::<Vec<_>>();
    let idx = params
        .iter()
        .map(|(n, _)| SymExpr::sym(n.as_str()))
        .collect();
    (params, idx)
}

/// A parallel map copying `src[src_idx]` to `dst[dst_idx]` over `params`.
pub fn copy_map(
    b: &mut ScopeBuilder,
    label: &str,
    params: Vec<(String, Range)>,
    src: &str,
    src_idx: Vec<SymExpr>,
    dst: &str,
    dst_idx: Vec<SymExpr>,
) -> NodeId {
    let params_ref = params
        .iter()
        .map(|(n, r)| (n.as_str(), r.clone()))
        .collect();
    b.map(label, params_ref, Schedule::Sequential, |b| {
        b.tasklet(
            "copy",
            vec![In("x", src, Subset::element(src_idx))],
            vec![Out(
                "y",
                dst,
                Subset::element(dst_idx),
                None,
                TExpr::input("x"),
            )],
        );
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;
    use crate::ops::TensorType;

    /// A model dimension named like an expansion's loop variable (`k` in MatMul) must not
    /// capture it.
    #[test]
    fn expansion_params_never_shadow_model_symbols() {
        let a = TensorType::new(DType::F32, vec![SymExpr::sym("k"), SymExpr::Int(4)]);
        let b = TensorType::new(DType::F32, vec![SymExpr::Int(4), SymExpr::Int(3)]);
        let mut p =
            crate::check::single_op_program("MatMul", BTreeMap::new(), &[Some(a), Some(b)], &[])
                .expect("builds");
        p.symbols.insert("k".into(), Some(5));
        crate::ir::validate::validate(&p).expect("valid before");
        let lowered = crate::check::expansion_matches(&p, 11).expect("same results");
        let mut params = Vec::new();
        lowered.graph.walk(&mut |n| {
            if let NodeKind::Map(m) = &n.kind {
                params.extend(m.params.iter().map(|q| q.name.clone()));
            }
        });
        assert!(params.contains(&"k_1".to_string()), "{params:?}");
        assert!(!params.contains(&"k".to_string()));
    }
}
