//! Helpers shared by the operator-level transformations: library nodes seen with the containers
//! on their connectors, the check that an intermediate result is used only by the next operator,
//! and the graph edits that replace a chain of operators by one.
//!
//! Operator-level rewrites work on library nodes joined through access nodes. They keep the id
//! of the node that survives (a MatMul that becomes a Gemm stays the same node), remove the
//! others, and drop containers and constants nothing uses any more.

use crate::ir::rewrite::ScopeEdit;
use crate::ir::{
    DataDesc, DataKind, Graph, LibraryNode, Memlet, Node, NodeId, NodeKind, Program, Subset,
    SymExpr, Tensor,
};
use crate::ops::expand::wiring;
use crate::transform::support::scope::uses;
use crate::transform::{refuse, Legality, NotApplicable, Transformation};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

/// A container on a library node's connector: the access node holding it and its name.
pub(crate) type Port = (NodeIndex, String);

/// A library node with the containers on its connectors, by position.
#[derive(Clone, Debug)]
pub(crate) struct OpNode {
    pub id: NodeId,
    pub idx: NodeIndex,
    pub lib: LibraryNode,
    pub inputs: Vec<Option<Port>>,
    pub outputs: Vec<Option<Port>>,
}

impl OpNode {
    /// The container on input connector `i`, when one is wired.
    pub fn input(&self, i: usize) -> Option<&Port> {
        self.inputs.get(i).and_then(Option::as_ref)
    }
}

/// Library node `id` (in any scope) applying one of `ops` (any operator when empty), with the
/// scope that holds it.
pub(crate) fn op_node<'p>(
    t: &dyn Transformation,
    p: &'p Program,
    id: NodeId,
    ops: &[&str],
) -> Result<(&'p Graph, OpNode), NotApplicable> {
    let (g, _) = p
        .graph
        .locate(id)
        .ok_or_else(|| refuse(t, id, "no such node"))?;
    Ok((g, op_in(t, g, id, ops)?))
}

/// Library node `id` of scope `g` applying one of `ops` (any operator when empty).
pub(crate) fn op_in(
    t: &dyn Transformation,
    g: &Graph,
    id: NodeId,
    ops: &[&str],
) -> Result<OpNode, NotApplicable> {
    let idx = g.index_of(id).ok_or_else(|| {
        refuse(
            t,
            id,
            "node is not in the same scope as the rest of the site",
        )
    })?;
    let lib = match &g.node(idx).kind {
        NodeKind::Library(lib) => lib.clone(),
        other => {
            return Err(refuse(
                t,
                id,
                format!("node is a {} node, not a library node", other.kind_name()),
            ))
        }
    };
    if !ops.is_empty() && !ops.contains(&lib.op.as_str()) {
        return Err(refuse(
            t,
            id,
            format!("node applies {}; expected {}", lib.op, alternatives(ops)),
        ));
    }
    let (inputs, outputs) = wiring(g, idx, &lib, id).map_err(|e| refuse(t, id, e.to_string()))?;
    Ok(OpNode {
        id,
        idx,
        lib,
        inputs,
        outputs,
    })
}

/// "Reshape", "Reshape or Flatten", "Reshape, Flatten or Squeeze".
fn alternatives(ops: &[&str]) -> String {
    match ops {
        [] => "any operator".into(),
        [only] => only.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The single output of `node` (operator-level rewrites only move single-output operators).
pub(crate) fn only_output<'n>(
    t: &dyn Transformation,
    node: &'n OpNode,
) -> Result<&'n Port, NotApplicable> {
    match node.outputs.as_slice() {
        [Some(port)] => Ok(port),
        other => Err(refuse(
            t,
            node.id,
            format!(
                "{} writes {} outputs; only single-output operators are rewritten",
                node.lib.op,
                other.iter().flatten().count()
            ),
        )),
    }
}

