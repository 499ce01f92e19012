//! Building patterns: captures with predicates, edges between them, extra constraints.
//!
//! Names are resolved and the search order planned once, in [`PatternBuilder::finish`], so a
//! pattern that refers to a capture it never declared is rejected when it is built — a recipe
//! author hears about the typo immediately, not when the pattern first fails to match.

use super::pred::Pred;
use super::{Capture, Check, EdgeSpec, Operand, Pattern, PatternError, PlanStep};
use std::fmt;

/// A number measured on the node bound to a capture, for [`Constraint`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeasureKind {
    /// Readers of the value the node writes: for an access node, its consumers; for any other
    /// node, the consumers of the access nodes it writes (in its scope).
    Uses,
    /// Parameter count of a map.
    Params,
    /// Rank of the container an access node refers to.
    Rank,
}

impl MeasureKind {
    pub fn name(self) -> &'static str {
        match self {
            MeasureKind::Uses => "uses",
            MeasureKind::Params => "params",
            MeasureKind::Rank => "rank",
        }
    }
}

/// `uses(x)`, `params(x)`, `rank(x)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub kind: MeasureKind,
    pub capture: String,
}

pub fn uses(capture: &str) -> Measure {
    Measure {
        kind: MeasureKind::Uses,
        capture: capture.to_string(),
    }
}

pub fn params(capture: &str) -> Measure {
    Measure {
        kind: MeasureKind::Params,
        capture: capture.to_string(),
    }
}

pub fn rank(capture: &str) -> Measure {
    Measure {
        kind: MeasureKind::Rank,
        capture: capture.to_string(),
    }
}

/// Comparison operators of constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

/// An extra condition over measured values, e.g. `uses(t) == 1` or `params(a) == params(b)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub lhs: Measure,
    pub cmp: Cmp,
    pub rhs: Operand<Measure>,
}

impl Measure {
    pub fn compare(self, cmp: Cmp, rhs: impl Into<Operand<Measure>>) -> Constraint {
        Constraint {
            lhs: self,
            cmp,
            rhs: rhs.into(),
        }
    }

    pub fn equals(self, rhs: impl Into<Operand<Measure>>) -> Constraint {
        self.compare(Cmp::Eq, rhs)
    }
}

impl From<i64> for Operand<Measure> {
    fn from(v: i64) -> Self {
        Operand::Const(v)
    }
}

impl From<Measure> for Operand<Measure> {
    fn from(m: Measure) -> Self {
        Operand::Measure(m)
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.kind.name(), self.capture)
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.lhs, self.cmp.symbol())?;
        match &self.rhs {
            Operand::Const(v) => write!(f, "{v}"),
            Operand::Measure(m) => write!(f, "{m}"),
        }
    }
}

/// Builds a [`Pattern`] by name; errors are collected and reported by [`finish`](Self::finish).
#[derive(Clone, Debug)]
pub struct PatternBuilder {
    name: String,
    captures: Vec<Capture>,
    edges: Vec<(String, String, Option<String>)>,
    constraints: Vec<Constraint>,
}

impl PatternBuilder {
    pub fn new(name: impl Into<String>) -> Self {
        PatternBuilder {
            name: name.into(),
            captures: Vec::new(),
            edges: Vec::new(),
            constraints: Vec::new(),
        }
    }

    /// Declares capture `name`; the first capture declared is the anchor (the node a user
    /// names when asking why a pattern does not match).
    pub fn node(mut self, name: &str, preds: impl IntoIterator<Item = Pred>) -> Self {
        self.captures.push(Capture {
            name: name.to_string(),
            preds: preds.into_iter().collect(),
        });
        self
    }

    /// A direct edge `from → to` in one scope.
    pub fn edge(mut self, from: &str, to: &str) -> Self {
        self.edges.push((from.to_string(), to.to_string(), None));
        self
    }

    /// A direct edge `from → to` whose memlet moves container `data`.
    pub fn edge_through(mut self, from: &str, to: &str, data: &str) -> Self {
        self.edges
            .push((from.to_string(), to.to_string(), Some(data.to_string())));
        self
    }

    /// `producer → via → consumer`: the consumer reads what the producer wrote, through the
    /// access node bound to `via` (which must be declared with [`Pred::Kind`] access or a data
    /// predicate).
    pub fn flow(self, producer: &str, via: &str, consumer: &str) -> Self {
        self.edge(producer, via).edge(via, consumer)
    }

    pub fn require(mut self, c: Constraint) -> Self {
        self.constraints.push(c);
        self
    }

    /// Resolves names and plans the search order.
    pub fn finish(self) -> Result<Pattern, PatternError> {
        let pattern = self.name.clone();
        if self.captures.is_empty() {
            return Err(PatternError::Empty { pattern });
        }
        for (i, c) in self.captures.iter().enumerate() {
            if self.captures[..i].iter().any(|d| d.name == c.name) {
                return Err(PatternError::DuplicateCapture {
                    pattern,
                    capture: c.name.clone(),
                });
            }
        }
        let find = |name: &str, used_in: String| {
            self.captures
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| PatternError::UnboundCapture {
                    pattern: self.name.clone(),
                    capture: name.to_string(),
                    used_in,
                })
        };
        let mut edges = Vec::new();
        for (from, to, data) in &self.edges {
            let what = format!("edge {from} -> {to}");
            edges.push(EdgeSpec {
                from: find(from, what.clone())?,
                to: find(to, what)?,
                data: data.clone(),
            });
        }
        let mut checks = Vec::new();
        for c in &self.constraints {
            let lhs = find(&c.lhs.capture, format!("constraint `{c}`"))?;
            let rhs = match &c.rhs {
                Operand::Const(v) => Operand::Const(*v),
                Operand::Measure(m) => {
                    Operand::Measure((m.kind, find(&m.capture, format!("constraint `{c}`"))?))
                }
            };
            checks.push(Check {
                shown: c.to_string(),
                lhs: (c.lhs.kind, lhs),
                cmp: c.cmp,
                rhs,
            });
        }
        let plan = plan(&self.captures, &edges).map_err(|capture| PatternError::Disconnected {
            pattern: pattern.clone(),
            capture,
        })?;
        Ok(Pattern::assemble(
            self.name,
            self.captures,
            edges,
            checks,
            plan,
        ))
    }
}

/// The binding order: the anchor first, then repeatedly the first declared capture adjacent to
/// a bound one, reached over that edge. Fails with the name of an unreachable capture.
fn plan(captures: &[Capture], edges: &[EdgeSpec]) -> Result<Vec<PlanStep>, String> {
    let mut bound = vec![false; captures.len()];
    bound[0] = true;
    let mut steps = Vec::new();
    while steps.len() + 1 < captures.len() {
        let next = (0..captures.len()).filter(|&c| !bound[c]).find_map(|c| {
            edges.iter().find_map(|e| {
                if e.to == c && bound[e.from] {
                    Some(PlanStep {
                        capture: c,
                        from: e.from,
                        outgoing: true,
                    })
                } else if e.from == c && bound[e.to] {
                    Some(PlanStep {
                        capture: c,
                        from: e.to,
                        outgoing: false,
                    })
                } else {
                    None
                }
            })
        });
        let Some(step) = next else {
            let lost = bound.iter().position(|b| !b).unwrap_or(0);
            return Err(captures[lost].name.clone());
        };
        bound[step.capture] = true;
        steps.push(step);
    }
    Ok(steps)
}
