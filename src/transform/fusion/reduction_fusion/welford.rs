//! ReductionFusion's `mode=welford`: layer normalization's mean pass and variance pass become one
//! pass with Welford's update, so a row is read twice (statistics, then normalization) instead
//! of three times, without the cancellation of the one-pass `E[x²] − E[x]²` formula.
//!
//! ```text
//! fused (mode=passes):                          welford:
//!   map [c = 0:1] { m = 0 }                       map [c = 0:1] { m = 0 }
//!   map [c = 0:C] { m (+)= x / C }                map [c = 0:1] { v = 0 }
//!   map [c = 0:1] { v = 0 }                       map [c = 0:C] sequential {
//!   map [c = 0:C] { v (+)= (x − m)(x − m) / C }     n = c + 1,  d = x − m
//!   map [c = 0:1] { r = 1 / sqrt(v + ε) }           m' = m + d / n
//!   map [c = 0:C] { y = (x − m)·r·g + b }           v' = v + d·(x − m') / C     (m, v := m', v')
//!                                                 }
//!                                                 map [c = 0:1] { r = 1 / sqrt(v + ε) }  …
//! ```
//! Why the variance register keeps its meaning: Welford's sum of squares `M2 = Σ d·(x − m')`
//! equals `Σ (x − mean)²`, and each term is scaled by the variance pass's own `1 / C`, so `v`
//! ends as the same variance and the passes after it are untouched. Every term `d·(x − m')` is
//! a product of deviations from the running mean, never of raw values: with rows far from zero
//! (`1e4 + noise`) no large squares cancel, unlike sum and sum of squares.
//!
//! As in [`super::online_softmax`], two registers are coupled (the variance update needs the
//! new mean), which no write-conflict resolution expresses, so the merged tasklet reads both
//! registers and writes both back in a map scheduled sequentially. The running count `n` is the
//! iteration's position in the pass (its inner parameters linearised, plus one), an index value:
//! no third register is needed. The mean pass adds to its register's initial value while
//! Welford's first step sets `m = x` whatever `m` held, so the mean must be initialised to `0`
//! by an earlier pass (checked); the variance keeps its initialisation and adds to it as before.
//!
//! The passes are recognised by structure in the fused row map's inner maps: a pass summing
//! `v / N` into a per-row statistic `m` (a register, or one element of memory when the
//! statistic is also an output) (`N` its trip count, the scale written `· (1/N)` or `/ N`), and a
//! later pass over the same inner parameters summing `(v − m)·(v − m)` with the same scale into
//! another register (`v` compared by the data and subsets it reads, not by connector names).

use super::online_softmax::{
    canonical, carry, fresh_conn, read_of, reduction, touches, Pass, Reduction,
};
use crate::ir::{
    BinOp, MapNode, MapParam, Memlet, NodeId, NodeKind, Schedule, Subset, SymExpr, TExpr, Wcr,
};
use std::collections::{BTreeMap, BTreeSet};

/// The mean and variance passes that merge, by position in the inner passes.
pub(crate) struct Merge {
    mean: usize,
    var: usize,
    m: String,
    v: String,
    /// The element of the variance the passes write (empty for a register).
    v_subset: Subset,
}

impl Merge {
    /// The same merge with its registers renamed through `names` (a statistic not in `names`,
    /// kept in memory, keeps its name): found on the passes with the statistics' names, applied
    /// to the passes with their registers.
    pub(crate) fn renamed(mut self, names: &BTreeMap<String, String>) -> Merge {
        for r in [&mut self.m, &mut self.v] {
            if let Some(n) = names.get(r.as_str()) {
                *r = n.clone();
            }
        }
        self
    }
}

/// How a pass divides each element by the element count: `· k` or `/ n`.
#[derive(Clone, Debug, PartialEq)]
enum Scale {
    By(f64),
    Over(SymExpr),
}

impl Scale {
    /// The scaled value and its scale, if `e` is `a · k` or `a / n`.
    fn of(e: &TExpr) -> Option<(&TExpr, Scale)> {
        match e {
            TExpr::Binary(BinOp::Mul, a, k) => match k.as_ref() {
                TExpr::Const(k) => Some((a, Scale::By(*k))),
                _ => None,
            },
            TExpr::Binary(BinOp::Div, a, n) => match n.as_ref() {
                TExpr::Index(n) => Some((a, Scale::Over(n.clone()))),
                _ => None,
            },
            _ => None,
        }
    }

    fn apply(&self, x: TExpr) -> TExpr {
        match self {
            Scale::By(k) => TExpr::binary(BinOp::Mul, x, TExpr::Const(*k)),
            Scale::Over(n) => TExpr::binary(BinOp::Div, x, TExpr::Index(n.clone())),
        }
    }

