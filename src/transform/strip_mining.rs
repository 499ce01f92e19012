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

use super::map_support::{int_param, trip_bound};
use super::map_tiling::{fresh, taken_names};
use super::{
    expect_map, refuse, Level, NotApplicable, ParamSpec, ParamValue, Params, Transformation,
};
use crate::ir::{MapNode, MapParam, NodeId, NodeKind, Program, Range, SymExpr};

pub struct StripMining;

impl Transformation for StripMining {
    fn name(&self) -> &'static str {
        "StripMining"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "split one map parameter into strips of a fixed size, within the same map"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "param",
                kind: "str|int",
                doc: "the parameter to strip-mine, by name or position",
            },
            ParamSpec {
                name: "size",
                kind: "int",
                doc: "strip size (at least 2)",
            },
        ]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p).into_iter().map(|id| vec![id]).collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let (pos, size) = settings(map, params).map_err(|r| refuse(self, id, r))?;
        let prm = &map.params[pos];
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
        Ok(())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let id = site[0];
        let (pos, size) =
            settings(expect_map(self, p, id)?, params).map_err(|r| refuse(self, id, r))?;
        let taken = taken_names(p);
        let edit = p.edit(id).ok_or_else(|| refuse(self, id, "no such node"))?;
        let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind else {
            return Err(refuse(self, id, "not a map"));
        };
        let prm = m.params[pos].clone();
        let strip = fresh(&format!("{}_strip", prm.name), &taken);
        let var = SymExpr::sym(strip.as_str());
        m.params[pos].range = Range::new(var.clone(), (&var + size).min(prm.range.end.clone()));
        m.params.insert(
            pos,
            MapParam {
                name: strip,
                range: Range {
                    start: prm.range.start,
                    end: prm.range.end,
                    step: SymExpr::Int(size),
                },
            },
        );
        Ok(vec![id])
    }
}

/// The position of the parameter to strip-mine and the strip size.
fn settings(map: &MapNode, params: &Params) -> Result<(usize, i64), String> {
    let pos = match params.get("param") {
        None => {
            return Err("parameter `param` (a map parameter name or position) is required".into())
        }
        Some(ParamValue::Str(name)) => map
            .params
            .iter()
            .position(|q| q.name == *name)
            .ok_or_else(|| format!("the map has no parameter `{name}`"))?,
        Some(ParamValue::Int(k)) => usize::try_from(*k)
            .ok()
            .filter(|&k| k < map.params.len())
            .ok_or_else(|| {
                format!(
                    "position {k} is outside the map's {} parameters",
                    map.params.len()
                )
            })?,
        Some(ParamValue::Ints(v)) => {
            return Err(format!(
                "`param` must name one parameter, not the list {v:?}"
            ))
        }
    };
    let size = int_param(params, "size")?.ok_or("parameter `size` is required")?;
    if size < 2 {
        return Err(format!("strip size {size} must be at least 2"));
    }
    Ok((pos, size))
}
