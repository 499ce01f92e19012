//! The graph surgery shared by the fusions that merge two maps of one scope into one: the two
//! map nodes leave, a fused map takes the surviving id, and every edge the two had to the rest of
//! the scope is reconnected to it once (an input both read from the same access node becomes
//! one edge). Outer subsets are left to `ScopeEdit::refresh_boundary`.

use crate::ir::{Graph, MapNode, Memlet, Node, NodeId, NodeKind};
use petgraph::stable_graph::NodeIndex;

/// Replaces the maps at `first` and `second` by `fuse(first_map, second_map)`, which gets id `id`
/// and `second`'s label when `label_of_second`, else `first`'s. The nodes in `drop` (e.g. the
/// access node that linked a producer to its consumer) are removed with their edges. Returns the
/// fused node's index, or `None` when either node is not a map of `g` (nothing is changed then).
pub(crate) fn replace_pair(
    g: &mut Graph,
    (first, second): (NodeIndex, NodeIndex),
    drop: &[NodeIndex],
    (id, label_of_second): (NodeId, bool),
    fuse: impl FnOnce(MapNode, MapNode) -> MapNode,
) -> Option<NodeIndex> {
    let is_map = |i: NodeIndex| matches!(g.get_node(i).map(|n| &n.kind), Some(NodeKind::Map(_)));
    if first == second || !is_map(first) || !is_map(second) {
        return None;
    }
    let mut wiring: Vec<(NodeIndex, bool, Memlet)> = Vec::new();
    for side in [first, second] {
        for e in g.in_edges(side) {
            if !drop.contains(&e.other) && e.other != first && e.other != second {
                wiring.push((e.other, true, e.memlet.clone()));
            }
        }
        for e in g.out_edges(side) {
            if !drop.contains(&e.other) && e.other != first && e.other != second {
                wiring.push((e.other, false, e.memlet.clone()));
            }
        }
    }
    let label = g
        .node(if label_of_second { second } else { first })
        .label
        .clone();
    let take = |g: &mut Graph, i: NodeIndex| match g.remove_node(i).map(|n| n.kind) {
        Some(NodeKind::Map(m)) => Some(m),
        _ => None,
    };
    let a = take(g, first)?;
    let b = take(g, second)?;
    for &d in drop {
        g.remove_node(d);
    }
    let fused = g.add_node(Node {
        id,
        label,
        kind: NodeKind::Map(fuse(a, b)),
    });
    let mut seen: Vec<(NodeIndex, bool, String)> = Vec::new();
    for (other, incoming, m) in wiring {
        let key = (other, incoming, m.data.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        if incoming {
            g.add_edge(other, fused, m);
        } else {
            g.add_edge(fused, other, m);
        }
    }
    Some(fused)
}
