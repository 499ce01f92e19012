//! The IR invariants, checked after every rewrite. Each violation names the node or edge that
//! breaks it; all violations are collected, not just the first.

use super::graph::{Graph, Program};
use super::node::{LibraryNode, MapParam, Node, NodeId, NodeKind};
use super::subset::{Dim, ParamBounds};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Where a violation is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Program,
    Node(NodeId),
    Edge {
        from: NodeId,
        to: NodeId,
        data: String,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Program => f.write_str("program"),
            Location::Node(id) => write!(f, "node {id}"),
            Location::Edge { from, to, data } => write!(f, "edge {from} -> {to} ({data})"),
        }
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct Violation {
    pub at: Location,
    pub message: String,
}

/// All invariant violations of a program, as one error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("the IR is invalid ({} problem(s)):\n{}", .0.len(), render(.0))]
#[diagnostic(code(dmove::ir::invalid))]
pub struct InvalidIr(pub Vec<Violation>);

fn render(v: &[Violation]) -> String {
    v.iter()
        .map(|x| format!("  - {x}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks every invariant of the IR.
pub fn validate(p: &Program) -> Result<(), InvalidIr> {
    let everything = Since {
        node: &|_| Fresh::Whole,
        taken_elsewhere: &|_| false,
        names: None,
        signature: true,
    };
    validate_since(p, &everything)
}

/// How much of a node a step may have changed, for [`validate_since`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fresh {
    /// Nothing: the node, its edges, its body and every enclosing scope are as they were.
    No,
    /// The node (or one of its edges) changed, or something in its body did; its enclosing
    /// scopes' parameters did not.
    Changed,
    /// The node and everything below it must be checked (it is new, or its own parameters or
    /// scope changed, which changes the context of its whole body).
    Whole,
}

/// What a step changed since a program that passed [`validate`], with the same declarations
/// and symbols (a step that changed those must be validated whole).
pub struct Since<'a> {
    /// How much of each node changed.
    pub node: &'a dyn Fn(&Node) -> Fresh,
    /// Whether a new node's id is taken by a node in a part that is not re-checked.
    pub taken_elsewhere: &'a dyn Fn(NodeId) -> bool,
    /// The containers declared, declared differently or no longer declared since, or whose
    /// constant value appeared, changed or went away (no map parameter anywhere may shadow a
    /// new one); the other declarations are as they were.
    /// `None`: every declaration is checked.
    pub names: Option<&'a BTreeSet<String>>,
    /// Whether the inputs or outputs may have changed (each must name a declaration).
    pub signature: bool,
}

/// Checks the invariants a step could have broken in `p`, trusting the parts `since` says it
/// did not change: the declarations it names, and in every scope the nodes that changed, the
/// edges that touch them and the cycles through them. A scope under an unchanged map is
/// not entered. Equal to [`validate`] when `since` tells the truth (debug builds of the
/// engine compare the two after every step).
pub fn validate_since(p: &Program, since: &Since) -> Result<(), InvalidIr> {
    let mut v = Validator {
        p,
        since,
        out: Vec::new(),
        seen: BTreeSet::new(),
    };
    v.program();
    if since.names.is_some_and(|n| !n.is_empty()) {
        v.shadowing(&p.graph);
    }
    v.graph(&p.graph, &[], false);
    if v.out.is_empty() {
        Ok(())
    } else {
        Err(InvalidIr(v.out))
    }
}

/// The entries of `map` to check: all of them, or (since a check) those `names` names, looked
/// up rather than every entry scanned.
fn named<'m, V>(
    map: &'m BTreeMap<String, V>,
    names: Option<&BTreeSet<String>>,
) -> Vec<(&'m String, &'m V)> {
    match names {
        None => map.iter().collect(),
        Some(names) => names.iter().filter_map(|n| map.get_key_value(n)).collect(),
    }
}

struct Validator<'a> {
    p: &'a Program,
    since: &'a Since<'a>,
    out: Vec<Violation>,
    seen: BTreeSet<NodeId>,
}

impl<'a> Validator<'a> {
    fn fail(&mut self, at: Location, message: String) {
        self.out.push(Violation { at, message });
    }

