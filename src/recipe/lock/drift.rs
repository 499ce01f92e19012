//! How a replay differs from its lock, in words a reviewer can act on: which model, which
//! parameter, and the first step that went another way (which transformation at which node,
//! from which rule and line, with which resulting hash).
//!
//! Only what determines the optimized program is compared: the model's bytes, the parameter
//! values, each step's transformation, site, parameters and resulting hash, and the final
//! hash. A step's rule and line are shown but not compared, so moving a rule or adding a
//! comment does not invalidate a lock; the tool version and the recipe hash are notes, since a
//! new dmove or an edited recipe that still produces the same program has not drifted.

use super::{Lock, LockEntry, LockedStep, FORMAT};
use crate::recipe::run::value::ParamValue;
use std::fmt;

/// One difference between a locked entry and a replay.
#[derive(Clone, Debug, PartialEq)]
pub enum Drift {
    /// The model file's bytes are not the ones locked.
    Model {
        locked: String,
        now: String,
    },
    /// Another dmove wrote the lock (a note: the replay decides).
    Tool {
        locked: String,
        now: String,
    },
    /// The lock hashes programs the way an older format did, so every IR hash differs for the
    /// same programs (a note: the replay decides, `--update` re-records).
    HashScheme {
        locked: u32,
        now: u32,
    },
    /// The recipe or one of its modules changed (a note: the replay decides).
    Recipe {
        locked: String,
        now: String,
    },
    /// A parameter's final value differs (`None`: the parameter does not exist on that side).
    Param {
        name: String,
        locked: Option<ParamValue>,
        now: Option<ParamValue>,
    },
    /// The first step that differs, 1-based (`None`: that side has no step there).
    Step {
        number: usize,
        locked: Option<Box<LockedStep>>,
        now: Option<Box<LockedStep>>,
    },
    StepCount {
        locked: usize,
        now: usize,
    },
    FinalHash {
        locked: String,
        now: String,
    },
}

impl Drift {
    /// Whether this difference means the lock no longer reproduces (notes do not).
    pub fn fails(&self) -> bool {
        !matches!(
            self,
            Drift::Tool { .. } | Drift::Recipe { .. } | Drift::HashScheme { .. }
        )
    }
}

/// The differences between the locked entry and the replayed one, in reading order: model,
/// parameters, the first differing step, the step count, the final hash.
pub fn compare(locked: &LockEntry, now: &LockEntry) -> Vec<Drift> {
    let mut out = Vec::new();
    if locked.model_sha256 != now.model_sha256 {
        out.push(Drift::Model {
            locked: locked.model_sha256.clone(),
            now: now.model_sha256.clone(),
        });
    }
    let names: std::collections::BTreeSet<&String> =
        locked.params.keys().chain(now.params.keys()).collect();
    for name in names {
        let (l, n) = (locked.params.get(name), now.params.get(name));
        if l != n {
            out.push(Drift::Param {
                name: name.clone(),
                locked: l.cloned(),
                now: n.cloned(),
            });
        }
    }
    let steps = locked.steps.len().max(now.steps.len());
    if let Some(i) = (0..steps).find(|&i| !same_step(locked.steps.get(i), now.steps.get(i))) {
        out.push(Drift::Step {
            number: i + 1,
            locked: locked.steps.get(i).cloned().map(Box::new),
            now: now.steps.get(i).cloned().map(Box::new),
        });
    }
    if locked.steps.len() != now.steps.len() {
        out.push(Drift::StepCount {
            locked: locked.steps.len(),
            now: now.steps.len(),
        });
    }
    if locked.final_hash != now.final_hash {
        out.push(Drift::FinalHash {
            locked: locked.final_hash.clone(),
            now: now.final_hash.clone(),
        });
    }
    out
}

