//! The programs a recipe went through, for the HTML view's step slider: the model as imported,
//! then the program after each step (or after evenly spread steps, when limited), each with the
//! ids the steps since the previous frame added or changed and those they changed or removed.
//!
//! The recipe has already run with every check; the steps are applied again through the
//! engine's replay with legality and numerics lowered (nothing is decided again), and every
//! step's IR hash is compared with the one recorded, so each frame is exactly the program the
//! run produced at that step.

use super::ViewError;
use crate::ir::{NodeId, Program};
use crate::recipe::run::RecordedStep;
use crate::transform::engine::{replay_with, Checks, Layer, Trace};
use std::collections::BTreeSet;

/// One position of the slider.
#[derive(Clone, Debug)]
pub struct Frame {
    /// `step 3 of 13 · MapTiling at n19 (loops::schedule)`.
    pub title: String,
    /// The program at that point, without constant values (a picture does not show them).
    pub program: Program,
    /// Ids added or modified since the previous frame (highlighted in this frame).
    pub changed: Vec<NodeId>,
    /// Ids modified or removed since the previous frame (highlighted in the previous frame,
    /// shown as "before").
    pub replaced: Vec<NodeId>,
}

/// Every frame of a view.
#[derive(Clone, Debug)]
pub struct History {
    /// What is shown, e.g. `demo.onnx with recipe std::cpu`.
    pub origin: String,
    pub frames: Vec<Frame>,
    /// Steps the recipe applied (frames may show fewer).
    pub steps: usize,
}

/// A program without constant values.
fn bare(p: &Program) -> Program {
    let mut q = p.clone();
    q.constants.clear();
    q
}

/// A view of one program (from `origin`, e.g. its file name), without steps.
pub fn single(p: Program, origin: &str) -> History {
    History {
        origin: origin.to_string(),
        frames: vec![Frame {
            title: "as loaded".into(),
            program: bare(&p),
            changed: Vec::new(),
            replaced: Vec::new(),
        }],
        steps: 0,
    }
}

impl History {
    /// The frames of `steps` applied to `imported` (the recipe run's steps, in order); at most
    /// `max` frames after the first (0: one per step), always including the last step.
    pub fn replay(
        imported: Program,
        steps: &[RecordedStep],
        origin: &str,
        max: usize,
    ) -> Result<History, ViewError> {
        let n = steps.len();
        let kept: BTreeSet<usize> = if max == 0 || max >= n {
            (1..=n).collect()
        } else {
            (1..=max).map(|k| (k * n).div_ceil(max)).collect()
        };
        let mut frames = vec![Frame {
            title: format!("as imported ({n} steps follow)"),
            program: bare(&imported),
            changed: Vec::new(),
            replaced: Vec::new(),
        }];
        let mut trace = Trace::new(&imported);
        trace.steps = steps.iter().map(|s| s.step.clone()).collect();
        let reason = "re-applied for the picture: the recipe run checked this step";
        let checks = Checks::default()
            .lower(Layer::Legality, reason)
            .lower(Layer::Numerics, reason);
        let (mut changed, mut replaced) = (BTreeSet::new(), BTreeSet::new());
        let mut done = 0;
        let mut p = imported;
        replay_with(&mut p, &trace, &checks, &mut |program, step| {
            let r = &steps[done];
            done += 1;
            changed.extend(step.added.iter().chain(&step.modified).copied());
            replaced.extend(step.removed.iter().chain(&step.modified).copied());
            if !kept.contains(&done) {
                return;
            }
            let at = step
                .site
                .iter()
                .map(|id| id.to_string())
                .collect::<Vec<_>>();
            let rule = r.rule.as_deref().unwrap_or("main");
            frames.push(Frame {
                title: format!(
                    "step {done} of {n} · {} at {} ({rule})",
                    step.transformation,
                    at.join(", ")
                ),
                program: bare(program),
                changed: std::mem::take(&mut changed).into_iter().collect(),
                replaced: std::mem::take(&mut replaced).into_iter().collect(),
            });
        })?;
        Ok(History {
            origin: origin.to_string(),
            frames,
            steps: n,
        })
    }
}