/// Checks that `consumer` reads the output of `producer` and that this intermediate is a
/// transient nothing else reads or writes (so the rewrite may remove it). Returns the
/// intermediate and the consumer's input position that reads it.
///
/// That the consumer reads the producer's single output is structural (the rewrite is built
/// from that position). That nobody else uses the intermediate is a legality condition: the
/// rewrite can still be built without it, but other users would lose the value, so it goes
/// through `legality` (a lowered legality layer lets invariants and numerics judge).
pub(crate) fn feeds(
    t: &dyn Transformation,
    p: &Program,
    producer: &OpNode,
    consumer: &OpNode,
    legality: &mut Legality,
) -> Result<(Port, usize), NotApplicable> {
    let port = only_output(t, producer)?.clone();
    let name = &port.1;
    let pos = consumer
        .inputs
        .iter()
        .position(|x| x.as_ref().is_some_and(|(i, _)| *i == port.0))
        .ok_or_else(|| {
            refuse(
                t,
                consumer.id,
                format!(
                    "{} does not read `{name}`, the output of {}",
                    consumer.lib.op, producer.id
                ),
            )
        })?;
    legality.holds(private_link(t, p, name, producer.id, consumer.id))?;
    Ok((port, pos))
}

/// The intermediate `name` is a transient written only by `producer` and read only by
/// `consumer`.
fn private_link(
    t: &dyn Transformation,
    p: &Program,
    name: &str,
    producer: NodeId,
    consumer: NodeId,
) -> Result<(), NotApplicable> {
    let kind = p.data.get(name).map(|d| d.kind);
    if kind != Some(DataKind::Transient) {
        return Err(refuse(
            t,
            producer,
            format!(
                "`{name}` is {}, not a transient, so it must stay",
                kind.map_or("undeclared", |k| k.name())
            ),
        ));
    }
    let (readers, writers) = uses(&p.graph, name);
    if (readers, writers) != (1, 1) {
        return Err(refuse(
            t,
            producer,
            format!(
                "`{name}` is read by {readers} and written by {writers} edge(s); the rewrite needs \
                 it written only by {producer} and read only by {consumer}"
            ),
        ));
    }
    Ok(())
}

/// Checks that the readers of `result` may read `source` instead, so the operators between them
/// can be removed: the two have the same type, `result` is a transient written once and held by
/// one access node of scope `g`, and `source` is never overwritten (its readers would otherwise
/// race with a later write). `at` is the node refusals name.
///
/// A predicate for choosing between rewrites: every condition refuses. A precondition of a
/// rewrite uses [`forwardable_checked`] instead.
pub(crate) fn forwardable(
    t: &dyn Transformation,
    p: &Program,
    g: &Graph,
    source: &Port,
    result: &Port,
    at: NodeId,
) -> Result<(), NotApplicable> {
    let res = declared(t, p, &result.1, at)?;
    if res.kind != DataKind::Transient {
        return Err(unwritten(t, at, result, res));
    }
    same_type(t, p, source, result, at)?;
    single_value(t, p, g, source, result, at)
}

/// [`forwardable`] as a rewrite's precondition: the types must agree (otherwise readers would
/// read a different tensor), while the single-value conditions are legality conditions that go
/// through `legality`.
pub(crate) fn forwardable_checked(
    t: &dyn Transformation,
    p: &Program,
    g: &Graph,
    source: &Port,
    result: &Port,
    at: NodeId,
    legality: &mut Legality,
) -> Result<(), NotApplicable> {
    same_type(t, p, source, result, at)?;
    let res = declared(t, p, &result.1, at)?;
    if res.kind != DataKind::Transient {
        legality.holds(Err(unwritten(t, at, result, res)))?;
    }
    legality.holds(single_value(t, p, g, source, result, at))
}

fn unwritten(t: &dyn Transformation, at: NodeId, result: &Port, res: &DataDesc) -> NotApplicable {
    refuse(
        t,
        at,
        format!(
            "`{}` is {}: removing the operators would leave it unwritten",
            result.1,
            res.kind.name()
        ),
    )
}