/// The notes about the lock as a whole: another tool version, another recipe hash.
pub fn compare_header(locked: &Lock, tool: &str, recipe_hash: &str) -> Vec<Drift> {
    let mut out = Vec::new();
    if locked.format != FORMAT {
        out.push(Drift::HashScheme {
            locked: locked.format,
            now: FORMAT,
        });
    }
    if locked.tool != tool {
        out.push(Drift::Tool {
            locked: locked.tool.clone(),
            now: tool.to_string(),
        });
    }
    if locked.recipe_hash != recipe_hash {
        out.push(Drift::Recipe {
            locked: locked.recipe_hash.clone(),
            now: recipe_hash.to_string(),
        });
    }
    out
}

fn same_step(a: Option<&LockedStep>, b: Option<&LockedStep>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.transformation == b.transformation
                && a.site == b.site
                && a.params == b.params
                && a.hash_after == b.hash_after
        }
        (None, None) => true,
        _ => false,
    }
}

/// The first characters of a hash: enough to tell two apart in a diff.
fn short(hash: &str) -> String {
    const SHOWN: usize = 8;
    match hash.get(..SHOWN) {
        Some(s) if hash.len() > SHOWN => format!("{s}…"),
        _ => hash.to_string(),
    }
}

/// `MapTiling at n19 (tiles=16,0)`.
fn call(s: &LockedStep) -> String {
    let site: Vec<String> = s.site.iter().map(|n| n.to_string()).collect();
    let params: Vec<String> = (s.params.iter()).map(|(k, v)| format!("{k}={v}")).collect();
    let mut out = format!("{} at {}", s.transformation, site.join(","));
    if !params.is_empty() {
        out.push_str(&format!(" ({})", params.join(", ")));
    }
    out
}

/// `from rule `schedule` (line 14)`, `from main (line 3)`.
fn origin(s: &LockedStep) -> String {
    match &s.rule {
        Some(r) => format!("from rule `{r}` (line {})", s.line),
        None => format!("from main (line {})", s.line),
    }
}

fn value(v: &Option<ParamValue>) -> String {
    v.as_ref().map_or("(absent)".into(), ParamValue::to_string)
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::Model { locked, now } => {
                write!(f, "model changed: locked sha256 {locked}, now {now}")
            }
            Drift::Tool { locked, now } => write!(f, "note: locked by {locked}, now {now}"),
            Drift::HashScheme { locked, now } => write!(
                f,
                "note: lock format {locked} hashed programs another way than format {now} \
                 (which hashes each constant and each scope by its digest), so every IR hash \
                 below differs although the programs may be the same: `dmove check --update` \
                 re-records them once"
            ),
            Drift::Recipe { locked, now } => write!(
                f,
                "note: the recipe changed (hash {} → {}); the replay decides",
                short(locked),
                short(now)
            ),
            Drift::Param { name, locked, now } => write!(
                f,
                "param {name}: locked {} → now {}",
                value(locked),
                value(now)
            ),
            Drift::Step {
                number,
                locked,
                now,
            } => {
                write!(f, "step {number}: ")?;
                match locked {
                    Some(l) => write!(
                        f,
                        "locked {} {} → {}",
                        call(l),
                        origin(l),
                        short(&l.hash_after)
                    )?,
                    None => write!(f, "locked no step (the locked run ended here)")?,
                }
                match (locked, now) {
                    (_, None) => write!(f, ", now no step (the run ended here)"),
                    (Some(l), Some(n)) if l.rule == n.rule => {
                        write!(f, ", now {} → {}", call(n), short(&n.hash_after))
                    }
                    (_, Some(n)) => write!(
                        f,
                        ", now {} {} → {}",
                        call(n),
                        origin(n),
                        short(&n.hash_after)
                    ),
                }
            }
            Drift::StepCount { locked, now } => {
                write!(f, "step count: locked {locked}, now {now}")
            }
            Drift::FinalHash { locked, now } => write!(
                f,
                "final IR hash: locked {}, now {}",
                short(locked),
                short(now)
            ),
        }
    }
}
