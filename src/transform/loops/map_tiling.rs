//! MapTiling: split chosen parameters of a map into tiles.
//!
//! ```text
//! before:  map [i = 0:N, j = 0:M]            { body(i, j) }
//! after:   map [i_tile = 0:N:32]              {            // keeps the map's id and schedule
//!            map [i = i_tile:min(i_tile + 32, N), j = 0:M] { body(i, j) }
//!          }
//! ```
//! When the tile divides a constant extent, the inner range is exact (`i_tile:i_tile + 32`), so
//! the compiler sees a constant trip count and can keep a tile's accumulators in registers and
//! unroll; otherwise it is clipped with `min`, which covers the last, partial tile exactly.
//! Tile size 0 leaves a parameter untiled.

use crate::ir::{MapNode, MapParam, NodeId, Range, SymExpr};
use crate::transform::support::names::{fresh, taken_names};
use crate::transform::support::nest::nest;
use crate::transform::{
    expect_map, refuse, Call, Default, Level, ListLen, NodeClass, NotApplicable, ParamDecl,
    ParamKind, Plan, Role, Schema, Transformation,
};

pub struct MapTiling;

const SCHEMA: Schema = Schema {
    name: "MapTiling",
    level: Level::IntraOperator,
    doc:
        "split map parameters into tiles: an outer map over tiles around an inner map over one tile",
    site: &[Role::new("map", NodeClass::Map, "the map to tile")],
    params: &[ParamDecl {
        name: "tiles",
        kind: ParamKind::Ints {
            len: ListLen::PerMapParam,
            min: 0,
            max: i64::MAX,
        },
        default: Default::Required,
        doc: "tile size per map parameter, in order; 0 leaves that parameter untiled",
    }],
};

impl Transformation for MapTiling {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let tiles = args.ints("tiles")?.to_vec();
        if tiles.iter().all(|t| *t == 0) {
            return Err(refuse(self, id, "every tile size is 0: nothing to tile"));
        }
        self.tileable(map, id, &tiles)?;
        let taken = taken_names(p);
        // The tile parameters' names, chosen now (the rewrite runs without the original).
        let names: Vec<String> = (map.params.iter().zip(&tiles))
            .filter(|(_, &t)| t != 0)
            .map(|(prm, _)| fresh(&format!("{}_tile", prm.name), &taken))
            .collect();
        Ok(Plan::new(move |p| {
            let inner_id = nest(p, id, "tile", |original| split(original, &tiles, &names))
                .ok_or_else(|| refuse(&MapTiling, id, "not a map"))?;
            Ok(vec![id, inner_id])
        }))
    }
}

impl MapTiling {
    /// Every tiled parameter has a unit step and a range independent of its siblings.
    fn tileable(&self, map: &MapNode, id: NodeId, tiles: &[i64]) -> Result<(), NotApplicable> {
        for (prm, &t) in map.params.iter().zip(tiles) {
            if t == 0 {
                continue;
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
}

/// The outer (tile) and inner (within a tile) parameters for `original` tiled by `tiles`, the
/// tile parameters named `names` in order.
fn split(
    original: Vec<MapParam>,
    tiles: &[i64],
    names: &[String],
) -> (Vec<MapParam>, Vec<MapParam>) {
    let mut outer = Vec::new();
    let mut inner = Vec::new();
    let mut names = names.iter();
    for (prm, &t) in original.into_iter().zip(tiles) {
        if t == 0 {
            inner.push(prm);
            continue;
        }
        let tile_name = names
            .next()
            .cloned()
            .unwrap_or_else(|| format!("{}_tile", prm.name));
        let tile_var = SymExpr::sym(tile_name.as_str());
        let divides = (&prm.range.end - &prm.range.start)
            .as_int()
            .is_some_and(|extent| extent % t == 0);
        let tile_end = if divides {
            &tile_var + t
        } else {
            (&tile_var + t).min(prm.range.end.clone())
        };
        inner.push(MapParam {
            name: prm.name,
            range: Range::new(tile_var.clone(), tile_end),
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
}
