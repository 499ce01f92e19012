//! The [`Transformation`] behind a script's declaration: the engine cannot tell it from a
//! built-in.
//!
//! The engine validates the site and parameters against the declared schema before the
//! script sees them, runs the script's `check` with the program lent read-only, and runs its
//! `rewrite` inside the same transaction as every built-in — invariants, the race check and
//! numerics after it, the program restored on any failure. A script that *fails* (an error, a
//! sandbox limit) is not a transformation that "does not apply": the refusal carries a
//! [`ScriptFault`], which the recipe interpreter treats as definite and renders at the line
//! of the script.

use super::convert::{args_map, site_array, sites_from};
use super::declare::Declaration;
use super::views::ProgramView;
use super::world::{reading, rewriting};
use super::{edits::Edit, ErrorKind, Script, ScriptError};
use crate::ir::{NodeId, Program};
use crate::transform::{
    role_candidates, Call, NotApplicable, Plan, Schema, ScriptFault, Transformation,
};
use rhai::Dynamic;
use std::sync::{Arc, Weak};

/// A scripted transformation (leaked once per distinct script text, like a built-in's
/// constant).
pub struct Scripted {
    decl: Declaration,
    script: Weak<Script>,
    script_hash: String,
}

impl Scripted {
    pub fn leak(decl: Declaration, script: Weak<Script>, script_hash: String) -> &'static Scripted {
        Box::leak(Box::new(Scripted {
            decl,
            script,
            script_hash,
        }))
    }

    fn script(&self, at: NodeId) -> Result<Arc<Script>, NotApplicable> {
        self.script
            .upgrade()
            .ok_or_else(|| self.refuse(at, "its script is no longer loaded"))
    }

    fn refuse(&self, node: NodeId, reason: impl Into<String>) -> NotApplicable {
        refusal_of(self.decl.schema.name, node, reason)
    }

    /// A refusal for a failure of the script's own code in `phase`.
    fn fault(&self, node: NodeId, phase: &str, error: ScriptError) -> NotApplicable {
        fault_of(self.decl.schema.name, &self.script_hash, node, phase, error)
    }
}

fn refusal_of(name: &'static str, node: NodeId, reason: impl Into<String>) -> NotApplicable {
    NotApplicable {
        transformation: name,
        node,
        reason: reason.into(),
        fault: None,
    }
}

fn fault_of(
    name: &'static str,
    script_hash: &str,
    node: NodeId,
    phase: &str,
    error: ScriptError,
) -> NotApplicable {
    NotApplicable {
        reason: format!("the script's {phase} failed: {}", error.message),
        fault: Some(Box::new(ScriptFault {
            script_hash: script_hash.to_string(),
            error,
        })),
        ..refusal_of(name, node, "")
    }
}

impl Transformation for Scripted {
    fn schema(&self) -> &'static Schema {
        self.decl.schema
    }

    fn script_hash(&self) -> Option<&str> {
        Some(&self.script_hash)
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let anchor = call.site[0];
        let script = self.script(anchor)?;
        let site = call.site.to_vec();
        let args = args_map(call.args);
        let verdict = reading(call.p, || {
            script.call_ptr(
                &self.decl.check,
                (ProgramView, site_array(&site), args.clone()),
            )
        })
        .map_err(|e| self.fault(anchor, "check", e))?;
        match refusal(&verdict) {
            Verdict::Applies => {}
            Verdict::Refuses(reason) => return Err(self.refuse(anchor, reason)),
            Verdict::Malformed(e) => return Err(self.fault(anchor, "check", e)),
        }
        let (name, hash, rewrite) = (
            self.decl.schema.name,
            self.script_hash.clone(),
            self.decl.rewrite.clone(),
        );
        Ok(Plan::new(move |p: &mut Program| {
            let touched = rewriting(p, || {
                script.call_ptr(&rewrite, (Edit, site_array(&site), args))
            })
            .map_err(|e| fault_of(name, &hash, anchor, "rewrite", e))?;
            match touched.is_unit() {
                true => Ok(site),
                // Returning something that is not a list of nodes is a bug in the script.
                false => sites_from(&touched)
                    .map(|s| s.into_iter().flatten().collect())
                    .map_err(|e| {
                        let e = ScriptError::new(
                            ErrorKind::Runtime,
                            format!("the rewrite returned {e}"),
                        );
                        fault_of(name, &hash, anchor, "rewrite", e)
                    }),
            }
        }))
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let Some(f) = &self.decl.candidates else {
            return role_candidates(self.decl.schema, p);
        };
        let listed = self.script.upgrade().map(|script| {
            reading(p, || script.call_ptr(f, (ProgramView,)))
                .map_err(|e| e.message)
                .and_then(|v| sites_from(&v))
        });
        match listed {
            Some(Ok(sites)) => sites,
            // `candidates` has no error channel: a failing script lists nothing and says why.
            Some(Err(e)) => {
                eprintln!("warning: the candidates of {} failed: {e}", self.name());
                Vec::new()
            }
            None => Vec::new(),
        }
    }
}

/// What a `check` result says.
enum Verdict {
    Applies,
    Refuses(String),
    /// Neither: a bug in the script, reported as its fault.
    Malformed(ScriptError),
}

/// `()` or `true` applies, a string (or `false`) is the reason it does not.
fn refusal(v: &Dynamic) -> Verdict {
    if v.is_unit() {
        return Verdict::Applies;
    }
    if let Ok(b) = v.as_bool() {
        return match b {
            true => Verdict::Applies,
            false => Verdict::Refuses("its check returned false".to_string()),
        };
    }
    match v.clone().into_string() {
        Ok(reason) => Verdict::Refuses(reason),
        Err(found) => Verdict::Malformed(ScriptError::new(
            ErrorKind::Runtime,
            format!("the check returned {found}; a check returns () or true when the transformation applies, or the reason it does not"),
        )),
    }
}
