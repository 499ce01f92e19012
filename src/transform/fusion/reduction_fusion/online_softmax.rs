//! ReductionFusion's `mode=online`: softmax's max pass and sum pass become one pass with the
//! online rescaling, so a row is read twice (statistics, then normalization) instead of three
//! times.
//!
//! ```text
//! fused (mode=passes):                     online:
//!   map [c = 0:1] { m = -inf }               map [c = 0:1] { m = -inf }
//!   map [c = 0:C] { m (max)= x }             map [c = 0:1] { s = 0 }
//!   map [c = 0:1] { s = 0 }                  map [c = 0:C] sequential {
//!   map [c = 0:C] { s (+)= exp(x − m) }        m' = max(m, x)
//!   map [c = 0:C] { y = exp(x − m) / s }       s' = s·exp(m − m') + exp(x − m')    (m, s := m', s')
//!                                            }
//!                                            map [c = 0:C] { y = exp(x − m) / s }
//! ```
//! Why the pass is a sequential map and not a write-conflict resolution: a resolution combines
//! one container with one associative operator, but here two accumulators are coupled (the new
//! sum depends on the old and new maximum), which no `Wcr` expresses. So the merged tasklet reads
//! both registers and writes both back without resolution, in a map scheduled sequentially:
//! every iteration depends on the previous one. (The race analysis in `check::race` only looks at
//! global containers, so it does not see this carried register state; the map must stay
//! sequential.) Both registers are read before
//! either is written (tasklet inputs are values taken on entry), and `exp(m − m')` with
//! `m = −∞` on the first element is `0`, so no special first iteration is needed. Every
//! exponent is `≤ 0`, as in the max-shifted two-pass form: large inputs cannot overflow.
//!
//! The passes are recognised by structure in the fused row map's inner maps: a pass reducing a
//! value `v` into register `m` with `max`, and a later pass over the same inner parameters
//! reducing `exp(v − m)` into register `s` with `+` (`v` compared by the data and subsets it
//! reads, not by connector names).
//!
//! The pass-matching helpers here (a pass's single reduction, expressions compared by the data
//! they read, carrying a register through a merged tasklet) are shared with [`super::welford`].

use crate::ir::{
    BinOp, Graph, MapNode, Memlet, Node, NodeId, NodeKind, Schedule, Subset, TExpr, Tasklet, UnOp,
    Wcr,
};
use crate::transform::support::maps::access_count;
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// An inner pass of a fused row map: its id, label and map.
pub(crate) type Pass = (NodeId, String, MapNode);

/// The max and sum passes that merge, by position in the inner passes.
pub(crate) struct Merge {
    max: usize,
    sum: usize,
    m: String,
    s: String,
}

impl Merge {
    /// The same merge with its registers renamed through `names` (a register not in `names`
    /// keeps its name): found on the passes with the statistics' names, applied to the passes
    /// with their registers.
    pub(crate) fn renamed(mut self, names: &BTreeMap<String, String>) -> Merge {
        for r in [&mut self.m, &mut self.s] {
            if let Some(n) = names.get(r.as_str()) {
                *r = n.clone();
            }
        }
        self
    }
}

/// The single tasklet of a body writing one output: its index, output connector, expression and
/// the write's memlet.
pub(super) struct Reduction<'g> {
    pub(super) idx: NodeIndex,
    pub(super) conn: String,
    pub(super) expr: &'g TExpr,
    pub(super) write: &'g Memlet,
}

pub(super) fn reduction(body: &Graph) -> Option<Reduction<'_>> {
    let tasklets: Vec<NodeIndex> = body
        .ordered()
        .into_iter()
        .filter(|&i| matches!(body.node(i).kind, NodeKind::Tasklet(_)))
        .collect();
    let [idx] = tasklets.as_slice() else {
        return None;
    };
    let NodeKind::Tasklet(t) = &body.node(*idx).kind else {
        return None;
    };
    let [(conn, expr)] = t.outputs.as_slice() else {
        return None;
    };
    let outs = body.out_edges(*idx);
    let [e] = outs.as_slice() else {
        return None;
    };
    Some(Reduction {
        idx: *idx,
        conn: conn.clone(),
        expr,
        write: e.memlet,
    })
}

