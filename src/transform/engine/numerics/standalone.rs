//! One side of a region as a standalone program: the region's nodes, the access nodes they read
//! and write, and declarations of only the containers they touch, wired as in the program.
//!
//! Both sides share one signature ([`Plan`]): a container read from outside the region becomes an
//! input (a transient too, so it gets random values), a container compared afterwards becomes an
//! output, constants stay constants. A container that is both — read from outside and compared
//! after, like an accumulator initialised before the region — cannot be both in C, so its value
//! before the region arrives in a renamed input (`C.in`) and a copy map writes it into `C` ahead
//! of the region.

use super::region::Side;
use crate::ir::validate::validate;
use crate::ir::{
    DataKind, Graph, MapNode, MapParam, Memlet, Node, NodeKind, Program, Range, Schedule, Storage,
    Subset, SymExpr, TExpr, Tasklet,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// The signature both sides share.
pub(super) struct Plan<'a> {
    /// Containers read from outside the region (random values; constants excluded).
    pub inputs: &'a BTreeSet<String>,
    /// Containers compared after the region.
    pub outputs: &'a BTreeSet<String>,
    /// For containers both read from outside and compared: the input holding the value before.
    pub renamed: &'a BTreeMap<String, String>,
}

/// A fresh input name (`C.in`) for every container that is both an input and an output, unused
/// in either program.
pub(super) fn input_names(
    inputs: &BTreeSet<String>,
    outputs: &BTreeSet<String>,
    a: &Program,
    b: &Program,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut taken: BTreeSet<String> = a.data.keys().chain(b.data.keys()).cloned().collect();
    for d in inputs.intersection(outputs) {
        let base = format!("{d}.in");
        let name = std::iter::once(base.clone())
            .chain((1..).map(|k| format!("{base}{k}")))
            .find(|n| !taken.contains(n))
            .unwrap_or(base);
        taken.insert(name.clone());
        out.insert(d.clone(), name);
    }
    out
}

/// The standalone program of `side`, validated.
pub(super) fn build(side: &Side, plan: &Plan) -> Result<Program, String> {
    let p = side.p;
    let g = &p.graph;
    let mut keep: BTreeSet<NodeIndex> = side.nodes.clone();
    for &n in &side.nodes {
        keep.extend(g.successors(n).chain(g.predecessors(n)));
    }
    let mut s = Program::new(format!("{}.region", p.name));
    s.symbols = p.symbols.clone();
    let mut index: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    for i in g.ordered().into_iter().filter(|i| keep.contains(i)) {
        index.insert(i, s.graph.add_node(g.node(i).clone()));
    }
    for e in g.edges() {
        let (a, b) = (e.from, e.to);
        if !side.nodes.contains(&a) && !side.nodes.contains(&b) {
            continue;
        }
        if let (Some(&x), Some(&y)) = (index.get(&a), index.get(&b)) {
            s.graph.add_edge(x, y, e.memlet.clone());
        }
    }
    declare(&mut s, side, plan)?;
    s.reserve_ids();
    for (data, input) in plan.renamed {
        if side.inputs.contains_key(data) {
            let at = copy_target(side, data)?;
            let at = *(index.get(&at)).ok_or_else(|| {
                format!("the region reads `{data}` through a node it does not hold")
            })?;
            copy_in(&mut s, input, data, at);
        }
    }
    validate(&s).map_err(|e| format!("the region does not stand alone: {e}"))?;
    Ok(s)
}

/// Declares every container `side` touches with its role in the shared signature.
fn declare(s: &mut Program, side: &Side, plan: &Plan) -> Result<(), String> {
    let p = side.p;
    let mut inputs = Vec::new();
    for d in s.graph.data_used() {
        let mut desc = (p.data.get(&d).cloned())
            .ok_or_else(|| format!("the region uses `{d}`, which is not declared"))?;
        let read = plan.inputs.contains(&d) && side.inputs.contains_key(&d);
        let compared = plan.outputs.contains(&d);
        if desc.kind == DataKind::Constant {
            let value =
                (p.constants.get(&d)).ok_or_else(|| format!("constant `{d}` has no value"))?;
            s.constants.insert(d.clone(), value.clone());
        } else if read || compared {
            desc.storage = Storage::Global;
            desc.kind = if compared {
                DataKind::Output
            } else {
                DataKind::Input
            };
            match plan.renamed.get(&d) {
                Some(input) if read => {
                    let mut before = desc.clone();
                    before.kind = DataKind::Input;
                    s.data.insert(input.clone(), before);
                    inputs.push(input.clone());
                }
                _ if read => inputs.push(d.clone()),
                _ => {}
            }
        } else {
            desc.kind = DataKind::Transient;
        }
        s.data.insert(d, desc);
    }
    inputs.sort();
    s.inputs = inputs.into();
    s.outputs = plan.outputs.iter().cloned().collect();
    Ok(())
}

