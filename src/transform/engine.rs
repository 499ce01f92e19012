//! Transactional application of transformations, and the trace of what was applied.
//!
//! `apply` = snapshot → preconditions → rewrite → invariants → legality (inside each
//! transformation's preconditions) → numerics against the snapshot. On any failure the program
//! is restored from the snapshot, so a refused step leaves it exactly as it was.

use super::{NotApplicable, Params, Transformation};
use crate::check::{random_inputs, same_outputs, NumericsError};
use crate::ir::validate::{validate, InvalidIr};
use crate::ir::{Graph, NodeId, NodeKind, Program};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Which checks run after each rewrite.
#[derive(Clone, Debug)]
pub struct Checks {
    /// Compare outputs with the snapshot on random inputs.
    pub numerics: bool,
    /// Skip the numerics check (and record that) when one run would execute more tasklets than this.
    pub numerics_budget: u64,
    pub seed: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            numerics: true,
            numerics_budget: 2_000_000,
            seed: 0x5eed,
        }
    }
}

/// One applied step, enough to replay it and to verify the replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub transformation: String,
    pub site: Vec<NodeId>,
    pub params: Params,
    pub touched: Vec<NodeId>,
    pub hash_before: String,
    pub hash_after: String,
    /// Checks that were run, skipped or lowered, in words.
    pub checks: Vec<String>,
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
}

/// Applies `t` at `site`, transactionally.
pub fn apply(
    p: &mut Program,
    t: &dyn Transformation,
    site: &[NodeId],
    params: &Params,
    checks: &Checks,
) -> Result<Step, Refusal> {
    let anchor = site.first().copied().unwrap_or(NodeId(0));
    t.check(p, site, params)?;
    let snapshot = p.clone();
    let hash_before = program_hash(p);
    let touched = match t.apply(p, site, params) {
        Ok(touched) => touched,
        Err(e) => {
            *p = snapshot;
            return Err(e.into());
        }
    };
    if let Err(error) = validate(p) {
        *p = snapshot;
        return Err(Refusal::Invalid {
            transformation: t.name().to_string(),
            node: anchor,
            error,
        });
    }
    let mut done = vec!["invariants".to_string(), "legality".to_string()];
    if checks.numerics {
        match work(&snapshot) {
            Some(w) if w <= checks.numerics_budget => {
                let outcome = random_inputs(&snapshot, checks.seed)
                    .and_then(|inputs| same_outputs(&snapshot, p, &inputs));
                if let Err(error) = outcome {
                    *p = snapshot;
                    return Err(Refusal::Numerics {
                        transformation: t.name().to_string(),
                        node: anchor,
                        error: Box::new(error),
                    });
                }
                done.push("numerics".to_string());
            }
            w => done.push(format!(
                "numerics skipped: about {} tasklet executions exceed the interpreter budget of {}",
                w.map_or("unknown".to_string(), |w| w.to_string()),
                checks.numerics_budget
            )),
        }
    } else {
        done.push("numerics disabled".to_string());
    }
    Ok(Step {
        transformation: t.name().to_string(),
        site: site.to_vec(),
        params: params.clone(),
        touched,
        hash_before,
        hash_after: program_hash(p),
        checks: done,
    })
}

/// Why repeated application stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// No candidate site is left where the transformation applies.
    Fixpoint,
    /// The step budget ran out.
    StepLimit,
}

/// Applies `t` at the first applicable candidate, again and again, until nothing applies or
/// `max_steps` steps were taken. Refused candidates are skipped.
pub fn apply_repeatedly(
    p: &mut Program,
    t: &dyn Transformation,
    params: &Params,
    checks: &Checks,
    max_steps: usize,
) -> (Vec<Step>, StopReason) {
    let mut steps = Vec::new();
    let mut refused: Vec<Vec<NodeId>> = Vec::new();
    while steps.len() < max_steps {
        let next = t
            .candidates(p)
            .into_iter()
            .find(|site| !refused.contains(site) && t.check(p, site, params).is_ok());
        let Some(site) = next else {
            return (steps, StopReason::Fixpoint);
        };
        match apply(p, t, &site, params, checks) {
            Ok(step) => steps.push(step),
            Err(_) => refused.push(site),
        }
    }
    (steps, StopReason::StepLimit)
}

/// A stable fingerprint of the program's structure (ids, kinds, memlets, declarations).
pub fn program_hash(p: &Program) -> String {
    let mut h = Sha256::new();
    h.update(p.name.as_bytes());
    h.update(format!("{:?}{:?}{:?}{:?}", p.symbols, p.data, p.inputs, p.outputs).as_bytes());
    hash_graph(&p.graph, &mut h);
    hex::encode(&h.finalize()[..16])
}

fn hash_graph(g: &Graph, h: &mut Sha256) {
    for idx in g.ordered() {
        let n = g.node(idx);
        match &n.kind {
            NodeKind::Map(m) => {
                h.update(format!("{} map {:?} {:?}", n.id, m.params, m.schedule).as_bytes());
                hash_graph(&m.body, h);
            }
            other => h.update(format!("{} {:?}", n.id, other).as_bytes()),
        }
        for e in g.out_edges(idx) {
            h.update(format!("->{} {:?}", g.node(e.other).id, e.memlet).as_bytes());
        }
    }
}

/// Tasklet executions of one run, when all ranges are constant.
pub fn work(p: &Program) -> Option<u64> {
    let env = p.symbol_values();
    graph_work(&p.graph, &env)
}

fn graph_work(g: &Graph, env: &crate::ir::SymEnv) -> Option<u64> {
    let mut total: u64 = 0;
    for n in g.g.node_weights() {
        total = total.checked_add(match &n.kind {
            NodeKind::Map(m) => {
                let mut points: u64 = 1;
                for prm in &m.params {
                    // Ranges that depend on outer parameters (tiles) count their largest extent.
                    let len = prm.range.len();
                    let len = len.eval(env).ok().or_else(|| max_extent(&prm.range, env))?;
                    points = points.checked_mul(u64::try_from(len.max(0)).ok()?)?;
                }
                points.checked_mul(graph_work(&m.body, env)?.max(1))?
            }
            NodeKind::Tasklet(_) => 1,
            NodeKind::Library(_) | NodeKind::Access(_) => 0,
        })?;
    }
    Some(total)
}

/// For a tile range `t : min(t + T, N)`, the tile size `T`.
fn max_extent(r: &crate::ir::Range, env: &crate::ir::SymEnv) -> Option<i64> {
    match &r.end {
        crate::ir::SymExpr::Min(a, _) => (a.as_ref() - &r.start).eval(env).ok(),
        _ => None,
    }
}