/// `source` and `result` have the same element type and provably the same shape.
fn same_type(
    t: &dyn Transformation,
    p: &Program,
    source: &Port,
    result: &Port,
    at: NodeId,
) -> Result<(), NotApplicable> {
    let (src, res) = (
        declared(t, p, &source.1, at)?,
        declared(t, p, &result.1, at)?,
    );
    if same_shape(&src.shape, &res.shape) && src.dtype == res.dtype {
        return Ok(());
    }
    Err(refuse(
        t,
        at,
        format!(
            "`{}` is {} {} but `{}` is {} {}: the operators are not an identity",
            source.1,
            src.dtype,
            shown(&src.shape),
            result.1,
            res.dtype,
            shown(&res.shape)
        ),
    ))
}

/// `result` is one value (one access node in `g`, one write) and `source` is never overwritten.
fn single_value(
    t: &dyn Transformation,
    p: &Program,
    g: &Graph,
    source: &Port,
    result: &Port,
    at: NodeId,
) -> Result<(), NotApplicable> {
    let holders = g
        .nodes()
        .filter(|n| matches!(&n.kind, NodeKind::Access(d) if *d == result.1))
        .count();
    let (_, writers) = uses(&p.graph, &result.1);
    if holders != 1 || writers != 1 {
        return Err(refuse(
            t,
            at,
            format!(
                "`{}` has {holders} access nodes and {writers} writes; it must be one value",
                result.1
            ),
        ));
    }
    let (_, source_writers) = uses(&p.graph, &source.1);
    if source_writers > 1 {
        return Err(refuse(
            t,
            at,
            format!(
                "`{}` is written {source_writers} times, so its readers cannot be moved to it",
                source.1
            ),
        ));
    }
    Ok(())
}

/// The declaration of container `name`, or a refusal at `at` when the program lacks one.
pub(crate) fn declared<'p>(
    t: &dyn Transformation,
    p: &'p Program,
    name: &str,
    at: NodeId,
) -> Result<&'p DataDesc, NotApplicable> {
    p.data
        .get(name)
        .ok_or_else(|| refuse(t, at, format!("`{name}` is not declared")))
}

/// The permutation of Transpose node `node` over a tensor of rank `rank` (reversed when the
/// node has no `perm`), or why its `perm` is not a permutation.
pub(crate) fn transpose_perm(
    t: &dyn Transformation,
    node: &OpNode,
    rank: usize,
) -> Result<Vec<usize>, NotApplicable> {
    let Some(perm) = node.lib.ints("perm") else {
        return Ok((0..rank).rev().collect());
    };
    let valid: Option<Vec<usize>> = perm
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d < rank))
        .collect();
    match valid {
        Some(v) if v.len() == rank && (0..rank).all(|d| v.contains(&d)) => Ok(v),
        _ => Err(refuse(
            t,
            node.id,
            format!("perm {perm:?} is not a permutation of 0..{rank}"),
        )),
    }
}

/// True when two shapes are provably equal.
pub(crate) fn same_shape(a: &[SymExpr], b: &[SymExpr]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).simplify() == SymExpr::Int(0))
}

/// `[2, N, 3]`.
pub(crate) fn shown(shape: &[SymExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// The value of constant container `name`, or why it is not one. `what` names it in the reason.
pub(crate) fn constant<'p>(p: &'p Program, name: &str, what: &str) -> Result<&'p Tensor, String> {
    match (p.data.get(name).map(|d| d.kind), p.constants.get(name)) {
        (Some(DataKind::Constant), Some(v)) => Ok(v),
        (kind, _) => Err(format!(
            "{what} `{name}` is {}, not a constant",
            kind.map_or("undeclared", |k| k.name())
        )),
    }
}

