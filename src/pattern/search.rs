//! The matcher proper: backtracking over the pattern's plan, one scope at a time.
//!
//! The anchor (first capture) is tried at every node of a scope; each further capture is bound
//! to a neighbour of an already bound node along the edge the plan chose, so the work per
//! anchor depends on the pattern and the local degree, not on the program's size. When asked
//! to explain, the search remembers the failure of the attempt that bound the most captures.

use super::pred::{describe, test};
use super::{Match, MeasureKind, Operand, Pattern};
use crate::ir::{Graph, NodeId, NodeKind, Program};
use petgraph::stable_graph::NodeIndex;

/// Why a pattern did not match: the constraint that failed (`at`), on which node, and the
/// value seen (`message`), e.g. "`mm`: expected op MatMul, found Gemm".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("{at}: {message}")]
pub struct Mismatch {
    pub at: String,
    pub node: Option<NodeId>,
    pub message: String,
}

/// Every match of `pattern` in `p` (all scopes), sorted by the captures' ids.
pub fn find_all(pattern: &Pattern, p: &Program) -> Vec<Match> {
    let mut out = Vec::new();
    for (_, g) in scopes(p) {
        for idx in g.node_indices() {
            if anchor_fits(pattern, p, g, idx) {
                out.extend(search_from(pattern, p, g, idx));
            }
        }
    }
    out.sort();
    out
}

/// Matches whose first capture is `anchor`, sorted.
pub fn find_at(pattern: &Pattern, p: &Program, anchor: NodeId) -> Vec<Match> {
    match p.graph.locate(anchor) {
        Some((g, idx)) => search_from(pattern, p, g, idx),
        None => Vec::new(),
    }
}

/// The first match anchored at `node`, or why there is none: the first constraint that failed
/// on the attempt that got furthest, with the value it saw.
pub fn explain(pattern: &Pattern, p: &Program, node: NodeId) -> Result<Match, Mismatch> {
    let Some((g, idx)) = p.graph.locate(node) else {
        return Err(Mismatch {
            at: format!("`{}`", pattern.captures[0].name),
            node: Some(node),
            message: format!("there is no node {node} in the program"),
        });
    };
    let mut s = Search::new(pattern, p, g, true);
    s.start(idx);
    match s.out.into_iter().next() {
        Some(m) => Ok(m),
        None => Err(s.why.map(|(_, m)| m).unwrap_or_else(|| Mismatch {
            at: format!("pattern `{}`", pattern.name()),
            node: Some(node),
            message: "no match".to_string(),
        })),
    }
}

/// Every scope of the program with the path of map indices leading to it (outermost first).
pub(crate) fn scopes(p: &Program) -> Vec<(Vec<NodeIndex>, &Graph)> {
    fn walk<'p>(g: &'p Graph, path: Vec<NodeIndex>, out: &mut Vec<(Vec<NodeIndex>, &'p Graph)>) {
        for idx in g.node_indices() {
            if let NodeKind::Map(m) = &g.node(idx).kind {
                let mut inner = path.clone();
                inner.push(idx);
                walk(&m.body, inner, out);
            }
        }
        out.push((path, g));
    }
    let mut out = Vec::new();
    walk(&p.graph, Vec::new(), &mut out);
    out
}

/// Whether the anchor's own predicates hold at `idx` (a cheap filter before searching).
pub(crate) fn anchor_fits(pattern: &Pattern, p: &Program, g: &Graph, idx: NodeIndex) -> bool {
    let node = g.node(idx);
    pattern.captures[0]
        .preds
        .iter()
        .all(|pr| test(pr, node, p).is_ok())
}

/// All matches anchored at `idx` in scope `g`, sorted.
pub(crate) fn search_from(pattern: &Pattern, p: &Program, g: &Graph, idx: NodeIndex) -> Vec<Match> {
    let mut s = Search::new(pattern, p, g, false);
    s.start(idx);
    s.out.sort();
    s.out
}

