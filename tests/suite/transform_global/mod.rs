//! Inter-operator / global transformations: SiblingMapFusion, BufferReuse and OnTheFlyFusion,
//! each applied (results checked by the engine and again here against hand-computed values),
//! refused with the expected reason on the expected node (program untouched), and compiled to C
//! and compared with the interpreter.

mod buffers;
mod on_the_fly;
mod siblings;

use dmove::ir::build::{In, Out};
use dmove::ir::{NodeId, NodeKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Tensor};
use dmove::transform::Params;

pub use crate::steps::{
    apply_checked, assert_values, compiled_matches_interpreter, refused, run, values,
};

pub fn s(name: &str) -> SymExpr {
    SymExpr::sym(name)
}

/// A one-tasklet map over `ranges` (parameters `i`, `j`, … unless `names` says otherwise)
/// writing `out[idx]` from the given reads.
pub fn map1(
    p: &mut Program,
    label: &str,
    params: &[(&str, i64)],
    reads: Vec<In>,
    out: (&str, Subset),
    value: TExpr,
) -> NodeId {
    let params: Vec<(&str, Range)> = params.iter().map(|(n, e)| (*n, Range::upto(*e))).collect();
    p.build(|b| {
        b.map(label, params, Schedule::Sequential, |b| {
            b.tasklet(label, reads, vec![Out("o", out.0, out.1, None, value)]);
        })
    })
}

/// The first top-level access node of `data`, in topological order.
pub fn access_id(p: &Program, data: &str) -> NodeId {
    p.graph
        .ordered()
        .into_iter()
        .map(|i| p.graph.node(i))
        .find(|n| matches!(&n.kind, NodeKind::Access(d) if d == data))
        .map(|n| n.id)
        .unwrap_or_else(|| panic!("no access node of {data}"))
}

/// Shorthand for a tasklet read.
pub fn read<'a>(conn: &'a str, data: &'a str, idx: Vec<SymExpr>) -> In<'a> {
    In(conn, data, Subset::element(idx))
}
