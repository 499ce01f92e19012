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

use crate::ir::Schedule;
use crate::transform::support::maps::{set_schedule, trip_bound};
use crate::transform::{
    expect_map, refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan,
    Role, Schema, Transformation,
};

/// The backend's unroll factor (`#pragma GCC unroll 16`): loops longer than this are only
/// partially unrolled, so `max` may not exceed it.
const BACKEND_UNROLL: i64 = 16;

pub struct Unroll;

const SCHEMA: Schema = Schema {
    name: "Unroll",
    level: Level::IntraOperator,
    doc: "fully unroll a map's innermost loop when its trip count is a small constant",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the map whose last parameter to unroll",
    )],
    params: &[ParamDecl {
        name: "max",
        kind: ParamKind::Int {
            min: 1,
            max: BACKEND_UNROLL,
        },
        default: Default::Int(BACKEND_UNROLL),
        doc: "largest trip count to unroll (default 16, at most 16)",
    }],
};

impl Transformation for Unroll {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let max = args.int("max")?;
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
        Ok(Plan::new(move |p| {
            set_schedule(&Unroll, p, id, Schedule::Unrolled, 0)
        }))
    }
}
