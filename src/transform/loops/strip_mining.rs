//! StripMining: split one parameter of a map into strips, inside the same map.
//!
//! ```text
//! before:  map [i = 0:N, j = 0:M]                                        { body(i, j) }
//! after:   map [i_strip = 0:N:S, i = i_strip:min(i_strip + S, N), j = 0:M] { body(i, j) }
//! ```
//! Unlike MapTiling, no inner map is created: the strip loop is inserted right before the
//! parameter in the same map, so the parameters after it stay together (a later Vectorize or
//! Unroll still sees them as the map's innermost loop). The `min` clips the last strip, so sizes
//! that `S` does not divide are covered exactly; the body and the map's memlets are unchanged
//! because the iteration space is the same set of points.

use crate::ir::{MapParam, NodeId, NodeKind, Program, Range, SymExpr};
use crate::transform::support::maps::trip_bound;
use crate::transform::support::names::{fresh, taken_names};
use crate::transform::{
    expect_map, refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan,
    Role, Schema, Transformation,
};

pub struct StripMining;

const SCHEMA: Schema = Schema {
    name: "StripMining",
    level: Level::IntraOperator,
    doc: "split one map parameter into strips of a fixed size, within the same map",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the map holding the parameter",
    )],
    params: &[
        ParamDecl {
            name: "param",
            kind: ParamKind::MapParam,
            default: Default::Required,
            doc: "the parameter to strip-mine, by name or position",
        },
        ParamDecl {
            name: "size",
            kind: ParamKind::Int {
                min: 2,
                max: i64::MAX,
            },
            default: Default::Required,
            doc: "strip size (at least 2)",
        },
    ],
};

impl Transformation for StripMining {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let size = args.int("size")?;
        let pos = args.int("param")?;
        let (pos, prm) = usize::try_from(pos)
            .ok()
            .and_then(|k| Some((k, map.params.get(k)?)))
            .ok_or_else(|| {
                refuse(
                    self,
                    id,
                    format!(
                        "position {pos} is outside the map's {} parameters",
                        map.params.len()
                    ),
                )
            })?;
        if prm.range.step != SymExpr::Int(1) {
            return Err(refuse(
                self,
                id,
                format!(
                    "parameter `{}` has step {}; only unit-step ranges are strip-mined",
                    prm.name, prm.range.step
                ),
            ));
        }
        if let Some(q) = map.params.iter().find(|q| {
            q.name != prm.name
                && (prm.range.start.mentions(&q.name) || prm.range.end.mentions(&q.name))
        }) {
            return Err(refuse(
                self,
                id,
                format!("the range of `{}` depends on `{}`", prm.name, q.name),
            ));
        }
        if let Some(trip) = trip_bound(&prm.range, &p.symbol_values()) {
            if trip <= size {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "`{}` runs at most {trip} times, not more than the strip size {size}: nothing to strip-mine",
                        prm.name
                    ),
                ));
            }
        }
        let strip = fresh(&format!("{}_strip", prm.name), &taken_names(p));
        Ok(Plan::new(move |p| strip_mine(p, id, pos, &strip, size)))
    }
}

/// Inserts the strip parameter `strip` (step `size`) before parameter `pos` of map `id` and
/// narrows that parameter to one strip.
fn strip_mine(
    p: &mut Program,
    id: NodeId,
    pos: usize,
    strip: &str,
    size: i64,
) -> Result<Vec<NodeId>, NotApplicable> {
    let edit = (p.edit(id)).ok_or_else(|| refuse(&StripMining, id, "no such node"))?;
    let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind else {
        return Err(refuse(&StripMining, id, "not a map"));
    };
    let prm = (m.params.get_mut(pos))
        .ok_or_else(|| refuse(&StripMining, id, format!("the map has no parameter {pos}")))?;
    let whole = prm.range.clone();
    let var = SymExpr::sym(strip);
    prm.range = Range::new(var.clone(), (&var + size).min(whole.end.clone()));
    m.params.insert(
        pos,
        MapParam {
            name: strip.to_string(),
            range: Range {
                start: whole.start,
                end: whole.end,
                step: SymExpr::Int(size),
            },
        },
    );
    Ok(vec![id])
}