/// Makes node `idx` read exactly `inputs` (by connector position) over their full extent.
pub(crate) fn set_inputs(
    g: &mut Graph,
    data: &BTreeMap<String, DataDesc>,
    idx: NodeIndex,
    inputs: &[Option<Port>],
) {
    for e in g.in_edges(idx).iter().map(|e| e.id).collect::<Vec<_>>() {
        g.remove_edge(e);
    }
    for (i, port) in inputs.iter().enumerate() {
        if let Some((src, name)) = port {
            let m = Memlet::new(name.as_str(), full(data, name))
                .to_conn(LibraryNode::input_connector(i));
            g.add_edge(*src, idx, m);
        }
    }
}

/// Makes node `idx` write its single output to `out`.
pub(crate) fn set_output(
    g: &mut Graph,
    data: &BTreeMap<String, DataDesc>,
    idx: NodeIndex,
    out: &Port,
) {
    for e in g.out_edges(idx).iter().map(|e| e.id).collect::<Vec<_>>() {
        g.remove_edge(e);
    }
    let m =
        Memlet::new(out.1.as_str(), full(data, &out.1)).from_conn(LibraryNode::output_connector(0));
    g.add_edge(idx, out.0, m);
}

fn full(data: &BTreeMap<String, DataDesc>, name: &str) -> Subset {
    data.get(name)
        .map(|d| Subset::full(&d.shape))
        .unwrap_or_default()
}

/// Replaces the operator at `idx` (keeping its id and label).
pub(crate) fn set_op(g: &mut Graph, idx: NodeIndex, lib: LibraryNode) {
    g.node_mut(idx).kind = NodeKind::Library(lib);
}

/// Moves every reader of `result` onto `source` (same shape), renaming the container inside
/// reader maps' bodies.
pub(crate) fn redirect_readers(g: &mut Graph, result: &Port, source: &Port) {
    let readers: Vec<(petgraph::stable_graph::EdgeIndex, NodeIndex, Memlet)> = g
        .out_edges(result.0)
        .iter()
        .map(|e| (e.id, e.other, e.memlet.clone()))
        .collect();
    for (eid, reader, mut m) in readers {
        g.remove_edge(eid);
        m.data = source.1.clone();
        if let NodeKind::Map(map) = &mut g.node_mut(reader).kind {
            rename_container(&mut map.body, &result.1, &source.1);
        }
        g.add_edge(source.0, reader, m);
    }
}

/// Renames container `from` to `to` in every access node and memlet of `g` and nested scopes.
pub(crate) fn rename_container(g: &mut Graph, from: &str, to: &str) {
    for m in g.memlets_mut() {
        if m.data == from {
            m.data = to.to_string();
        }
    }
    for n in g.nodes_mut() {
        match &mut n.kind {
            NodeKind::Access(d) if d == from => *d = to.to_string(),
            NodeKind::Map(m) => rename_container(&mut m.body, from, to),
            _ => {}
        }
    }
}

/// Declares a new constant holding `value`, named after `base`.
pub(crate) fn declare_constant(p: &mut Program, base: &str, value: Tensor) -> String {
    let name = p.fresh_data_name(base);
    let shape = value.shape.iter().map(|&d| SymExpr::from(d)).collect();
    p.data.insert(
        name.clone(),
        DataDesc::new(value.dtype(), shape, DataKind::Constant),
    );
    p.constants.insert(name.clone(), value.into());
    name
}

/// A new access node of `name` in the edited scope.
pub(crate) fn add_access(edit: &mut ScopeEdit, name: &str) -> Port {
    let id = edit.fresh_id();
    let idx = edit.graph.add_node(Node {
        id,
        label: name.to_string(),
        kind: NodeKind::Access(name.to_string()),
    });
    (idx, name.to_string())
}

