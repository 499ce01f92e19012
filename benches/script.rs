//! The overhead of a transformation written in Rhai against the same transformation built in.
//! Run with `cargo bench --bench script`.
//!
//! `ScriptedInterchange` (stdlib/interchange.rhai) re-implements `MapInterchange`; on a program
//! of many small independent 2-D maps (100,000 nodes by default) this times
//!
//! - **matching**: listing the candidates and planning at every one (the check runs, nothing is
//!   applied) — for the script, one call into Rhai per map; and
//! - **one application** through the engine, on a fresh copy of the program each run (the copy
//!   is not timed). The numerics layer is lowered on both sides (it would interpret the whole
//!   program and swamp the difference); invariants and legality run.
//!
//! Both sides must plan at the same sites and end at the same program hash before anything is
//! reported. Runs alternate which side goes first, so drift on a shared machine hits both;
//! figures are medians with their spread, ratios medians of per-run ratios.
//! `SCRIPT_BENCH_NODES` (default 100000) sets the program size, `SCRIPT_BENCH_REPS` (default 7)
//! the runs.

use dmove::bench::Stats;
use dmove::ir::build::{In, Out};
use dmove::ir::{BinOp, DType, DataKind, Program, Range, Schedule, Storage};
use dmove::ir::{Subset, SymExpr, TExpr};
use dmove::script::{self, Limits};
use dmove::transform::engine::{program_hash, Checks, Engine, Layer};
use dmove::transform::{find, ParamValue, Params, Transformation};
use std::time::Instant;

/// Interchange swaps the two parameters of every map.
fn swap() -> Params {
    Params::from([("order".to_string(), ParamValue::Ints(vec![1, 0]))])
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a count")),
        Err(_) => default,
    }
}

/// `blocks` independent maps `y_k[i, j] = 2·x_k[i, j]` over `i in 0..4, j in 0..8`: every map
/// is a candidate of both sides, and interchange applies at each.
fn independent_2d_maps(blocks: usize) -> Program {
    let mut p = Program::new("many_2d_maps");
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    p.build(|b| {
        let ij = || Subset::element([SymExpr::sym("i"), SymExpr::sym("j")]);
        for k in 0..blocks {
            let [x, y] = [("x", DataKind::Input), ("y", DataKind::Output)].map(|(v, kind)| {
                let shape = vec![SymExpr::Int(4), SymExpr::Int(8)];
                b.declare(&format!("{v}{k}"), DType::F32, shape, kind, Storage::Global)
            });
            let range = vec![
                ("i", Range::upto(SymExpr::Int(4))),
                ("j", Range::upto(SymExpr::Int(8))),
            ];
            b.map(&format!("m{k}"), range, Schedule::Sequential, |b| {
                let value = TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::Const(2.0));
                b.tasklet(
                    "double",
                    vec![In("a", &x, ij())],
                    vec![Out("b", &y, ij(), None, value)],
                );
            });
            inputs.push(x);
            outputs.push(y);
        }
    });
    p.inputs = inputs.into();
    p.outputs = outputs.into();
    p
}

/// Every node of `p`, map bodies included.
fn nodes_in(p: &Program) -> usize {
    let mut n = 0;
    p.graph.walk(&mut |_| n += 1);
    n
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// Lists the candidates of `t` and plans at each; (ms, how many plans succeeded).
fn matching(engine: &Engine, p: &Program, t: &dyn Transformation) -> (f64, usize) {
    let start = Instant::now();
    let planned = (t.candidates(p).iter())
        .filter(|site| engine.plan(p, t, site, &swap()).is_ok())
        .count();
    (ms(start), planned)
}

/// Applies `t` once at the first map of a fresh copy of `p`; (ms, the hash after).
fn one_application(engine: &mut Engine, p: &Program, t: &dyn Transformation) -> (f64, String) {
    let mut q = p.clone();
    let site = t.candidates(&q)[0].clone();
    let start = Instant::now();
    let step = (engine.apply(&mut q, t, &site, &swap())).expect("interchange applies");
    (ms(start), step.hash_after)
}

/// Runs `f(side)` for both sides `reps` times, alternating which goes first; every pair must
/// agree on what it produced. Per side the times, then the per-run ratios scripted / built-in.
fn pairs<R: PartialEq + std::fmt::Debug>(
    reps: usize,
    sides: [&'static dyn Transformation; 2],
    f: &mut dyn FnMut(&'static dyn Transformation) -> (f64, R),
) -> [Stats; 3] {
    let (mut times, mut ratios) = ([Vec::new(), Vec::new()], Vec::new());
    for r in 0..reps {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut got: [Option<(f64, R)>; 2] = [None, None];
        for side in order {
            got[side] = Some(f(sides[side]));
        }
        let [Some((tb, rb)), Some((ts, rs))] = got else {
            unreachable!("both sides ran")
        };
        assert_eq!(rb, rs, "the built-in and the script disagree");
        times[0].push(tb);
        times[1].push(ts);
        ratios.push(ts / tb);
    }
    let stats = |v: &[f64]| Stats::from_samples(v).expect("at least one run");
    [stats(&times[0]), stats(&times[1]), stats(&ratios)]
}

fn cell(s: &Stats) -> String {
    format!("{:.1} [{:.1}–{:.1}]", s.median_ms, s.min_ms, s.max_ms)
}

fn ratio(s: &Stats) -> String {
    format!("{:.2}× [{:.2}–{:.2}]", s.median_ms, s.min_ms, s.max_ms)
}

fn main() {
    let nodes = env_usize("SCRIPT_BENCH_NODES", 100_000);
    let reps = env_usize("SCRIPT_BENCH_REPS", 7).max(1);
    script::load(
        "std::interchange",
        "std::interchange",
        include_str!("../stdlib/interchange.rhai"),
        Limits::default(),
    )
    .unwrap_or_else(|e| panic!("stdlib/interchange.rhai: {e}"));
    let sides = [
        find("MapInterchange").expect("built in"),
        find("ScriptedInterchange").expect("declared by the script"),
    ];
    // Nodes per block (the map's body included), from one block built the same way.
    let per_block = nodes_in(&independent_2d_maps(1));
    let p = independent_2d_maps(nodes.div_ceil(per_block));
    // Every map is listed by both sides, which must plan at the same number of them.
    let (n, maps) = (nodes_in(&p), sides[0].candidates(&p).len());
    let checks = Checks::default().lower(Layer::Numerics, "benchmark: scripting overhead only");
    let mut engine = Engine::new(checks);
    let before = program_hash(&p);

    let [mb, ms_, mr] = pairs(reps, sides, &mut |t| matching(&engine, &p, t));
    let [ab, as_, ar] = pairs(reps, sides, &mut |t| one_application(&mut engine, &p, t));
    assert_eq!(program_hash(&p), before, "matching changed nothing");

    println!("ScriptedInterchange (Rhai) against MapInterchange (built in), {n} nodes, {maps} maps, {reps} alternating runs; numerics lowered\n");
    println!("| phase | built-in ms | scripted ms | scripted / built-in |");
    println!("|---|---|---|---|");
    println!(
        "| matching: candidates + plan at all {maps} | {} | {} | {} |",
        cell(&mb),
        cell(&ms_),
        ratio(&mr)
    );
    println!(
        "| one application through the engine | {} | {} | {} |",
        cell(&ab),
        cell(&as_),
        ratio(&ar)
    );
    println!(
        "\nmedian [min–max] of each; the ratio is the median of per-run ratios; the script adds {:.3} ms per planned site (difference of the medians / {maps})",
        (ms_.median_ms - mb.median_ms) / maps as f64
    );
}
