//! The synthetic programs of the engine benches: many small independent maps, sized by node
//! count, some of them still sequential (each a `Parallelize` site).

use dmove::ir::build::{In, Out};
use dmove::ir::{BinOp, DType, DataKind, NodeKind, Program, Range, Schedule, Storage};
use dmove::ir::{Subset, SymExpr, TExpr};

/// Outputs per map: each map reads `x[i]` and writes `OUTPUTS` arrays, so a block is
/// `3·OUTPUTS + 3` nodes and a 100,000-node program has ~8,300 maps (below `MAX_STEPS`).
const OUTPUTS: usize = 3;

/// Independent maps `y_j[i] = (j+1)·x[i]` over `i in 0..4`, until the program has at least
/// `nodes` nodes (counting map bodies): `sites` of them sequential, spread evenly, the others
/// already parallel (a partly scheduled program: every map is a candidate of `Parallelize`,
/// every parallel map is checked for races after each step).
pub fn independent_maps(nodes: usize, sites: usize) -> Program {
    let mut p = Program::new("many_maps");
    let per_block = 3 * OUTPUTS + 3;
    let blocks = nodes.div_ceil(per_block);
    let every = (blocks / sites.max(1)).max(1);
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    p.build(|b| {
        let shape = || vec![SymExpr::Int(4)];
        let i = || Subset::element([SymExpr::sym("i")]);
        for k in 0..blocks {
            let x = b.declare(
                &format!("x{k}"),
                DType::F32,
                shape(),
                DataKind::Input,
                Storage::Global,
            );
            let ys: Vec<String> = (0..OUTPUTS)
                .map(|j| {
                    let name = format!("y{k}_{j}");
                    b.declare(
                        &name,
                        DType::F32,
                        shape(),
                        DataKind::Output,
                        Storage::Global,
                    )
                })
                .collect();
            let range = vec![("i", Range::upto(SymExpr::Int(4)))];
            let schedule = match k % every == every / 2 {
                true => Schedule::Sequential,
                false => Schedule::Parallel,
            };
            b.map(&format!("m{k}"), range, schedule, |b| {
                for (j, y) in ys.iter().enumerate() {
                    let value =
                        TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::Const(j as f64 + 1.0));
                    b.tasklet(
                        "scale",
                        vec![In("a", &x, i())],
                        vec![Out("b", y, i(), None, value)],
                    );
                }
            });
            inputs.push(x);
            outputs.extend(ys);
        }
    });
    p.inputs = inputs.into();
    p.outputs = outputs.into();
    p
}

/// Nodes (map bodies counted) and maps of `p`.
pub fn count_nodes(p: &Program) -> (usize, usize) {
    let (mut nodes, mut maps) = (0, 0);
    p.graph.walk(&mut |n| {
        nodes += 1;
        maps += usize::from(matches!(n.kind, NodeKind::Map(_)));
    });
    (nodes, maps)
}