    fn program(&mut self) {
        let signature = match self.since.signature || self.since.names.is_none() {
            true => self.p.inputs.iter().chain(self.p.outputs.iter()),
            false => [].iter().chain([].iter()),
        };
        for name in signature {
            if !self.p.data.contains_key(name) {
                self.fail(
                    Location::Program,
                    format!("signature names undeclared container `{name}`"),
                );
            }
        }
        for (name, desc) in named(&self.p.data, self.since.names) {
            if desc.kind == super::DataKind::Constant && !self.p.constants.contains_key(name) {
                self.fail(Location::Program, format!("constant `{name}` has no value"));
            }
            for d in &desc.shape {
                for s in d.free_symbols() {
                    if !self.p.symbols.contains_key(&s) {
                        self.fail(
                            Location::Program,
                            format!("shape of `{name}` uses undeclared symbol `{s}`"),
                        );
                    }
                }
            }
        }
        for (name, t) in named(&self.p.constants, self.since.names) {
            match self.p.data.get(name).map(|d| d.static_shape()) {
                None => self.fail(
                    Location::Program,
                    format!("constant value `{name}` has no descriptor"),
                ),
                Some(Some(shape)) if shape != t.shape => self.fail(
                    Location::Program,
                    format!(
                        "constant `{name}` has shape {:?} but is declared {:?}",
                        t.shape, shape
                    ),
                ),
                _ => {}
            }
        }
    }

    /// A map parameter anywhere named like a container declared since the last check.
    fn shadowing(&mut self, g: &Graph) {
        for node in g.nodes() {
            if let NodeKind::Map(m) = &node.kind {
                let new = |q: &&MapParam| {
                    self.since.names.is_some_and(|n| n.contains(&q.name))
                        && self.p.data.contains_key(&q.name)
                };
                for prm in m.params.iter().filter(new) {
                    self.fail(
                        Location::Node(node.id),
                        format!("map parameter `{}` shadows a program name", prm.name),
                    );
                }
                self.shadowing(&m.body);
            }
        }
    }

    /// Checks one scope; `scope` lists the parameters of the enclosing maps, outermost first.
    /// With `whole`, every node of it is checked; otherwise only those [`Since`] says changed.
    fn graph(&mut self, g: &Graph, scope: &[&MapParam], whole: bool) {
        let fresh = |n: &Node| match whole {
            true => Fresh::Whole,
            false => (self.since.node)(n),
        };
        let checked: BTreeSet<_> = (g.node_indices())
            .filter(|&i| fresh(g.node(i)) != Fresh::No)
            .collect();
        if checked.is_empty() {
            return;
        }
        let cycle = match whole {
            true => g.topo_order().err(),
            false => g.cycle_through(&checked),
        };
        if let Some(cycle) = cycle {
            let first = cycle[0];
            self.fail(
                Location::Node(first),
                format!("dataflow cycle through nodes {cycle:?}"),
            );
        }
        for &idx in &checked {
            let node = g.node(idx);
            if !self.seen.insert(node.id) || (self.since.taken_elsewhere)(node.id) {
                self.fail(Location::Node(node.id), "node id used twice".into());
            }
            let here = Location::Node(node.id);
            match &node.kind {
                NodeKind::Access(d) => {
                    if !self.p.data.contains_key(d) {
                        self.fail(here, format!("access to undeclared container `{d}`"));
                    }
                }
                NodeKind::Library(_) => self.library(g, idx),
                NodeKind::Tasklet(t) => self.tasklet(g, idx, t),
                NodeKind::Map(m) => {
                    let mut names = BTreeSet::new();
                    for prm in &m.params {
                        if !names.insert(&prm.name) || scope.iter().any(|s| s.name == prm.name) {
                            self.fail(
                                here.clone(),
                                format!("map parameter `{}` declared twice", prm.name),
                            );
                        }
                        if self.p.symbols.contains_key(&prm.name)
                            || self.p.data.contains_key(&prm.name)
                        {
                            self.fail(
                                here.clone(),
                                format!("map parameter `{}` shadows a program name", prm.name),
                            );
                        }
                    }
                    let mut inner: Vec<&MapParam> = scope.to_vec();
                    inner.extend(m.params.iter());
                    self.map_boundary(g, idx);
                    let whole = fresh(node) == Fresh::Whole;
                    self.graph(&m.body, &inner, whole);
                }
            }
        }
        // Each edge once: the outgoing ones of checked nodes, the incoming ones from others.
        for &idx in &checked {
            for e in g.out_edges(idx) {
                self.edge(g, idx, e.other, e.memlet, scope);
            }
            for e in (g.in_edges(idx).into_iter()).filter(|e| !checked.contains(&e.other)) {
                self.edge(g, e.other, idx, e.memlet, scope);
            }
        }
    }

