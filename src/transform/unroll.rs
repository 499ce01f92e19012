//! Unroll: replicate the body of a map's innermost loop for each of its few iterations.
//!
//! ```text
//! before:  map [i = 0:M, r = 0:3] sequential { Y[i] += W[r] * X[i + r] }
//! after:   map [i = 0:M, r = 0:3] unrolled   { … }     // C: `#pragma GCC unroll 16` on the r loop
//! ```
//! Unrolling removes loop overhead and exposes independent operations to the compiler, but only
//! pays off (and only stays small) for short loops, so the innermost parameter must have a trip
//! count known at compile time and at most `max`. A clipped tile range `t : min(t + T, N)` counts
//! as `T`. The backend's pragma unrolls by at most 16, which bounds `max`.

use super::map_support::{int_param, trip_bound};
use super::vectorize::set_schedule;
use super::{expect_map, refuse, Level, NotApplicable, ParamSpec, Params, Transformation};
use crate::ir::{NodeId, Program, Schedule};

/// The backend's unroll factor (`#pragma GCC unroll 16`): loops longer than this are only
/// partially unrolled, so `max` may not exceed it.
const BACKEND_UNROLL: i64 = 16;

pub struct Unroll;

impl Transformation for Unroll {
    fn name(&self) -> &'static str {
        "Unroll"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "fully unroll a map's innermost loop when its trip count is a small constant"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "max",
            kind: "int",
            doc: "largest trip count to unroll (default 16, at most 16)",
        }]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p).into_iter().map(|id| vec![id]).collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let max = int_param(params, "max")
            .map_err(|r| refuse(self, id, r))?
            .unwrap_or(BACKEND_UNROLL);
        if !(1..=BACKEND_UNROLL).contains(&max) {
            return Err(refuse(
                self,
                id,
                format!("max {max} is outside 1..={BACKEND_UNROLL} (the backend unrolls by at most {BACKEND_UNROLL})"),
            ));
        }
        if map.schedule != Schedule::Sequential {
            return Err(refuse(
                self,
                id,
                format!("the map is {}, not sequential", map.schedule.name()),
            ));
        }
        let last = map
            .params
            .last()
            .ok_or_else(|| refuse(self, id, "the map has no parameters"))?;
        let trip = trip_bound(&last.range, &p.symbol_values()).ok_or_else(|| {
            refuse(
                self,
                id,
                format!(
                    "the trip count of `{}` ({}) is not a compile-time constant",
                    last.name,
                    last.range.len()
                ),
            )
        })?;
        if trip > max {
            return Err(refuse(
                self,
                id,
                format!("`{}` runs {trip} times, more than max {max}", last.name),
            ));
        }
        if trip < 2 {
            return Err(refuse(
                self,
                id,
                format!("`{}` runs {trip} time(s): nothing to unroll", last.name),
            ));
        }
        Ok(())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        set_schedule(self, p, site[0], Schedule::Unrolled)
    }
}
