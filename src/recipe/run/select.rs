//! Selections: `maps(…)`, `ops(…)`, `tasklets(…)` with their filters, and `uses(n)`.
//!
//! Handles come back in one deterministic order: program order (each scope's topological
//! order, smallest id first among ready nodes), a map's nested scope right after the map — the
//! order the engine lists candidates in.

use super::env::Interp;
use super::failure::{runtime, Flow};
use super::value::Value;
use crate::ir::{Graph, Node, NodeId, NodeKind, Schedule};
use crate::recipe::ast;

/// The node kinds a selection returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Select {
    Maps,
    Ops,
    Tasklets,
}

impl Interp<'_> {
    /// Readers of what node `id` writes: an access node's consumers, or the consumers of the
    /// access nodes another node writes, each counted once.
    pub fn uses(&self, id: NodeId) -> usize {
        // The same count as a pattern's `uses(x)` constraint.
        match self.p.graph.locate(id) {
            Some((g, idx)) => crate::pattern::readers(g, idx),
            None => 0,
        }
    }

    /// `maps(…)`, `ops(…)`, `tasklets(…)` with their filters.
    pub fn select(&mut self, what: Select, call: &ast::Call) -> Flow<Value> {
        let mut depth = None;
        let mut params = None;
        let mut schedule = None;
        let mut within = None;
        for a in &call.args {
            let Some(key) = &a.name else { continue };
            match key.name.as_str() {
                "depth" => depth = Some(self.int_arg(&a.value)?),
                "params" => params = Some(self.int_arg(&a.value)?),
                "schedule" => {
                    let w = self.word(&a.value)?;
                    let s = Schedule::from_name(&w).ok_or_else(|| {
                        runtime(
                            a.value.span,
                            format!(
                                "`{w}` is not a schedule (sequential, parallel, vector, unrolled)"
                            ),
                        )
                    })?;
                    schedule = Some(s);
                }
                "in" => within = Some(self.map_arg(&a.value)?.0),
                other => {
                    return Err(runtime(
                        key.span,
                        format!("`{}` has no filter `{other}`", call.callee.text()),
                    ))
                }
            }
        }
        let operator = match (what, call.args.iter().find(|a| a.name.is_none())) {
            (Select::Ops, Some(a)) => Some(self.word(&a.value)?),
            _ => None,
        };
        let (root, base) = match within {
            Some(id) => match self.p.node(id).map(|n| &n.kind) {
                Some(NodeKind::Map(m)) => (&m.body, 1 + self.depth_of(id)),
                _ => return Err(runtime(call.span, "`in` needs a map")),
            },
            None => (&self.p.graph, 0),
        };
        let mut out = Vec::new();
        walk_depth(root, base, &mut |n, d| {
            let keep = match (&n.kind, what) {
                (NodeKind::Map(m), Select::Maps) => {
                    depth.is_none_or(|want| want == d as i64)
                        && params.is_none_or(|want| want == m.params.len() as i64)
                        && schedule.is_none_or(|want| want == m.schedule)
                }
                (NodeKind::Library(l), Select::Ops) => operator.as_ref().is_none_or(|o| *o == l.op),
                (NodeKind::Tasklet(_), Select::Tasklets) => true,
                _ => false,
            };
            if keep {
                out.push(Value::Node(n.id));
            }
        });
        Ok(Value::List(out))
    }

    /// How many maps enclose node `id`.
    fn depth_of(&self, id: NodeId) -> usize {
        let mut found = 0;
        walk_depth(&self.p.graph, 0, &mut |n, d| {
            if n.id == id {
                found = d;
            }
        });
        found
    }
}

/// Visits every node in program order with the number of maps enclosing it.
fn walk_depth<'g>(g: &'g Graph, depth: usize, f: &mut dyn FnMut(&'g Node, usize)) {
    for idx in g.ordered() {
        let n = g.node(idx);
        f(n, depth);
        if let NodeKind::Map(m) = &n.kind {
            walk_depth(&m.body, depth + 1, f);
        }
    }
}
