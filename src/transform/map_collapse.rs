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

use super::{expect_map, refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{Graph, MapNode, Node, NodeId, NodeKind, Program, Schedule};

pub struct MapCollapse;

impl Transformation for MapCollapse {
    fn name(&self) -> &'static str {
        "MapCollapse"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "merge a map whose body is exactly one nested map into one map with both parameter lists"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p)
            .into_iter()
            .filter(|&id| {
                matches!(p.node(id).map(|n| &n.kind), Some(NodeKind::Map(m)) if only_map(&m.body).is_ok())
            })
            .map(|id| vec![id])
            .collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let inner = only_map(&map.body).map_err(|r| refuse(self, id, r))?;
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
        Ok(())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let id = site[0];
        let edit = p.edit(id).ok_or_else(|| refuse(self, id, "no such node"))?;
        let NodeKind::Map(outer) = &mut edit.graph.node_mut(edit.idx).kind else {
            return Err(refuse(self, id, "not a map"));
        };
        let mut body = std::mem::take(&mut outer.body);
        let inner = body
            .g
            .node_indices()
            .find(|&i| matches!(body.node(i).kind, NodeKind::Map(_)))
            .and_then(|i| body.g.remove_node(i));
        let Some(Node {
            id: inner_id,
            kind: NodeKind::Map(inner),
            ..
        }) = inner
        else {
            return Err(refuse(self, id, "the body holds no map"));
        };
        // The outer memlets stay as they are: the same points run the same body, and the
        // existing subsets were propagated one level at a time, which is never coarser.
        outer.params.extend(inner.params);
        outer.body = inner.body;
        Ok(vec![id, inner_id])
    }
}

/// The single map directly in `body`, when everything else there is an access node that only
/// connects to it.
fn only_map(body: &Graph) -> Result<&MapNode, String> {
    let mut found = None;
    for idx in body.ordered() {
        let n = body.node(idx);
        match &n.kind {
            NodeKind::Map(m) if found.is_none() => found = Some(m),
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
