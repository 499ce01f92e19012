//! Vectorize: run the innermost parameter of a map as SIMD lanes.
//!
//! ```text
//! before:  map [i = 0:M, j = 0:N] sequential { Y[i, j] = f(X[i, j], b[j]) }
//! after:   map [i = 0:M, j = 0:N] vector     { … }        // C: `#pragma omp simd` on the j loop
//! ```
//! SIMD lanes load and store neighbouring elements, so every access must either not depend on
//! the lane parameter (a broadcast) or step with stride 1 (through the last dimension, or one
//! followed only by dimensions of extent 1, as a 1×1 convolution's are); anything
//! else is a gather or scatter that `omp simd` would only slow down. Lanes run in lock step, so
//! they must also be independent: every write goes to a distinct element per lane and nothing a
//! lane writes is read by another (`check::race`). Only innermost maps (bodies of tasklets) are
//! vectorized. An accumulation (write-conflict resolution) into an element all lanes share is a
//! SIMD reduction: each lane accumulates its share and the backend combines them at the end
//! (`omp simd reduction`), for f32 and f64 elements the body does not also read.

use crate::check::race::{lane_reductions, parallel_conflict, LaneReduction};
use crate::ir::{DataDesc, Dim, MapNode, Memlet, Schedule, Storage, SymExpr};
use crate::transform::support::maps::{
    first_nested_map, private_to_body, set_schedule, tasklet_accesses,
};
use crate::transform::{
    expect_map, refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use std::collections::BTreeMap;

pub struct Vectorize;

const SCHEMA: Schema = Schema {
    name: "Vectorize",
    level: Level::IntraOperator,
    doc: "run an innermost map's last parameter as SIMD lanes (omp simd) when accesses are contiguous",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the innermost map whose last parameter becomes the lanes",
    )],
    params: &[],
};

impl Transformation for Vectorize {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        if map.schedule != Schedule::Sequential {
            return Err(refuse(
                self,
                id,
                format!(
                    "the map is {}, not sequential; split the lanes off with MapExpansion first",
                    map.schedule.name()
                ),
            ));
        }
        let lane = map
            .params
            .last()
            .ok_or_else(|| refuse(self, id, "the map has no parameters"))?;
        legality.holds(if lane.range.step == SymExpr::Int(1) {
            Ok(())
        } else {
            Err(refuse(
                self,
                id,
                format!(
                    "lane parameter `{}` has step {}; lanes need unit step",
                    lane.name, lane.range.step
                ),
            ))
        })?;
        if let Some(inner) = first_nested_map(&map.body) {
            return Err(refuse(
                self,
                id,
                format!("the body contains map {inner}: only innermost maps are vectorized"),
            ));
        }
        let reductions = lane_reductions(map, |d| p.data.get(d).map(|d| d.dtype));
        for access in tasklet_accesses(&map.body) {
            // Local and register containers used only inside the map are private to each lane.
            let storage = p.data.get(&access.memlet.data).map(|d| d.storage);
            if storage != Some(Storage::Global)
                && private_to_body(p, &map.body, &access.memlet.data)
            {
                continue;
            }
            let m = access.memlet;
            let reduced = |r: &LaneReduction| r.data == m.data && r.subset == m.subset;
            if access.write && reductions.iter().any(reduced) {
                continue;
            }
            legality.holds(
                contiguous(access.memlet, access.write, &lane.name, &p.data)
                    .map_err(|r| refuse(self, id, r)),
            )?;
        }
        let lanes_only = MapNode {
            params: vec![lane.clone()],
            schedule: Schedule::Sequential,
            min_work: 0,
            body: map.body.clone(),
        };
        legality.holds(match parallel_conflict(&lanes_only, p) {
            Some(why) => Err(refuse(self, id, format!("lanes conflict: {why}"))),
            None => Ok(()),
        })?;
        Ok(Plan::new(move |p| {
            set_schedule(&Vectorize, p, id, Schedule::Vector, 0)
        }))
    }
}

/// Whether one element access is a broadcast or a unit-stride access in `lane`; a write must
/// also give each lane its own element.
fn contiguous(
    m: &Memlet,
    write: bool,
    lane: &str,
    data: &BTreeMap<String, DataDesc>,
) -> Result<(), String> {
    let verb = if write { "writes" } else { "reads" };
    let shape = data.get(&m.data).map(|d| d.shape.as_slice()).unwrap_or(&[]);
    let mut lane_coef = 0;
    for (d, dim) in m.subset.0.iter().enumerate() {
        let Dim::Index(e) = dim else {
            return Err(format!(
                "{verb} {}{}, which is not one element per lane",
                m.data, m.subset
            ));
        };
        let (coeffs, _) = e.affine_in(&[lane]).ok_or_else(|| {
            format!(
                "{verb} {}{} with index `{e}`, which is not affine in `{lane}`",
                m.data, m.subset
            )
        })?;
        let c = coeffs.get(lane).copied().unwrap_or(0);
        if c == 0 {
            continue;
        }
        let stride = shape
            .get(d + 1..)
            .unwrap_or(&[])
            .iter()
            .fold(SymExpr::Int(c), |acc, x| acc * x.clone())
            .simplify();
        // Unit stride: the lane's dimension is the last one that is not of extent 1 (a 1×1
        // convolution's trailing spatial dimensions), and only one dimension moves with it.
        if stride.as_int() != Some(1) || lane_coef != 0 {
            return Err(format!(
                "{verb} {}{} with stride {stride} in `{lane}`: not contiguous",
                m.data, m.subset
            ));
        }
        lane_coef = c;
    }
    if write && lane_coef == 0 {
        return Err(format!(
            "every lane of `{lane}` writes {}{}: lanes would collide{}",
            m.data,
            m.subset,
            if m.wcr.is_some() {
                " (a SIMD reduction needs f32 or f64 elements and a body that does not read them)"
            } else {
                ""
            }
        ));
    }
    Ok(())
}