/// `expr` with every input connector replaced by the data and subset it reads, so expressions
/// of two tasklets can be compared.
pub(super) fn canonical(body: &Graph, tasklet: NodeIndex, expr: &TExpr) -> TExpr {
    let reads: BTreeMap<String, String> = body
        .in_edges(tasklet)
        .iter()
        .filter_map(|e| {
            let conn = e.memlet.dst_conn.clone()?;
            Some((conn, format!("{}{}", e.memlet.data, e.memlet.subset)))
        })
        .collect();
    expr.rewrite(&|x| match x {
        TExpr::Input(c) => reads.get(c).map(|r| TExpr::Input(r.clone())),
        _ => None,
    })
}

/// The memlet through which `tasklet` reads `data`, if one does.
pub(super) fn read_of(body: &Graph, tasklet: NodeIndex, data: &str) -> Option<Memlet> {
    body.in_edges(tasklet)
        .iter()
        .find(|e| e.memlet.data == data)
        .map(|e| e.memlet.clone())
}

/// The connector of `tasklet` reading `data`, if one does.
fn reader_of(body: &Graph, tasklet: NodeIndex, data: &str) -> Option<String> {
    read_of(body, tasklet, data).and_then(|m| m.dst_conn)
}

/// Whether pass `m` reads or writes `data`.
pub(super) fn touches(m: &MapNode, data: &str) -> bool {
    access_count(&m.body, data) > 0
}

/// Finds the max pass and the sum pass that read the same value; `registers` are the per-row
/// statistics held in registers. On failure, the pass to blame (or `None`) and why.
pub(crate) fn find(
    passes: &[Pass],
    registers: &BTreeSet<String>,
) -> Result<Merge, (Option<NodeId>, String)> {
    let is_register = |d: &str| registers.contains(d);
    let mut first_miss: Option<(Option<NodeId>, String)> = None;
    for (k, (_, _, max_map)) in passes.iter().enumerate() {
        let Some(mx) = reduction(&max_map.body) else {
            continue;
        };
        if mx.write.wcr != Some(Wcr::Max) || !is_register(&mx.write.data) {
            continue;
        }
        let m = mx.write.data.clone();
        let value = canonical(&max_map.body, mx.idx, mx.expr);
        for (j, (sum_id, _, sum_map)) in passes.iter().enumerate().skip(k + 1) {
            let Some(sm) = reduction(&sum_map.body) else {
                continue;
            };
            if sm.write.wcr != Some(Wcr::Sum) || !is_register(&sm.write.data) {
                continue;
            }
            let miss = |why: String| Some((Some(*sum_id), why));
            let Some(mc) = reader_of(&sum_map.body, sm.idx, &m) else {
                continue;
            };
            let shifted = match sm.expr {
                TExpr::Unary(UnOp::Exp, inner) => match inner.as_ref() {
                    TExpr::Binary(BinOp::Sub, a, b) if **b == TExpr::input(&mc) => Some(a),
                    _ => None,
                },
                _ => None,
            };
            let Some(a) = shifted.filter(|a| !a.inputs().contains(&mc)) else {
                first_miss = first_miss.or(miss(format!(
                    "the sum into `{}` is not exp(v − {m}) of a value v",
                    sm.write.data
                )));
                continue;
            };
            if sum_map.params != max_map.params {
                first_miss = first_miss.or(miss(format!(
                    "the sum pass runs over other inner parameters than the max pass into `{m}`"
                )));
                continue;
            }
            if canonical(&sum_map.body, sm.idx, a) != value {
                first_miss = first_miss.or(miss(format!(
                    "the sum exponentiates another value than the one whose maximum is `{m}`"
                )));
                continue;
            }
            if let Some((between, _, _)) = passes[k + 1..j].iter().find(|(_, _, b)| touches(b, &m))
            {
                first_miss = first_miss.or(Some((
                    Some(*between),
                    format!("pass {between} uses the maximum `{m}` between the max and sum passes"),
                )));
                continue;
            }
            return Ok(Merge {
                max: k,
                sum: j,
                m,
                s: sm.write.data.clone(),
            });
        }
    }
    Err(first_miss.unwrap_or((
        None,
        "no pass reduces with max into a per-row register followed by a pass summing \
         exp(v − max) into another (the online mode fuses softmax's statistics)"
            .into(),
    )))
}

