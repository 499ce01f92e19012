//! Random programs for property tests: chains and diamonds of element-wise maps and small
//! matmul-like reductions with odd sizes.

use super::declare;
use dmove::ir::build::{In, Out, ScopeBuilder};
use dmove::ir::{BinOp, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, UnOp, Wcr};
use proptest::prelude::{any, Strategy};

/// One value of the random program, computed from earlier values (by index, taken modulo).
#[derive(Clone, Debug)]
pub enum Op {
    Unary(UnOp, usize),
    Binary(BinOp, usize, usize),
    /// `V[i, j] = Σ_k A[i, k] · W[k, j]` with a c×c input `W`.
    Reduce(usize),
}

pub fn op() -> impl Strategy<Value = Op> {
    let unary = [UnOp::Tanh, UnOp::Neg, UnOp::Abs, UnOp::Sigmoid];
    let binary = [BinOp::Add, BinOp::Mul, BinOp::Sub, BinOp::Max];
    (0..3u8, 0..4usize, any::<usize>(), any::<usize>()).prop_map(move |(k, f, a, b)| match k {
        0 => Op::Unary(unary[f], a),
        1 => Op::Binary(binary[f], a, b),
        _ => Op::Reduce(a),
    })
}

fn ij() -> Subset {
    Subset::element([SymExpr::sym("i"), SymExpr::sym("j")])
}

/// Builds the program: value 0 is the input `X` (r×c), value `n` is `V{n}`; values nobody reads
/// are outputs, the rest transients.
pub fn program(r: i64, c: i64, ops: &[Op]) -> Program {
    let mut p = Program::new("random");
    let mut args: Vec<Vec<usize>> = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        let live = n + 1;
        args.push(match op {
            Op::Unary(_, a) | Op::Reduce(a) => vec![a % live],
            Op::Binary(_, a, b) => vec![a % live, b % live],
        });
    }
    let name = |v: usize| {
        if v == 0 {
            "X".to_string()
        } else {
            format!("V{v}")
        }
    };
    declare(&mut p, "X", &[r, c], DataKind::Input);
    if ops.iter().any(|o| matches!(o, Op::Reduce(_))) {
        declare(&mut p, "W", &[c, c], DataKind::Input);
    }
    for v in 1..=ops.len() {
        let read = args.iter().any(|a| a.contains(&v));
        let kind = if read {
            DataKind::Transient
        } else {
            DataKind::Output
        };
        declare(&mut p, &name(v), &[r, c], kind);
    }
    p.build(|b| {
        for (n, (op, a)) in ops.iter().zip(&args).enumerate() {
            let out = name(n + 1);
            let ins: Vec<String> = a.iter().map(|&v| name(v)).collect();
            emit(b, op, &ins, &out, r, c);
        }
    });
    p
}

fn emit(b: &mut ScopeBuilder, op: &Op, ins: &[String], out: &str, r: i64, c: i64) {
    let space = || vec![("i", Range::upto(r)), ("j", Range::upto(c))];
    let x = || TExpr::input("x");
    match op {
        Op::Unary(f, _) => {
            b.map("unary", space(), Schedule::Sequential, |b| {
                let value = TExpr::unary(*f, x());
                b.tasklet(
                    "f",
                    vec![In("x", &ins[0], ij())],
                    vec![Out("y", out, ij(), None, value)],
                );
            });
        }
        Op::Binary(f, _, _) => {
            b.map("binary", space(), Schedule::Sequential, |b| {
                let value = TExpr::binary(*f, x(), TExpr::input("z"));
                let inputs = vec![In("x", &ins[0], ij()), In("z", &ins[1], ij())];
                b.tasklet("f", inputs, vec![Out("y", out, ij(), None, value)]);
            });
        }
        Op::Reduce(_) => {
            b.map("init", space(), Schedule::Sequential, |b| {
                let zero = TExpr::Const(0.0);
                b.tasklet("zero", vec![], vec![Out("y", out, ij(), None, zero)]);
            });
            let mut params = space();
            params.push(("k", Range::upto(c)));
            b.map("reduce", params, Schedule::Sequential, |b| {
                let (i, j, k) = (SymExpr::sym("i"), SymExpr::sym("j"), SymExpr::sym("k"));
                let inputs = vec![
                    In("x", &ins[0], Subset::element([i.clone(), k.clone()])),
                    In("w", "W", Subset::element([k, j])),
                ];
                let value = TExpr::binary(BinOp::Mul, x(), TExpr::input("w"));
                b.tasklet(
                    "fma",
                    inputs,
                    vec![Out("y", out, ij(), Some(Wcr::Sum), value)],
                );
            });
        }
    }
}
