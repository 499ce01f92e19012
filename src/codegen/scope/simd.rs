//! SIMD reductions: a vector map whose tasklets accumulate into one element per iteration of
//! its outer parameters (LayerNorm's mean, Softmax's sum and maximum).
//!
//! ```c
//! float dm_r0 = 0.0f;                      // the reduction's identity
//! #pragma omp simd reduction(+:dm_r0)
//! for (j = 0; j < N; j += 1) { dm_r0 = fmaf(x[i*N+j], c, dm_r0); }
//! d_mean[i] += dm_r0;                      // combined once, atomically where threads share it
//! ```
//! Each lane sums its own share and the shares are combined at the end: a reassociation, which
//! is why `Vectorize` accepts such a map only for float accumulations and the engine's numerics
//! check compares the compiled program against the reference within tolerance. The combine
//! operators agree with the scalar helpers: `dm_max_f32` ignores NaN like `fmaxf`, and starting
//! from −∞ no lane's share is NaN, so `reduction(max:…)` combines shares the same way.

use super::Emitter;
use crate::codegen::expr::ctype;
use crate::codegen::CodegenError;
use crate::ir::{DType, MapNode, NodeKind, Subset, Wcr};

/// One accumulation of a vector map into an element that does not depend on its lanes.
pub(super) struct LaneReduction {
    data: String,
    subset: Subset,
    wcr: Wcr,
    /// The C index of the element, computed before the lane loop opens.
    flat: String,
    /// The scalar each lane accumulates into.
    var: String,
}

/// The accumulations of vector map `m` (tasklets directly in its body) into elements that do
/// not depend on its last parameter, the lanes: writes with a reducible write-conflict
/// resolution into a container the body does not otherwise read.
pub(super) fn lane_writes(
    m: &MapNode,
    dtype: impl Fn(&str) -> Option<DType>,
) -> Vec<(String, Subset, Wcr)> {
    let Some(lane) = m.params.last() else {
        return Vec::new();
    };
    let g = &m.body;
    let mut out = Vec::new();
    for idx in g.node_indices() {
        if !matches!(g.node(idx).kind, NodeKind::Tasklet(_)) {
            continue;
        }
        for e in g.out_edges(idx) {
            let memlet = e.memlet;
            let Some(d) = dtype(&memlet.data) else {
                continue;
            };
            let read_too = (g.node_indices())
                .filter(|&i| matches!(g.node(i).kind, NodeKind::Access(_)))
                .flat_map(|i| g.out_edges(i))
                .any(|r| r.memlet.data == memlet.data);
            if memlet.wcr.is_some_and(|w| w.reassociable_in(d))
                && !memlet.subset.free_symbols().contains(&lane.name)
                && !read_too
            {
                out.push((
                    memlet.data.clone(),
                    memlet.subset.clone(),
                    memlet.wcr.expect("reducible"),
                ));
            }
        }
    }
    out
}

impl Emitter<'_> {
    /// Declares the scalar of every lane reduction of vector map `m`, registers it for the
    /// tasklets, and returns the reductions with the `reduction(…)` clauses of the `omp simd`
    /// pragma. Called with the map's outer parameters bound and its lane loop not yet open.
    pub(super) fn open_lane_reductions(
        &mut self,
        id: crate::ir::NodeId,
        m: &MapNode,
    ) -> Result<(Vec<LaneReduction>, String), CodegenError> {
        let data = self.data;
        let writes = lane_writes(m, |n| data.get(n).map(|d| d.dtype));
        let mut reductions = Vec::new();
        let mut clauses = String::new();
        for (name, subset, wcr) in writes {
            let d = self.info(&name)?;
            let flat = self.element_index(id, d, &subset)?;
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
            reductions.push(LaneReduction {
                data: name,
                subset,
                wcr,
                flat,
                var,
            });
        }
        self.lane_reductions.extend(
            reductions
                .iter()
                .map(|r| ((r.data.clone(), r.flat.clone()), r.var.clone())),
        );
        Ok((reductions, clauses))
    }

    /// Whether each reduction's combine must be atomic: asked while the map's level is still
    /// open, as a tasklet in its body would ask.
    pub(super) fn combines_atomic(
        &self,
        reductions: &[LaneReduction],
    ) -> Result<Vec<bool>, CodegenError> {
        (reductions.iter())
            .map(|r| Ok(self.shared_conflict(self.info(&r.data)?, &r.subset)))
            .collect()
    }

    /// After the lane loop: combines every lane's share into its element and unregisters it.
    pub(super) fn close_lane_reductions(
        &mut self,
        reductions: Vec<LaneReduction>,
        atomic: Vec<bool>,
    ) -> Result<(), CodegenError> {
        for (r, atomic) in reductions.into_iter().zip(atomic) {
            let d = self.info(&r.data)?;
            self.lane_reductions
                .remove(&(r.data.clone(), r.flat.clone()));
            let lhs = d.element(&r.flat);
            self.store(d, &lhs, Some(r.wcr), &r.var, atomic);
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
