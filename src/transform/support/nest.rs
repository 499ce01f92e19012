//! Shared rewrite of MapTiling and MapExpansion: replace a map by an outer map (same id, same
//! schedule) whose body is one inner map holding the original body.

use crate::ir::{Graph, MapNode, MapParam, NodeId, NodeKind, Program, Schedule};

/// Rewrites map `id` so that `split(params)` gives the outer and inner parameter lists; returns
/// the inner map's new id, or `None` when `id` is not a map.
pub(crate) fn nest(
    p: &mut Program,
    id: NodeId,
    inner_suffix: &str,
    split: impl FnOnce(Vec<MapParam>) -> (Vec<MapParam>, Vec<MapParam>),
) -> Option<NodeId> {
    let mut edit = p.edit(id)?;
    let label = edit.graph.node(edit.idx).label.clone();
    let empty = MapNode {
        params: Vec::new(),
        schedule: Schedule::Sequential,
        min_work: 0,
        body: Graph::default(),
    };
    let map = match &mut edit.graph.node_mut(edit.idx).kind {
        NodeKind::Map(m) => std::mem::replace(m, empty),
        _ => return None,
    };
    let (outer_params, inner_params) = split(map.params);
    let inner_id = edit.fresh_id();
    let body = {
        let mut b = edit.builder();
        let inner = MapNode {
            params: inner_params,
            schedule: Schedule::Sequential,
            min_work: 0,
            body: map.body,
        };
        b.map_node(inner_id, &format!("{label}_{inner_suffix}"), inner);
        b.graph
    };
    if let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind {
        *m = MapNode {
            params: outer_params,
            schedule: map.schedule,
            min_work: map.min_work,
            body,
        };
    }
    let idx = edit.idx;
    edit.refresh_boundary(idx);
    Some(inner_id)
}
