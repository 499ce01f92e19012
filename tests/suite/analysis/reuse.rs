//! The reuse-distance engine against a brute-force LRU stack, and SHARDS against exact.

use super::known::kernel;
use dmove::analysis::reuse::ReuseEngine;
use dmove::analysis::Options;
use proptest::prelude::*;

/// O(N·M) LRU stack simulation: the distance is the 1-based stack depth; a first access goes on
/// top with distance "distinct locations so far".
fn brute_force(trace: &[u64]) -> Vec<(u64, bool)> {
    let mut stack: Vec<u64> = Vec::new();
    trace
        .iter()
        .map(|&a| match stack.iter().rposition(|&x| x == a) {
            Some(pos) => {
                let depth = (stack.len() - pos) as u64;
                stack.remove(pos);
                stack.push(a);
                (depth, false)
            }
            None => {
                stack.push(a);
                (stack.len() as u64, true)
            }
        })
        .collect()
}

fn engine(mut e: ReuseEngine, trace: &[u64]) -> Vec<(u64, bool)> {
    trace
        .iter()
        .map(|&a| {
            let r = e.access(a);
            (r.distance, r.first)
        })
        .collect()
}

proptest! {
    #[test]
    fn short_random_traces_match_the_stack(trace in prop::collection::vec(0u64..24, 0..400)) {
        let expected = brute_force(&trace);
        prop_assert_eq!(engine(ReuseEngine::dense(24), &trace), expected.clone());
        prop_assert_eq!(engine(ReuseEngine::sparse(), &trace), expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Longer than the engine's initial time window, so compaction (and window growth for the
    /// sparse engine) happens several times.
    #[test]
    fn long_traces_through_compaction_match_the_stack(
        trace in prop::collection::vec(0u64..3000, 9000..14000)
    ) {
        let expected = brute_force(&trace);
        prop_assert_eq!(engine(ReuseEngine::dense(3000), &trace), expected.clone());
        prop_assert_eq!(engine(ReuseEngine::sparse(), &trace), expected);
    }
}

#[test]
fn shards_estimates_a_real_trace_within_a_few_percent() {
    let params = [("n", "64"), ("tile", "8")];
    let exact = kernel("matmul-tiled", &params, &Options::default());
    let sampled = kernel(
        "matmul-tiled",
        &params,
        &Options {
            sample: Some(0.1),
            ..Options::default()
        },
    );
    let err = |a: f64, b: f64| (a - b).abs() / b;
    let e = &exact.total;
    let s = &sampled.total;
    println!(
        "SHARDS rate 0.1: dmd {:.3}%, warm {:.3}%, accesses {:.3}%, footprint {:.3}%",
        100.0 * err(s.dmd, e.dmd),
        100.0 * err(s.stats.dmd_warm, e.stats.dmd_warm),
        100.0 * err(s.stats.accesses as f64, e.stats.accesses as f64),
        100.0 * err(s.stats.first_accesses as f64, e.stats.first_accesses as f64),
    );
    assert!(err(s.dmd, e.dmd) < 0.05);
    assert!(err(s.stats.dmd_warm, e.stats.dmd_warm) < 0.05);
    assert!(err(s.stats.accesses as f64, e.stats.accesses as f64) < 0.05);
    assert_eq!(sampled.sample_rate.map(|r| (r * 1e3).round()), Some(100.0));
}
