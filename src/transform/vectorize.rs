//! Vectorize: run the innermost parameter of a map as SIMD lanes.
//!
//! ```text
//! before:  map [i = 0:M, j = 0:N] sequential { Y[i, j] = f(X[i, j], b[j]) }
//! after:   map [i = 0:M, j = 0:N] vector     { … }        // C: `#pragma omp simd` on the j loop
//! ```
//! SIMD lanes load and store neighbouring elements, so every access must either not depend on
//! the lane parameter (a broadcast) or step through the last dimension with stride 1; anything
//! else is a gather or scatter that `omp simd` would only slow down. Lanes run in lock step, so
//! they must also be independent: every write goes to a distinct element per lane and nothing a
//! lane writes is read by another (`check::race`). Only innermost maps (bodies of tasklets) are
//! vectorized, and a resolved reduction over the lane parameter is refused: the backend emits no
//! `omp simd reduction`.

use super::map_support::{first_nested_map, private_to_body, tasklet_accesses};
use super::{expect_map, refuse, Level, NotApplicable, Params, Transformation};
use crate::check::race::parallel_conflict;
use crate::ir::{
    DataDesc, Dim, MapNode, Memlet, NodeId, NodeKind, Program, Schedule, Storage, SymExpr,
};
use std::collections::BTreeMap;

pub struct Vectorize;

impl Transformation for Vectorize {
    fn name(&self) -> &'static str {
        "Vectorize"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "run an innermost map's last parameter as SIMD lanes (omp simd) when accesses are contiguous"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p).into_iter().map(|id| vec![id]).collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
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
        if lane.range.step != SymExpr::Int(1) {
            return Err(refuse(
                self,
                id,
                format!(
                    "lane parameter `{}` has step {}; lanes need unit step",
                    lane.name, lane.range.step
                ),
            ));
        }
        if let Some(inner) = first_nested_map(&map.body) {
            return Err(refuse(
                self,
                id,
                format!("the body contains map {inner}: only innermost maps are vectorized"),
            ));
        }
        for access in tasklet_accesses(&map.body) {
            // Local and register containers used only inside the map are private to each lane.
            let storage = p.data.get(&access.memlet.data).map(|d| d.storage);
            if storage != Some(Storage::Global)
                && private_to_body(p, &map.body, &access.memlet.data)
            {
                continue;
            }
            contiguous(access.memlet, access.write, &lane.name, &p.data)
                .map_err(|r| refuse(self, id, r))?;
        }
        let lanes_only = MapNode {
            params: vec![lane.clone()],
            schedule: Schedule::Sequential,
            body: map.body.clone(),
        };
        if let Some(why) = parallel_conflict(&lanes_only, p) {
            return Err(refuse(self, id, format!("lanes conflict: {why}")));
        }
        Ok(())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        set_schedule(self, p, site[0], Schedule::Vector)
    }
}

/// Sets the schedule of map `id` (checked to be a map before).
pub(crate) fn set_schedule(
    t: &dyn Transformation,
    p: &mut Program,
    id: NodeId,
    schedule: Schedule,
) -> Result<Vec<NodeId>, NotApplicable> {
    let edit = p.edit(id).ok_or_else(|| refuse(t, id, "no such node"))?;
    match &mut edit.graph.node_mut(edit.idx).kind {
        NodeKind::Map(m) => {
            m.schedule = schedule;
            Ok(vec![id])
        }
        other => Err(refuse(
            t,
            id,
            format!("node is a {} node, not a map", other.kind_name()),
        )),
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
    let last = m.subset.rank().saturating_sub(1);
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
        if d != last || c != 1 {
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
                " (the backend emits no SIMD reduction)"
            } else {
                ""
            }
        ));
    }
    Ok(())
}
