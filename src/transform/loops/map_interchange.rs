//! MapInterchange: reorder the parameters of one map (the loop order of its nest).
//!
//! ```text
//! before:  map [i = 0:M, j = 0:N, k = 0:K] { C[i, j] += A[i, k] * B[k, j] }
//! after:   map [i = 0:M, k = 0:K, j = 0:N] { … }      // order = 0,2,1
//! ```
//! A map's iterations are unordered by definition, so any order is legal as long as no range
//! refers to a sibling parameter; only the floating-point order of resolved (wcr) sums changes.

use crate::ir::{MapNode, NodeId, NodeKind};
use crate::transform::{
    expect_map, refuse, Call, Default, Level, ListLen, NodeClass, NotApplicable, ParamDecl,
    ParamKind, Plan, Role, Schema, Transformation,
};

pub struct MapInterchange;

const SCHEMA: Schema = Schema {
    name: "MapInterchange",
    level: Level::IntraOperator,
    doc: "reorder a map's parameters (loop interchange)",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "the map whose parameters to reorder",
    )],
    params: &[ParamDecl {
        name: "order",
        kind: ParamKind::Ints {
            len: ListLen::PerMapParam,
            min: 0,
            max: i64::MAX,
        },
        default: Default::Required,
        doc: "new position → old parameter index, a permutation",
    }],
};

impl Transformation for MapInterchange {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p,
            site,
            args,
            legality,
        } = call;
        let id = site[0];
        let map = expect_map(self, p, id)?;
        let order = args.ints("order")?.to_vec();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if sorted != (0..map.params.len() as i64).collect::<Vec<_>>() {
            return Err(refuse(
                self,
                id,
                format!(
                    "order {order:?} is not a permutation of the map's {} parameters",
                    map.params.len()
                ),
            ));
        }
        legality.holds(self.independent(map, id))?;
        // A permutation of 0..len: every entry is a valid position.
        let order: Vec<usize> = order
            .iter()
            .filter_map(|&k| usize::try_from(k).ok())
            .collect();
        Ok(Plan::new(move |p| {
            let edit = (p.edit(id)).ok_or_else(|| refuse(&MapInterchange, id, "no such node"))?;
            let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind else {
                return Err(refuse(&MapInterchange, id, "not a map"));
            };
            let reordered: Option<Vec<_>> =
                order.iter().map(|&k| m.params.get(k).cloned()).collect();
            m.params = reordered
                .filter(|r| r.len() == m.params.len())
                .ok_or_else(|| refuse(&MapInterchange, id, "the map's parameters changed"))?;
            Ok(vec![id])
        }))
    }
}

impl MapInterchange {
    /// No range mentions a sibling parameter, so every order spans the same iteration space.
    fn independent(&self, map: &MapNode, id: NodeId) -> Result<(), NotApplicable> {
        for prm in &map.params {
            if let Some(q) = map.params.iter().find(|q| {
                q.name != prm.name
                    && [&prm.range.start, &prm.range.end, &prm.range.step]
                        .iter()
                        .any(|e| e.mentions(&q.name))
            }) {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "the range of `{}` depends on `{}`; interchange would change the iteration space",
                        prm.name, q.name
                    ),
                ));
            }
        }
        Ok(())
    }
}
