//! The interpreter: runs a loaded, checked recipe on a program through the checked engine.
//!
//! [`run`] resolves the parameters (`--set`, a lock's decisions, defaults), lets every `choose`
//! decide its parameters by running `main` on copies of the program, then runs the root's
//! `main` on the program for real with the caller's checks. Every rewrite goes through one
//! [`Engine`] kept for the whole run, so its compiled-output cache serves every step.
//!
//! One concept per file: [`env`] (state, handles, transactions), [`eval`] (expressions),
//! [`functions`] (built-ins), [`select`] (selections), [`exec`] (statements), [`apply`] (transformation and rule calls),
//! [`strategy`] (`apply … everywhere | once | at`), [`failure`] (silenceable vs definite), [`describe`] (nodes
//! in IR terms). Parameters, searches and measurements are [`params`], [`choose`], [`measure`].

pub mod apply;
pub mod choose;
pub mod describe;
pub mod domain;
pub mod env;
pub mod eval;
pub mod exec;
pub mod failure;
pub mod functions;
pub mod measure;
pub mod params;
pub mod select;
pub mod strategy;
pub mod value;

pub use eval::eval_const;
pub use value::{MatchValue, ParamValue, Value};

use crate::ir::Program;
use crate::recipe::ast;
use crate::recipe::modules::Loaded;
use crate::recipe::{Diagnostic, Span};
use crate::transform::engine::{Checks, Engine, Layer, Step, TimeSummary, TimedStep};
use env::{Baseline, Carried, Interp};
use failure::{Failure, RUNTIME};
use std::collections::BTreeMap;

/// How to run a recipe.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The checks of the final run (the engine's layers, lowered only where the recipe says
    /// `unsafe`).
    pub checks: Checks,
    /// `--set k=v`; `k` may be a module's parameter (`cpu::tile`).
    pub set: BTreeMap<String, String>,
    /// Decisions replayed from a lock: these parameters are not searched.
    pub fixed: BTreeMap<String, ParamValue>,
    /// Whether `time()` and bench searches run (`false` in `dmove check`).
    pub measure: bool,
    pub seed: u64,
    /// How the run shows its checked steps as they happen (a spinner on `dmove run`'s terminal;
    /// quiet by default, and always in `dmove check` and tests).
    pub progress: crate::progress::Mode,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    pub steps: Vec<RecordedStep>,
    /// The final value of every parameter, a module's as `cpu::tile`.
    pub params: BTreeMap<String, ParamValue>,
    pub decisions: Vec<choose::Decision>,
    /// Silenceable failures a strategy absorbed, and handles a loop skipped.
    pub skipped: Vec<Skip>,
    pub warnings: Vec<Diagnostic>,
    pub notes: Vec<String>,
    pub printed: Vec<String>,
    pub expects: Vec<ExpectRecord>,
    /// Every lowering of a check layer: `numerics: <reason> (recipe.recipe:12)`.
    pub lowered: Vec<String>,
    /// The checked steps of the final run with where their time went (refused ones included).
    pub step_times: Vec<TimedStep>,
    /// The time of the steps `choose` searches checked on copies of the program.
    pub search_time: TimeSummary,
}

/// One step with where it came from.
#[derive(Clone, Debug)]
pub struct RecordedStep {
    pub step: Step,
    /// The innermost rule that issued it (`cpu::fuse`); `None` for `main`.
    pub rule: Option<String>,
    /// The call or `apply` that issued it.
    pub span: Span,
}

/// Something a strategy skipped, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skip {
    pub span: Span,
    pub reason: String,
}

/// One `expect` that ran.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectRecord {
    pub span: Span,
    /// The condition as written.
    pub text: String,
    pub outcome: ExpectOutcome,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExpectOutcome {
    Held,
    /// Not evaluated, and why (time without `--bench`): never reported as passed.
    NotChecked(String),
}

/// A failed run: the error and what happened before it.
#[derive(Clone, Debug)]
pub struct RunError {
    pub diagnostic: Diagnostic,
    pub report: RunReport,
}

impl From<Diagnostic> for RunError {
    fn from(diagnostic: Diagnostic) -> RunError {
        RunError {
            diagnostic,
            report: RunReport::default(),
        }
    }
}