/// Removes access nodes of `names` left without edges, then the declarations (and constant
/// values) of those that nothing accesses any more, except the program's inputs and outputs.
/// Declares each of `values`' containers a constant holding its value (what folding computed).
pub(crate) fn become_constants(
    p: &mut Program,
    values: impl IntoIterator<Item = (String, Tensor)>,
) {
    for (name, value) in values {
        if let Some(desc) = p.data.get_mut(&name) {
            desc.kind = DataKind::Constant;
        }
        p.constants.insert(name, value.into());
    }
}

pub(crate) fn prune(p: &mut Program, names: &[String]) {
    remove_isolated(&mut p.graph, names);
    let used = p.graph.uses_any(names);
    for n in names {
        if !used.contains(n.as_str()) && !p.inputs.contains(n) && !p.outputs.contains(n) {
            p.data.remove(n);
            p.constants.remove(n);
        }
    }
}

fn remove_isolated(g: &mut Graph, names: &[String]) {
    let all: Vec<NodeIndex> = g.node_indices().collect();
    for idx in all {
        if unused_access(g, idx, names) {
            g.remove_node(idx);
        } else if matches!(&g.node(idx).kind, NodeKind::Map(m) if has_isolated(&m.body, names)) {
            // Only a body with something to remove is written: writing one forgets its
            // digests, and the next check would re-hash it.
            if let NodeKind::Map(m) = &mut g.node_mut(idx).kind {
                remove_isolated(&mut m.body, names);
            }
        }
    }
}

/// Whether node `idx` is an access node of one of `names` without edges.
fn unused_access(g: &Graph, idx: NodeIndex, names: &[String]) -> bool {
    let isolated = g.in_edges(idx).is_empty() && g.out_edges(idx).is_empty();
    matches!(&g.node(idx).kind, NodeKind::Access(d) if isolated && names.contains(d))
}

/// Whether `g` or a scope nested in it holds an access node [`remove_isolated`] removes.
fn has_isolated(g: &Graph, names: &[String]) -> bool {
    g.node_indices().any(|idx| {
        unused_access(g, idx, names)
            || matches!(&g.node(idx).kind, NodeKind::Map(m) if has_isolated(&m.body, names))
    })
}

/// Every container a node reads or writes, for pruning after the node is removed or rewired.
pub(crate) fn containers(nodes: &[&OpNode]) -> Vec<String> {
    nodes
        .iter()
        .flat_map(|n| n.inputs.iter().chain(&n.outputs))
        .flatten()
        .map(|(_, d)| d.clone())
        .collect()
}

/// Library nodes applying one of `ops`, in every scope, in program order.
pub(crate) fn library_nodes(p: &Program, ops: &[&str]) -> Vec<Vec<NodeId>> {
    let mut out = Vec::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Library(lib) = &n.kind {
            if ops.is_empty() || ops.contains(&lib.op.as_str()) {
                out.push(vec![n.id]);
            }
        }
    });
    out
}

/// Producer → consumer pairs of library nodes joined through one access node, in every scope:
/// the producer applies one of `first`, the consumer one of `second`.
pub(crate) fn pairs(p: &Program, first: &[&str], second: &[&str]) -> Vec<Vec<NodeId>> {
    let mut out = Vec::new();
    scope_pairs(&p.graph, first, second, &mut out);
    out
}

fn scope_pairs(g: &Graph, first: &[&str], second: &[&str], out: &mut Vec<Vec<NodeId>>) {
    let applies = |idx: NodeIndex, ops: &[&str]| matches!(&g.node(idx).kind, NodeKind::Library(l) if ops.contains(&l.op.as_str()));
    for idx in g.ordered() {
        if let NodeKind::Map(m) = &g.node(idx).kind {
            scope_pairs(&m.body, first, second, out);
            continue;
        }
        if !applies(idx, first) {
            continue;
        }
        for e in g.out_edges(idx) {
            for r in g.out_edges(e.other) {
                // A node reading its own output is no producer → consumer pair.
                if r.other != idx && applies(r.other, second) {
                    out.push(vec![g.node(idx).id, g.node(r.other).id]);
                }
            }
        }
    }
}