/// Whether `nodes` (by capture, all in scope `g`) still satisfy every part of the pattern.
pub(crate) fn holds(pattern: &Pattern, p: &Program, g: &Graph, nodes: &[NodeIndex]) -> bool {
    let mut s = Search::new(pattern, p, g, false);
    for (c, &idx) in nodes.iter().enumerate() {
        if !s.bind(c, idx, 0) {
            return false;
        }
    }
    (0..pattern.checks.len()).all(|k| s.check(k).is_ok())
}

struct Search<'s> {
    pat: &'s Pattern,
    p: &'s Program,
    g: &'s Graph,
    bound: Vec<Option<NodeIndex>>,
    out: Vec<Match>,
    /// When explaining: the deepest failure so far (depth = captures bound) and the first match
    /// ends the search.
    explaining: bool,
    why: Option<(usize, Mismatch)>,
}

impl<'s> Search<'s> {
    fn new(pat: &'s Pattern, p: &'s Program, g: &'s Graph, explaining: bool) -> Self {
        Search {
            pat,
            p,
            g,
            bound: vec![None; pat.captures.len()],
            out: Vec::new(),
            explaining,
            why: None,
        }
    }

    fn start(&mut self, anchor: NodeIndex) {
        if self.bind(0, anchor, 0) {
            self.descend(1);
        }
    }