/// Runs the root recipe of `l` on `p` (see the module docs). On failure `p` holds every step
/// committed before it (each refused step itself rolled back) and the error's report says what
/// they were.
pub fn run(l: &Loaded, p: &mut Program, opts: &RunOptions) -> Result<RunReport, RunError> {
    let mut engine = Engine::new(opts.checks.clone());
    let mut baseline = Baseline::new(p.clone());
    run_with(l, p, opts, &mut engine, &mut baseline).map(|(_, carried)| carried.report)
}

/// [`run`] with the caller's engine and baseline, returning the parameter space and what the
/// interpreter accumulated (the variables `main` bound included), so more statements can go on
/// from it: an interactive session replays its recipe this way.
pub fn run_with(
    l: &Loaded,
    p: &mut Program,
    opts: &RunOptions,
    engine: &mut Engine,
    baseline: &mut Baseline,
) -> Result<(params::ParamSpace, Carried), RunError> {
    let main = main_block(l)?;
    unbound_symbols(l, p, &opts.checks)?;
    let canonical = RunOptions {
        set: params::canonical_sets(l, &opts.set),
        ..opts.clone()
    };
    let opts = &canonical;
    let searched_from = engine.timings().len();
    let (space, mut values) =
        params::resolve_params(l, &opts.set, &opts.fixed).map_err(first_of)?;
    let decisions = {
        let mut run_main = |q: &mut Program,
                            vals: &BTreeMap<String, ParamValue>,
                            checks: &Checks|
         -> Result<(), Diagnostic> {
            engine.checks = checks.clone();
            let start = Carried::start(vals.clone());
            let mut it = Interp::new(l, q, opts, &space, engine, baseline, start);
            it.block(main).map_err(Failure::into_diagnostic)
        };
        choose::decide(l, &space, &mut values, p, opts, &mut run_main)?
    };
    engine.checks = opts.checks.clone();
    let final_from = engine.timings().len();
    let start = Carried::start(values.clone());
    let mut it = Interp::new(l, p, opts, &space, engine, baseline, start);
    let outcome = it.statements(&main.stmts);
    let mut carried = it.into_carried();
    carried.report.params = values;
    carried.report.decisions = decisions;
    let log = engine.timings();
    carried.report.search_time = TimeSummary::of(&log[searched_from..final_from]);
    carried.report.step_times = log[final_from..].to_vec();
    match outcome {
        Ok(()) => Ok((space, carried)),
        Err(f) => Err(RunError {
            diagnostic: f.into_diagnostic(),
            report: carried.report,
        }),
    }
}

/// A model with a dimension left unbound cannot be checked (nor measured): said before any
/// step runs, with the flag that binds it, instead of as each step's failed check. A run whose
/// numerics layer is lowered needs no concrete inputs for its steps and goes on.
fn unbound_symbols(l: &Loaded, p: &Program, checks: &Checks) -> Result<(), RunError> {
    if checks.is_lowered(Layer::Numerics) {
        return Ok(());
    }
    match crate::check::UnboundSymbols::of(p) {
        None => Ok(()),
        Some(unbound) => {
            let file = l.modules.first().map(|m| m.file).unwrap_or_default();
            Err(
                Diagnostic::error(RUNTIME, Span::new(file, 0, 0), unbound.what)
                    .label("on this model")
                    .help(unbound.help)
                    .into(),
            )
        }
    }
}

/// The root's `main`, or an error at the top of the file.
fn main_block(l: &Loaded) -> Result<&ast::Block, RunError> {
    let root = l
        .modules
        .first()
        .ok_or_else(|| Diagnostic::error(RUNTIME, Span::default(), "no recipe was loaded"))?;
    (root.ast.items.iter())
        .find_map(|i| match i {
            ast::Item::Main(r) => Some(&r.body),
            _ => None,
        })
        .ok_or_else(|| {
            let top = Span::new(root.file, 0, 0);
            Diagnostic::error(RUNTIME, top, format!("{} has no `main`", root.name))
                .label("nothing to run")
                .help("add `main { … }` with the statements to run")
                .into()
        })
}

/// The first of several parameter problems (the checker reports them all before a run).
fn first_of(mut diags: Vec<Diagnostic>) -> RunError {
    let more = diags.len().saturating_sub(1);
    let first = if diags.is_empty() {
        Diagnostic::error(
            RUNTIME,
            Span::default(),
            "the parameters could not be resolved",
        )
    } else {
        diags.swap_remove(0)
    };
    match more {
        0 => first.into(),
        n => first
            .note(format!("and {n} more problem(s) with parameters"))
            .into(),
    }
}
