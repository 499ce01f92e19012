//! Throughput of the exact reuse-distance engine (target: ≥ 20 M accesses/s on one core), and of
//! the whole analysis (kernel generator + engine + per-node/per-array aggregation).
//!
//! `cargo bench --bench reuse` — plain timing with `Instant`, printing accesses per second.

use dmove::analysis::kernels::Kernel;
use dmove::analysis::reuse::{mix64, ReuseEngine};
use dmove::analysis::{analyze, Options};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

/// Addresses of the tiled matmul jj, kk, i, j, k (L, R, then C read and written).
fn tiled_matmul(n: u64, b: u64) -> Vec<u64> {
    let mut v = Vec::with_capacity((4 * n * n * n) as usize);
    for jj in (0..n).step_by(b as usize) {
        for kk in (0..n).step_by(b as usize) {
            for i in 0..n {
                for j in jj..jj + b {
                    for k in kk..kk + b {
                        v.push(i * n + k);
                        v.push(n * n + k * n + j);
                        v.push(2 * n * n + i * n + j);
                        v.push(2 * n * n + i * n + j);
                    }
                }
            }
        }
    }
    v
}

/// This thread's CPU time in seconds (Linux `schedstat`), so the rate is per core even when
/// the machine is shared; `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Times `f` and prints accesses per second of wall time and of CPU time.
fn timed(label: &str, f: impl FnOnce() -> usize) {
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let accesses = f();
    let wall = wall.elapsed().as_secs_f64();
    let per = |s: f64| format!("{:>6.1} M/s", accesses as f64 / s / 1e6);
    let cpu = cpu
        .zip(cpu_seconds())
        .map_or("cpu n/a".to_string(), |(a, b)| {
            format!("cpu {:>6.2} s {}", b - a, per(b - a))
        });
    println!(
        "{label:<52} {accesses:>10} accesses  wall {wall:>6.2} s {}  {cpu}",
        per(wall)
    );
}

fn engine_run(label: &str, trace: &[u64], mut e: ReuseEngine) {
    timed(label, || {
        let mut sum = 0u64;
        for &a in trace {
            sum = sum.wrapping_add(e.access(a).distance);
        }
        black_box(sum);
        trace.len()
    });
}

fn main() {
    let n = 256u64;
    let trace = tiled_matmul(n, 16);
    let space = 3 * n * n;
    engine_run(
        "engine, dense: tiled matmul n=256 B=16",
        &trace,
        ReuseEngine::dense(space),
    );
    engine_run(
        "engine, sparse (hash map): tiled matmul n=256 B=16",
        &trace,
        ReuseEngine::sparse(),
    );
    let m = 1u64 << 20;
    let random: Vec<u64> = (0..8_000_000u64).map(|i| mix64(i) % m).collect();
    engine_run(
        "engine, dense: uniform random over 2^20 locations",
        &random,
        ReuseEngine::dense(m),
    );

    let params: BTreeMap<String, String> = [("n", "256"), ("tile", "16")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let k = Kernel::new("matmul-tiled", &params).expect("kernel");
    timed("whole analysis: matmul-tiled n=256 tile=16", || {
        let r = analyze(&k, &Options::default()).expect("analysis");
        r.total.stats.accesses as usize
    });
}
