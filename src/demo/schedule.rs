//! The built-in CPU optimization sequence used by `dmove demo`.
//!
//! It is written against the same engine a recipe uses, one checked step at a time:
//! 1. fuse element-wise producer/consumer maps until nothing fuses (intermediates → registers);
//! 2. for every top-level map, choose a loop order that makes the innermost parameter the one
//!    indexing the contiguous (last) dimension of the arrays it reads, put reduction parameters
//!    inside the output parameters, and split the output parameters into an outer map;
//! 3. tile the outer map and run it in parallel.

use crate::check::race::body_accesses;
use crate::ir::{Dim, MapNode, NodeId, NodeKind, Program};
use crate::transform::engine::{apply, apply_repeatedly, Budget, Checks, Step};
use crate::transform::{lookup, ParamValue, Params};
use std::collections::BTreeMap;

/// What the sequence did: applied steps, and the refusals it accepted (step, reason).
#[derive(Debug, Default)]
pub struct ScheduleReport {
    pub steps: Vec<Step>,
    pub skipped: Vec<String>,
}

/// Tile size for the outermost parallel parameter when it is large.
const OUTER_TILE: i64 = 16;

/// Applies the CPU sequence to a fully expanded program.
pub fn optimize(p: &mut Program, checks: &Checks) -> ScheduleReport {
    let mut report = ScheduleReport::default();
    if let Some(fusion) = lookup("MapFusion") {
        let fused = apply_repeatedly(p, fusion, &Params::new(), checks, &Budget::steps(10_000));
        report.steps.extend(fused.steps);
    }
    let maps: Vec<NodeId> = p
        .graph
        .ordered()
        .into_iter()
        .filter(|&i| matches!(p.graph.node(i).kind, NodeKind::Map(_)))
        .map(|i| p.graph.node(i).id)
        .collect();
    for id in maps {
        schedule_map(p, id, checks, &mut report);
    }
    report
}

fn step(
    p: &mut Program,
    name: &str,
    id: NodeId,
    params: Params,
    checks: &Checks,
    report: &mut ScheduleReport,
) -> Option<Step> {
    let t = lookup(name)?;
    match apply(p, t, &[id], &params, checks) {
        Ok(s) => {
            report.steps.push(s.clone());
            Some(s)
        }
        Err(e) => {
            report.skipped.push(e.to_string());
            None
        }
    }
}

fn schedule_map(p: &mut Program, id: NodeId, checks: &Checks, report: &mut ScheduleReport) {
    let Some(NodeKind::Map(m)) = p.node(id).map(|n| &n.kind) else {
        return;
    };
    let (order, outer) = loop_order(m, p);
    let n = m.params.len();
    if order != (0..n).collect::<Vec<_>>() {
        let ints = order.iter().map(|&k| k as i64).collect();
        step(
            p,
            "MapInterchange",
            id,
            one("order", ParamValue::Ints(ints)),
            checks,
            report,
        );
    }
    if outer == 0 {
        // A single parameter, or a reduction to a scalar: parallel only when nothing reduces.
        if order.len() == 1 {
            step(p, "Parallelize", id, Params::new(), checks, report);
        }
        return;
    }
    if outer < n {
        step(
            p,
            "MapExpansion",
            id,
            one("split", ParamValue::Int(outer as i64)),
            checks,
            report,
        );
    }
    let Some(NodeKind::Map(m)) = p.node(id).map(|n| &n.kind) else {
        return;
    };
    // Tile the longest outer parameter when it is long: a tile of rows is the unit of parallel
    // work, which keeps each thread's rows together.
    let lens: Vec<i64> = m
        .params
        .iter()
        .map(|q| q.range.len().as_int().unwrap_or(0))
        .collect();
    if let Some((longest, &len)) = lens
        .iter()
        .enumerate()
        .max_by_key(|(k, l)| (**l, usize::MAX - k))
    {
        if len >= 4 * OUTER_TILE {
            let mut tiles = vec![0; lens.len()];
            tiles[longest] = OUTER_TILE;
            step(
                p,
                "MapTiling",
                id,
                one("tiles", ParamValue::Ints(tiles)),
                checks,
                report,
            );
        }
    }
    step(p, "Parallelize", id, Params::new(), checks, report);
}

fn one(name: &str, v: ParamValue) -> Params {
    BTreeMap::from([(name.to_string(), v)])
}

/// A loop order for `m` and how many leading parameters are output (parallel) parameters.
///
/// Output parameters are those that index some written element; the others are reductions.
/// The innermost parameter is the one most often indexing the last dimension of the accesses
/// (reads count double: they dominate traffic), ties going to the later parameter.
fn loop_order(m: &MapNode, p: &Program) -> (Vec<usize>, usize) {
    let accesses = body_accesses(m, &p.data);
    let names: Vec<&str> = m.params.iter().map(|q| q.name.as_str()).collect();
    let is_output: Vec<bool> = names
        .iter()
        .map(|n| {
            accesses
                .iter()
                .any(|a| a.write && a.subset.free_symbols().iter().any(|s| s == n))
        })
        .collect();
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
    let inner = (0..names.len())
        .rev()
        .max_by_key(|&k| score[k])
        .unwrap_or(0);
    let inner = if score[inner] == 0 {
        names.len() - 1
    } else {
        inner
    };
    let outputs: Vec<usize> = (0..names.len())
        .filter(|&k| k != inner && is_output[k])
        .collect();
    let reductions: Vec<usize> = (0..names.len())
        .filter(|&k| k != inner && !is_output[k])
        .collect();
    let outer = outputs.len();
    let mut order = outputs;
    order.extend(reductions);
    order.push(inner);
    (order, outer)
}
