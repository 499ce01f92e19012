//! What the recipe interpreter adds to the engine. Run with `cargo bench --bench recipe`.
//!
//! 1. `std::cpu` through the interpreter on the demo encoder, against the same sequence of engine
//!    calls written as straight-line Rust (the Rust schedule `std::cpu` replaced): both must end
//!    at the same program hash before anything is timed.
//! 2. `apply Parallelize everywhere` on programs of many small independent maps (10k to 100k
//!    nodes, `RECIPE_BENCH_SITES` of them sequential, the rest already parallel), as a plain
//!    transformation, as a rule over a pattern (incremental matcher) and as a rule over a node
//!    class, against `Engine::apply_repeatedly` on the same program.
//!
//! The numerics layer is lowered on both sides. Runs are interleaved (engine, recipe, recipe,
//! engine, …) so drift on a shared machine hits both; every figure is a median with its spread,
//! and the ratios are medians of per-pair ratios measured in this run.
//!
//! `RECIPE_BENCH_REPS` (default 7; 0 skips it) sets the runs of part 1, `RECIPE_BENCH_NODES`
//! (default `10000,30000,100000`; empty skips it) the program sizes of part 2,
//! `RECIPE_BENCH_SITES` (default 16) its sequential maps and `RECIPE_BENCH_BIG_REPS` (default
//! 3) its runs per size and form.

use dmove::bench::Stats;
use dmove::demo::cpu_recipe;
use dmove::demo::model::{encoder_model, EncoderConfig};
use dmove::ir::{NodeId, NodeKind, Program};
use dmove::onnx::{import, load_model, ImportOptions};
use dmove::recipe::run::{run, RunOptions, RunReport};
use dmove::recipe::{check, load_source, Loaded};
use dmove::transform::engine::{program_hash, Budget, Checks, Engine, Layer, StopReason};
use dmove::transform::queries::{longest_param, loop_order, LoopOrder};
use dmove::transform::{find, ParamValue, Params, Transformation};
use std::collections::BTreeMap;
use std::time::Instant;

#[path = "support/many_maps.rs"]
mod many_maps;
use many_maps::{count_nodes, independent_maps};

/// The budget of `apply … everywhere` in the interpreter (`MAX_BODIES`), used on both sides.
const MAX_STEPS: usize = 10_000;
/// The tile `std::cpu` uses for the outermost parallel parameter (its `outer_tile` default).
const OUTER_TILE: i64 = 16;
const SEED: u64 = 2024;

fn t(name: &str) -> &'static dyn Transformation {
    find(name).expect("a registered transformation")
}

