//! MapExpansion: split one map into two nested maps.
//!
//! ```text
//! before:  map [b = 0:B, i = 0:M, k = 0:K, j = 0:N] { … }
//! after:   map [b = 0:B, i = 0:M] {                      // keeps the id and schedule
//!            map [k = 0:K, j = 0:N] { … }
//!          }                                             // split = 2
//! ```
//! Nesting lets the outer parameters be scheduled (e.g. parallel) on their own while the inner
//! ones stay sequential, so a reduction over inner parameters needs no atomics.

use super::{
    expect_map, refuse, Level, NotApplicable, ParamSpec, ParamValue, Params, Transformation,
};
use crate::ir::{NodeId, Program};

pub struct MapExpansion;

impl Transformation for MapExpansion {
    fn name(&self) -> &'static str {
        "MapExpansion"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "split a map into an outer map over its first parameters and an inner map over the rest"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "split",
            kind: "int",
            doc: "how many leading parameters stay in the outer map",
        }]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p).into_iter().map(|id| vec![id]).collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let split = split(params)
            .ok_or_else(|| refuse(self, id, "parameter `split` (an integer) is required"))?;
        if split == 0 || split >= map.params.len() {
            return Err(refuse(
                self,
                id,
                format!(
                    "split {split} must leave at least one parameter on each side of the map's {}",
                    map.params.len()
                ),
            ));
        }
        let (outer, inner) = map.params.split_at(split);
        for o in outer {
            if let Some(i) = inner.iter().find(|i| {
                [&o.range.start, &o.range.end, &o.range.step]
                    .iter()
                    .any(|e| e.mentions(&i.name))
            }) {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "the range of outer parameter `{}` depends on inner parameter `{}`",
                        o.name, i.name
                    ),
                ));
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
        let split = split(params).unwrap_or(1);
        let inner_id = super::nest::nest(p, id, "inner", |mut outer| {
            let inner = outer.split_off(split);
            (outer, inner)
        })
        .ok_or_else(|| refuse(self, id, "not a map"))?;
        Ok(vec![id, inner_id])
    }
}

fn split(params: &Params) -> Option<usize> {
    match params.get("split")? {
        ParamValue::Int(v) => usize::try_from(*v).ok(),
        ParamValue::Str(s) => s.trim().parse().ok(),
        ParamValue::Ints(_) => None,
    }
}