/// The one access node holding `data`'s value before the region, which every region writer of
/// `data` comes after (so the copy cannot overwrite a value the region wrote).
fn copy_target(side: &Side, data: &str) -> Result<NodeIndex, String> {
    let versions = side.inputs.get(data).map(Vec::as_slice).unwrap_or_default();
    let [at] = versions else {
        return Err(format!(
            "the region reads `{data}` from {} access nodes written outside it",
            versions.len()
        ));
    };
    let g = &side.p.graph;
    let writers = side.writes.get(data).map(Vec::as_slice).unwrap_or_default();
    if let Some(&w) = writers.iter().find(|&&w| !g.has_path(*at, w)) {
        return Err(format!(
            "{} writes `{data}` without reading its value from before the region",
            g.node(w).id
        ));
    }
    Ok(*at)
}

/// Adds `input → copy → at`, where `at` is the access node of `data` the region reads first.
fn copy_in(s: &mut Program, input: &str, data: &str, at: NodeIndex) {
    let shape = s
        .data
        .get(data)
        .map(|d| d.shape.clone())
        .unwrap_or_default();
    let full = Subset::full(&shape);
    let access = |s: &mut Program, d: &str| {
        let id = s.fresh_id();
        Node {
            id,
            label: d.to_string(),
            kind: NodeKind::Access(d.to_string()),
        }
    };
    let src_node = access(s, input);
    let src = s.graph.add_node(src_node);
    let tasklet = |s: &mut Program| Node {
        id: s.fresh_id(),
        label: "copy-in".into(),
        kind: NodeKind::Tasklet(Tasklet {
            inputs: vec!["x".into()],
            outputs: vec![("y".into(), TExpr::input("x"))],
        }),
    };
    if shape.is_empty() {
        let t = tasklet(s);
        let t = s.graph.add_node(t);
        s.graph
            .add_edge(src, t, Memlet::new(input, full.clone()).to_conn("x"));
        s.graph
            .add_edge(t, at, Memlet::new(data, full).from_conn("y"));
        return;
    }
    let names = param_names(s, shape.len());
    let element = Subset::element(names.iter().map(SymExpr::sym));
    let mut body = Graph::default();
    let (a, t, b) = (access(s, input), tasklet(s), access(s, data));
    let (a, t, b) = (body.add_node(a), body.add_node(t), body.add_node(b));
    body.add_edge(a, t, Memlet::new(input, element.clone()).to_conn("x"));
    body.add_edge(t, b, Memlet::new(data, element).from_conn("y"));
    let params = (names.into_iter().zip(&shape))
        .map(|(name, d)| MapParam {
            name,
            range: Range::upto(d.clone()),
        })
        .collect();
    let map = Node {
        id: s.fresh_id(),
        label: format!("copy-in {data}"),
        kind: NodeKind::Map(MapNode {
            params,
            schedule: Schedule::Sequential,
            min_work: 0,
            body,
        }),
    };
    let m = s.graph.add_node(map);
    s.graph.add_edge(src, m, Memlet::new(input, full.clone()));
    s.graph.add_edge(m, at, Memlet::new(data, full));
}

/// `n` map parameter names that shadow no symbol or container of `s`.
fn param_names(s: &Program, n: usize) -> Vec<String> {
    (0..n)
        .map(|k| {
            let mut name = format!("c{k}");
            while s.symbols.contains_key(&name) || s.data.contains_key(&name) {
                name.push('_');
            }
            name
        })
        .collect()
}
