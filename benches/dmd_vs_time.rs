//! Does the DMD ranking of tile sizes predict the run-time ranking of the generated C?
//!
//! `cargo bench --bench dmd_vs_time`: lowers `docs/examples/matmul.ir` (n = 256), tiles its
//! accumulation map with each candidate size, scores every candidate by DMD (elements and 64-byte
//! lines) through `choose_by_dmd`, compiles each variant to C, times it (median of 7 runs after
//! one warm-up, single thread), and prints the table with Spearman's rank correlation.

use dmove::analysis::choose::{choose_by_dmd, tile_candidates, Choice};
use dmove::analysis::Options;
use dmove::bench::Stats;
use dmove::check::random_inputs;
use dmove::cli::{load_program, Bindings};
use dmove::codegen::Compiled;
use dmove::ir::{NodeKind, Program};
use dmove::ops::expand::expand_all;
use dmove::transform::engine::{apply, Checks};
use dmove::transform::find;
use std::path::Path;

const SIZES: [i64; 6] = [4, 8, 16, 32, 64, 128];

/// Ranks (1 = smallest), ties averaged.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        for &k in &idx[i..=j] {
            r[k] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation (Pearson correlation of the ranks).
fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let m = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / m, rb.iter().sum::<f64>() / m);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

fn scores(c: &Choice) -> Vec<f64> {
    c.scores.iter().map(|s| s.dmd.unwrap_or(f64::NAN)).collect()
}

fn main() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/matmul.ir");
    let mut p: Program = load_program(&path, &Bindings::default()).expect("loads");
    expand_all(&mut p).expect("lowers");
    let mut acc = None;
    p.graph.walk(&mut |n| {
        if n.label == "mm_acc" && matches!(n.kind, NodeKind::Map(_)) {
            acc = Some(n.id);
        }
    });
    let acc = acc.expect("the accumulation map");
    let candidates = tile_candidates(&p, acc, &SIZES).expect("a map");
    let checks = Checks::default();
    let by_elements = choose_by_dmd(
        &p,
        "MapTiling",
        &[acc],
        &candidates,
        &Options::default(),
        &checks,
    )
    .expect("scores");
    let lines = Options {
        line: Some(64),
        ..Options::default()
    };
    let by_lines =
        choose_by_dmd(&p, "MapTiling", &[acc], &candidates, &lines, &checks).expect("scores");
    let inputs = random_inputs(&p, 7).expect("inputs");
    let mut times = Vec::new();
    for params in &candidates {
        let mut q = p.clone();
        apply(
            &mut q,
            find("MapTiling").expect("built in"),
            &[acc],
            params,
            &checks,
        )
        .expect("applies");
        let c = Compiled::build(&q).expect("compiles");
        let samples = c.bench(&inputs, 1, 7).expect("runs");
        times.push(Stats::from_samples(&samples).expect("samples").median_ms);
    }
    let (de, dl) = (scores(&by_elements), scores(&by_lines));
    println!("| tile | DMD (elements) | DMD (64-byte lines) | median time (ms) |");
    println!("|-----:|---------------:|--------------------:|-----------------:|");
    for (k, t) in SIZES.iter().enumerate() {
        println!("| {t} | {:.4e} | {:.4e} | {:.2} |", de[k], dl[k], times[k]);
    }
    println!(
        "\nchosen by DMD: elements tile {}, lines tile {}; fastest: tile {}",
        SIZES[by_elements.chosen],
        SIZES[by_lines.chosen],
        SIZES[ranks(&times).iter().position(|&r| r == 1.0).unwrap_or(0)]
    );
    println!(
        "Spearman rank correlation with time: elements {:.3}, lines {:.3}",
        spearman(&de, &times),
        spearman(&dl, &times)
    );
}
