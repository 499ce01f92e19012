//! MapInterchange: reorder the parameters of one map (the loop order of its nest).
//!
//! ```text
//! before:  map [i = 0:M, j = 0:N, k = 0:K] { C[i, j] += A[i, k] * B[k, j] }
//! after:   map [i = 0:M, k = 0:K, j = 0:N] { … }      // order = 0,2,1
//! ```
//! A map's iterations are unordered by definition, so any order is legal as long as no range
//! refers to a sibling parameter; only the floating-point order of resolved (wcr) sums changes.

use super::{
    expect_map, ints_param, refuse, Level, NotApplicable, ParamSpec, Params, Transformation,
};
use crate::ir::{NodeId, NodeKind, Program};

pub struct MapInterchange;

impl Transformation for MapInterchange {
    fn name(&self) -> &'static str {
        "MapInterchange"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "reorder a map's parameters (loop interchange)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "order",
            kind: "ints",
            doc: "new position → old parameter index, a permutation",
        }]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p).into_iter().map(|id| vec![id]).collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let order = ints_param(params, "order")
            .ok_or_else(|| refuse(self, id, "parameter `order` is required (e.g. order=0,2,1)"))?;
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if sorted != (0..map.params.len() as i64).collect::<Vec<_>>() {
            return Err(refuse(
                self,
                id,
                format!(
                    "order {order:?} is not a permutation of the map's {} parameters",
                    map.params.len()
                ),
            ));
        }
        for prm in &map.params {
            if let Some(q) = map.params.iter().find(|q| {
                q.name != prm.name
                    && [&prm.range.start, &prm.range.end, &prm.range.step]
                        .iter()
                        .any(|e| e.mentions(&q.name))
            }) {
                return Err(refuse(self, id, format!("the range of `{}` depends on `{}`; interchange would change the iteration space", prm.name, q.name)));
            }
        }
        Ok(())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let id = site[0];
        let order = ints_param(params, "order").unwrap_or_default();
        let edit = p.edit(id).ok_or_else(|| refuse(self, id, "no such node"))?;
        if let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind {
            let old = m.params.clone();
            m.params = order.iter().map(|&k| old[k as usize].clone()).collect();
        }
        Ok(vec![id])
    }
}
