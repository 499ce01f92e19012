//! Property: any sequence of transformations, at any candidate site with any parameters, either
//! leaves a valid program computing the original's outputs, or is refused and leaves the
//! program byte-for-byte unchanged.
//!
//! Programs are random chains and diamonds of element-wise maps and small matmul-like
//! reductions with odd sizes. Half of the steps run with the engine's numerics layer lowered, so
//! the independent comparison here checks the transformations themselves, not just the engine.
//! Along the way, an incremental [`Matcher`] updated from each step's change must agree with a
//! full enumeration.
//! `DMOVE_PROPTEST_CASES=2000 cargo test --test transform_props` runs many more cases.

mod common;

use common::declare;
use dmove::check::{random_inputs, same_outputs};
use dmove::ir::build::{In, Out, ScopeBuilder};
use dmove::ir::text::print_exact;
use dmove::ir::validate::validate;
use dmove::ir::{
    BinOp, DataKind, NodeKind, Program, Range, Schedule, Subset, SymExpr, TExpr, UnOp, Wcr,
};
use dmove::pattern::library::builtin;
use dmove::pattern::{find_all, Matcher};
use dmove::transform::engine::{Checks, Engine, Layer};
use dmove::transform::{all, ParamSpec, ParamValue, Params};
use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest, ProptestConfig, Strategy};

/// One value of the random program, computed from earlier values (by index, taken modulo).
#[derive(Clone, Debug)]
enum Op {
    Unary(UnOp, usize),
    Binary(BinOp, usize, usize),
    /// `V[i, j] = Σ_k A[i, k] · W[k, j]` with a c×c input `W`.
    Reduce(usize),
}

fn op() -> impl Strategy<Value = Op> {
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
fn program(r: i64, c: i64, ops: &[Op]) -> Program {
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

/// A parameter value for `spec` from random seeds: small integers, and integer lists that are
/// half the time a rotation of `0..len` (a permutation, as orders need). Lists mostly have one
/// entry per parameter of the site's map (`arity`), sometimes a random length. Named modes get
/// one of their names.
fn param(spec: &ParamSpec, seed: u64, arity: Option<usize>) -> Option<ParamValue> {
    let small = |s: u64| (s % 5) as i64;
    match spec.kind {
        "int" => Some(ParamValue::Int(small(seed))),
        "ints" => {
            let len = match arity {
                Some(n) if !seed.is_multiple_of(4) => n as u64,
                _ => 1 + (seed >> 3) % 4,
            };
            let values = if seed & 4 == 0 {
                (0..len).map(|k| ((k + (seed >> 5)) % len) as i64).collect()
            } else {
                (0..len).map(|k| small(seed >> (8 + 3 * k))).collect()
            };
            Some(ParamValue::Ints(values))
        }
        // A choice among named modes (`passes|online`, `nhwc|nchw`): one of them.
        kind if kind.contains('|') && kind.split('|').all(|w| !["str", "int"].contains(&w)) => {
            let choices: Vec<&str> = kind.split('|').collect();
            let pick = choices[(seed % choices.len() as u64) as usize];
            Some(ParamValue::Str(pick.to_string()))
        }
        _ => None,
    }
}

fn cases() -> u32 {
    std::env::var("DMOVE_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn accepted_steps_keep_results_and_refused_steps_change_nothing(
        r in (0..4i64).prop_map(|k| 2 * k + 1),
        c in (0..4i64).prop_map(|k| 2 * k + 1),
        ops in proptest::collection::vec(op(), 1..6),
        steps in proptest::collection::vec(
            (any::<usize>(), any::<usize>(), any::<u64>(), any::<bool>()), 1..7),
    ) {
        let original = program(r, c, &ops);
        prop_assert!(validate(&original).is_ok(), "{:?}", validate(&original));
        let inputs = random_inputs(&original, 11).expect("static shapes");
        let mut p = original.clone();
        let transformations = all();
        let chain = builtin("elementwise_chain").expect("built-in");
        let mut matcher = Matcher::new(chain.clone(), &p);
        for (t_seed, site_seed, param_seed, lower) in steps {
            let t = transformations[t_seed % transformations.len()];
            let candidates = t.candidates(&p);
            if candidates.is_empty() {
                continue;
            }
            let site = &candidates[site_seed % candidates.len()];
            let arity = site.first().and_then(|id| match &p.node(*id)?.kind {
                NodeKind::Map(m) => Some(m.params.len()),
                _ => None,
            });
            let params: Params = t
                .params()
                .iter()
                .enumerate()
                .filter_map(|(k, spec)| {
                    let v = param(spec, param_seed.rotate_left(13 * k as u32), arity)?;
                    Some((spec.name.to_string(), v))
                })
                .collect();
            let checks = if lower {
                Checks::default().lower(Layer::Numerics)
            } else {
                Checks::default()
            };
            let before = print_exact(&p);
            match Engine::new(checks).apply(&mut p, t, site, &params) {
                Ok(step) => {
                    prop_assert!(validate(&p).is_ok(), "{} left {:?}", t.name(), validate(&p));
                    let same = same_outputs(&original, &p, &inputs);
                    prop_assert!(same.is_ok(), "{} at {:?} {:?}: {:?}", t.name(), site, params, same);
                    prop_assert_eq!(&step.hash_after, &dmove::transform::engine::program_hash(&p));
                    matcher.update(&p, &step.change());
                    prop_assert_eq!(matcher.matches(), find_all(&chain, &p));
                }
                Err(_) => prop_assert_eq!(print_exact(&p), before),
            }
        }
    }
}
