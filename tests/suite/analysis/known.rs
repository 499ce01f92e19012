//! Closed forms and bounds from the published analysis of matmul data movement.

use dmove::analysis::kernels::Kernel;
use dmove::analysis::{analyze, Options, Report};
use std::collections::{BTreeMap, BTreeSet};

pub fn kernel(name: &str, params: &[(&str, &str)], opts: &Options) -> Report {
    let params: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let k = Kernel::new(name, &params).expect("valid kernel");
    analyze(&k, opts).expect("analyzes")
}

/// F(n) from the issue: every access of the ijk trace at its steady-state distance.
fn closed_form(n: f64) -> f64 {
    let sum: f64 = (1..n as u64)
        .map(|i| 2.0 * n * (n * n + n + i as f64).sqrt())
        .sum();
    n.powi(3) * (2.0 * n).sqrt()
        + (n.powi(3) - 2.0 * n * n + n) * (n * n + 2.0 * n).sqrt()
        + sum
        + n * (n * n + n).sqrt()
}

#[test]
fn naive_ijk_matmul_matches_the_closed_form() {
    let only = Options {
        only: Some(BTreeSet::from(["L".to_string(), "R".to_string()])),
        ..Options::default()
    };
    for n in [4u64, 8, 16, 32] {
        let r = kernel("matmul", &[("n", &n.to_string())], &only);
        let nf = n as f64;
        assert_eq!(r.total.stats.accesses, 2 * n * n * n);
        assert_eq!(r.total.stats.first_accesses, 2 * n * n);
        let expected = (1.0 - 1.0 / nf) * closed_form(nf);
        let got = r.total.stats.dmd_warm;
        assert!(
            ((got - expected) / expected).abs() < 1e-9,
            "n = {n}: exact {got}, closed form {expected}"
        );
        // The cold convention charges the k-th distinct location sqrt(k).
        let cold: f64 = (1..=2 * n * n).map(|k| (k as f64).sqrt()).sum();
        assert!((r.total.stats.dmd_cold - cold).abs() < 1e-6 * cold);
    }
}

/// DMD of the jj, kk, i, j, k tiled matmul (C, L and R), without and with first accesses.
fn tiled(n: u64, b: u64) -> (f64, f64) {
    let (n, b) = (n.to_string(), b.to_string());
    let r = kernel(
        "matmul-tiled",
        &[("n", &n), ("tile", &b)],
        &Options::default(),
    );
    (r.total.stats.dmd_warm, r.total.dmd)
}

fn check_tiled_bounds(n: u64) -> (u64, u64) {
    let nf = n as f64;
    let mut best_warm = (f64::INFINITY, 0);
    let mut best_all = (f64::INFINITY, 0);
    for b in [4u64, 8, 16, 32] {
        let (warm, all) = tiled(n, b);
        let bf = b as f64;
        let lo = nf.powi(4) / bf + nf.powi(3) * bf;
        let hi = 2.0 * 3f64.sqrt() * nf.powi(4) / bf + 2f64.sqrt() * nf.powi(3) * bf;
        for d in [warm, all] {
            assert!(
                lo <= d && d <= hi,
                "N = {n}, B = {b}: {d} not in [{lo}, {hi}]"
            );
        }
        if warm < best_warm.0 {
            best_warm = (warm, b);
        }
        if all < best_all.0 {
            best_all = (all, b);
        }
    }
    (best_warm.1, best_all.1)
}

#[test]
fn tiled_matmul_is_within_the_bounds_and_best_at_b8_for_n64() {
    assert_eq!(check_tiled_bounds(64), (8, 8));
}

#[test]
#[ignore = "heavy: 34 M accesses; run with --ignored"]
fn tiled_matmul_bounds_at_n128_and_best_b_grows() {
    // sqrt(2)·8 ≈ 11.3: the best B moves from 8 to 16 as N doubles.
    assert_eq!(check_tiled_bounds(128), (16, 16));
}

#[test]
fn line_granularity_separates_loop_orders() {
    // With 64-byte lines, ijk walks R down columns (a new line per access) while ikj walks
    // R and C along rows, reusing each line for 16 consecutive elements.
    let line = Options {
        line: Some(64),
        ..Options::default()
    };
    let ijk = kernel("matmul", &[("n", "32"), ("order", "ijk")], &line);
    let ikj = kernel("matmul", &[("n", "32"), ("order", "ikj")], &line)
        .total
        .dmd;
    assert!(
        ikj < ijk.total.dmd,
        "ikj {ikj} should move less than ijk {}",
        ijk.total.dmd
    );
    // Lines: three 32×32 f32 matrices are 3·32·32·4/64 = 192 lines.
    assert_eq!(ijk.total.stats.first_accesses, 192);
}