    /// Whether the scale is `1 / trips`: the sum of the scaled values is their mean.
    fn averages(&self, trips: &SymExpr) -> bool {
        match self {
            Scale::By(k) => trips
                .as_int()
                .is_some_and(|t| (k * t as f64 - 1.0).abs() <= f64::EPSILON * 4.0),
            Scale::Over(n) => n.simplify() == trips.simplify(),
        }
    }
}

/// The position of an iteration among the points of `params` plus one (the running count), and
/// the number of points.
fn running_count(params: &[MapParam]) -> (SymExpr, SymExpr) {
    let mut position = SymExpr::Int(0);
    let mut trips = SymExpr::Int(1);
    for q in params {
        let offset = SymExpr::sym(q.name.as_str()) - q.range.start.clone();
        let step = match q.range.step {
            SymExpr::Int(1) => offset,
            _ => offset.floor_div(q.range.step.clone()),
        };
        position = position * q.range.len() + step;
        trips = trips * q.range.len();
    }
    (position + 1, trips)
}

/// `(a − m)·(a − m)` with `m` read through connector `mc`: the deviation's value `a`.
fn squared_deviation<'e>(e: &'e TExpr, mc: &str) -> Option<&'e TExpr> {
    let TExpr::Binary(BinOp::Mul, l, r) = e else {
        return None;
    };
    match (l.as_ref(), r.as_ref()) {
        (TExpr::Binary(BinOp::Sub, a, m), TExpr::Binary(BinOp::Sub, a2, m2))
            if a == a2
                && m == m2
                && **m == TExpr::input(mc)
                && !a.inputs().iter().any(|c| c == mc) =>
        {
            Some(a)
        }
        _ => None,
    }
}

/// Whether the last pass before `mean` touching the statistic `m` sets it to zero.
fn zeroed_before(passes: &[Pass], mean: usize, m: &str) -> bool {
    let before = passes.get(..mean).unwrap_or_default();
    let last = before.iter().rev().find(|(_, _, p)| touches(p, m));
    last.and_then(|(_, _, p)| reduction(&p.body))
        .is_some_and(|r| r.write.data == m && r.write.wcr.is_none() && *r.expr == TExpr::Const(0.0))
}

/// The pass's single tasklet when it sums into one per-row statistic: a register, or an element
/// of memory that no inner parameter selects (a statistic that is also a program output).
fn summed_per_row<'g>(m: &'g MapNode, registers: &BTreeSet<String>) -> Option<Reduction<'g>> {
    let inner: Vec<&str> = m.params.iter().map(|q| q.name.as_str()).collect();
    reduction(&m.body).filter(|r| {
        let w = r.write;
        let one_element = || {
            w.subset
                .free_symbols()
                .iter()
                .all(|s| !inner.contains(&s.as_str()))
        };
        w.wcr == Some(Wcr::Sum) && (registers.contains(&w.data) || one_element())
    })
}

/// A candidate mean pass: its position, the statistic it writes, the value it averages (in
/// canonical form) and its scale.
struct Mean<'g> {
    k: usize,
    write: &'g Memlet,
    value: TExpr,
    scale: Scale,
}

/// What one (mean, later pass) pair is: not a variance pass of this mean at all, a near miss
/// (the pass to blame and why), or the merge.
enum Pair {
    Unrelated,
    Miss(Option<NodeId>, String),
    Found(Merge),
}

/// Finds the mean pass and the variance pass over the same value; `registers` are the per-row
/// statistics held in registers. On failure, the pass to blame (or `None`) and why.
pub(crate) fn find(
    passes: &[Pass],
    registers: &BTreeSet<String>,
) -> Result<Merge, (Option<NodeId>, String)> {
    let mut first_miss: Option<(Option<NodeId>, String)> = None;
    for (k, (_, _, mean_map)) in passes.iter().enumerate() {
        let Some(mr) = summed_per_row(mean_map, registers) else {
            continue;
        };
        let Some((value, scale)) = Scale::of(mr.expr) else {
            continue;
        };
        let reads_itself = read_of(&mean_map.body, mr.idx, &mr.write.data).is_some();
        if reads_itself || !scale.averages(&running_count(&mean_map.params).1) {
            continue;
        }
        let mean = Mean {
            k,
            write: mr.write,
            value: canonical(&mean_map.body, mr.idx, value),
            scale,
        };
        for j in k + 1..passes.len() {
            match pair(passes, &mean, j, registers) {
                Pair::Unrelated => {}
                Pair::Miss(at, why) => first_miss = first_miss.or(Some((at, why))),
                Pair::Found(merge) => return Ok(merge),
            }
        }
    }
    Err(first_miss.unwrap_or((
        None,
        "no pass sums a value divided by its count into a per-row register followed by a pass \
         summing its squared deviation from that mean into another (the welford mode fuses \
         layer normalization's statistics)"
            .into(),
    )))
}

