//! Questions a schedule asks of a map, answered from its memlets: which parameters index
//! written elements (outputs, safe to run in parallel) and which only reduce, which one indexes
//! the contiguous dimension of the arrays, and the loop order that follows. The derived modes
//! of `MapInterchange` and `MapExpansion` use them, and so can any front door (a recipe, a
//! script): the knowledge is not locked in one caller.

use crate::check::race::{body_accesses, BodyAccess};
use crate::ir::{Dim, MapNode, Program};

/// A loop order for a map: `order[k]` is the parameter placed at position `k`; the first
/// `outputs` positions index written elements, then come reductions, then the innermost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopOrder {
    pub order: Vec<usize>,
    pub outputs: usize,
}

/// The order that keeps memory accesses contiguous: output parameters outermost (they can run
/// in parallel), reductions inside them, and innermost the parameter most often indexing the
/// last dimension of the accesses (reads count double: they dominate traffic), ties going to
/// the later parameter. With no contiguous parameter the last one stays innermost.
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
    let mut score = vec![0u32; names.len()];
    for a in &accesses {
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
    let best = (0..names.len()).rev().max_by_key(|&k| score[k]);
    let inner = best.filter(|&k| score[k] > 0).unwrap_or(names.len() - 1);
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

/// The longest parameter of `m` with a constant length, and that length (the first on ties).
pub fn longest_param(m: &MapNode) -> Option<(usize, i64)> {
    (m.params.iter().enumerate())
        .filter_map(|(k, q)| Some((k, q.range.len().as_int()?)))
        .max_by_key(|&(k, len)| (len, usize::MAX - k))
}
