//! Questions a schedule asks of a map, answered from its memlets: which parameters index
//! written elements (outputs, safe to run in parallel) and which only reduce, which one indexes
//! the contiguous dimension of the arrays, and the loop order that follows. The derived modes
//! of `MapInterchange` and `MapExpansion` use them, and so can any front door (a recipe, a
//! script): the knowledge is not locked in one caller.

use crate::check::race::{body_accesses, BodyAccess};
use crate::ir::{BinOp, Dim, Graph, MapNode, NodeKind, Program, TExpr, Wcr};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeSet;

/// A loop order for a map: `order[k]` is the parameter placed at position `k`; the first
/// `outputs` positions index written elements, then come reductions, then the innermost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopOrder {
    pub order: Vec<usize>,
    pub outputs: usize,
}

/// How many of a map's parameters index no element it writes: its reductions (a contraction's
/// `k`), which a schedule must keep sequential or accumulate.
pub fn reduction_params(m: &MapNode, p: &Program) -> usize {
    let accesses = body_accesses(m, &p.data);
    indexes_writes(m, &accesses).iter().filter(|w| !**w).count()
}

/// Per parameter of `m`: whether some write access mentions it.
fn indexes_writes(m: &MapNode, accesses: &[BodyAccess]) -> Vec<bool> {
    (m.params.iter())
        .map(|q| (accesses.iter()).any(|a| a.write && a.subset.free_symbols().contains(&q.name)))
        .collect()
}

/// The order that keeps memory accesses contiguous: output parameters outermost (they can run
/// in parallel), reductions inside them, and innermost the parameter most often indexing the
/// last dimension of the accesses (reads count double: they dominate traffic; accesses to
/// containers far smaller than the others do not count), ties going to the earlier parameter —
/// unless that is a reduction shorter than one vector ([`LANES`]) and an output parameter is
/// contiguous too: a 5×5 depthwise convolution's `k1` would fill 5 of 16 lanes and sum them
/// for every output element, where its `o1` fills them all with independent outputs (EfficientNet-B0's
/// depthwise layers ran as 5-lane reductions). With no contiguous parameter the last one stays
/// innermost.
pub fn loop_order(m: &MapNode, p: &Program) -> LoopOrder {
    let accesses = body_accesses(m, &p.data);
    let names: Vec<&str> = m.params.iter().map(|q| q.name.as_str()).collect();
    if names.is_empty() {
        return LoopOrder {
            order: Vec::new(),
            outputs: 0,
        };
    }
    let is_output = indexes_writes(m, &accesses);
    let voters = voting_accesses(&accesses, p);
    let mut score = vec![0u32; names.len()];
    for a in voters {
        let Some(last) = a.subset.0.last() else {
            continue;
        };
        let syms = match last {
            Dim::Index(e) => e.free_symbols(),
            Dim::Range(r) => r.start.free_symbols(),
        };
        for (k, n) in names.iter().enumerate() {
            if syms.iter().any(|s| s == n) {
                score[k] += if a.write { 1 } else { 2 };
            }
        }
    }
    let best_of = |ks: &mut dyn Iterator<Item = usize>| {
        ks.filter(|&k| score[k] > 0)
            .max_by_key(|&k| (score[k], std::cmp::Reverse(k)))
    };
    let short_reduction =
        |k: usize| !is_output[k] && (m.params[k].range.len().as_int()).is_some_and(|n| n < LANES);
    let inner = match best_of(&mut (0..names.len())) {
        Some(k) if short_reduction(k) => {
            best_of(&mut (0..names.len()).filter(|&j| is_output[j])).unwrap_or(k)
        }
        Some(k) => k,
        None => names.len() - 1,
    };
    let outputs: Vec<usize> = (0..names.len())
        .filter(|&k| k != inner && is_output[k])
        .collect();
    let reductions: Vec<usize> = (0..names.len())
        .filter(|&k| k != inner && !is_output[k])
        .collect();
    let count = outputs.len();
    let mut order = outputs;
    order.extend(reductions);
    order.push(inner);
    LoopOrder {
        order,
        outputs: count,
    }
}

