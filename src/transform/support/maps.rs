//! Helpers shared by the map transformations: bounding trip counts, listing the element
//! accesses a body makes and setting a map's schedule.

use crate::ir::{Graph, Memlet, NodeId, NodeKind, Program, Range, Schedule, SymEnv, SymExpr};
use crate::transform::{refuse, NotApplicable, Transformation};

/// The largest number of iterations `r` can have under `env`: its length when that evaluates,
/// otherwise, for a clipped tile range `t : min(t + T, N)`, the smallest bound among the `min`
/// arguments that evaluates (here `T`).
pub(crate) fn trip_bound(r: &Range, env: &SymEnv) -> Option<i64> {
    if let Ok(n) = r.len().eval(env) {
        return Some(n);
    }
    let SymExpr::Min(a, b) = &r.end else {
        return None;
    };
    if r.step != SymExpr::Int(1) {
        return None;
    }
    [a, b]
        .iter()
        .filter_map(|e| (e.as_ref() - &r.start).eval(env).ok())
        .min()
}

/// One tasklet memlet directly in a body: the memlet and whether it writes.
pub(crate) struct ElementAccess<'g> {
    pub memlet: &'g Memlet,
    pub write: bool,
}

/// Every memlet between a tasklet and an access node directly in `body` (not in nested maps),
/// in the body's deterministic order.
pub(crate) fn tasklet_accesses(body: &Graph) -> Vec<ElementAccess<'_>> {
    let mut out = Vec::new();
    for idx in body.ordered() {
        if !matches!(body.node(idx).kind, NodeKind::Tasklet(_)) {
            continue;
        }
        for e in body.in_edges(idx) {
            out.push(ElementAccess {
                memlet: e.memlet,
                write: false,
            });
        }
        for e in body.out_edges(idx) {
            out.push(ElementAccess {
                memlet: e.memlet,
                write: true,
            });
        }
    }
    out
}

/// The first nested map directly in `body`, if any.
pub(crate) fn first_nested_map(body: &Graph) -> Option<crate::ir::NodeId> {
    body.ordered()
        .into_iter()
        .map(|i| body.node(i))
        .find(|n| matches!(n.kind, NodeKind::Map(_)))
        .map(|n| n.id)
}

pub(crate) use crate::check::race::{access_count, private_to_body};

/// Estimated work (iterations × tasklets) below which a parallel map runs on one thread: the
/// default of Parallelize's `min_work`, and what maps created parallel get. About 0.1 ms of
/// scalar work: on a virtual machine a thread asleep at a barrier can take that long to wake
/// (a LayerNorm of 128 × 768 in 5 work-shared maps took 0.67 ms on 2 threads in some runs and
/// 0.014 ms in others, 0.025 ms on one thread every time).
pub(crate) const MIN_PARALLEL_WORK: u64 = 262_144;

/// Sets the schedule of map `id` (checked to be a map before).
pub(crate) fn set_schedule(
    t: &dyn Transformation,
    p: &mut Program,
    id: NodeId,
    schedule: Schedule,
    min_work: u64,
) -> Result<Vec<NodeId>, NotApplicable> {
    let edit = p.edit(id).ok_or_else(|| refuse(t, id, "no such node"))?;
    match &mut edit.graph.node_mut(edit.idx).kind {
        NodeKind::Map(m) => {
            m.schedule = schedule;
            m.min_work = min_work;
            Ok(vec![id])
        }
        other => Err(refuse(
            t,
            id,
            format!("node is a {} node, not a map", other.kind_name()),
        )),
    }
}
