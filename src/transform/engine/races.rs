//! The engine's own legality check on the rewritten program: every parallel map must be free of
//! conflicting iterations. It does not trust the transformation's preconditions, so a
//! transformation (built-in, scripted or buggy) that schedules a racy map in parallel is refused.
//!
//! Whether a map's iterations conflict depends on its subtree and the declarations only, so
//! after a step only the parallel maps that are or contain a changed node are checked (every
//! one when a declaration changed); the engine's full-check mode checks them all and compares.

use super::diff::Changes;
use crate::check::race::parallel_conflict;
use crate::ir::{Graph, Node, NodeId, NodeKind, Program, Schedule};

/// The first parallel map of `after` (outer maps first, then by id) whose iterations conflict, and why —
/// unless the same map already conflicted in `before` (a race the step did not introduce).
/// With `changed`, only the maps the step changed are looked at.
pub(super) fn new_race(
    before: &Program,
    after: &Program,
    changed: Option<&Changes>,
) -> Option<(NodeId, String)> {
    let mut found = Vec::new();
    races(after, &after.graph, changed, &mut found);
    found.into_iter().find(|(id, _)| {
        let old = before.graph.locate(*id).map(|(g, i)| g.node(i));
        !old.is_some_and(|n| match &n.kind {
            NodeKind::Map(m) => {
                m.schedule == Schedule::Parallel && parallel_conflict(m, before).is_some()
            }
            _ => false,
        })
    })
}

/// Every parallel map of `g` and its nested scopes whose iterations conflict and that changed
/// (every one without `changed`), outer maps first and by id within a scope, with the reason. An unchanged map's body
/// is not entered: nothing in it changed.
fn races(p: &Program, g: &Graph, changed: Option<&Changes>, found: &mut Vec<(NodeId, String)>) {
    // By id, not in topological order: sorting the whole scope would cost more than the check.
    let mut maps: Vec<&Node> = (g.nodes())
        .filter(|n| matches!(n.kind, NodeKind::Map(_)))
        .filter(|n| changed.is_none_or(|c| c.changed_map(n.id)))
        .collect();
    maps.sort_by_key(|n| n.id);
    for n in maps {
        let NodeKind::Map(m) = &n.kind else { continue };
        if m.schedule == Schedule::Parallel {
            found.extend(parallel_conflict(m, p).map(|why| (n.id, why)));
        }
        races(p, &m.body, changed, found);
    }
}
