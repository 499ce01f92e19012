//! Transactional application of transformations, and the trace of what was applied.
//!
//! `apply` = snapshot → preconditions (legality lives in each transformation's `check`) →
//! rewrite → invariants → numerics against the snapshot. On any failure the program is restored
//! from the snapshot, so a refused step leaves it exactly as it was (byte-identical text form).
//!
//! A caller may lower the legality or numerics layer explicitly ([`Checks::lower`]); the step's
//! `checks` then says so in words. Invariants are never lowered: an invalid program is always
//! rolled back. Numerics run in the reference interpreter while the work fits its budget, and
//! through compiled C beyond that (see [`numerics`]).

mod diff;
mod numerics;
mod repeat;
mod trace;

pub use diff::program_hash;
pub use numerics::work;
pub use repeat::{Budget, Repeated, StopReason};
pub use trace::{replay, ReplayError, Trace, TraceError};

use super::{NotApplicable, Params, Transformation};
use crate::check::NumericsError;
use crate::ir::validate::{validate, InvalidIr};
use crate::ir::{NodeId, Program};
use crate::pattern::Change;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A check layer the caller may lower (never the invariants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Layer {
    /// The transformation's preconditions (races, coverage, …): a failure is waived.
    Legality,
    /// The comparison of outputs on random inputs: not run.
    Numerics,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Legality => "legality",
            Layer::Numerics => "numerics",
        }
    }

    /// How lowering is recorded in a step's `checks`.
    pub fn lowered_note(self) -> String {
        format!("{} lowered by the user", self.name())
    }
}

/// Which checks run after each rewrite.
#[derive(Clone, Debug)]
pub struct Checks {
    /// Layers the caller lowered explicitly; each lowering is recorded in the step.
    pub lowered: BTreeSet<Layer>,
    /// Run numerics in the interpreter only up to this many tasklet executions per run; beyond
    /// it, through compiled C.
    pub numerics_budget: u64,
    /// Whether numerics beyond the interpreter budget run as compiled C (one compile per step).
    /// When off, such steps record that numerics were skipped and why; long sequences that
    /// check their end result anyway (the demo) turn it off.
    pub compiled: bool,
    pub seed: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            lowered: BTreeSet::new(),
            numerics_budget: 2_000_000,
            compiled: true,
            seed: 0x5eed,
        }
    }
}

impl Checks {
    /// These checks with `layer` lowered.
    pub fn lower(mut self, layer: Layer) -> Self {
        self.lowered.insert(layer);
        self
    }

    pub fn is_lowered(&self, layer: Layer) -> bool {
        self.lowered.contains(&layer)
    }
}

/// One applied step, enough to replay it and to verify the replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub transformation: String,
    pub site: Vec<NodeId>,
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
    /// Checks that were run, skipped or lowered, in words.
    pub checks: Vec<String>,
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

    /// The layers this step's record says were lowered (so a replay lowers the same ones).
    pub fn lowered(&self) -> BTreeSet<Layer> {
        [Layer::Legality, Layer::Numerics]
            .into_iter()
            .filter(|l| {
                let note = l.lowered_note();
                self.checks.iter().any(|c| c.starts_with(&note))
            })
            .collect()
    }
}

/// Why a step was refused; the program is unchanged in every case.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum Refusal {
    #[error(transparent)]
    NotApplicable(#[from] NotApplicable),
    #[error("{transformation} at {node} produced an invalid program; rolled back: {error}")]
    Invalid {
        transformation: String,
        node: NodeId,
        error: InvalidIr,
    },
    #[error("{transformation} at {node} changed the results; rolled back: {error}")]
    Numerics {
        transformation: String,
        node: NodeId,
        error: Box<NumericsError>,
    },
    #[error("{transformation} at {node}: the rewritten program could not be checked through C; rolled back: {message}")]
    #[diagnostic(help(
        "the program was too large for the interpreter, so numerics ran as compiled C"
    ))]
    CompiledCheck {
        transformation: String,
        node: NodeId,
        message: String,
    },
}

/// Applies transformations transactionally; keeps the compiled-C outputs of recent originals so
/// repeated steps on a large program do not recompile and rerun it.
#[derive(Debug, Default)]
pub struct Engine {
    pub checks: Checks,
    cache: numerics::OutputCache,
}

impl Engine {
    pub fn new(checks: Checks) -> Engine {
        Engine {
            checks,
            cache: numerics::OutputCache::default(),
        }
    }

    /// Hashes of the programs whose compiled-C outputs are kept, oldest first.
    pub fn cached(&self) -> Vec<String> {
        self.cache.hashes()
    }

    /// Applies `t` at `site`, transactionally.
    pub fn apply(
        &mut self,
        p: &mut Program,
        t: &dyn Transformation,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Step, Refusal> {
        let anchor = site.first().copied().unwrap_or(NodeId(0));
        let legality = match t.check(p, site, params) {
            Ok(()) => Layer::Legality.name().to_string(),
            Err(e) if self.checks.is_lowered(Layer::Legality) => {
                format!("{}; waived: {}", Layer::Legality.lowered_note(), e.reason)
            }
            Err(e) => return Err(e.into()),
        };
        let snapshot = p.clone();
        let hash_before = program_hash(p);
        let before = diff::fingerprints(p);
        let refused = |p: &mut Program, snapshot: Program, r: Refusal| {
            *p = snapshot;
            Err(r)
        };
        let touched = match t.apply(p, site, params) {
            Ok(touched) => touched,
            Err(e) => return refused(p, snapshot, e.into()),
        };
        if let Err(error) = validate(p) {
            let r = Refusal::Invalid {
                transformation: t.name().to_string(),
                node: anchor,
                error,
            };
            return refused(p, snapshot, r);
        }
        let mut done = vec!["invariants".to_string(), legality];
        let hash_after = program_hash(p);
        if self.checks.is_lowered(Layer::Numerics) {
            done.push(Layer::Numerics.lowered_note());
        } else {
            let run = numerics::Run {
                original: &snapshot,
                original_hash: &hash_before,
                rewritten: p,
                rewritten_hash: &hash_after,
                checks: &self.checks,
            };
            match run.compare(&mut self.cache) {
                Ok(note) => done.push(note),
                Err(failure) => {
                    let r = failure.refusal(t.name(), anchor);
                    return refused(p, snapshot, r);
                }
            }
        }
        let (added, removed, modified) = diff::compare(&before, &diff::fingerprints(p));
        Ok(Step {
            transformation: t.name().to_string(),
            site: site.to_vec(),
            params: params.clone(),
            touched,
            added,
            removed,
            modified,
            hash_before,
            hash_after,
            checks: done,
        })
    }
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
