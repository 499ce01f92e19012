//! Helpers shared by the intra-operator map transformations: reading integer parameters,
//! bounding trip counts and listing the element accesses a body makes.

use super::{ParamValue, Params};
use crate::ir::{Graph, Memlet, NodeKind, Range, SymEnv, SymExpr};

/// Integer parameter `name`: `Ok(None)` when absent, an error in words when it is not an integer.
pub(crate) fn int_param(params: &Params, name: &str) -> Result<Option<i64>, String> {
    match params.get(name) {
        None => Ok(None),
        Some(ParamValue::Int(v)) => Ok(Some(*v)),
        Some(ParamValue::Str(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("parameter `{name}` must be an integer, not `{s}`")),
        Some(ParamValue::Ints(v)) => Err(format!(
            "parameter `{name}` must be one integer, not the list {v:?}"
        )),
    }
}

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
