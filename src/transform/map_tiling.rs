//! MapTiling: split chosen parameters of a map into tiles.
//!
//! ```text
//! before:  map [i = 0:N, j = 0:M]            { body(i, j) }
//! after:   map [i_tile = 0:N:32]              {            // keeps the map's id and schedule
//!            map [i = i_tile:min(i_tile + 32, N), j = 0:M] { body(i, j) }
//!          }
//! ```
//! The inner range is clipped with `min`, so sizes that the tile does not divide are covered
//! exactly. Tile size 0 leaves a parameter untiled.

use super::{
    expect_map, ints_param, refuse, Level, NotApplicable, ParamSpec, Params, Transformation,
};
use crate::ir::{MapParam, NodeId, NodeKind, Program, Range, SymExpr};

pub struct MapTiling;

impl Transformation for MapTiling {
    fn name(&self) -> &'static str {
        "MapTiling"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "split map parameters into tiles: an outer map over tiles around an inner map over one tile"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "tiles",
            kind: "ints",
            doc: "tile size per map parameter, in order; 0 leaves that parameter untiled",
        }]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p).into_iter().map(|id| vec![id]).collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let tiles = tiles(params, map.params.len()).map_err(|r| refuse(self, id, r))?;
        if tiles.iter().all(|t| *t == 0) {
            return Err(refuse(self, id, "every tile size is 0: nothing to tile"));
        }
        for (prm, &t) in map.params.iter().zip(&tiles) {
            if t == 0 {
                continue;
            }
            if t < 0 {
                return Err(refuse(
                    self,
                    id,
                    format!("tile size {t} for `{}` is negative", prm.name),
                ));
            }
            if prm.range.step != SymExpr::Int(1) {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "parameter `{}` has step {}; only unit-step ranges are tiled",
                        prm.name, prm.range.step
                    ),
                ));
            }
            let mentions_sibling = map.params.iter().any(|q| {
                q.name != prm.name
                    && (prm.range.start.mentions(&q.name) || prm.range.end.mentions(&q.name))
            });
            if mentions_sibling {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "the range of `{}` depends on another parameter of the same map",
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
        let taken = taken_names(p);
        let tiles = tiles(params, expect_map(self, p, id)?.params.len())
            .map_err(|r| refuse(self, id, r))?;
        let inner_id = super::nest::nest(p, id, "tile", |original| {
            let mut outer = Vec::new();
            let mut inner = Vec::new();
            for (prm, &t) in original.into_iter().zip(&tiles) {
                if t == 0 {
                    inner.push(prm);
                    continue;
                }
                let tile_name = fresh(&format!("{}_tile", prm.name), &taken);
                let tile_var = SymExpr::sym(tile_name.as_str());
                inner.push(MapParam {
                    name: prm.name,
                    range: Range::new(tile_var.clone(), (&tile_var + t).min(prm.range.end.clone())),
                });
                outer.push(MapParam {
                    name: tile_name,
                    range: Range {
                        start: prm.range.start,
                        end: prm.range.end,
                        step: SymExpr::Int(t),
                    },
                });
            }
            (outer, inner)
        })
        .ok_or_else(|| refuse(self, id, "not a map"))?;
        Ok(vec![id, inner_id])
    }
}

fn tiles(params: &Params, n: usize) -> Result<Vec<i64>, String> {
    let tiles =
        ints_param(params, "tiles").ok_or("parameter `tiles` is required (e.g. tiles=32,32,0)")?;
    if tiles.len() != n {
        return Err(format!(
            "`tiles` has {} entries but the map has {n} parameters",
            tiles.len()
        ));
    }
    Ok(tiles)
}

/// Every map parameter name used anywhere, plus symbols and containers.
pub(crate) fn taken_names(p: &Program) -> Vec<String> {
    let mut names: Vec<String> = p.symbols.keys().chain(p.data.keys()).cloned().collect();
    p.graph.walk(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            names.extend(m.params.iter().map(|q| q.name.clone()));
        }
    });
    names
}

/// `base`, or `base_2`, `base_3`, … — the first not in `taken`.
pub(crate) fn fresh(base: &str, taken: &[String]) -> String {
    std::iter::once(base.to_string())
        .chain((2..).map(|k| format!("{base}_{k}")))
        .find(|n| !taken.contains(n))
        .expect("unbounded names")
}
