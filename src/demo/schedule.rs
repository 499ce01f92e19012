//! The built-in CPU optimization sequence used by `dmove demo`.
//!
//! It is written against the same engine a recipe uses, one checked step at a time:
//! 1. fuse element-wise producer/consumer maps until nothing fuses (intermediates → registers);
//! 2. for every top-level map, choose a loop order that makes the innermost parameter the one
//!    indexing the contiguous (last) dimension of the arrays it reads, put reduction parameters
//!    inside the output parameters, and split the output parameters into an outer map;
//! 3. tile the outer map and run it in parallel.

use crate::ir::{NodeId, NodeKind, Program};
use crate::transform::engine::{Budget, Checks, Engine, Step};
use crate::transform::queries::{longest_param, loop_order, LoopOrder};
use crate::transform::{find, ParamValue, Params, UnknownTransformation};
use std::collections::BTreeMap;

/// What the sequence did: applied steps, and every refusal it accepted, in words.
#[derive(Debug, Default)]
pub struct ScheduleReport {
    pub steps: Vec<Step>,
    pub refused: Vec<String>,
}

/// Tile size for the outermost parallel parameter when it is large.
const OUTER_TILE: i64 = 16;

/// Applies the CPU sequence to a fully expanded program. Every transformation is named once
/// here; a name the registry does not know is an error, never a silent skip.
pub fn optimize(p: &mut Program, checks: &Checks) -> Result<ScheduleReport, UnknownTransformation> {
    let mut report = ScheduleReport::default();
    let mut engine = Engine::new(checks.clone());
    let fused = engine.apply_repeatedly(
        p,
        find("MapFusion")?,
        &Params::new(),
        &Budget::steps(10_000),
    );
    report.steps.extend(fused.steps);
    report
        .refused
        .extend(fused.refused.iter().map(|r| r.to_string()));
    let maps: Vec<NodeId> = p
        .graph
        .ordered()
        .into_iter()
        .filter(|&i| matches!(p.graph.node(i).kind, NodeKind::Map(_)))
        .map(|i| p.graph.node(i).id)
        .collect();
    let mut run = Run { engine, report };
    for id in maps {
        run.schedule_map(p, id)?;
    }
    Ok(run.report)
}

struct Run {
    engine: Engine,
    report: ScheduleReport,
}

impl Run {
    fn step(
        &mut self,
        p: &mut Program,
        name: &str,
        id: NodeId,
        params: Params,
    ) -> Result<(), UnknownTransformation> {
        match self.engine.apply(p, find(name)?, &[id], &params) {
            Ok(s) => self.report.steps.push(s),
            Err(e) => self.report.refused.push(e.to_string()),
        }
        Ok(())
    }

    fn schedule_map(&mut self, p: &mut Program, id: NodeId) -> Result<(), UnknownTransformation> {
        let Some(NodeKind::Map(m)) = p.node(id).map(|n| &n.kind) else {
            return Ok(());
        };
        let LoopOrder {
            order,
            outputs: outer,
        } = loop_order(m, p);
        let n = m.params.len();
        if order != (0..n).collect::<Vec<_>>() {
            let ints = order.iter().map(|&k| k as i64).collect();
            self.step(
                p,
                "MapInterchange",
                id,
                one("order", ParamValue::Ints(ints)),
            )?;
        }
        if outer == 0 {
            // A single parameter, or a reduction to a scalar: parallel only when nothing reduces.
            if order.len() == 1 {
                self.step(p, "Parallelize", id, Params::new())?;
            }
            return Ok(());
        }
        if outer < n {
            self.step(
                p,
                "MapExpansion",
                id,
                one("split", ParamValue::Int(outer as i64)),
            )?;
        }
        let Some(NodeKind::Map(m)) = p.node(id).map(|n| &n.kind) else {
            return Ok(());
        };
        // Tile the longest outer parameter when it is long: a tile of rows is the unit of
        // parallel work, which keeps each thread's rows together.
        if let Some((longest, len)) = longest_param(m) {
            if len >= 4 * OUTER_TILE {
                let mut tiles = vec![0; m.params.len()];
                tiles[longest] = OUTER_TILE;
                self.step(p, "MapTiling", id, one("tiles", ParamValue::Ints(tiles)))?;
            }
        }
        self.step(p, "Parallelize", id, Params::new())
    }
}

fn one(name: &str, v: ParamValue) -> Params {
    BTreeMap::from([(name.to_string(), v)])
}