fn checks() -> Checks {
    Checks::default().lower(Layer::Numerics, "benchmark: interpreter overhead only")
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

// ---------------------------------------------------------------------------------------------
// Part 1: std::cpu against the same engine calls in Rust.

/// What the straight-line driver did.
struct Driven {
    steps: usize,
    refused: usize,
}

/// `std::cpu` without the interpreter: every library node expanded, element-wise maps fused,
/// then every top-level map scheduled — the sequence of the Rust schedule `std::cpu` replaced,
/// on one engine for the whole run (as the interpreter keeps one).
fn engine_cpu(p: &mut Program, checks: &Checks) -> Driven {
    let mut engine = Engine::new(checks.clone());
    let mut d = Driven {
        steps: 0,
        refused: 0,
    };
    for name in ["Expand", "MapFusion"] {
        let done = engine.apply_repeatedly(p, t(name), &Params::new(), &Budget::steps(MAX_STEPS));
        assert!(done.refused.is_empty(), "{name} refused a rewrite");
        assert_eq!(done.stop, StopReason::Fixpoint, "{name} did not finish");
        d.steps += done.steps.len();
    }
    let maps: Vec<NodeId> = (p.graph.ordered().into_iter())
        .filter(|&i| matches!(p.graph.node(i).kind, NodeKind::Map(_)))
        .map(|i| p.graph.node(i).id)
        .collect();
    for id in maps {
        schedule_map(&mut engine, p, id, &mut d);
    }
    d
}

fn step(
    engine: &mut Engine,
    p: &mut Program,
    name: &str,
    id: NodeId,
    params: Params,
    d: &mut Driven,
) {
    match engine.apply(p, t(name), &[id], &params) {
        Ok(_) => d.steps += 1,
        Err(_) => d.refused += 1,
    }
}

fn one(name: &str, v: ParamValue) -> Params {
    BTreeMap::from([(name.to_string(), v)])
}

/// One top-level map: loop order, split of the output parameters, tiling of the longest when it
/// is at least four tiles long, parallel outer map (as `std::loops::schedule`).
fn schedule_map(engine: &mut Engine, p: &mut Program, id: NodeId, d: &mut Driven) {
    let Some(NodeKind::Map(m)) = p.node(id).map(|n| &n.kind) else {
        return;
    };
    let LoopOrder { order, outputs } = loop_order(m, p);
    let n = m.params.len();
    if order != (0..n).collect::<Vec<_>>() {
        let ints = order.iter().map(|&k| k as i64).collect();
        let params = one("order", ParamValue::Ints(ints));
        step(engine, p, "MapInterchange", id, params, d);
    }
    if outputs == 0 {
        if order.len() == 1 {
            step(engine, p, "Parallelize", id, Params::new(), d);
        }
        return;
    }
    if outputs < n {
        let params = one("split", ParamValue::Int(outputs as i64));
        step(engine, p, "MapExpansion", id, params, d);
    }
    let Some(NodeKind::Map(m)) = p.node(id).map(|n| &n.kind) else {
        return;
    };
    if let Some((longest, len)) = longest_param(m) {
        if len >= 4 * OUTER_TILE {
            let mut tiles = vec![0; m.params.len()];
            tiles[longest] = OUTER_TILE;
            let params = one("tiles", ParamValue::Ints(tiles));
            step(engine, p, "MapTiling", id, params, d);
        }
    }
    step(engine, p, "Parallelize", id, Params::new(), d);
}

fn run_recipe(recipe: &Loaded, p: &mut Program, checks: &Checks) -> RunReport {
    let opts = RunOptions {
        checks: checks.clone(),
        measure: false,
        seed: SEED,
        ..RunOptions::default()
    };
    match run(recipe, p, &opts) {
        Ok(report) => report,
        Err(e) => panic!(
            "the recipe failed:\n{}",
            recipe
                .sources
                .render_plain(std::slice::from_ref(&e.diagnostic))
        ),
    }
}

/// One timed run: its time, and what it did (so both sides can be checked to do the same work).
struct Sample {
    ms: f64,
    steps: usize,
    hash: String,
}

/// Interleaved runs of two sides doing the same work.
struct Pairs {
    a: Vec<f64>,
    b: Vec<f64>,
    steps: usize,
}

impl Pairs {
    /// Runs `fa` and `fb` `reps` times, alternating which goes first; every pair must end at
    /// the same program after the same number of steps.
    fn measure(
        reps: usize,
        fa: &mut dyn FnMut() -> Sample,
        fb: &mut dyn FnMut() -> Sample,
    ) -> Pairs {
        let mut pairs = Pairs {
            a: Vec::new(),
            b: Vec::new(),
            steps: 0,
        };
        for r in 0..reps {
            let (x, y) = if r % 2 == 0 {
                let x = fa();
                (x, fb())
            } else {
                let y = fb();
                (fa(), y)
            };
            assert_eq!(x.hash, y.hash, "the two sides end at different programs");
            assert_eq!(
                x.steps, y.steps,
                "the two sides apply different numbers of steps"
            );
            pairs.a.push(x.ms);
            pairs.b.push(y.ms);
            pairs.steps = x.steps;
        }
        pairs
    }

    /// Median, minimum and maximum of `b[i] / a[i]`.
    fn ratio(&self) -> Stats {
        let r: Vec<f64> = self.a.iter().zip(&self.b).map(|(a, b)| b / a).collect();
        stats(&r)
    }
}

fn stats(v: &[f64]) -> Stats {
    Stats::from_samples(v).expect("at least one sample")
}

fn spread(s: &Stats) -> String {
    format!("{:.1} [{:.1}–{:.1}]", s.median_ms, s.min_ms, s.max_ms)
}

fn ratio_cell(s: &Stats) -> String {
    format!("{:.3}× [{:.3}–{:.3}]", s.median_ms, s.min_ms, s.max_ms)
}

fn part1(reps: usize) -> (Stats, bool) {
    let cfg = EncoderConfig::default();
    let bytes = encoder_model(&cfg, SEED);
    let library = import(
        &load_model(&bytes).expect("model"),
        &ImportOptions::default(),
    )
    .expect("imports");
    let checks = checks();
    let start = Instant::now();
    let recipe = cpu_recipe().expect("std::cpu checks");
    let load_ms = ms(start);

    // The same work: both reach the same program.
    let mut by_engine = library.clone();
    let driven = engine_cpu(&mut by_engine, &checks);
    let mut by_recipe = library.clone();
    let report = run_recipe(&recipe, &mut by_recipe, &checks);
    let (he, hr) = (program_hash(&by_engine), program_hash(&by_recipe));
    assert_eq!(
        he, hr,
        "std::cpu and the Rust driver end at different programs"
    );
    assert_eq!(
        driven.steps,
        report.steps.len(),
        "different numbers of steps"
    );
    println!(
        "part 1: demo encoder (seq {}, hidden {}, {} heads, FFN {}): {} library nodes → {} steps, {} refused, same final hash {he}",
        cfg.seq, cfg.hidden, cfg.heads, cfg.ffn,
        library.graph.node_count(), driven.steps, driven.refused,
    );

    let mut engine_side = || {
        let mut p = library.clone();
        let start = Instant::now();
        let d = engine_cpu(&mut p, &checks);
        let ms = ms(start);
        let hash = program_hash(&p);
        Sample {
            ms,
            steps: d.steps,
            hash,
        }
    };
    let mut recipe_side = || {
        let mut p = library.clone();
        let start = Instant::now();
        let report = run_recipe(&recipe, &mut p, &checks);
        let ms = ms(start);
        let hash = program_hash(&p);
        Sample {
            ms,
            steps: report.steps.len(),
            hash,
        }
    };
    let pairs = Pairs::measure(reps, &mut engine_side, &mut recipe_side);
    let ratio = pairs.ratio();
    let (e, r) = (stats(&pairs.a), stats(&pairs.b));
    println!();
    println!("| std::cpu on the demo encoder ({reps} interleaved runs) | median ms [min–max] |");
    println!("|---|---|");
    println!("| engine calls in Rust | {} |", spread(&e));
    println!("| recipe interpreter (`run`) | {} |", spread(&r));
    println!("| loading and checking std::cpu (once per `dmove run`) | {load_ms:.1} |");
    println!(
        "| **recipe / engine** (median of per-pair ratios) | {} |",
        ratio_cell(&ratio)
    );
    let with_load = (r.median_ms + load_ms) / e.median_ms;
    println!("| recipe incl. load+check / engine (medians) | {with_load:.3}× |");
    let holds = ratio.median_ms <= 1.10;
    println!("target ≤ 1.10×: {}", if holds { "holds" } else { "FAILS" });
    (ratio, holds)
}

// ---------------------------------------------------------------------------------------------
// Part 2: apply … everywhere on a large program.

/// The three recipe forms of "parallelize every map".
fn big_recipes() -> Vec<(&'static str, Loaded)> {
    let forms = [
        (
            "`apply Parallelize everywhere`",
            "main {\n  apply Parallelize everywhere\n}\n",
        ),
        (
            "`apply par everywhere`, `par(x: seq_map)` (pattern)",
            "pattern seq_map {\n  m = map[schedule = sequential]\n}\n\nrule par(x: seq_map) {\n  Parallelize(x.m)\n}\n\nmain {\n  apply par everywhere\n}\n",
        ),
        (
            "`apply par everywhere`, `par(m: map)` (node class)",
            "rule par(m: map) {\n  Parallelize(m)\n}\n\nmain {\n  apply par everywhere\n}\n",
        ),
    ];
    (forms.into_iter())
        .map(|(label, body)| {
            let text = format!("recipe \"bench::parallel\" version \"0.1.0\"\n\n{body}");
            let loaded = load_source("bench::parallel", &text, None);
            let errors: Vec<_> = check(&loaded)
                .into_iter()
                .filter(|d| d.is_error())
                .collect();
            assert!(
                errors.is_empty(),
                "{}",
                loaded.sources.render_plain(&errors)
            );
            (label, loaded)
        })
        .collect()
}

/// One size of part 2: rows of the table, and whether every form is within 2× of the engine.
fn part2_size(
    nodes: usize,
    sites: usize,
    reps: usize,
    recipes: &[(&'static str, Loaded)],
) -> (Vec<String>, bool) {
    let program = independent_maps(nodes, sites);
    let (count, maps) = count_nodes(&program);
    let checks = checks();
    let parallelize = t("Parallelize");
    let budget = Budget::steps(MAX_STEPS);
    let mut engine_side = || {
        let mut p = program.clone();
        let mut engine = Engine::new(checks.clone());
        let start = Instant::now();
        let done = engine.apply_repeatedly(&mut p, parallelize, &Params::new(), &budget);
        let ms = ms(start);
        assert_eq!(done.stop, StopReason::Fixpoint);
        let hash = program_hash(&p);
        Sample {
            ms,
            steps: done.steps.len(),
            hash,
        }
    };
    let mut rows = Vec::new();
    let mut holds = true;
    let mut engine_times = Vec::new();
    let mut steps = 0;
    for (label, recipe) in recipes {
        let mut recipe_side = || {
            let mut p = program.clone();
            let start = Instant::now();
            let report = run_recipe(recipe, &mut p, &checks);
            let ms = ms(start);
            let hash = program_hash(&p);
            Sample {
                ms,
                steps: report.steps.len(),
                hash,
            }
        };
        let pairs = Pairs::measure(reps, &mut engine_side, &mut recipe_side);
        steps = pairs.steps;
        let ratio = pairs.ratio();
        holds &= ratio.median_ms <= 2.0;
        engine_times.extend(pairs.a.iter().copied());
        let r = stats(&pairs.b);
        rows.push(format!(
            "| {count} | {maps} | {steps} | {label} | {} | {:.2} ms | {} |",
            spread(&r),
            r.median_ms / steps.max(1) as f64,
            ratio_cell(&ratio),
        ));
    }
    let e = stats(&engine_times);
    rows.insert(
        0,
        format!(
            "| {count} | {maps} | {steps} | `Engine::apply_repeatedly(Parallelize)` | {} | {:.2} ms | 1 |",
            spread(&e),
            e.median_ms / steps.max(1) as f64,
        ),
    );
    (rows, holds)
}

fn main() {
    let reps: usize = env_or("RECIPE_BENCH_REPS", "7").parse().expect("a count");
    let big_reps: usize = env_or("RECIPE_BENCH_BIG_REPS", "3")
        .parse()
        .expect("a count");
    let sites: usize = env_or("RECIPE_BENCH_SITES", "16").parse().expect("a count");
    let sizes: Vec<usize> = (env_or("RECIPE_BENCH_NODES", "10000,30000,100000").split(','))
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().expect("a node count"))
        .collect();
    let (cpu_ratio, cpu_holds) = match reps {
        0 => (stats(&[f64::NAN]), false),
        _ => part1(reps),
    };

    println!();
    println!("part 2: apply Parallelize everywhere on independent maps ({sites} of them sequential), {big_reps} interleaved runs per size and form");
    let recipes = big_recipes();
    let mut rows = Vec::new();
    let mut big_holds = true;
    for &n in &sizes {
        let start = Instant::now();
        let (r, holds) = part2_size(n, sites, big_reps, &recipes);
        eprintln!(
            "  {n} nodes measured in {:.0} s",
            start.elapsed().as_secs_f64()
        );
        rows.extend(r);
        big_holds &= holds;
    }
    println!();
    println!("| nodes | maps | steps | form | median ms [min–max] | per step | recipe / engine [min–max] |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    println!();
    println!(
        "std::cpu recipe / engine: {:.3}× (target ≤ 1.10×: {})",
        cpu_ratio.median_ms,
        if cpu_holds { "holds" } else { "FAILS" }
    );
    println!(
        "apply … everywhere recipe / engine: target ≤ 2×: {}",
        if big_holds {
            "holds at every size and form"
        } else {
            "FAILS"
        }
    );
}
