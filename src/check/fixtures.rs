//! Small hand-built programs that tests, examples and benchmarks share.

use crate::ir::build::{In, Out};
use crate::ir::{
    BinOp, DType, DataDesc, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Wcr,
};

/// `C = A·B` for A: m×k and B: k×n as an init map and a wcr-sum accumulation map over
/// (i, j, k) with the given schedule — the smallest program with a reduction. Sizes may be
/// symbols (declare them in `symbols` before running).
pub fn matmul(m: SymExpr, k: SymExpr, n: SymExpr, acc_schedule: Schedule) -> Program {
    let mut p = Program::new("matmul");
    let decl = [
        ("A", vec![m.clone(), k.clone()], DataKind::Input),
        ("B", vec![k.clone(), n.clone()], DataKind::Input),
        ("C", vec![m.clone(), n.clone()], DataKind::Output),
    ];
    for (name, shape, kind) in decl {
        p.data
            .insert(name.into(), DataDesc::new(DType::F32, shape, kind));
    }
    p.inputs = vec!["A".into(), "B".into()].into();
    p.outputs = vec!["C".into()].into();
    let s = SymExpr::sym;
    let ij = || Subset::element([s("i"), s("j")]);
    p.build(|b| {
        let rows = || vec![("i", Range::upto(m.clone())), ("j", Range::upto(n.clone()))];
        b.map("init", rows(), Schedule::Sequential, |b| {
            b.tasklet(
                "zero",
                vec![],
                vec![Out("c", "C", ij(), None, TExpr::Const(0.0))],
            );
        });
        let mut space = rows();
        space.push(("k", Range::upto(k.clone())));
        b.map("acc", space, acc_schedule, |b| {
            let product = TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::input("b"));
            b.tasklet(
                "fma",
                vec![
                    In("a", "A", Subset::element([s("i"), s("k")])),
                    In("b", "B", Subset::element([s("k"), s("j")])),
                ],
                vec![Out("c", "C", ij(), Some(Wcr::Sum), product)],
            );
        });
    });
    p
}
