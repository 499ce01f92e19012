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

use crate::transform::support::nest::nest;
use crate::transform::{
    expect_map, refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan,
    Role, Schema, Transformation,
};

pub struct MapExpansion;

const SCHEMA: Schema = Schema {
    name: "MapExpansion",
    level: Level::IntraOperator,
    doc: "split a map into an outer map over its first parameters and an inner map over the rest",
    site: &[Role::new("map", NodeClass::Map, "the map to split in two")],
    params: &[ParamDecl {
        name: "split",
        kind: ParamKind::Int {
            min: 1,
            max: i64::MAX,
        },
        default: Default::Required,
        doc: "how many leading parameters stay in the outer map",
    }],
};

impl Transformation for MapExpansion {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let split = args.int("split")?;
        let split = usize::try_from(split)
            .ok()
            .filter(|&s| s > 0 && s < map.params.len())
            .ok_or_else(|| {
                refuse(
                    self,
                    id,
                    format!(
                    "split {split} must leave at least one parameter on each side of the map's {}",
                    map.params.len()
                ),
                )
            })?;
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
        Ok(Plan::new(move |p| {
            let inner_id = nest(p, id, "inner", |mut outer| {
                let inner = outer.split_off(split.min(outer.len()));
                (outer, inner)
            })
            .ok_or_else(|| refuse(&MapExpansion, id, "not a map"))?;
            Ok(vec![id, inner_id])
        }))
    }
}
