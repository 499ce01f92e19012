//! The incremental matcher agrees with full enumeration after real rewrites, while re-checking
//! only matches near the change.

use crate::common::declare;
use dmove::ir::build::{In, Out};
use dmove::ir::{BinOp, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr};
use dmove::pattern::library::builtin;
use dmove::pattern::{find_all, Matcher};
use dmove::transform::engine::{Checks, Engine};
use dmove::transform::{lookup, ParamValue, Params};

/// `n` independent chains `X_k → (·2) → T_k → (+1) → U_k → (·x) → Y_k` of r×c maps.
fn chains(n: usize, r: i64, c: i64) -> Program {
    let mut p = Program::new("chains");
    let ij = || Subset::element([SymExpr::sym("i"), SymExpr::sym("j")]);
    for k in 0..n {
        declare(&mut p, &format!("X{k}"), &[r, c], DataKind::Input);
        declare(&mut p, &format!("T{k}"), &[r, c], DataKind::Transient);
        declare(&mut p, &format!("U{k}"), &[r, c], DataKind::Transient);
        declare(&mut p, &format!("Y{k}"), &[r, c], DataKind::Output);
    }
    p.build(|b| {
        for k in 0..n {
            let stage = |b: &mut dmove::ir::build::ScopeBuilder,
                         name: &str,
                         ins: &[&str],
                         out: &str,
                         value: TExpr| {
                let params = vec![("i", Range::upto(r)), ("j", Range::upto(c))];
                b.map(name, params, Schedule::Sequential, |b| {
                    let conns = ["a", "x"];
                    let inputs = ins.iter().zip(conns).map(|(d, c)| In(c, d, ij())).collect();
                    b.tasklet(name, inputs, vec![Out("y", out, ij(), None, value)]);
                });
            };
            let (x, t, u, y) = (
                format!("X{k}"),
                format!("T{k}"),
                format!("U{k}"),
                format!("Y{k}"),
            );
            let a = || TExpr::input("a");
            stage(
                b,
                "double",
                &[&x],
                &t,
                TExpr::binary(BinOp::Mul, a(), TExpr::Const(2.0)),
            );
            stage(
                b,
                "inc",
                &[&t],
                &u,
                TExpr::binary(BinOp::Add, a(), TExpr::Const(1.0)),
            );
            stage(
                b,
                "scale",
                &[&u, &x],
                &y,
                TExpr::binary(BinOp::Mul, a(), TExpr::input("x")),
            );
        }
    });
    p
}

#[test]
fn updates_after_fusion_and_tiling_agree_with_full_enumeration() {
    let mut p = chains(4, 3, 5);
    let pattern = builtin("elementwise_chain").expect("built-in");
    let mut matcher = Matcher::new(pattern.clone(), &p);
    assert_eq!(matcher.len(), 8);
    let mut engine = Engine::new(Checks::default());
    let fusion = lookup("MapFusion").expect("exists");
    let tiling = lookup("MapTiling").expect("exists");
    // Fuse the first chain's first pair, then tile a map of another chain.
    let first = matcher.matches()[0].clone();
    let fuse_at = [first.nodes[0], first.nodes[2]];
    let step = engine
        .apply(&mut p, fusion, &fuse_at, &Params::new())
        .expect("fuses");
    assert!(!step.removed.is_empty() && !step.modified.is_empty());
    let stats = matcher.update(&p, &step.change());
    assert_eq!(matcher.matches(), find_all(&pattern, &p));
    assert_eq!(matcher.len(), 7);
    assert!(!stats.reindexed);
    assert!(stats.rechecked <= 2, "{stats:?}");
    assert_eq!(stats.dropped, 1);
    let other = matcher.matches()[3].clone();
    let mut tiles = Params::new();
    tiles.insert("tiles".into(), ParamValue::Ints(vec![2, 0]));
    let step = engine
        .apply(&mut p, tiling, &[other.nodes[0]], &tiles)
        .expect("tiles");
    assert!(!step.added.is_empty());
    let stats = matcher.update(&p, &step.change());
    assert_eq!(matcher.matches(), find_all(&pattern, &p));
    assert!(!stats.reindexed);
    // Fusing the remaining pair of the first chain leaves one map there.
    let rest = matcher.matches()[0].clone();
    let step = engine
        .apply(
            &mut p,
            fusion,
            &[rest.nodes[0], rest.nodes[2]],
            &Params::new(),
        )
        .expect("fuses again");
    matcher.update(&p, &step.change());
    assert_eq!(matcher.matches(), find_all(&pattern, &p));
}

#[test]
fn a_change_reported_only_as_touched_still_updates_correctly() {
    let mut p = chains(2, 2, 3);
    let pattern = builtin("elementwise_chain").expect("built-in");
    let mut matcher = Matcher::new(pattern.clone(), &p);
    let m = matcher.matches()[0].clone();
    let step = dmove::transform::engine::apply(
        &mut p,
        lookup("MapFusion").expect("exists"),
        &[m.nodes[0], m.nodes[2]],
        &Params::new(),
        &Checks::default(),
    )
    .expect("fuses");
    // Only what the transformation reported, plus what disappeared.
    let change = dmove::pattern::Change {
        touched: step.touched.clone(),
        removed: step.removed.clone(),
        ..Default::default()
    };
    matcher.update(&p, &change);
    assert_eq!(matcher.matches(), find_all(&pattern, &p));
}
