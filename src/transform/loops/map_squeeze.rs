//! MapSqueeze: drop the parameters of a map that take a single value.
//!
//! ```text
//! before:  map [b = 0:1, i = 0:M, j = 0:N, k = 0:K] { C[b, i, j] += A[b, i, k] * B[k, j] }
//! after:   map [i = 0:M, j = 0:N, k = 0:K]         { C[0, i, j] += A[0, i, k] * B[k, j] }
//! ```
//! Exporters write batch 1 and broadcasts as dimensions of extent 1, and every expansion gives
//! them a parameter. The map runs the same points without it, but the parameter is in the way
//! of everything that looks at a map's shape: a product `[b, i, j, k]` is not the `[i, j, k]`
//! contraction a GEMM schedule matches, and a producer writing `o[b, i, j]` does not fuse with
//! a consumer reading `o[0, i, j]`. Each such parameter is replaced by its value everywhere
//! (memlets, nested ranges, tasklet indices); at least one parameter stays, since a map
//! needs one.

use crate::ir::rewrite::substitute_symbols;
use crate::ir::{MapNode, MapParam, NodeId, NodeKind, Program, SymExpr};
use crate::transform::{
    expect_map, map_sites, refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema,
    Transformation,
};

pub struct MapSqueeze;

const SCHEMA: Schema = Schema {
    name: "MapSqueeze",
    level: Level::IntraOperator,
    doc: "drop a map's parameters of extent 1, replacing each by its single value",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the map with parameters of extent 1",
    )],
    params: &[],
};

impl Transformation for MapSqueeze {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        map_sites(p, |m| squeezed(m).is_ok())
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, .. } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let (kept, values) = squeezed(map).map_err(|r| refuse(self, id, r))?;
        Ok(Plan::new(move |p| {
            let edit = (p.edit(id)).ok_or_else(|| refuse(&MapSqueeze, id, "no such node"))?;
            let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind else {
                return Err(refuse(&MapSqueeze, id, "not a map"));
            };
            let value = |name: &str| value_of(&values, name);
            m.params = kept
                .iter()
                .map(|prm| MapParam {
                    name: prm.name.clone(),
                    range: prm.range.map_exprs(&|e| e.substitute_all(&value)),
                })
                .collect();
            substitute_symbols(&mut m.body, &value);
            Ok(vec![id])
        }))
    }
}

/// The value each dropped parameter takes, by name.
type Values = Vec<(String, SymExpr)>;

/// The value of the dropped parameter `name`, if it is one.
fn value_of(values: &Values, name: &str) -> Option<SymExpr> {
    values
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

/// The parameters that stay and the value of each dropped one, or why there is nothing to drop.
fn squeezed(map: &MapNode) -> Result<(Vec<MapParam>, Values), String> {
    let (single, kept): (Vec<&MapParam>, Vec<&MapParam>) =
        map.params.iter().partition(|prm| single_value(prm));
    if single.is_empty() {
        return Err("no parameter of the map has extent 1".to_string());
    }
    if kept.is_empty() {
        return Err(format!(
            "every parameter has extent 1; a map keeps at least one (`{}`)",
            map.params[0].name
        ));
    }
    // A range may name earlier parameters, so each value is resolved through the ones before.
    let mut values: Values = Vec::new();
    for prm in single {
        let start = (prm.range.start).substitute_all(&|name: &str| value_of(&values, name));
        values.push((prm.name.clone(), start));
    }
    Ok((kept.into_iter().cloned().collect(), values))
}

/// The range runs exactly one iteration: a constant extent between 1 and the step.
fn single_value(prm: &MapParam) -> bool {
    let extent = (&prm.range.end - &prm.range.start).simplify().as_int();
    let step = prm.range.step.as_int();
    matches!((extent, step), (Some(e), Some(s)) if e >= 1 && e <= s)
}
