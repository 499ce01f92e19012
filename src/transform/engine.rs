//! Transactional application of transformations, and the trace of what was applied.
//!
//! `apply` = site and parameters validated against the schema → plan (every precondition;
//! legality conditions through [`Legality`]) → snapshot → rewrite → invariants → numerics
//! against the snapshot. On any failure the program is restored from the snapshot, so a refused
//! step leaves it exactly as it was (byte-identical text form).
//!
//! A caller may lower the legality or numerics layer explicitly, with a reason
//! ([`Checks::lower`]); each step records what every layer did as data ([`CheckRecord`]).
//! The structural layer is never lowered: an invalid program is always rolled back. Numerics
//! run in the reference interpreter while the work fits its budget and through compiled C
//! beyond it; a comparison that cannot run refuses the step.

mod diff;
mod numerics;
mod races;
mod repeat;
mod timing;
mod trace;
mod validation;

pub use diff::program_hash;
pub use numerics::work;
pub use repeat::{Budget, Repeated, StopReason};
pub use timing::{StepTime, TimeSummary, TimedStep};
pub use trace::{replay, replay_with, ReplayError, Trace, TraceError};

use super::{
    check_site, Args, Legality, NotApplicable, ParamError, Params, SiteError, Transformation,
};
use crate::check::NumericsError;
use crate::ir::validate::InvalidIr;
use crate::ir::{NodeId, Program};
use crate::pattern::Change;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A check layer. Structural invariants always run; the caller may lower the other two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The IR invariants (`ir::validate`): never lowered, an invalid program is rolled back.
    Structural,
    /// The transformation's legality conditions (races, coverage, strides): a failure is waived.
    Legality,
    /// The comparison of outputs on random inputs: not run.
    Numerics,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Structural => "structural",
            Layer::Legality => "legality",
            Layer::Numerics => "numerics",
        }
    }
}

/// What one check layer did for one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The layer ran and passed; `how` says how (e.g. "compiled C").
    Passed {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        how: String,
    },
    /// The user lowered the layer, for `reason`; `waived` lists the conditions that failed and
    /// were waived (legality only).
    Lowered {
        reason: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        waived: Vec<String>,
    },
}

/// One layer's record on a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub layer: Layer,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl std::fmt::Display for CheckRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let layer = self.layer.name();
        match &self.outcome {
            Outcome::Passed { how } if how.is_empty() => write!(f, "{layer}"),
            Outcome::Passed { how } => write!(f, "{layer} ({how})"),
            Outcome::Lowered { reason, waived } if waived.is_empty() => {
                write!(f, "{layer} lowered by the user: {reason}")
            }
            Outcome::Lowered { reason, waived } => write!(
                f,
                "{layer} lowered by the user: {reason}; waived: {}",
                waived.join("; ")
            ),
        }
    }
}

/// Which checks run after each rewrite.
#[derive(Clone, Debug)]
pub struct Checks {
    /// Layers the caller lowered explicitly, each with the reason given; recorded in the step.
    pub lowered: BTreeMap<Layer, String>,
    /// Run numerics in the interpreter only up to this many tasklet executions per run; beyond
    /// it, through compiled C.
    pub numerics_budget: u64,
    pub seed: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            lowered: BTreeMap::new(),
            numerics_budget: 2_000_000,
            seed: 0x5eed,
        }
    }
}

impl Checks {
    /// These checks with `layer` lowered, for `reason` (the structural layer is never lowered).
    pub fn lower(mut self, layer: Layer, reason: impl Into<String>) -> Self {
        if layer != Layer::Structural {
            self.lowered.insert(layer, reason.into());
        }
        self
    }

    pub fn is_lowered(&self, layer: Layer) -> bool {
        self.lowered.contains_key(&layer)
    }

    fn lowered_record(&self, layer: Layer, waived: Vec<String>) -> Option<CheckRecord> {
        self.lowered.get(&layer).map(|reason| CheckRecord {
            layer,
            outcome: Outcome::Lowered {
                reason: reason.clone(),
                waived,
            },
        })
    }
}

/// One applied step, enough to replay it and to verify the replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub transformation: String,
    /// The hash of the script that declares the transformation (scripted ones only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    pub site: Vec<NodeId>,
    /// Every parameter's value, defaults included.
    pub params: Params,
    /// Ids the transformation reports it rewrote.
    pub touched: Vec<NodeId>,
    /// Ids that appeared, disappeared, or whose content, edges or scope changed (found by
    /// comparing the program before and after, so matchers need not trust `touched`).
    #[serde(default)]
    pub added: Vec<NodeId>,
    #[serde(default)]
    pub removed: Vec<NodeId>,
    #[serde(default)]
    pub modified: Vec<NodeId>,
    /// Hashes of the exact text form before and after.
    pub hash_before: String,
    pub hash_after: String,
    /// What each check layer did.
    pub checks: Vec<CheckRecord>,
}

