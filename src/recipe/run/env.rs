//! The interpreter's state: the program being rewritten, the one engine of the run, variables,
//! parameter values, handles and the report — and the transactions that roll them back.
//!
//! **Variables** live in frames: a block pushes one, a rule call starts a fresh stack in the
//! rule's module (a rule sees its parameters, not its caller's variables).
//!
//! **Handles** are node ids, stable across rewrites. When a step removes a node the step's index
//! is kept, so using the handle afterwards names the step that consumed it; the node's
//! description is remembered when a handle is bound, because after the step it is gone.
//!
//! **Transactions**: a [`Mark`] records the lengths of every report list and, when the block may
//! commit more than one step, a snapshot of the program; rolling back restores both. A block that
//! commits at most one step needs no snapshot (the engine's step is itself transactional), which
//! keeps `apply … everywhere` of single-call rules from cloning a large program per match.

use super::describe::describe;
use super::failure::{runtime, Failure, Flow, STALE_HANDLE};
use super::params::ParamSpace;
use super::value::{ParamValue, Value};
use super::{RecordedStep, RunOptions, RunReport};
use crate::ir::{Node, NodeId, Program};
use crate::pattern::Pattern;
use crate::progress::Progress;
use crate::recipe::ast;
use crate::recipe::modules::Loaded;
use crate::recipe::{Diagnostic, Span};
use crate::transform::engine::{Engine, Step};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Lazily measured metrics of the program before the recipe ran (`baseline.*`), shared by the
/// candidate runs of a search and the final run, which all start from the same program.
pub struct Baseline {
    pub start: Program,
    pub dmd: Option<Result<f64, String>>,
    pub bytes: Option<Result<f64, String>>,
    pub time: Option<Result<f64, String>>,
}

impl Baseline {
    pub fn new(start: Program) -> Baseline {
        Baseline {
            start,
            dmd: None,
            bytes: None,
            time: None,
        }
    }
}

/// Variables: a stack of frames in the module whose code is running.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub module: usize,
    frames: Vec<BTreeMap<String, Value>>,
}

impl Env {
    pub fn new(module: usize) -> Env {
        Env {
            module,
            frames: vec![BTreeMap::new()],
        }
    }

    pub fn push(&mut self) {
        self.frames.push(BTreeMap::new());
    }

    pub fn pop(&mut self) {
        self.frames.pop();
    }

    /// Binds `name` in the innermost frame (shadowing outer ones).
    pub fn bind(&mut self, name: &str, v: Value) {
        if self.frames.is_empty() {
            self.frames.push(BTreeMap::new());
        }
        if let Some(f) = self.frames.last_mut() {
            f.insert(name.to_string(), v);
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.frames.iter().rev().find_map(|f| f.get(name))
    }

    /// Every variable name in scope, for "did you mean".
    pub fn names(&self) -> Vec<String> {
        self.frames.iter().flat_map(|f| f.keys().cloned()).collect()
    }
}

/// Where a transaction started.
pub struct Mark {
    snapshot: Option<Program>,
    steps: usize,
    skipped: usize,
    warnings: usize,
    notes: usize,
    printed: usize,
    expects: usize,
    lowered: usize,
}

/// One run of `main` (the final run, or one candidate of a search).
pub struct Interp<'a> {
    pub l: &'a Loaded,
    pub p: &'a mut Program,
    pub opts: &'a RunOptions,
    pub space: &'a ParamSpace,
    pub values: BTreeMap<String, ParamValue>,
    pub engine: &'a mut Engine,
    pub baseline: &'a mut Baseline,
    pub report: RunReport,
    pub env: Env,
    /// The step (index in `report.steps`) that removed each node.
    pub removed_by: HashMap<NodeId, usize>,
    /// Descriptions of nodes that handles were bound to, for messages after they are gone.
    pub described: HashMap<NodeId, String>,
    /// Built patterns, by declaring module and name.
    pub patterns: HashMap<(usize, String), Arc<Pattern>>,
    /// Paths of the rules being run, innermost last (`cpu::fuse`).
    pub rules: Vec<String>,
    /// How many enclosing strategies absorb silenceable failures (diagnostics for them are kept
    /// short: computing the nearest candidate is for failures that reach the user).
    pub silenced: usize,
    /// Shows each step as it is checked (see [`RunOptions::progress`]).
    pub progress: Progress,
}

/// Rule recursion deeper than this is a definite error.
pub const MAX_DEPTH: usize = 64;

/// What an interpreter accumulates and a later one can go on from: parameter values, the
/// report, the variables of the top frame and what the handles know. A run starts from
/// [`Carried::start`]; an interactive session keeps it between inputs.
#[derive(Clone, Debug, Default)]
pub struct Carried {
    pub values: BTreeMap<String, ParamValue>,
    pub report: RunReport,
    pub env: Env,
    pub removed_by: HashMap<NodeId, usize>,
    pub described: HashMap<NodeId, String>,
}

impl Carried {
    /// Nothing done yet, with these parameter values, in the root module.
    pub fn start(values: BTreeMap<String, ParamValue>) -> Carried {
        Carried {
            values,
            env: Env::new(0),
            ..Carried::default()
        }
    }
}

