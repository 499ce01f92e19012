//! Explanations: where a transformation applies, and why not elsewhere.
//!
//! Every candidate site is planned (nothing is changed) and reported with "applies" or the
//! refusal that stopped it, so a front door can answer "where does this apply, and why not
//! here" without trying rewrites.

use super::engine::{plan_at, Refusal};
use super::{Params, Transformation};
use crate::ir::{NodeId, Program};

/// Whether a transformation applies at one site.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Applies,
    Refused(Refusal),
}

/// One candidate site and its verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub site: Vec<NodeId>,
    pub verdict: Verdict,
}

impl Explanation {
    pub fn applies(&self) -> bool {
        self.verdict == Verdict::Applies
    }
}

/// Every candidate of `t` in `p` with its verdict under `params`, in candidate order.
pub fn explain(t: &dyn Transformation, p: &Program, params: &Params) -> Vec<Explanation> {
    (t.candidates(p).into_iter())
        .map(|site| {
            let verdict = match plan_at(p, t, &site, params, false) {
                Ok(_) => Verdict::Applies,
                Err(r) => Verdict::Refused(r),
            };
            Explanation { site, verdict }
        })
        .collect()
}

/// The candidate closest to `node`: one whose site contains it (an applying one first), else
/// the candidate whose anchor comes nearest to it in program order. `None` when `t` has no
/// candidates at all.
pub fn nearest(
    t: &dyn Transformation,
    p: &Program,
    node: NodeId,
    params: &Params,
) -> Option<Explanation> {
    let all = explain(t, p, params);
    let containing = all.iter().filter(|e| e.site.contains(&node));
    if let Some(e) = containing.clone().find(|e| e.applies()) {
        return Some(e.clone());
    }
    if let Some(e) = containing.clone().next() {
        return Some(e.clone());
    }
    let order = program_order(p);
    let position = |id: NodeId| order.iter().position(|n| *n == id).unwrap_or(usize::MAX);
    let here = position(node);
    all.into_iter()
        .min_by_key(|e| position(e.site.first().copied().unwrap_or(node)).abs_diff(here))
}

fn program_order(p: &Program) -> Vec<NodeId> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| v.push(n.id));
    v
}
