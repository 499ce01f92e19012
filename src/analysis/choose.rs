//! Choosing among candidate rewrites by DMD (what a recipe's `choose … by dmd` calls).
//!
//! Every candidate is applied to its own copy through the transactional engine, so a candidate
//! is only scored when it passed every check (preconditions, invariants, numerics); refused ones
//! are kept in the scores with the refusal. The lowest DMD wins, ties going to the candidate
//! listed first, so the decision is deterministic and reproducible from the recorded scores.

use super::trace::IrTrace;
use super::{analyze, AnalysisError, Options};
use crate::ir::{NodeId, NodeKind, Program};
use crate::transform::engine::{apply, Checks};
use crate::transform::{ParamValue, Params};
use serde::{Deserialize, Serialize};

/// The score of one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub params: Params,
    /// DMD with the cold-access convention; `None` when refused.
    pub dmd: Option<f64>,
    pub dmd_warm: Option<f64>,
    pub accesses: Option<u64>,
    /// Why the engine refused the candidate.
    pub refused: Option<String>,
}

/// The decision and every score, serializable into a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub transformation: String,
    pub site: Vec<NodeId>,
    /// Index of the chosen candidate in `scores`.
    pub chosen: usize,
    pub params: Params,
    pub dmd: f64,
    pub granularity: String,
    pub scores: Vec<Score>,
}

/// Applies `transformation` at `site` with each candidate parameter set to a copy of `p`, scores
/// the results by DMD and picks the lowest.
pub fn choose_by_dmd(
    p: &Program,
    transformation: &str,
    site: &[NodeId],
    candidates: &[Params],
    opts: &Options,
    checks: &Checks,
) -> Result<Choice, AnalysisError> {
    let t = crate::transform::find(transformation)?;
    let mut scores = Vec::new();
    for params in candidates {
        let mut q = p.clone();
        let score = match apply(&mut q, t, site, params, checks) {
            Ok(_) => {
                let r = analyze(&IrTrace::new(&q)?, opts)?;
                Score {
                    params: params.clone(),
                    dmd: Some(r.total.dmd),
                    dmd_warm: Some(r.total.stats.dmd_warm),
                    accesses: Some(r.total.stats.accesses),
                    refused: None,
                }
            }
            Err(refusal) => Score {
                params: params.clone(),
                dmd: None,
                dmd_warm: None,
                accesses: None,
                refused: Some(refusal.to_string()),
            },
        };
        scores.push(score);
    }
    let best = scores
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.dmd.map(|d| (i, d)))
        .fold(None, |best: Option<(usize, f64)>, (i, d)| match best {
            Some((_, bd)) if bd <= d => best,
            _ => Some((i, d)),
        });
    let site_text = site
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let Some((chosen, dmd)) = best else {
        return Err(AnalysisError::NoCandidate {
            transformation: t.name().to_string(),
            site: site_text,
            count: candidates.len(),
            reasons: scores
                .iter()
                .filter_map(|s| s.refused.clone())
                .collect::<Vec<_>>()
                .join("; "),
        });
    };
    Ok(Choice {
        transformation: t.name().to_string(),
        site: site.to_vec(),
        chosen,
        params: scores[chosen].params.clone(),
        dmd,
        granularity: opts.granularity(),
        scores,
    })
}

/// MapTiling parameter sets for map `map`, one per tile size: every parameter but the innermost
/// gets the tile size (a one-parameter map tiles its only parameter), the innermost stays whole.
pub fn tile_candidates(
    p: &Program,
    map: NodeId,
    sizes: &[i64],
) -> Result<Vec<Params>, AnalysisError> {
    let arity = match p.node(map).map(|n| &n.kind) {
        Some(NodeKind::Map(m)) => m.params.len(),
        Some(other) => {
            return Err(AnalysisError::BadOption(format!(
                "node {map} is a {} node, not a map",
                other.kind_name()
            )))
        }
        None => {
            return Err(AnalysisError::BadOption(format!(
                "no node {map} in the program"
            )))
        }
    };
    let tiled = arity.saturating_sub(1).max(1);
    Ok(sizes
        .iter()
        .map(|&t| {
            let tiles: Vec<i64> = (0..arity).map(|i| if i < tiled { t } else { 0 }).collect();
            Params::from([("tiles".to_string(), ParamValue::Ints(tiles))])
        })
        .collect())
}
