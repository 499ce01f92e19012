//! Traces: the applied steps of a session, saved as JSON and replayed to the same program.
//!
//! A trace records the tool version, the hash of the model it started from and every step with
//! the hashes before and after. Replaying applies the steps again on the same model and checks
//! each hash, so a divergence is reported at the first step where it happens — not as a
//! mysteriously different result at the end.

use super::{program_hash, Checks, Engine, Refusal, Step};
use crate::ir::Program;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The steps applied to one model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The dmove version that recorded the trace.
    pub tool_version: String,
    /// [`program_hash`] of the model before the first step.
    pub model_hash: String,
    pub steps: Vec<Step>,
}

/// Why a trace could not be read or written.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum TraceError {
    #[error("the trace is not valid JSON for a dmove trace: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot access trace file {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a replay stopped; the program holds the state after the last good step.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum ReplayError {
    #[error("the trace was recorded on model {expected}, but this model hashes to {found}")]
    #[diagnostic(help("replay the trace on the model it was recorded on"))]
    ModelMismatch { expected: String, found: String },
    #[error("step {step} ({transformation}): no such transformation in this version of dmove")]
    UnknownTransformation { step: usize, transformation: String },
    #[error("step {step} ({transformation}) was refused on replay: {refusal}")]
    Refused {
        step: usize,
        transformation: String,
        refusal: Box<Refusal>,
    },
    #[error(
        "step {step} ({transformation}) was recorded with {} and the loaded one is {}",
        script_words(recorded),
        script_words(loaded)
    )]
    #[diagnostic(help("load the script the trace was recorded with (its hash is in the trace), or record the trace again"))]
    ScriptChanged {
        step: usize,
        transformation: String,
        recorded: Option<String>,
        loaded: Option<String>,
    },
    #[error("step {step} ({transformation}) diverged: the program hashes to {found} after it, the trace recorded {expected}")]
    Diverged {
        step: usize,
        transformation: String,
        expected: String,
        found: String,
    },
}

/// `the script sha256:0123abcd…` or `the built-in`.
fn script_words(hash: &Option<String>) -> String {
    match hash {
        Some(h) => format!("the script {}…", &h[..h.len().min(12)]),
        None => "the built-in".to_string(),
    }
}

impl Trace {
    /// An empty trace for `model`.
    pub fn new(model: &Program) -> Trace {
        Trace {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            model_hash: program_hash(model),
            steps: Vec::new(),
        }
    }

    pub fn to_json(&self) -> Result<String, TraceError> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    pub fn from_json(text: &str) -> Result<Trace, TraceError> {
        Ok(serde_json::from_str(text)?)
    }

    /// Writes the trace as JSON (atomically).
    pub fn save(&self, path: &Path) -> Result<(), TraceError> {
        crate::fsutil::write_atomic(path, self.to_json()?.as_bytes()).map_err(|source| {
            TraceError::Io {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Trace::from_json(&text)
    }
}

/// Applies the trace's steps to `p` (the model it was recorded on), checking the hash after
/// each step; returns the replayed steps. Each step is checked as it was when recorded: the
/// default checks, with the layers its record says were lowered lowered again.
pub fn replay(p: &mut Program, trace: &Trace) -> Result<Vec<Step>, ReplayError> {
    replay_with(p, trace, &Checks::default(), &mut |_, _| {})
}

/// [`replay`] under `base` checks (each step's recorded lowerings added to `base`'s), calling
/// `observe` with the program after each step. A caller that already ran the steps with every
/// check (e.g. `dmove view` after running a recipe) lowers what it need not repeat; the hash of
/// every step is still compared, so the programs observed are exactly the recorded ones.
pub fn replay_with(
    p: &mut Program,
    trace: &Trace,
    base: &Checks,
    observe: &mut dyn FnMut(&Program, &Step),
) -> Result<Vec<Step>, ReplayError> {
    let found = program_hash(p);
    if found != trace.model_hash {
        return Err(ReplayError::ModelMismatch {
            expected: trace.model_hash.clone(),
            found,
        });
    }
    let mut out = Vec::new();
    let mut engine = Engine::default();
    for (i, recorded) in trace.steps.iter().enumerate() {
        let step = i + 1;
        let transformation = recorded.transformation.clone();
        let t = crate::transform::lookup(&recorded.transformation).ok_or_else(|| {
            ReplayError::UnknownTransformation {
                step,
                transformation: transformation.clone(),
            }
        })?;
        if t.script_hash() != recorded.script.as_deref() {
            return Err(ReplayError::ScriptChanged {
                step,
                transformation,
                recorded: recorded.script.clone(),
                loaded: t.script_hash().map(str::to_string),
            });
        }
        let mut lowered = base.lowered.clone();
        lowered.extend(recorded.lowered());
        engine.checks = Checks {
            lowered,
            ..base.clone()
        };
        let applied = engine
            .apply(p, t, &recorded.site, &recorded.params)
            .map_err(|r| ReplayError::Refused {
                step,
                transformation: transformation.clone(),
                refusal: Box::new(r),
            })?;
        if applied.hash_after != recorded.hash_after {
            return Err(ReplayError::Diverged {
                step,
                transformation,
                expected: recorded.hash_after.clone(),
                found: applied.hash_after,
            });
        }
        observe(p, &applied);
        out.push(applied);
    }
    Ok(out)
}
