//! The contract every transformation implements, and the vocabulary of its answers.
//!
//! A transformation is a constant [`Schema`] (name, level, doc, site roles, parameters) plus two
//! functions: `candidates` (sites worth trying, in a deterministic order) and `plan`, which checks
//! every precondition without mutating anything and returns the rewrite as a [`Plan`] that the
//! engine runs later. Planning once means `apply` never recomputes what `check` found and never
//! trusts state it did not check: a plan owns everything it needs.
//!
//! Preconditions come in two kinds. *Structural* ones (the site's shape, what the rewrite needs to
//! be expressible at all) refuse outright. *Legality* ones (races, coverage, strides) go through
//! [`Legality::holds`], so that a caller who explicitly lowered legality gets the rewrite anyway,
//! with each waived condition recorded — and still checked by invariants and numerics.

use super::params::{Args, ParamDecl};
use super::site::Role;
use crate::ir::{MapNode, NodeId, NodeKind, Program};
use serde::{Deserialize, Serialize};

/// The level of data-centric optimization a transformation works at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    Operator,
    Expansion,
    IntraOperator,
    InterOperator,
}

/// What a transformation is, as data: the engine validates sites and parameters against it, and
/// `dmove transforms --json` prints it for the recipe checker and completion.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Schema {
    pub name: &'static str,
    pub level: Level,
    pub doc: &'static str,
    pub site: &'static [Role],
    pub params: &'static [ParamDecl],
}

/// Why a transformation does not apply at a site: which condition failed, on which node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("{transformation} does not apply at {node}: {reason}")]
pub struct NotApplicable {
    pub transformation: &'static str,
    pub node: NodeId,
    pub reason: String,
    /// Set when a scripted transformation's own code failed (an error or a sandbox limit in
    /// its check or rewrite): that is a fault in the script, never a silent "does not apply".
    pub fault: Option<Box<ScriptFault>>,
}

/// Where a scripted transformation's code failed: the script (by content hash, so a caller
/// that loaded it can find its text) and the position Rhai reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptFault {
    pub script_hash: String,
    pub error: crate::script::ScriptError,
}

/// The rewrite a plan runs: it returns the ids it rewrote.
type Rewrite = dyn FnOnce(&mut Program) -> Result<Vec<NodeId>, NotApplicable> + Send;

/// A checked rewrite, ready to run: it owns what planning found.
pub struct Plan(Box<Rewrite>);

impl Plan {
    pub fn new(
        rewrite: impl FnOnce(&mut Program) -> Result<Vec<NodeId>, NotApplicable> + Send + 'static,
    ) -> Plan {
        Plan(Box::new(rewrite))
    }

    /// Runs the rewrite (the engine restores the program if it fails).
    pub fn run(self, p: &mut Program) -> Result<Vec<NodeId>, NotApplicable> {
        (self.0)(p)
    }
}

/// The legality conditions of one planning: refused, or waived and recorded when the caller
/// lowered the legality layer.
#[derive(Clone, Debug, Default)]
pub struct Legality {
    lowered: bool,
    waived: Vec<String>,
}

impl Legality {
    /// Conditions refuse (`lowered == false`) or are waived and recorded.
    pub fn new(lowered: bool) -> Legality {
        Legality {
            lowered,
            waived: Vec::new(),
        }
    }

    /// A legality condition: `Ok` when it holds or is waived.
    pub fn holds(&mut self, condition: Result<(), NotApplicable>) -> Result<(), NotApplicable> {
        match condition {
            Err(e) if self.lowered => {
                self.waived.push(e.reason);
                Ok(())
            }
            other => other,
        }
    }

    /// The reasons of the conditions that failed and were waived.
    pub fn waived(&self) -> &[String] {
        &self.waived
    }
}

/// One planning request, validated by the engine: the program, the site (filling the schema's
/// roles), the arguments (fitting its declarations) and where legality conditions go.
pub struct Call<'a> {
    pub p: &'a Program,
    pub site: &'a [NodeId],
    pub args: &'a Args,
    pub legality: &'a mut Legality,
}

/// A rewrite of the program.
pub trait Transformation: Sync {
    /// The declaration: one constant per transformation.
    fn schema(&self) -> &'static Schema;
    /// Checks every precondition (legality ones through `call.legality`) without changing
    /// anything and returns the rewrite.
    fn plan(&self, call: Call) -> Result<Plan, NotApplicable>;
    /// Sites worth trying, in a deterministic order, each filling the schema's roles. By
    /// default, for a site of one role: every node of the role's class, outer scopes first; a
    /// transformation whose site has several roles lists its own.
    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        role_candidates(self.schema(), p)
    }

    fn name(&self) -> &'static str {
        self.schema().name
    }
    /// The hash of the script that declares this transformation (`None` for built-ins), so a
    /// trace or lock names the exact code behind each scripted step.
    fn script_hash(&self) -> Option<&str> {
        None
    }
    fn level(&self) -> Level {
        self.schema().level
    }
    fn doc(&self) -> &'static str {
        self.schema().doc
    }
}

/// The default candidates of a schema: for a site of one role, every node of the role's class,
/// outer scopes first; none for a site of several roles.
pub fn role_candidates(schema: &Schema, p: &Program) -> Vec<Vec<NodeId>> {
    match schema.site {
        [role] => {
            let mut v = Vec::new();
            p.graph.walk(&mut |n| {
                if role.class.admits(&n.kind) {
                    v.push(vec![n.id]);
                }
            });
            v
        }
        _ => Vec::new(),
    }
}

/// Shorthand used by transformations to refuse.
pub(crate) fn refuse(
    t: &dyn Transformation,
    node: NodeId,
    reason: impl Into<String>,
) -> NotApplicable {
    NotApplicable {
        transformation: t.name(),
        node,
        reason: reason.into(),
        fault: None,
    }
}

/// The map node `id`, or a refusal saying what it is instead (for nodes a transformation reaches
/// beyond its validated site).
pub(crate) fn expect_map<'p>(
    t: &dyn Transformation,
    p: &'p Program,
    id: NodeId,
) -> Result<&'p MapNode, NotApplicable> {
    match p.node(id).map(|n| &n.kind) {
        Some(NodeKind::Map(m)) => Ok(m),
        Some(other) => Err(refuse(
            t,
            id,
            format!("node is a {} node, not a map", other.kind_name()),
        )),
        None => Err(refuse(t, id, "no such node")),
    }
}

/// Ids of every map in the program (any depth), outer maps first.
pub(crate) fn all_maps(p: &Program) -> Vec<NodeId> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Map(_)) {
            v.push(n.id);
        }
    });
    v
}

/// One single-node site per map (any depth, outer maps first) that `applies` accepts: the
/// candidates of a transformation whose site is one map judged on its own.
pub(crate) fn map_sites(p: &Program, applies: impl Fn(&MapNode) -> bool) -> Vec<Vec<NodeId>> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            if applies(m) {
                v.push(vec![n.id]);
            }
        }
    });
    v
}
