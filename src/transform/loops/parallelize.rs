//! Parallelize: run a map's iterations on parallel threads.
//!
//! ```text
//! before:  map [i = 0:N] sequential { Y[i] = f(X[i]) }
//! after:   map [i = 0:N] parallel   { Y[i] = f(X[i]) }
//! ```
//! Legal when no two iterations write the same element without write-conflict resolution and no
//! iteration reads what another writes (see `check::race`). Nested parallel maps are refused:
//! the outer level already uses every core.
//!
//! `min_work` is recorded on the map: where its estimated work (iterations times tasklets per
//! iteration, `MapNode::work`) is below it, the generated code runs it on one thread, because
//! handing out a loop and waiting at its barrier costs microseconds (a sleeping thread's wake,
//! up to a tenth of a millisecond on a virtual machine) and a small map is done sooner alone.
//! The default, 262144, is about that cost at roughly a nanosecond per tasklet; 0 parallelizes
//! whatever the size. It prices waking the threads: where other maps open the entry function's
//! region anyway, the generated code shares a map from 16384 tasklets on (`codegen::scope`'s
//! `AWAKE_MIN_WORK`).

use crate::check::race::parallel_conflict;
use crate::ir::{Graph, NodeId, NodeKind, Schedule};
use crate::transform::support::maps::{set_schedule, MIN_PARALLEL_WORK};
use crate::transform::{
    expect_map, refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan,
    Role, Schema, Transformation,
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
    params: &[ParamDecl {
        name: "min_work",
        kind: ParamKind::Int {
            min: 0,
            max: i64::MAX,
        },
        default: Default::Int(MIN_PARALLEL_WORK as i64),
        doc: "estimated work (iterations x tasklets) below which the map runs on one thread; 0: always parallel",
    }],
};

impl Transformation for Parallelize {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p,
            site,
            args,
            legality,
            ..
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
        let min_work = u64::try_from(args.int("min_work")?).unwrap_or(0);
        legality.holds(match parallel_conflict(map, p) {
            Some(why) => Err(refuse(self, id, why)),
            None => Ok(()),
        })?;
        Ok(Plan::new(move |p| {
            set_schedule(&Parallelize, p, id, Schedule::Parallel, min_work)
        }))
    }
}

/// The innermost parallel map strictly enclosing `id`, if any.
fn enclosing_parallel(g: &Graph, id: NodeId, outer: Option<NodeId>) -> Option<NodeId> {
    if g.index_of(id).is_some() {
        return outer;
    }
    for n in g.nodes() {
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
    g.each(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            found |= m.schedule == Schedule::Parallel;
        }
    });
    found
}