impl<'a> Interp<'a> {
    /// An interpreter over `p` that goes on from `carried`.
    pub fn new(
        l: &'a Loaded,
        p: &'a mut Program,
        opts: &'a RunOptions,
        space: &'a ParamSpace,
        engine: &'a mut Engine,
        baseline: &'a mut Baseline,
        carried: Carried,
    ) -> Interp<'a> {
        Interp {
            l,
            p,
            opts,
            space,
            values: carried.values,
            engine,
            baseline,
            report: carried.report,
            env: carried.env,
            removed_by: carried.removed_by,
            described: carried.described,
            patterns: HashMap::new(),
            rules: Vec::new(),
            silenced: 0,
            progress: Progress::unbounded(opts.progress, "recipe steps"),
        }
    }

    /// What a later interpreter can go on from.
    pub fn into_carried(self) -> Carried {
        Carried {
            values: self.values,
            report: self.report,
            env: self.env,
            removed_by: self.removed_by,
            described: self.described,
        }
    }
}

impl Interp<'_> {
    /// Starts a transaction; `snapshot` when the block may commit more than one step.
    pub fn mark(&self, snapshot: bool) -> Mark {
        let r = &self.report;
        Mark {
            snapshot: snapshot.then(|| self.p.clone()),
            steps: r.steps.len(),
            skipped: r.skipped.len(),
            warnings: r.warnings.len(),
            notes: r.notes.len(),
            printed: r.printed.len(),
            expects: r.expects.len(),
            lowered: r.lowered.len(),
        }
    }

    /// Undoes everything since `m`: the program (from the snapshot) and the report.
    pub fn rollback(&mut self, m: Mark, span: Span) -> Flow<()> {
        match m.snapshot {
            Some(s) => *self.p = s,
            None if self.report.steps.len() > m.steps => {
                return Err(runtime(
                    span,
                    "internal error: a block committed several steps without a snapshot to roll back to",
                ))
            }
            None => {}
        }
        let r = &mut self.report;
        for s in r.steps.drain(m.steps..) {
            for id in &s.step.removed {
                self.removed_by.remove(id);
            }
        }
        r.skipped.truncate(m.skipped);
        r.warnings.truncate(m.warnings);
        r.notes.truncate(m.notes);
        r.printed.truncate(m.printed);
        r.expects.truncate(m.expects);
        r.lowered.truncate(m.lowered);
        Ok(())
    }

    /// Records a committed step, issued at `span` by the innermost running rule.
    pub fn record(&mut self, step: Step, span: Span) {
        let index = self.report.steps.len();
        for id in &step.removed {
            self.removed_by.insert(*id, index);
        }
        self.progress.advance();
        self.report.steps.push(RecordedStep {
            step,
            rule: self.rules.last().cloned(),
            span,
        });
    }

    /// Remembers what a handle's node is while it exists.
    pub fn remember(&mut self, v: &Value) {
        let mut note = |id: NodeId, p: &Program| {
            if p.node(id).is_some() {
                self.described.insert(id, describe(p, id));
            }
        };
        match v {
            Value::Node(id) => note(*id, self.p),
            Value::Match(m) => m.found.nodes.iter().for_each(|id| note(*id, self.p)),
            Value::List(items) if items.len() <= 64 => items.iter().for_each(|i| self.remember(i)),
            _ => {}
        }
    }

    /// The node a handle refers to, or a `stale_handle` error naming the step that removed it.
    /// `what` is how the recipe wrote the handle (`m`, `m.mm`).
    pub fn node(&self, id: NodeId, what: &str, span: Span) -> Flow<&Node> {
        match self.p.node(id) {
            Some(n) => Ok(n),
            None => Err(self.stale(id, what, span)),
        }
    }

    /// The error for a handle whose node is gone.
    pub fn stale(&self, id: NodeId, what: &str, span: Span) -> Failure {
        let node = self
            .described
            .get(&id)
            .cloned()
            .unwrap_or_else(|| id.to_string());
        let Some(&k) = self.removed_by.get(&id) else {
            return runtime(
                span,
                format!("handle `{what}` refers to {node}, which is not in the program"),
            );
        };
        let step = &self.report.steps[k];
        let by = match &step.rule {
            Some(rule) => format!(" from rule `{rule}`"),
            None => String::new(),
        };
        let site: Vec<String> = step.step.site.iter().map(|n| n.to_string()).collect();
        let d = Diagnostic::error(
            STALE_HANDLE,
            span,
            format!(
                "handle `{what}` refers to {node}, which step {} ({} at {}{by}) consumed",
                k + 1,
                step.step.transformation,
                site.join(",")
            ),
        )
        .label("used here after the rewrite")
        .also(step.span, format!("step {} was issued here", k + 1))
        .help("select the node again after the rewrite (e.g. with `maps()` or a pattern)");
        Failure::definite(d)
    }

    /// The value of the variable or parameter `path` names in the running module.
    pub fn lookup(&self, path: &ast::Path) -> Option<Value> {
        if let [one] = path.segments.as_slice() {
            if let Some(v) = self.env.get(&one.name) {
                return Some(v.clone());
            }
        }
        let key = self.space.key(self.env.module, path)?;
        self.values.get(&key).cloned().map(Value::from)
    }

    /// `file:line` of a span, for reports.
    pub fn place(&self, span: Span) -> String {
        let (line, _) = self.l.sources.line_col(span);
        format!("{}:{line}", self.l.sources.name(span.file))
    }

    /// The source text of a span (how the recipe wrote an expression).
    pub fn text(&self, span: Span) -> String {
        let t = self.l.sources.text(span.file);
        t.get(span.start..span.end).unwrap_or("").to_string()
    }

    /// The path of rule `name` of module `module` as the root sees it (`cpu::fuse`).
    pub fn rule_path(&self, module: usize, name: &str) -> String {
        format!("{}{name}", self.space.prefix(module))
    }
}
