//! Parallelize: run a map's iterations on parallel threads.
//!
//! ```text
//! before:  map [i = 0:N] sequential { Y[i] = f(X[i]) }
//! after:   map [i = 0:N] parallel   { Y[i] = f(X[i]) }
//! ```
//! Legal when no two iterations write the same element without write-conflict resolution and no
//! iteration reads what another writes (see `check::race`). Nested parallel maps are refused:
//! the outer level already uses every core.

use crate::check::race::parallel_conflict;
use crate::ir::{Graph, NodeId, NodeKind, Schedule};
use crate::transform::support::maps::set_schedule;
use crate::transform::{
    expect_map, refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};

pub struct Parallelize;

const SCHEMA: Schema = Schema {
    name: "Parallelize",
    level: Level::IntraOperator,
    doc: "run a map's iterations on parallel threads (OpenMP), when no iterations conflict",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the map to run in parallel",
    )],
    params: &[],
};

impl Transformation for Parallelize {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        if map.schedule == Schedule::Parallel {
            return Err(refuse(self, id, "the map is already parallel"));
        }
        if let Some(outer) = enclosing_parallel(&p.graph, id, None) {
            return Err(refuse(
                self,
                id,
                format!("it is nested inside parallel map {outer}"),
            ));
        }
        if contains_parallel(&map.body) {
            return Err(refuse(self, id, "its body already contains a parallel map"));
        }
        legality.holds(match parallel_conflict(map, p) {
            Some(why) => Err(refuse(self, id, why)),
            None => Ok(()),
        })?;
        Ok(Plan::new(move |p| {
            set_schedule(&Parallelize, p, id, Schedule::Parallel)
        }))
    }
}

/// The innermost parallel map strictly enclosing `id`, if any.
fn enclosing_parallel(g: &Graph, id: NodeId, outer: Option<NodeId>) -> Option<NodeId> {
    for n in g.nodes() {
        if n.id == id {
            return outer;
        }
        if let NodeKind::Map(m) = &n.kind {
            let here = if m.schedule == Schedule::Parallel {
                Some(n.id)
            } else {
                outer
            };
            if m.body.locate(id).is_some() {
                return enclosing_parallel(&m.body, id, here);
            }
        }
    }
    None
}

fn contains_parallel(g: &Graph) -> bool {
    let mut found = false;
    g.walk(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            found |= m.schedule == Schedule::Parallel;
        }
    });
    found
}
