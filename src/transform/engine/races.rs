//! The engine's own legality check on the rewritten program: every parallel map must be free of
//! conflicting iterations. It does not trust the transformation's preconditions, so a
//! transformation (built-in, scripted or buggy) that schedules a racy map in parallel is refused.

use crate::check::race::parallel_conflict;
use crate::ir::{NodeId, NodeKind, Program, Schedule};

/// The first parallel map of `after` (outer maps first) whose iterations conflict, and why —
/// unless the same map already conflicted in `before` (a race the step did not introduce).
pub(super) fn new_race(before: &Program, after: &Program) -> Option<(NodeId, String)> {
    let found = races(after);
    if found.is_empty() {
        return None;
    }
    let old: Vec<NodeId> = races(before).into_iter().map(|(id, _)| id).collect();
    found.into_iter().find(|(id, _)| !old.contains(id))
}

/// Every parallel map whose iterations conflict, outer maps first, with the reason.
fn races(p: &Program) -> Vec<(NodeId, String)> {
    let mut found = Vec::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            if m.schedule == Schedule::Parallel {
                found.extend(parallel_conflict(m, p).map(|why| (n.id, why)));
            }
        }
    });
    found
}
