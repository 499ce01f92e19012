//! SIMD reductions: a vector map whose tasklets accumulate into one element per iteration of
//! its outer parameters (LayerNorm's mean, Softmax's sum and maximum).
//!
//! ```c
//! float dm_lanes = 0;                       // the reduction's identity
//! #pragma omp simd reduction(+:dm_lanes)
//! for (j = 0; j < N; j += 1) { dm_lanes = fmaf(x[i*N+j], c, dm_lanes); }
//! d_mean[i] += dm_lanes;                    // combined once, atomically where threads share it
//! ```
//! Each lane sums its own share and the shares are combined at the end: a reassociation, which
//! is why `Vectorize` accepts such a map only for float accumulations and the engine's numerics
//! check compares the compiled program against the reference within tolerance. The combine
//! operators agree with the scalar helpers: `dm_max_f32` ignores NaN like `fmaxf`, and starting
//! from −∞ no lane's share is NaN, so `reduction(max:…)` combines shares the same way.

use super::Emitter;
use crate::check::race;
use crate::codegen::emit::DataInfo;
use crate::codegen::expr::ctype;
use crate::codegen::CodegenError;
use crate::ir::{MapNode, Wcr};
use std::collections::BTreeMap;

/// A [`race::LaneReduction`] being emitted: where its element is and the scalar the lanes
/// accumulate into.
pub(super) struct Open {
    reduction: race::LaneReduction,
    /// The C index of the element, computed before the lane loop opens.
    flat: String,
    var: String,
}

/// The SIMD reductions of vector map `m` ([`race::lane_reductions`]), over the emitter's
/// element types.
pub(super) fn of(m: &MapNode, data: &BTreeMap<String, DataInfo>) -> Vec<race::LaneReduction> {
    race::lane_reductions(m, |n| data.get(n).map(|d| d.dtype))
}

impl Emitter<'_> {
    /// Declares the scalar of every lane reduction of vector map `m`, registers it for the
    /// tasklets, and returns the reductions with the `reduction(…)` clauses of the `omp simd`
    /// pragma. Called with the map's outer parameters bound and its lane loop not yet open.
    pub(super) fn open_lane_reductions(
        &mut self,
        id: crate::ir::NodeId,
        writes: Vec<race::LaneReduction>,
    ) -> Result<(Vec<Open>, String), CodegenError> {
        let mut reductions = Vec::new();
        let mut clauses = String::new();
        for reduction in writes {
            let d = self.info(&reduction.data)?;
            let flat = self.element_index(id, d, &reduction.subset)?;
            let wcr = reduction.wcr;
            let var = self.names.fresh("dm_", "lanes");
            let identity = match wcr {
                Wcr::Sum => "0",
                Wcr::Prod => "1",
                Wcr::Max => "-INFINITY",
                Wcr::Min => "INFINITY",
            };
            self.w
                .line(format!("{} {var} = {identity};", ctype(d.dtype)));
            let op = match wcr {
                Wcr::Sum => "+",
                Wcr::Prod => "*",
                Wcr::Max => "max",
                Wcr::Min => "min",
            };
            clauses.push_str(&format!(" reduction({op}:{var})"));
            let key = (reduction.data.clone(), flat.clone());
            self.lane_reductions.insert(key, var.clone());
            reductions.push(Open {
                reduction,
                flat,
                var,
            });
        }
        Ok((reductions, clauses))
    }

    /// Whether each reduction's combine must be atomic: asked while the map's level is still
    /// open, as a tasklet in its body would ask.
    pub(super) fn combines_atomic(&self, reductions: &[Open]) -> Result<Vec<bool>, CodegenError> {
        (reductions.iter())
            .map(|o| {
                let r = &o.reduction;
                Ok(self.shared_conflict(self.info(&r.data)?, &r.subset))
            })
            .collect()
    }

    /// After the lane loop: combines every lane's share into its element and unregisters it.
    pub(super) fn close_lane_reductions(
        &mut self,
        reductions: Vec<Open>,
        atomic: Vec<bool>,
    ) -> Result<(), CodegenError> {
        for (open, atomic) in reductions.into_iter().zip(atomic) {
            let r = &open.reduction;
            let d = self.info(&r.data)?;
            self.lane_reductions
                .remove(&(r.data.clone(), open.flat.clone()));
            let lhs = d.element(&open.flat);
            self.store(d, &lhs, Some(r.wcr), &open.var, atomic);
        }
        Ok(())
    }

    /// The C lvalue a tasklet's write to element `flat` of `data` updates: a lane reduction's
    /// scalar, or the element itself.
    pub(super) fn target(&self, data: &str, element: String, flat: &str) -> (String, bool) {
        match self
            .lane_reductions
            .get(&(data.to_string(), flat.to_string()))
        {
            Some(var) => (var.clone(), true),
            None => (element, false),
        }
    }
}