    fn edge(
        &mut self,
        g: &Graph,
        s: petgraph::stable_graph::NodeIndex,
        t: petgraph::stable_graph::NodeIndex,
        m: &super::node::Memlet,
        scope: &[&MapParam],
    ) {
        let (src, dst) = (g.node(s), g.node(t));
        let at = Location::Edge {
            from: src.id,
            to: dst.id,
            data: m.data.clone(),
        };
        let access = |k: &NodeKind| match k {
            NodeKind::Access(d) => Some(d.clone()),
            _ => None,
        };
        let (from, to) = (access(&src.kind), access(&dst.kind));
        if from.is_none() && to.is_none() {
            self.fail(
                at.clone(),
                "an edge must start or end at an access node".into(),
            );
        }
        for d in [from, to].into_iter().flatten() {
            if d != m.data {
                self.fail(
                    at.clone(),
                    format!("memlet moves `{}` but the access node is `{d}`", m.data),
                );
            }
        }
        if m.wcr.is_some() && access(&dst.kind).is_none() {
            self.fail(
                at.clone(),
                "write-conflict resolution on an edge that does not write a container".into(),
            );
        }
        let Some(desc) = self.p.data.get(&m.data) else {
            self.fail(at, format!("memlet on undeclared container `{}`", m.data));
            return;
        };
        if m.subset.rank() != desc.rank() {
            self.fail(
                at,
                format!(
                    "subset {} has {} dimension(s) but `{}` has {}",
                    m.subset,
                    m.subset.rank(),
                    m.data,
                    desc.rank()
                ),
            );
            return;
        }
        for sym in m.subset.free_symbols() {
            if !scope.iter().any(|p| p.name == sym) && !self.p.symbols.contains_key(&sym) {
                self.fail(
                    at.clone(),
                    format!("subset {} uses `{sym}`, which is not in scope", m.subset),
                );
                return;
            }
        }
        self.bounds(at, m, desc, scope);
    }

    /// Evaluates the subset over the enclosing iteration space and checks it stays inside.
    fn bounds(
        &mut self,
        at: Location,
        m: &super::node::Memlet,
        desc: &super::DataDesc,
        scope: &[&MapParam],
    ) {
        let env = self.p.symbol_values();
        let bounds: Vec<ParamBounds> = scope
            .iter()
            .map(|p| ParamBounds {
                name: &p.name,
                range: &p.range,
            })
            .collect();
        let hull = m.subset.propagate(&bounds, &desc.shape);
        for (d, (dim, extent)) in hull.0.iter().zip(&desc.shape).enumerate() {
            let (lo, hi) = match dim {
                Dim::Index(e) => (e.clone(), e + 1),
                Dim::Range(r) => (r.start.clone(), r.end.clone()),
            };
            if let (Ok(lo), Ok(hi), Ok(ext)) = (lo.eval(&env), hi.eval(&env), extent.eval(&env)) {
                if lo < 0 || hi > ext {
                    self.fail(
                        at.clone(),
                        format!(
                            "dimension {d} of {}{} reaches [{lo}, {hi}) outside 0..{ext}",
                            m.data, m.subset
                        ),
                    );
                }
            }
        }
    }

    fn library(&mut self, g: &Graph, idx: petgraph::stable_graph::NodeIndex) {
        let id = g.node(idx).id;
        let mut seen = BTreeSet::new();
        for e in g.in_edges(idx) {
            let conn = e.memlet.dst_conn.clone().unwrap_or_default();
            if LibraryNode::connector_index(&conn, "in").is_none() || !seen.insert(conn.clone()) {
                self.fail(
                    Location::Node(id),
                    format!("bad or repeated input connector `{conn}`"),
                );
            }
        }
        let mut seen = BTreeSet::new();
        for e in g.out_edges(idx) {
            let conn = e.memlet.src_conn.clone().unwrap_or_default();
            if LibraryNode::connector_index(&conn, "out").is_none() || !seen.insert(conn.clone()) {
                self.fail(
                    Location::Node(id),
                    format!("bad or repeated output connector `{conn}`"),
                );
            }
        }
    }

