//! Repeated application within a budget of steps and wall time.

use super::{Engine, Params, Refusal, Step, Transformation};
use crate::ir::{NodeId, Program};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Limits for repeated application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub max_steps: usize,
    /// Checked before each attempt, so one long step may overrun it.
    pub max_time: Option<Duration>,
}

impl Budget {
    /// At most `n` applied steps, no time limit.
    pub fn steps(n: usize) -> Budget {
        Budget {
            max_steps: n,
            max_time: None,
        }
    }

    pub fn with_time(mut self, limit: Duration) -> Budget {
        self.max_time = Some(limit);
        self
    }
}

/// Why repeated application stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// No candidate site is left where the transformation applies.
    Fixpoint,
    /// The step budget ran out.
    StepLimit,
    /// The wall-time budget ran out.
    TimeLimit,
    /// Ctrl-C ([`crate::interrupt`]): the steps before it are kept, like at any other stop.
    Interrupted,
}

/// What repeated application did.
#[derive(Clone, Debug)]
pub struct Repeated {
    pub steps: Vec<Step>,
    /// Sites whose preconditions held but whose rewrite was refused (and rolled back), and a
    /// scripted transformation's fault, which ends the repetition.
    pub refused: Vec<Refusal>,
    /// Why each remaining candidate was skipped on the last look (when the stop is a fixpoint,
    /// the reasons the transformation applies nowhere else).
    pub skipped: Vec<Refusal>,
    pub stop: StopReason,
    pub elapsed: Duration,
}

impl Engine {
    /// Applies `t` at the first candidate whose preconditions hold, again and again, until no
    /// candidate is left or the budget runs out. A site refused after its rewrite (invalid or
    /// different results) is not tried again.
    pub fn apply_repeatedly(
        &mut self,
        p: &mut Program,
        t: &dyn Transformation,
        params: &Params,
        budget: &Budget,
    ) -> Repeated {
        let start = Instant::now();
        let mut steps = Vec::new();
        let mut refused = Vec::new();
        let mut refused_sites: Vec<Vec<NodeId>> = Vec::new();
        let mut skipped = Vec::new();
        let stop = loop {
            if steps.len() >= budget.max_steps {
                break StopReason::StepLimit;
            }
            if crate::interrupt::requested() {
                break StopReason::Interrupted;
            }
            if budget
                .max_time
                .is_some_and(|limit| start.elapsed() >= limit)
            {
                break StopReason::TimeLimit;
            }
            skipped.clear();
            let mut next = None;
            for site in t.candidates(p) {
                if refused_sites.contains(&site) {
                    continue;
                }
                match self.plan(p, t, &site, params) {
                    Ok(planned) => {
                        next = Some(Ok(planned));
                        break;
                    }
                    // A script that fails fails everywhere: stop rather than retry each site.
                    Err(why) if why.is_script_fault() => {
                        next = Some(Err(why));
                        break;
                    }
                    Err(why) => skipped.push(why),
                }
            }
            let planned = match next {
                Some(Ok(planned)) => planned,
                Some(Err(fault)) => {
                    refused.push(fault);
                    break StopReason::Fixpoint;
                }
                None => break StopReason::Fixpoint,
            };
            let site = planned.site.clone();
            match self.commit(p, t, planned) {
                Ok(step) => steps.push(step),
                Err(e) => {
                    refused.push(e);
                    refused_sites.push(site);
                }
            }
        };
        Repeated {
            steps,
            refused,
            skipped,
            stop,
            elapsed: start.elapsed(),
        }
    }
}
