//! What one checked step costs as programs grow. Run with `cargo bench --bench steps`.
//!
//! 1. **Per step against program size**: one `Parallelize` at each of `STEPS_BENCH_SITES`
//!    sequential maps of a program of many small independent maps (`STEPS_BENCH_NODES`, default
//!    `2000,10000,100000` nodes, map bodies counted), through `Engine::apply` at a known site
//!    (no candidate search), numerics lowered: the engine's own cost of a local rewrite, by
//!    phase (planning, rewrite with its rollback snapshot, hashing and diff, validation, races).
//! 2. **Chains**: `std::cpu` on chains of 32×32 MatMul+ReLU layers (`STEPS_BENCH_CHAINS`,
//!    default `12,60,200` layers) with numerics lowered, so the figure is the engine's time per
//!    step, and the ratio of the longest chain's per-step time to the shortest's.
//! 3. **Whole pipelines, every step checked** (numerics on): `std::cpu` on the demo encoder
//!    layer, the locked BERT-shaped model (`dmove models`), the locked ResNet-50-shaped one at
//!    224×224 instead of 64×64, and a chain of part 2
//!    (`STEPS_BENCH_MODELS`, default `encoder,bert,resnet50,chain200`), with where the time
//!    went.
//!
//! 4. With `STEPS_BENCH_EVERYWHERE=N` (off by default: minutes at 100k): `apply Parallelize
//!    everywhere` through the recipe interpreter on N nodes of maps that are all sequential.
//!
//! Each figure is the median of `STEPS_BENCH_REPS` runs (default 3) with its [min–max]; the
//! machine is shared, so read the spreads. Nothing here is asserted against a time.

use dmove::bench::Stats;
use dmove::demo::cpu_recipe;
use dmove::demo::model::encoder_model;
use dmove::ir::{NodeId, NodeKind, Program, Schedule};
use dmove::onnx::{import, load_model, ImportOptions};
use dmove::recipe::load_source;
use dmove::recipe::run::{run, RunOptions};
use dmove::transform::engine::{Checks, Engine, Layer, StepTime, TimeSummary};
use dmove::transform::{find, Params};
use dmove::zoo::net::Net;
use dmove::zoo::{recipe_models, resnet50_at};
use std::time::{Duration, Instant};