impl Step {
    /// What the step changed, for [`crate::pattern::Matcher::update`].
    pub fn change(&self) -> Change {
        Change {
            touched: self.touched.clone(),
            added: self.added.clone(),
            removed: self.removed.clone(),
            modified: self.modified.clone(),
        }
    }

    /// The layers this step lowered, with the reasons given (so a replay lowers the same ones).
    pub fn lowered(&self) -> BTreeMap<Layer, String> {
        (self.checks.iter())
            .filter_map(|c| match &c.outcome {
                Outcome::Lowered { reason, .. } => Some((c.layer, reason.clone())),
                Outcome::Passed { .. } => None,
            })
            .collect()
    }

    /// How `layer` passed on this step (`None` when it was lowered).
    pub fn passed(&self, layer: Layer) -> Option<&str> {
        self.checks.iter().find_map(|c| match &c.outcome {
            Outcome::Passed { how } if c.layer == layer => Some(how.as_str()),
            _ => None,
        })
    }

    /// One line for people: `MapTiling at n19 (tiles=16,0,0)`.
    pub fn summary(&self) -> String {
        step_line(&self.transformation, &self.site, &self.params)
    }
}

/// `MapTiling at n19 (tiles=16,0,0)`.
fn step_line(transformation: &str, site: &[NodeId], params: &Params) -> String {
    let site: Vec<String> = site.iter().map(|n| n.to_string()).collect();
    let params: Vec<String> = (params.iter()).map(|(k, v)| format!("{k}={v}")).collect();
    let params = if params.is_empty() {
        String::new()
    } else {
        format!(" ({})", params.join(", "))
    };
    format!("{transformation} at {}{params}", site.join(","))
}

/// Why a step was refused; the program is unchanged in every case.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum Refusal {
    /// The site does not fit the transformation's roles (nothing was tried).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Site(#[from] SiteError),
    /// The parameters do not fit the transformation's declarations (nothing was tried).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Params(#[from] ParamError),
    /// A precondition failed: the transformation does not apply here (silenceable).
    #[error(transparent)]
    NotApplicable(#[from] NotApplicable),
    #[error("{transformation} at {node} produced an invalid program; rolled back: {error}")]
    Invalid {
        transformation: String,
        node: NodeId,
        error: InvalidIr,
    },
    #[error("{transformation} produced a data race in parallel map {node}; rolled back: {reason}")]
    Race {
        transformation: String,
        node: NodeId,
        reason: String,
    },
    #[error("{transformation} at {node} changed the results; rolled back: {error}")]
    Numerics {
        transformation: String,
        node: NodeId,
        error: Box<NumericsError>,
    },
    #[error(
        "{transformation} at {node}: the numerics check could not run; rolled back: {message}"
    )]
    #[diagnostic(help(
        "a check that cannot run refuses the step; lower the numerics layer explicitly to accept it unchecked"
    ))]
    Unchecked {
        transformation: String,
        node: NodeId,
        message: String,
    },
}

impl Refusal {
    /// Whether a scripted transformation's own code failed (an error or a sandbox limit): a
    /// fault in the script, never an ordinary "does not apply".
    pub fn is_script_fault(&self) -> bool {
        matches!(self, Refusal::NotApplicable(na) if na.fault.is_some())
    }

    /// The check layer that refused (`None` when the step was never tried: bad site, bad
    /// parameters, or a failed precondition).
    pub fn layer(&self) -> Option<Layer> {
        match self {
            Refusal::Site(_) | Refusal::Params(_) | Refusal::NotApplicable(_) => None,
            Refusal::Invalid { .. } => Some(Layer::Structural),
            Refusal::Race { .. } => Some(Layer::Legality),
            Refusal::Numerics { .. } | Refusal::Unchecked { .. } => Some(Layer::Numerics),
        }
    }
}

/// Applies transformations transactionally; keeps the compiled-C outputs of recent originals so
/// repeated steps on a large program do not recompile and rerun it, and the time of every step
/// it checked.
#[derive(Debug, Default)]
pub struct Engine {
    pub checks: Checks,
    cache: numerics::OutputCache,
    log: Vec<TimedStep>,
    /// The hash of the last program this engine found valid: a step from it validates only
    /// what it changed.
    valid: Option<String>,
    /// A program this engine hashed (a copy that shares its parts) with the hashing state
    /// after its declarations: a later program with the same ones reuses it.
    header: Option<(Program, diff::Header)>,
    /// The declaration lines of the headers hashed so far (a step prints only those it changed).
    lines: crate::ir::text::DeclLines,
}

