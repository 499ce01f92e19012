//! Subgraph patterns over the IR, matching with reasons, and incremental re-matching.
//!
//! A [`Pattern`] is a small connected graph of named *captures*, each with node predicates
//! ([`Pred`]: kind, operator, attributes, the dtype and dimensions of the data an access node
//! refers to, map parameter count and schedule), *edges* between captures (optionally through a
//! named container) and extra *constraints* over measured values (`uses(t) == 1`). Patterns are
//! built with [`PatternBuilder`], which rejects unknown capture names when the pattern is built.
//!
//! Matching ([`find_all`]) binds every capture to a distinct node of one scope; matches are
//! sorted by the ids of their captures, in declaration order, and refer to stable [`NodeId`]s.
//! [`explain`] says why a pattern does not match at a node: the first constraint that failed on
//! the most promising attempt, and the value it saw. [`Matcher`] keeps a set of matches current
//! across rewrites by re-checking only matches near changed nodes and searching only there.
//!
//! ```
//! use dmove::pattern::{uses, Pred, PatternBuilder};
//! use dmove::ir::DataKind;
//! let p = PatternBuilder::new("matmul_add")
//!     .node("mm", [Pred::op("MatMul")])
//!     .node("t", [Pred::DataKind(DataKind::Transient)])
//!     .node("add", [Pred::op("Add")])
//!     .flow("mm", "t", "add")
//!     .require(uses("t").equals(1))
//!     .finish()
//!     .expect("well-formed");
//! assert_eq!(p.captures(), ["mm", "t", "add"]);
//! ```

mod builder;
mod incremental;
pub mod library;
mod pred;
mod search;

pub use builder::{params, rank, uses, Cmp, Constraint, Measure, MeasureKind, PatternBuilder};
pub use incremental::{Change, Matcher, UpdateStats};
pub use pred::{NodeClass, Pred};
pub(crate) use search::readers;
pub use search::{explain, find_all, find_at, Mismatch};

use crate::ir::NodeId;
use std::fmt;

/// Why a pattern could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum PatternError {
    #[error("pattern `{pattern}`: {used_in} uses capture `{capture}`, which is not declared")]
    #[diagnostic(help("declare it with `.node(\"{capture}\", …)` before finishing the pattern"))]
    UnboundCapture {
        pattern: String,
        capture: String,
        used_in: String,
    },
    #[error("pattern `{pattern}` declares capture `{capture}` twice")]
    DuplicateCapture { pattern: String, capture: String },
    #[error("there is no built-in pattern `{name}` (known: {known})")]
    Unknown { name: String, known: String },
    #[error("pattern `{pattern}` has no captures")]
    Empty { pattern: String },
    #[error(
        "pattern `{pattern}`: capture `{capture}` is not connected to the first capture by edges"
    )]
    #[diagnostic(help(
        "a pattern matches one connected piece of a scope; add an edge that reaches it"
    ))]
    Disconnected { pattern: String, capture: String },
}

/// A constant or a measured value on the right of a constraint; `M` is a measure by name in
/// the builder and by capture index once resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand<M> {
    Const(i64),
    Measure(M),
}

/// One named node of a pattern.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Capture {
    pub name: String,
    pub preds: Vec<Pred>,
}

/// A required edge between two captures (by index).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EdgeSpec {
    pub from: usize,
    pub to: usize,
    pub data: Option<String>,
}

/// A resolved constraint.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Check {
    /// The constraint as the user wrote it, for messages.
    pub shown: String,
    pub lhs: (MeasureKind, usize),
    pub cmp: Cmp,
    pub rhs: Operand<(MeasureKind, usize)>,
}

impl Check {
    fn captures(&self) -> Vec<usize> {
        let mut v = vec![self.lhs.1];
        if let Operand::Measure((_, c)) = self.rhs {
            v.push(c);
        }
        v
    }
}

/// How the search binds one more capture: through an edge from an already bound capture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PlanStep {
    pub capture: usize,
    pub from: usize,
    /// The edge goes `from → capture` (successors) rather than `capture → from`.
    pub outgoing: bool,
}

/// A pattern ready to match.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    name: String,
    pub(crate) captures: Vec<Capture>,
    pub(crate) edges: Vec<EdgeSpec>,
    pub(crate) checks: Vec<Check>,
    pub(crate) plan: Vec<PlanStep>,
    /// Constraints that become checkable once the first `k + 1` captures of the binding order
    /// are bound, for each `k`.
    pub(crate) ready: Vec<Vec<usize>>,
}

impl Pattern {
    fn assemble(
        name: String,
        captures: Vec<Capture>,
        edges: Vec<EdgeSpec>,
        checks: Vec<Check>,
        plan: Vec<PlanStep>,
    ) -> Pattern {
        let order: Vec<usize> = std::iter::once(0)
            .chain(plan.iter().map(|s| s.capture))
            .collect();
        let position = |c: usize| order.iter().position(|&o| o == c).unwrap_or(0);
        let mut ready = vec![Vec::new(); order.len()];
        for (i, check) in checks.iter().enumerate() {
            let last = check
                .captures()
                .into_iter()
                .map(position)
                .max()
                .unwrap_or(0);
            ready[last].push(i);
        }
        Pattern {
            name,
            captures,
            edges,
            checks,
            plan,
            ready,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Capture names in declaration order (the order of [`Match::nodes`]).
    pub fn captures(&self) -> Vec<&str> {
        self.captures.iter().map(|c| c.name.as_str()).collect()
    }

    /// The predicates of capture `name`, if the pattern has it.
    pub fn capture_preds(&self, name: &str) -> Option<&[Pred]> {
        (self.captures.iter())
            .find(|c| c.name == name)
            .map(|c| c.preds.as_slice())
    }

    /// The node bound to capture `name` in `m`.
    pub fn get(&self, m: &Match, name: &str) -> Option<NodeId> {
        let i = self.captures.iter().position(|c| c.name == name)?;
        m.nodes.get(i).copied()
    }

    /// How many hops from a changed node a match can be affected: a connected pattern of `k`
    /// captures spans at most `k - 1` hops, and `uses` looks one hop further.
    pub(crate) fn reach(&self) -> usize {
        self.captures.len()
    }
}

impl fmt::Display for Pattern {
    /// One line per capture with its predicates, then edges and constraints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "pattern {}", self.name)?;
        for c in &self.captures {
            let preds: Vec<String> = c.preds.iter().map(pred::expectation).collect();
            writeln!(f, "  {}: {}", c.name, preds.join(", "))?;
        }
        for e in &self.edges {
            let via = e
                .data
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            writeln!(
                f,
                "  {} -> {}{via}",
                self.captures[e.from].name, self.captures[e.to].name
            )?;
        }
        for c in &self.checks {
            writeln!(f, "  require {}", c.shown)?;
        }
        Ok(())
    }
}

/// One match: the node bound to each capture, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    pub nodes: Vec<NodeId>,
}

impl Match {
    /// The node bound to the first capture.
    pub fn anchor(&self) -> Option<NodeId> {
        self.nodes.first().copied()
    }

    /// `mm=n3 t=n4 add=n5`.
    pub fn show(&self, pattern: &Pattern) -> String {
        pattern
            .captures
            .iter()
            .zip(&self.nodes)
            .map(|(c, n)| format!("{}={n}", c.name))
            .collect::<Vec<_>>()
            .join(" ")
    }
}