    fn name(&self, c: usize) -> &'s str {
        &self.pat.captures[c].name
    }

    fn id(&self, idx: NodeIndex) -> NodeId {
        self.g.node(idx).id
    }

    /// Records a failure at `depth` if it is the deepest so far (the first one wins ties).
    fn fail(&mut self, depth: usize, make: impl FnOnce(&Self) -> Mismatch) {
        if self.explaining && self.why.as_ref().is_none_or(|(d, _)| depth > *d) {
            let m = make(self);
            self.why = Some((depth, m));
        }
    }

    /// `pos` captures of the binding order are bound: check what became checkable, then bind
    /// the next capture to each neighbour along the planned edge.
    fn descend(&mut self, pos: usize) {
        let pat = self.pat;
        for &k in &pat.ready[pos - 1] {
            if let Err((at, message)) = self.check(k) {
                self.fail(pos, |_| Mismatch {
                    at,
                    node: None,
                    message,
                });
                return;
            }
        }
        let Some(step) = self.pat.plan.get(pos - 1).copied() else {
            let nodes: Option<Vec<NodeId>> =
                self.bound.iter().map(|b| b.map(|i| self.id(i))).collect();
            if let Some(nodes) = nodes {
                self.out.push(Match { nodes });
            }
            return;
        };
        let Some(from) = self.bound[step.from] else {
            return;
        };
        let near: Vec<NodeIndex> = if step.outgoing {
            self.g.successors(from).collect()
        } else {
            self.g.predecessors(from).collect()
        };
        let mut cands: Vec<(NodeId, NodeIndex)> =
            near.into_iter().map(|n| (self.id(n), n)).collect();
        cands.sort();
        cands.dedup();
        if cands.is_empty() {
            self.fail(pos, |s| Mismatch {
                at: edge_name(s.name(step.from), s.name(step.capture), step.outgoing),
                node: Some(s.id(from)),
                message: format!(
                    "{} has no {}",
                    s.id(from),
                    if step.outgoing {
                        "successors"
                    } else {
                        "predecessors"
                    }
                ),
            });
        }
        for (_, cand) in cands {
            if self.explaining && !self.out.is_empty() {
                return;
            }
            if self.bind(step.capture, cand, pos) {
                self.descend(pos + 1);
                self.bound[step.capture] = None;
            }
        }
    }

    /// Binds capture `c` to `idx` if the node is not bound elsewhere and satisfies the
    /// capture's predicates and every edge to bound captures.
    fn bind(&mut self, c: usize, idx: NodeIndex, depth: usize) -> bool {
        if let Some(other) = self.bound.iter().position(|b| *b == Some(idx)) {
            self.fail(depth, |s| Mismatch {
                at: format!("`{}`", s.name(c)),
                node: Some(s.id(idx)),
                message: format!("{} is already bound to `{}`", s.id(idx), s.name(other)),
            });
            return false;
        }
        let (pat, g) = (self.pat, self.g);
        let node = g.node(idx);
        for pred in &pat.captures[c].preds {
            if let Err(seen) = test(pred, node, self.p) {
                let message = if self.explaining {
                    describe(pred, &seen)
                } else {
                    String::new()
                };
                self.fail(depth, |s| Mismatch {
                    at: format!("`{}`", s.name(c)),
                    node: Some(node.id),
                    message,
                });
                return false;
            }
        }
        self.bound[c] = Some(idx);
        for e in &pat.edges {
            if e.from != c && e.to != c {
                continue;
            }
            let (Some(a), Some(b)) = (self.bound[e.from], self.bound[e.to]) else {
                continue;
            };
            let edges: Vec<_> = g
                .out_edges(a)
                .into_iter()
                .filter(|x| x.other == b)
                .collect();
            let found = !edges.is_empty();
            let ok = (edges.iter()).any(|x| e.data.as_ref().is_none_or(|d| &x.memlet.data == d));
            if !ok {
                self.fail(depth, |s| Mismatch {
                    at: edge_name(s.name(e.from), s.name(e.to), true),
                    node: Some(s.id(a)),
                    message: match (&e.data, found) {
                        (Some(d), true) => format!(
                            "the edge {} -> {} does not move container {d}",
                            s.id(a),
                            s.id(b)
                        ),
                        _ => format!("no edge {} -> {}", s.id(a), s.id(b)),
                    },
                });
                self.bound[c] = None;
                return false;
            }
        }
        true
    }

    /// Evaluates constraint `k`; on failure, the constraint as written and what was measured.
    fn check(&self, k: usize) -> Result<(), (String, String)> {
        let check = &self.pat.checks[k];
        let failed = |message: String| (format!("`{}` failed", check.shown), message);
        let lhs = self.measure(check.lhs).map_err(failed)?;
        let rhs = match check.rhs {
            Operand::Const(v) => (v, None),
            Operand::Measure(m) => (self.measure(m).map_err(failed)?, Some(m)),
        };
        if check.cmp.holds(lhs, rhs.0) {
            return Ok(());
        }
        let mut message = show_measure(check.lhs.0, lhs);
        if let Some((kind, _)) = rhs.1 {
            message.push_str(&format!(" against {}", show_measure(kind, rhs.0)));
        }
        Err(failed(message))
    }

    fn measure(&self, (kind, c): (MeasureKind, usize)) -> Result<i64, String> {
        let idx = self.bound[c].ok_or_else(|| format!("`{}` is not bound", self.name(c)))?;
        let node = self.g.node(idx);
        let value = match (kind, &node.kind) {
            (MeasureKind::Uses, _) => readers(self.g, idx),
            (MeasureKind::Params, NodeKind::Map(m)) => m.params.len(),
            (MeasureKind::Rank, NodeKind::Access(d)) => match self.p.data.get(d) {
                Some(desc) => desc.rank(),
                None => return Err(format!("container {d} is not declared")),
            },
            (kind, other) => {
                return Err(format!(
                    "{}({}) is undefined on a {} node",
                    kind.name(),
                    self.name(c),
                    other.kind_name()
                ))
            }
        };
        Ok(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

/// Readers of what node `idx` writes: an access node's consumers, or for any other node the
/// consumers of the access nodes it writes, each counted once.
pub(crate) fn readers(g: &Graph, idx: NodeIndex) -> usize {
    let outs: Vec<NodeIndex> = match g.node(idx).kind {
        NodeKind::Access(_) => vec![idx],
        _ => g
            .successors(idx)
            .filter(|&t| matches!(g.node(t).kind, NodeKind::Access(_)))
            .collect(),
    };
    let mut rs: Vec<NodeIndex> = outs.iter().flat_map(|&a| g.successors(a)).collect();
    rs.sort();
    rs.dedup();
    rs.len()
}

fn show_measure(kind: MeasureKind, v: i64) -> String {
    match kind {
        MeasureKind::Uses => format!("{v} reader(s)"),
        MeasureKind::Params => format!("{v} parameter(s)"),
        MeasureKind::Rank => format!("rank {v}"),
    }
}

fn edge_name(from: &str, to: &str, outgoing: bool) -> String {
    if outgoing {
        format!("`{from}` -> `{to}`")
    } else {
        format!("`{to}` -> `{from}`")
    }
}