/// The accesses whose contiguity decides the innermost loop: all but those to containers
/// [`CACHED_FRACTION`] times smaller than the largest accessed one (a bias vector beside the
/// matrix it is added to), which stay in cache whatever the order. With a symbolic container
/// size among them, all of them vote.
fn voting_accesses<'a>(accesses: &'a [BodyAccess], p: &Program) -> Vec<&'a BodyAccess> {
    let size = |a: &BodyAccess| {
        let shape = p.data.get(&a.data)?.static_shape()?;
        Some(shape.iter().map(|&e| e as u64).product::<u64>())
    };
    let sizes: Option<Vec<u64>> = accesses.iter().map(size).collect();
    let Some(sizes) = sizes else {
        return accesses.iter().collect();
    };
    let largest = sizes.iter().copied().max().unwrap_or(0);
    (accesses.iter().zip(sizes))
        .filter(|&(_, s)| s.saturating_mul(CACHED_FRACTION) >= largest)
        .map(|(a, _)| a)
        .collect()
}

/// How many times smaller than the largest container a container must be for its accesses
/// not to vote on the loop order.
const CACHED_FRACTION: u64 = 64;

/// The f32 lanes of a 512-bit vector: a reduction shorter than this does not fill one.
const LANES: i64 = 16;

/// The longest parameter of `m` with a constant length, and that length (the first on ties).
pub fn longest_param(m: &MapNode) -> Option<(usize, i64)> {
    (m.params.iter().enumerate())
        .filter_map(|(k, q)| Some((k, q.range.len().as_int()?)))
        .max_by_key(|&(k, len)| (len, usize::MAX - k))
}

/// Whether `m` is a contraction, the shape of a matrix product: its body is one tasklet that
/// sums (`+=`) the product of two reads into its output, both reads indexed by a parameter the
/// output is not (the reduction), and each missing an output parameter the other has (`A[i, k]`
/// misses `j`, `B[k, j]` misses `i`). A reduction of one operand with a broadcast factor, such
/// as Softmax's `Σ exp(x − max)`, is not one.
pub fn is_contraction(m: &MapNode, p: &Program) -> bool {
    let mut tasklets = Vec::new();
    collect_tasklets(&m.body, &mut tasklets);
    let [(g, idx)] = tasklets[..] else {
        return false;
    };
    let NodeKind::Tasklet(t) = &g.node(idx).kind else {
        return false;
    };
    let (outs, ins) = (g.out_edges(idx), g.in_edges(idx));
    let ([(_, expr)], [out]) = (&t.outputs[..], &outs[..]) else {
        return false;
    };
    let TExpr::Binary(BinOp::Mul, x, y) = expr else {
        return false;
    };
    let (TExpr::Input(a), TExpr::Input(b)) = (x.as_ref(), y.as_ref()) else {
        return false;
    };
    let indexed = |conn: &str| {
        (ins.iter())
            .find(|e| e.memlet.dst_conn.as_deref() == Some(conn))
            .map(|e| symbols(&e.memlet.subset))
    };
    let (Some(a), Some(b)) = (indexed(a), indexed(b)) else {
        return false;
    };
    let written = symbols(&out.memlet.subset);
    let params: Vec<&str> = m.params.iter().map(|q| q.name.as_str()).collect();
    let has = |set: &BTreeSet<String>, q: &str| set.contains(q);
    let reduced = |set: &BTreeSet<String>| params.iter().any(|q| has(set, q) && !has(&written, q));
    let misses_what_other_has = |s: &BTreeSet<String>, o: &BTreeSet<String>| {
        (params.iter()).any(|q| has(&written, q) && !has(s, q) && has(o, q))
    };
    out.memlet.wcr == Some(Wcr::Sum)
        && p.data.contains_key(&out.memlet.data)
        && reduced(&a)
        && reduced(&b)
        && misses_what_other_has(&a, &b)
        && misses_what_other_has(&b, &a)
}

fn symbols(s: &crate::ir::Subset) -> BTreeSet<String> {
    s.free_symbols().into_iter().collect()
}

/// Every tasklet in `g` and the maps nested in it, with the graph holding it.
fn collect_tasklets<'g>(g: &'g Graph, out: &mut Vec<(&'g Graph, NodeIndex)>) {
    for idx in g.node_indices() {
        match &g.node(idx).kind {
            NodeKind::Tasklet(_) => out.push((g, idx)),
            NodeKind::Map(inner) => collect_tasklets(&inner.body, out),
            _ => {}
        }
    }
}
