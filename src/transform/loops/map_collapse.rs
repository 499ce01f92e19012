//! MapCollapse: merge a map whose body is exactly one nested map into a single map.
//!
//! ```text
//! before:  map [i = 0:M] {                        // keeps this id and schedule
//!            map [j = 0:N, k = i:K] { body(i, j, k) }
//!          }
//! after:   map [i = 0:M, j = 0:N, k = i:K] { body(i, j, k) }
//! ```
//! The inverse of MapExpansion. With nothing between the two loops, every point of the nested
//! iteration space runs the same body, so one map with the concatenated parameters is the same
//! computation; an inner range may use the outer parameters because a map's parameters are bound
//! in order. The inner map must be sequential: its schedule would otherwise be lost.

use crate::ir::{Graph, MapNode, Node, NodeId, NodeKind, Program, Schedule};
use crate::transform::{
    expect_map, map_sites, refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema,
    Transformation,
};

pub struct MapCollapse;

const SCHEMA: Schema = Schema {
    name: "MapCollapse",
    level: Level::IntraOperator,
    doc: "merge a map whose body is exactly one nested map into one map with both parameter lists",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the outer map, whose body is exactly one nested map",
    )],
    params: &[],
};

impl Transformation for MapCollapse {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        map_sites(p, |m| only_map(&m.body).is_ok())
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, .. } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let (inner_id, inner) = only_map(&map.body).map_err(|r| refuse(self, id, r))?;
        if inner.schedule != Schedule::Sequential {
            return Err(refuse(
                self,
                id,
                format!(
                    "the inner map is {}; collapsing would drop its schedule",
                    inner.schedule.name()
                ),
            ));
        }
        Ok(Plan::new(move |p| collapse(p, id, inner_id)))
    }
}

/// Replaces map `id`'s body by the body of its nested map `inner_id`, appending the nested
/// parameters to its own.
fn collapse(p: &mut Program, id: NodeId, inner_id: NodeId) -> Result<Vec<NodeId>, NotApplicable> {
    let edit = (p.edit(id)).ok_or_else(|| refuse(&MapCollapse, id, "no such node"))?;
    let NodeKind::Map(outer) = &mut edit.graph.node_mut(edit.idx).kind else {
        return Err(refuse(&MapCollapse, id, "not a map"));
    };
    let inner = (outer.body.index_of(inner_id)).and_then(|i| outer.body.remove_node(i));
    let Some(Node {
        kind: NodeKind::Map(inner),
        ..
    }) = inner
    else {
        return Err(refuse(
            &MapCollapse,
            id,
            format!("the body holds no map {inner_id}"),
        ));
    };
    // The outer memlets stay as they are: the same points run the same body, and the
    // existing subsets were propagated one level at a time, which is never coarser.
    outer.params.extend(inner.params);
    outer.body = inner.body;
    Ok(vec![id, inner_id])
}

/// The single map directly in `body`, when everything else there is an access node that only
/// connects to it, with its id.
fn only_map(body: &Graph) -> Result<(NodeId, &MapNode), String> {
    let mut found = None;
    for idx in body.ordered() {
        let n = body.node(idx);
        match &n.kind {
            NodeKind::Map(m) if found.is_none() => found = Some((n.id, m)),
            NodeKind::Map(_) => {
                return Err(format!(
                    "the body holds more than one map (second: {})",
                    n.id
                ))
            }
            NodeKind::Access(d) => {
                let copies = body
                    .out_edges(idx)
                    .iter()
                    .any(|e| matches!(body.node(e.other).kind, NodeKind::Access(_)));
                if copies {
                    return Err(format!(
                        "the body copies `{d}` between access nodes (node {})",
                        n.id
                    ));
                }
            }
            other => {
                return Err(format!(
                    "the body holds {} node {}, not only a nested map",
                    other.kind_name(),
                    n.id
                ))
            }
        }
    }
    found.ok_or_else(|| "the body holds no nested map".to_string())
}
