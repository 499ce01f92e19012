//! Small hand-built programs shared by integration tests.

pub mod random;

use dmove::ir::build::{In, Out};
use dmove::ir::{
    BinOp, DType, DataDesc, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, UnOp,
};

fn s(name: &str) -> SymExpr {
    SymExpr::sym(name)
}

/// Declares `name` with a static shape.
pub fn declare(p: &mut Program, name: &str, shape: &[i64], kind: DataKind) {
    let shape = shape.iter().map(|&d| SymExpr::Int(d)).collect();
    p.data
        .insert(name.into(), DataDesc::new(DType::F32, shape, kind));
    match kind {
        DataKind::Input => p.inputs.push(name.into()),
        DataKind::Output => p.outputs.push(name.into()),
        _ => {}
    }
}

/// `C = A·B` for A: m×k, B: k×n as an init map and a wcr-sum accumulation map over (i, j, k).
pub fn matmul(m: i64, k: i64, n: i64) -> Program {
    dmove::check::fixtures::matmul(m.into(), k.into(), n.into(), Schedule::Sequential)
}

/// `Y = tanh(X * 2) + X` over an r×c array, as three element-wise maps through transients.
pub fn elementwise_chain(r: i64, c: i64) -> Program {
    let mut p = Program::new("chain");
    declare(&mut p, "X", &[r, c], DataKind::Input);
    declare(&mut p, "T1", &[r, c], DataKind::Transient);
    declare(&mut p, "T2", &[r, c], DataKind::Transient);
    declare(&mut p, "Y", &[r, c], DataKind::Output);
    let ij = || Subset::element([s("i"), s("j")]);
    let params = || vec![("i", Range::upto(r)), ("j", Range::upto(c))];
    p.build(|b| {
        b.map("double", params(), Schedule::Sequential, |b| {
            b.tasklet(
                "mul",
                vec![In("x", "X", ij())],
                vec![Out(
                    "t",
                    "T1",
                    ij(),
                    None,
                    TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::Const(2.0)),
                )],
            );
        });
        b.map("tanh", params(), Schedule::Sequential, |b| {
            b.tasklet(
                "th",
                vec![In("x", "T1", ij())],
                vec![Out(
                    "t",
                    "T2",
                    ij(),
                    None,
                    TExpr::unary(UnOp::Tanh, TExpr::input("x")),
                )],
            );
        });
        b.map("residual", params(), Schedule::Sequential, |b| {
            b.tasklet(
                "add",
                vec![In("a", "T2", ij()), In("x", "X", ij())],
                vec![Out(
                    "y",
                    "Y",
                    ij(),
                    None,
                    TExpr::binary(BinOp::Add, TExpr::input("a"), TExpr::input("x")),
                )],
            );
        });
    });
    p
}