/// Replaces the max and sum passes by one sequential pass updating both registers.
pub(crate) fn merge(passes: &mut Vec<Pass>, found: &Merge, fresh_id: &mut dyn FnMut() -> NodeId) {
    if found.max >= passes.len() {
        return;
    }
    let Some((_, _, sum_map)) = passes.get_mut(found.sum) else {
        return;
    };
    sum_map.schedule = Schedule::Sequential;
    let body = &mut sum_map.body;
    let Some(sm) = reduction(body) else {
        return;
    };
    let (idx, s_out) = (sm.idx, sm.conn.clone());
    let Some(mc) = reader_of(body, idx, &found.m) else {
        return;
    };
    let a = match sm.expr {
        TExpr::Unary(UnOp::Exp, inner) => match inner.as_ref() {
            TExpr::Binary(BinOp::Sub, a, _) => a.as_ref().clone(),
            _ => return,
        },
        _ => return,
    };
    let Some(s_write) = body.out_edges(idx).first().map(|e| e.id) else {
        return;
    };
    body.memlet_mut(s_write).wcr = None;
    let NodeKind::Tasklet(t) = &mut body.node_mut(idx).kind else {
        return;
    };
    let (s_in, m_out) = (fresh_conn(t, "s_prev"), fresh_conn(t, "m_next"));
    let new_max = TExpr::binary(BinOp::Max, TExpr::input(&mc), a.clone());
    let exp_minus =
        |x: TExpr| TExpr::unary(UnOp::Exp, TExpr::binary(BinOp::Sub, x, new_max.clone()));
    let rescaled = TExpr::binary(
        BinOp::Mul,
        TExpr::input(&s_in),
        exp_minus(TExpr::input(&mc)),
    );
    let new_sum = TExpr::binary(BinOp::Add, rescaled, exp_minus(a));
    t.inputs.push(s_in.clone());
    t.outputs = vec![(s_out, new_sum), (m_out.clone(), new_max)];
    let read = Memlet::new(found.s.as_str(), Subset::default()).to_conn(s_in);
    let write = Memlet::new(found.m.as_str(), Subset::default()).from_conn(m_out);
    carry(body, idx, read, write, fresh_id);
    passes.remove(found.max);
}

/// A connector name `base0`, `base1`, … that tasklet `t` does not use yet.
pub(super) fn fresh_conn(t: &Tasklet, base: &str) -> String {
    let taken = |c: &String| t.inputs.contains(c) || t.outputs.iter().any(|(o, _)| o == c);
    (0..)
        .map(|k| format!("{base}{k}"))
        .find(|c| !taken(c))
        .unwrap_or_default()
}

/// Wires the carried state of a merged pass's tasklet `idx`: `read` (to a connector) into it and
/// `write` (from a connector) out of it, each through a new access node.
pub(super) fn carry(
    body: &mut Graph,
    idx: NodeIndex,
    read: Memlet,
    write: Memlet,
    fresh_id: &mut dyn FnMut() -> NodeId,
) {
    let mut access = |body: &mut Graph, data: &str| {
        body.add_node(Node {
            id: fresh_id(),
            label: data.to_string(),
            kind: NodeKind::Access(data.to_string()),
        })
    };
    let r_node = access(body, &read.data);
    body.add_edge(r_node, idx, read);
    let w_node = access(body, &write.data);
    body.add_edge(idx, w_node, write);
}