    /// Tasklet edges: a connector read as a whole value (or not read at all) needs a
    /// single-element memlet; one read by element (`conn[i, j]`) may move a range, and every
    /// such read gives exactly one index per dimension of its memlet.
    fn tasklet(&mut self, g: &Graph, idx: petgraph::stable_graph::NodeIndex, t: &super::Tasklet) {
        let id = g.node(idx).id;
        let exprs = || t.outputs.iter().map(|(_, e)| e);
        let plain: BTreeSet<String> = exprs().flat_map(super::TExpr::plain_inputs).collect();
        let element_reads: Vec<(String, usize)> =
            exprs().flat_map(super::TExpr::element_reads).collect();
        let mut fed: BTreeMap<String, usize> = BTreeMap::new();
        for e in g.in_edges(idx) {
            match &e.memlet.dst_conn {
                Some(c) if t.inputs.contains(c) => *fed.entry(c.clone()).or_default() += 1,
                other => self.fail(
                    Location::Node(id),
                    format!("in-edge on unknown connector {other:?}"),
                ),
            }
            let conn = e.memlet.dst_conn.clone().unwrap_or_default();
            let by_element = element_reads.iter().any(|(c, _)| *c == conn);
            if (plain.contains(&conn) || !by_element) && !e.memlet.subset.is_element() {
                self.fail(
                    Location::Node(id),
                    format!(
                        "tasklet input {}{} is not one element",
                        e.memlet.data, e.memlet.subset
                    ),
                );
            }
            for (_, n) in element_reads.iter().filter(|(c, _)| *c == conn) {
                if *n != e.memlet.subset.rank() {
                    self.fail(
                        Location::Node(id),
                        format!(
                            "element read of `{conn}` gives {n} index(es) but its memlet {}{} has rank {}",
                            e.memlet.data,
                            e.memlet.subset,
                            e.memlet.subset.rank()
                        ),
                    );
                }
            }
        }
        for c in &t.inputs {
            match fed.get(c) {
                Some(1) => {}
                Some(n) => self.fail(
                    Location::Node(id),
                    format!("input connector `{c}` has {n} edges"),
                ),
                None => self.fail(
                    Location::Node(id),
                    format!("input connector `{c}` is not connected"),
                ),
            }
        }
        for (name, expr) in &t.outputs {
            for used in expr.inputs() {
                if !t.inputs.contains(&used) {
                    self.fail(
                        Location::Node(id),
                        format!("output `{name}` reads unknown input `{used}`"),
                    );
                }
            }
            let n = g
                .out_edges(idx)
                .iter()
                .filter(|e| e.memlet.src_conn.as_deref() == Some(name))
                .count();
            if n != 1 {
                self.fail(
                    Location::Node(id),
                    format!("output connector `{name}` has {n} edges"),
                );
            }
        }
        for e in g.out_edges(idx) {
            if !e.memlet.subset.is_element() {
                self.fail(
                    Location::Node(id),
                    format!(
                        "tasklet output {}{} is not one element",
                        e.memlet.data, e.memlet.subset
                    ),
                );
            }
            if !t
                .outputs
                .iter()
                .any(|(n, _)| Some(n) == e.memlet.src_conn.as_ref())
            {
                self.fail(
                    Location::Node(id),
                    format!("out-edge on unknown connector {:?}", e.memlet.src_conn),
                );
            }
        }
    }

    /// Every external container the body uses must cross the map boundary.
    fn map_boundary(&mut self, g: &Graph, idx: petgraph::stable_graph::NodeIndex) {
        let NodeKind::Map(m) = &g.node(idx).kind else {
            return;
        };
        let id = g.node(idx).id;
        let boundary = super::build::outer_memlets(m, &self.p.data);
        let ins: BTreeSet<String> = g
            .in_edges(idx)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect();
        let outs: BTreeSet<String> = g
            .out_edges(idx)
            .iter()
            .map(|e| e.memlet.data.clone())
            .collect();
        for d in boundary.reads.keys() {
            if !ins.contains(d) {
                self.fail(
                    Location::Node(id),
                    format!("body reads `{d}` but no memlet brings it into the map"),
                );
            }
        }
        for d in boundary.writes.keys() {
            if !outs.contains(d) {
                self.fail(
                    Location::Node(id),
                    format!("body writes `{d}` but no memlet takes it out of the map"),
                );
            }
        }
        for d in &outs {
            if !boundary.writes.contains_key(d)
                && !super::build::passes_scoped(m, &self.p.data, d, true)
            {
                self.fail(
                    Location::Node(id),
                    format!("map claims to write `{d}` but its body never does"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