impl Engine {
    pub fn new(checks: Checks) -> Engine {
        Engine {
            checks,
            ..Engine::default()
        }
    }

    /// Every step this engine committed or refused past its preconditions, in order, with
    /// where its time went.
    pub fn timings(&self) -> &[TimedStep] {
        &self.log
    }

    /// Hashes of the programs whose compiled-C outputs are kept, oldest first.
    pub fn cached(&self) -> Vec<String> {
        self.cache.hashes()
    }

    /// Validates `site` and `params` against `t`'s schema and plans the rewrite, changing
    /// nothing (legality conditions waived and listed when that layer is lowered).
    pub fn plan(
        &self,
        p: &Program,
        t: &dyn Transformation,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Planned, Refusal> {
        plan_at(p, t, site, params, self.checks.is_lowered(Layer::Legality))
    }

    /// Applies `t` at `site`, transactionally.
    pub fn apply(
        &mut self,
        p: &mut Program,
        t: &dyn Transformation,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Step, Refusal> {
        let planned = self.plan(p, t, site, params)?;
        self.commit(p, t, planned)
    }

    /// Runs a planned rewrite transactionally: rewrite, invariants, numerics, or restore.
    pub fn commit(
        &mut self,
        p: &mut Program,
        t: &dyn Transformation,
        planned: Planned,
    ) -> Result<Step, Refusal> {
        let Planned {
            site,
            anchor,
            plan,
            args,
            legality,
            planning,
        } = planned;
        let mut time = StepTime {
            plan: planning,
            ..StepTime::default()
        };
        let summary = step_line(t.name(), &site, &args.to_params());
        let started = Instant::now();
        let snapshot = p.clone();
        let checked = plan.run(p).map_err(Refusal::from).and_then(|touched| {
            time.rewrite = started.elapsed();
            let hashed = Instant::now();
            let header = match &self.header {
                Some((last, header)) if diff::same_header(last, &snapshot) => header.clone(),
                _ => diff::Header::of_with(&snapshot, &mut self.lines),
            };
            let hash_before = header.hash(&snapshot);
            let changes = diff::changes(&snapshot, p);
            time.hash = hashed.elapsed();
            let after = Rewrite {
                t,
                anchor,
                original: &snapshot,
                original_hash: &hash_before,
                original_header: &header,
                changes: &changes,
                waived: legality.waived(),
            };
            let checked = self.check_rewrite(&after, p, &mut time)?;
            Ok((touched, hash_before, changes, checked))
        });
        let (touched, hash_before, changes, (done, hash_after, header)) = match checked {
            Ok(checked) => checked,
            Err(r) => {
                *p = snapshot;
                self.log.push(TimedStep {
                    step: summary,
                    refused: true,
                    time,
                });
                return Err(r);
            }
        };
        self.log.push(TimedStep {
            step: summary,
            refused: false,
            time,
        });
        self.valid = Some(hash_after.clone());
        self.header = Some((p.clone(), header));
        let diff::Changes {
            added,
            removed,
            modified,
            ..
        } = changes;
        Ok(Step {
            transformation: t.name().to_string(),
            script: t.script_hash().map(str::to_string),
            site,
            params: args.to_params(),
            touched,
            added,
            removed,
            modified,
            hash_before,
            hash_after,
            checks: done,
        })
    }

    /// The layers after a rewrite of `after.original` into `p`: structural invariants, the
    /// engine's race check (with the waived preconditions when legality is lowered), numerics.
    /// Returns the records, the rewritten program's hash and its hashing state after the
    /// declarations (kept for the next step); `time` gets each layer's time.
    fn check_rewrite(
        &mut self,
        after: &Rewrite,
        p: &Program,
        time: &mut StepTime,
    ) -> Result<(Vec<CheckRecord>, String, diff::Header), Refusal> {
        let name = after.t.name().to_string();
        let started = Instant::now();
        let valid = self.validate(after, p);
        time.validate = started.elapsed();
        if let Err(error) = valid {
            return Err(Refusal::Invalid {
                transformation: name,
                node: after.anchor,
                error,
            });
        }
        let passed = |layer: Layer, how: &str| CheckRecord {
            layer,
            outcome: Outcome::Passed {
                how: how.to_string(),
            },
        };
        let mut waived = after.waived.to_vec();
        let started = Instant::now();
        let race = races::new_race(after.original, p, Some(after.changes));
        if cfg!(debug_assertions) {
            // Debug builds (every test) prove the incremental check equal to the full one.
            let full = races::new_race(after.original, p, None);
            assert_eq!(
                race, full,
                "the race check on the changed maps differs from the full check"
            );
        }
        time.races = started.elapsed();
        if let Some((node, reason)) = race {
            if !self.checks.is_lowered(Layer::Legality) {
                return Err(Refusal::Race {
                    transformation: name,
                    node,
                    reason,
                });
            }
            waived.push(format!("parallel map {node}: {reason}"));
        }
        let legality = (self.checks)
            .lowered_record(Layer::Legality, waived)
            .unwrap_or_else(|| passed(Layer::Legality, "preconditions; parallel maps race-free"));
        let mut done = vec![passed(Layer::Structural, ""), legality];
        let hashed = Instant::now();
        let header = match diff::same_header(after.original, p) {
            true => after.original_header.clone(),
            false => diff::Header::of_with(p, &mut self.lines),
        };
        let hash_after = header.hash(p);
        debug_assert_eq!(hash_after, program_hash(p), "the kept header hashes alike");
        time.hash += hashed.elapsed();
        match self.checks.lowered_record(Layer::Numerics, Vec::new()) {
            Some(record) => done.push(record),
            None => {
                let run = numerics::Run {
                    original: after.original,
                    original_hash: after.original_hash,
                    changes: after.changes,
                    rewritten: p,
                    rewritten_hash: &hash_after,
                    checks: &self.checks,
                };
                let started = Instant::now();
                let (builds, build_time) = crate::codegen::builds_on_this_thread();
                let compared = run.compare(&mut self.cache);
                let (builds_after, build_time_after) = crate::codegen::builds_on_this_thread();
                time.numerics = started.elapsed();
                time.c_builds = builds_after - builds;
                time.c_build_time = build_time_after - build_time;
                let how = compared.map_err(|failure| failure.refusal(&name, after.anchor))?;
                done.push(passed(Layer::Numerics, &how));
            }
        }
        Ok((done, hash_after, header))
    }
}

/// A rewrite just made, as the checks after it need it.
struct Rewrite<'a> {
    t: &'a dyn Transformation,
    anchor: NodeId,
    original: &'a Program,
    original_hash: &'a str,
    /// The hashing state after the original's declarations, reused when the step kept them.
    original_header: &'a diff::Header,
    changes: &'a diff::Changes,
    waived: &'a [String],
}

/// A rewrite that passed its preconditions, ready for [`Engine::commit`].
pub struct Planned {
    pub site: Vec<NodeId>,
    /// The site's first node, named by refusals.
    pub anchor: NodeId,
    plan: super::Plan,
    args: Args,
    legality: Legality,
    /// How long planning took, for the step's [`StepTime`].
    planning: Duration,
}

impl Planned {
    /// Runs the rewrite as one part of an enclosing step (a scripted transformation composed
    /// of others): no checks of its own, because the enclosing step's transaction checks the
    /// whole rewrite and restores the program if any part of it fails.
    pub fn run_within(self, p: &mut Program) -> Result<Vec<NodeId>, NotApplicable> {
        self.plan.run(p)
    }
}

/// Validates `site` and `params` against `t`'s schema and plans the rewrite, changing nothing.
pub fn plan_at(
    p: &Program,
    t: &dyn Transformation,
    site: &[NodeId],
    params: &Params,
    legality_lowered: bool,
) -> Result<Planned, Refusal> {
    let started = Instant::now();
    let anchor = check_site(t.schema(), p, site)?;
    let args = Args::validate(t.schema(), p, site, anchor, params)?;
    let mut legality = Legality::new(legality_lowered);
    let plan = t.plan(super::Call {
        p,
        site,
        args: &args,
        legality: &mut legality,
    })?;
    Ok(Planned {
        site: site.to_vec(),
        anchor,
        plan,
        args,
        legality,
        planning: started.elapsed(),
    })
}

/// Applies `t` at `site` with a one-off [`Engine`].
pub fn apply(
    p: &mut Program,
    t: &dyn Transformation,
    site: &[NodeId],
    params: &Params,
    checks: &Checks,
) -> Result<Step, Refusal> {
    Engine::new(checks.clone()).apply(p, t, site, params)
}

/// Applies `t` repeatedly within `budget` with a one-off [`Engine`] (see
/// [`Engine::apply_repeatedly`]).
pub fn apply_repeatedly(
    p: &mut Program,
    t: &dyn Transformation,
    params: &Params,
    checks: &Checks,
    budget: &Budget,
) -> Repeated {
    Engine::new(checks.clone()).apply_repeatedly(p, t, params, budget)
}