#[path = "support/many_maps.rs"]
mod many_maps;
use many_maps::{count_nodes, independent_maps};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn list(name: &str, default: &str) -> Vec<String> {
    (env_or(name, default).split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn stats(v: &[f64]) -> Stats {
    Stats::from_samples(v).expect("at least one sample")
}

fn spread(s: &Stats) -> String {
    format!("{:.2} [{:.2}–{:.2}]", s.median_ms, s.min_ms, s.max_ms)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn lowered() -> Checks {
    Checks::default().lower(Layer::Numerics, "benchmark: the engine's own cost")
}

/// The median per step of each phase, in ms.
fn phases(times: &[StepTime]) -> String {
    let median = |f: &dyn Fn(&StepTime) -> Duration| {
        stats(&times.iter().map(|t| ms(f(t))).collect::<Vec<_>>()).median_ms
    };
    format!(
        "{:.2} | {:.2} | {:.2} | {:.2} | {:.2}",
        median(&|t| t.plan),
        median(&|t| t.rewrite),
        median(&|t| t.hash),
        median(&|t| t.validate),
        median(&|t| t.races),
    )
}

// ---------------------------------------------------------------------------------------------
// Part 1: per step against program size.

fn part1(sizes: &[usize], sites: usize, reps: usize) {
    println!("part 1: one Parallelize at a known site, numerics lowered, {reps} runs per size");
    println!("(the first step of a run hashes and validates the whole program once; the later");
    println!("steps cost what they change)");
    println!();
    println!("| nodes | maps | steps | first step ms | ms per later step [min–max] | plan | rewrite | hash | validate | races |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let parallelize = find("Parallelize").expect("registered");
    for &n in sizes {
        let program = independent_maps(n, sites);
        let (nodes, maps) = count_nodes(&program);
        let sequential: Vec<NodeId> = (program.graph.nodes())
            .filter(|n| matches!(&n.kind, NodeKind::Map(m) if m.schedule == Schedule::Sequential))
            .map(|n| n.id)
            .collect();
        let (mut first, mut later, mut times) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let mut p = program.clone();
            let mut engine = Engine::new(lowered());
            let mut step = |id: &NodeId| {
                let start = Instant::now();
                (engine.apply(&mut p, parallelize, &[*id], &Params::new()))
                    .expect("Parallelize applies at every sequential map");
                ms(start.elapsed())
            };
            first.push(step(&sequential[0]));
            let rest: f64 = sequential[1..].iter().map(&mut step).sum();
            later.push(rest / (sequential.len() - 1).max(1) as f64);
            times.extend(engine.timings().iter().skip(1).map(|t| t.time.clone()));
        }
        println!(
            "| {nodes} | {maps} | {} | {:.1} | {} | {} |",
            sequential.len(),
            stats(&first).median_ms,
            spread(&stats(&later)),
            phases(&times)
        );
    }
    println!();
}

// ---------------------------------------------------------------------------------------------
// Parts 2 and 3: std::cpu on models.

/// `layers` × (32×32 MatMul, ReLU) on a `[32, 32]` input.
fn chain(layers: usize) -> Vec<u8> {
    let mut net = Net::new("chain", 17, 7);
    net.input("x", dmove::ir::DType::F32, &["32", "32"]);
    let mut x = "x".to_string();
    for l in 0..layers {
        let w = net.kaiming(&format!("w{l}"), &[32, 32], 32);
        let y = net.op(&format!("/layer{l}"), "MatMul", &[&x, &w], Vec::new());
        x = net.op(&format!("/layer{l}"), "Relu", &[&y], Vec::new());
    }
    net.op_into("/out", "Identity", &[&x], "y", Vec::new());
    net.output("y", &["32", "32"]);
    net.finish().bytes
}

fn model(name: &str) -> (Vec<u8>, ImportOptions) {
    let mut opts = ImportOptions::default();
    let bytes = match name {
        "encoder" => encoder_model(&Default::default(), 2024),
        "bert" => {
            opts.dims
                .extend([("batch_size".into(), 2), ("sequence".into(), 8)]);
            let locked = recipe_models().into_iter().find(|m| m.name == "bert");
            locked.expect("the locked BERT").bytes()
        }
        "resnet50" => {
            opts.dims.insert("batch_size".into(), 1);
            resnet50_at(224)
        }
        other => match other.strip_prefix("chain").and_then(|l| l.parse().ok()) {
            Some(layers) => chain(layers),
            None => panic!("unknown model {other}: encoder, bert, resnet50 or chain<layers>"),
        },
    };
    (bytes, opts)
}

/// `std::cpu` on `bytes`: the wall time and the engine's summary.
fn cpu(bytes: &[u8], opts: &ImportOptions, checks: Checks) -> (f64, TimeSummary) {
    let mut p: Program = import(&load_model(bytes).expect("loads"), opts).expect("imports");
    let recipe = cpu_recipe().expect("std::cpu loads");
    let run_opts = RunOptions {
        checks,
        measure: false,
        ..RunOptions::default()
    };
    let start = Instant::now();
    let report = run(&recipe, &mut p, &run_opts).expect("std::cpu runs");
    let wall = ms(start.elapsed());
    (wall, TimeSummary::of(&report.step_times))
}

fn part2(layers: &[usize], reps: usize) {
    println!("part 2: std::cpu on MatMul+ReLU chains, numerics lowered, {reps} runs each");
    println!();
    println!("| layers | steps | engine ms per step [min–max] | plan | rewrite | hash | validate | races | wall s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut per_layer = Vec::new();
    for &l in layers {
        let bytes = chain(l);
        let mut per_step = Vec::new();
        let mut walls = Vec::new();
        let mut steps = 0;
        let mut times = Vec::new();
        for _ in 0..reps {
            let (wall, sum) = cpu(&bytes, &ImportOptions::default(), lowered());
            steps = sum.steps;
            per_step.push(ms(sum.time.total()) / steps.max(1) as f64);
            walls.push(wall / 1e3);
            times.push(sum.time.clone());
        }
        let s = stats(&per_step);
        let per = |t: &StepTime| {
            let k = steps.max(1) as u32;
            StepTime {
                plan: t.plan / k,
                rewrite: t.rewrite / k,
                hash: t.hash / k,
                validate: t.validate / k,
                races: t.races / k,
                ..StepTime::default()
            }
        };
        let each: Vec<StepTime> = times.iter().map(per).collect();
        println!(
            "| {l} | {steps} | {} | {} | {:.1} |",
            spread(&s),
            phases(&each),
            stats(&walls).median_ms
        );
        per_layer.push((l, s.median_ms));
    }
    if let (Some(first), Some(last)) = (per_layer.first(), per_layer.last()) {
        if first.0 != last.0 {
            println!();
            println!(
                "per-step time at {} layers / at {} layers: {:.2}×",
                last.0,
                first.0,
                last.1 / first.1
            );
        }
    }
    println!();
}

fn part3(models: &[String], reps: usize) {
    println!("part 3: std::cpu with every step checked (numerics on), {reps} runs each");
    println!();
    println!("| model | steps | wall s [min–max] | engine's own summary (median run) |");
    println!("|---|---|---|---|");
    for name in models {
        let (bytes, opts) = model(name);
        let mut runs: Vec<(f64, TimeSummary)> = (0..reps)
            .map(|_| cpu(&bytes, &opts, Checks::default()))
            .collect();
        let walls: Vec<f64> = runs.iter().map(|(w, _)| w / 1e3).collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (_, median) = &runs[runs.len() / 2];
        let w = stats(&walls);
        println!(
            "| {name} | {} | {:.1} [{:.1}–{:.1}] | {} |",
            median.steps,
            w.median_ms,
            w.min_ms,
            w.max_ms,
            median.render()
        );
    }
    println!();
}

// ---------------------------------------------------------------------------------------------
// Part 4: every map of a large program, one step each.

/// `apply Parallelize everywhere` through the recipe interpreter on `nodes` nodes of maps that
/// are all sequential: one step per map, numerics lowered.
fn part4(nodes: usize) {
    let mut p = independent_maps(nodes, usize::MAX);
    let (count, maps) = count_nodes(&p);
    let text = "recipe \"bench::everywhere\" version \"0.1.0\"\n\nmain {\n  apply Parallelize everywhere\n}\n";
    let recipe = load_source("bench::everywhere", text, None);
    let opts = RunOptions {
        checks: lowered(),
        measure: false,
        ..RunOptions::default()
    };
    let start = Instant::now();
    let report = run(&recipe, &mut p, &opts).expect("the recipe runs");
    let wall = start.elapsed().as_secs_f64();
    let steps = report.steps.len();
    println!("part 4: `apply Parallelize everywhere` on {count} nodes ({maps} maps, all sequential), numerics lowered, one run");
    println!();
    println!(
        "{steps} steps in {wall:.1} s ({:.1} ms per step); {}",
        wall * 1e3 / steps.max(1) as f64,
        TimeSummary::of(&report.step_times).render()
    );
    println!();
}

fn main() {
    let reps: usize = env_or("STEPS_BENCH_REPS", "3").parse().expect("a count");
    let sites: usize = env_or("STEPS_BENCH_SITES", "16").parse().expect("a count");
    let sizes: Vec<usize> = (list("STEPS_BENCH_NODES", "2000,10000,100000").iter())
        .map(|s| s.parse().expect("a node count"))
        .collect();
    let chains: Vec<usize> = (list("STEPS_BENCH_CHAINS", "12,60,200").iter())
        .map(|s| s.parse().expect("a layer count"))
        .collect();
    let models = list("STEPS_BENCH_MODELS", "encoder,bert,resnet50,chain200");
    if !sizes.is_empty() {
        part1(&sizes, sites, reps);
    }
    if !chains.is_empty() {
        part2(&chains, reps);
    }
    if !models.is_empty() {
        part3(&models, reps);
    }
    let everywhere = env_or("STEPS_BENCH_EVERYWHERE", "");
    if !everywhere.trim().is_empty() {
        part4(everywhere.trim().parse().expect("a node count"));
    }
}