/// Whether pass `j` is the variance pass of `mean`.
fn pair(passes: &[Pass], mean: &Mean<'_>, j: usize, registers: &BTreeSet<String>) -> Pair {
    let (Some((_, _, mean_map)), Some((var_id, _, var_map))) = (passes.get(mean.k), passes.get(j))
    else {
        return Pair::Unrelated;
    };
    let m = mean.write.data.clone();
    let Some(vr) = summed_per_row(var_map, registers).filter(|vr| vr.write.data != m) else {
        return Pair::Unrelated;
    };
    let Some(m_read) = read_of(&var_map.body, vr.idx, &m) else {
        return Pair::Unrelated;
    };
    let Some(mc) = m_read.dst_conn else {
        return Pair::Unrelated;
    };
    let miss = |why: String| Pair::Miss(Some(*var_id), why);
    if m_read.subset != mean.write.subset {
        return miss(format!(
            "the variance pass reads another element of `{m}` than the mean pass writes"
        ));
    }
    let deviation =
        Scale::of(vr.expr).and_then(|(sq, s)| squared_deviation(sq, &mc).map(|a| (a, s)));
    let Some((a, var_scale)) = deviation else {
        return miss(format!(
            "the sum into `{}` is not (v − {m})·(v − {m}) scaled per element",
            vr.write.data
        ));
    };
    if var_map.params != mean_map.params || var_scale != mean.scale {
        return miss(format!(
            "the variance pass runs over other elements or scales otherwise than the mean pass into `{m}`"
        ));
    }
    if canonical(&var_map.body, vr.idx, a) != mean.value {
        return miss(format!(
            "the variance is of another value than the one whose mean is `{m}`"
        ));
    }
    let between = passes.get(mean.k + 1..j).unwrap_or_default();
    if let Some((b, _, _)) = between.iter().find(|(_, _, b)| touches(b, &m)) {
        return Pair::Miss(
            Some(*b),
            format!("pass {b} uses the mean `{m}` between the mean and variance passes"),
        );
    }
    if !zeroed_before(passes, mean.k, &m) {
        let mean_id = passes.get(mean.k).map(|(id, _, _)| *id);
        return Pair::Miss(
            mean_id,
            format!("the mean `{m}` is not set to 0 before its pass"),
        );
    }
    Pair::Found(Merge {
        mean: mean.k,
        var: j,
        m,
        v: vr.write.data.clone(),
        v_subset: vr.write.subset.clone(),
    })
}

/// Replaces the mean and variance passes by one sequential pass updating both registers with
/// Welford's step.
pub(crate) fn merge(passes: &mut Vec<Pass>, found: &Merge, fresh_id: &mut dyn FnMut() -> NodeId) {
    if found.mean >= passes.len() {
        return;
    }
    let Some((_, _, var_map)) = passes.get_mut(found.var) else {
        return;
    };
    var_map.schedule = Schedule::Sequential;
    let count = TExpr::Index(running_count(&var_map.params).0);
    let body = &mut var_map.body;
    let Some(vr) = reduction(body) else {
        return;
    };
    let (idx, v_out) = (vr.idx, vr.conn.clone());
    let Some(m_read) = read_of(body, idx, &found.m) else {
        return;
    };
    let Some(mc) = m_read.dst_conn.clone() else {
        return;
    };
    let Some((a, scale)) =
        Scale::of(vr.expr).and_then(|(sq, s)| squared_deviation(sq, &mc).map(|a| (a.clone(), s)))
    else {
        return;
    };
    let Some(v_write) = body.out_edges(idx).first().map(|e| e.id) else {
        return;
    };
    body.memlet_mut(v_write).wcr = None;
    let NodeKind::Tasklet(t) = &mut body.node_mut(idx).kind else {
        return;
    };
    let (v_in, m_out) = (fresh_conn(t, "v_prev"), fresh_conn(t, "m_next"));
    let delta = TExpr::binary(BinOp::Sub, a.clone(), TExpr::input(&mc));
    let new_mean = TExpr::binary(
        BinOp::Add,
        TExpr::input(&mc),
        TExpr::binary(BinOp::Div, delta.clone(), count),
    );
    let step = TExpr::binary(
        BinOp::Mul,
        delta,
        TExpr::binary(BinOp::Sub, a, new_mean.clone()),
    );
    let new_var = TExpr::binary(BinOp::Add, TExpr::input(&v_in), scale.apply(step));
    t.inputs.push(v_in.clone());
    t.outputs = vec![(v_out, new_var), (m_out.clone(), new_mean)];
    let read = Memlet::new(found.v.as_str(), found.v_subset.clone()).to_conn(v_in);
    let write = Memlet::new(found.m.as_str(), m_read.subset).from_conn(m_out);
    carry(body, idx, read, write, fresh_id);
    passes.remove(found.mean);
}
