//! The measurements a recipe can score a program by: `dmd()`, `estimate()`, `bytes()` and
//! `time()`.
//!
//! Each one reuses the code the rest of dmove already measures with — the DMD analysis
//! ([`crate::analysis::analyze`]), the memlet volumes the analysis attributes to nodes
//! ([`crate::analysis::NodeInfo::bytes_moved`]) and the compiled-C benchmark harness
//! ([`crate::Compiled::bench`] summarised by [`crate::bench::Stats`]) — so a recipe's score means
//! exactly what `dmove analyze` and `dmove demo` report. Errors are plain strings: the
//! interpreter wraps them in a diagnostic at the expression or `choose` that asked.

use crate::analysis::caches::Caches;
use crate::analysis::trace::IrTrace;
use crate::analysis::{analyze, Options, Report};
use crate::bench::calibrate::cost_model;
use crate::bench::Stats;
use crate::codegen::Compiled;
use crate::ir::{NodeKind, Program};
use crate::ops::expand::expand_all;
use crate::transform::engine::work;
use std::borrow::Cow;

/// Up to this many tasklet executions a program's DMD is measured exactly; beyond it the trace
/// is sampled (SHARDS) so one measurement stays in the order of a second even in a search of
/// 256 candidates.
const EXACT_WORK: u64 = 1 << 21;

/// The lowest sampling rate used: below it the estimate of a small footprint gets too coarse to
/// rank candidates.
const MIN_RATE: f64 = 1.0 / 256.0;

/// Seed of the random inputs `time_ms` runs on (fixed, so two runs time the same data).
const TIME_SEED: u64 = 0x7153;

/// The data-movement distance of `p` at element granularity (the analysis' default), with the
/// cold-access convention of [`crate::analysis`]. Large programs are sampled at a rate that
/// depends only on the program's work (a power of two), so the result is deterministic and
/// candidates of similar size are sampled alike.
pub fn dmd(p: &Program) -> Result<f64, String> {
    Ok(report(p)?.total.dmd)
}

/// The whole analysis behind [`dmd`]: the total, and each top-level node's DMD and bytes moved
/// (what `dmove repl`'s `:cost` shows).
pub fn report(p: &Program) -> Result<Report, String> {
    let p = lowered(p)?;
    let opts = Options {
        sample: sample_rate(work(&p)),
        ..Options::default()
    };
    let trace = IrTrace::new(&p).map_err(|e| e.to_string())?;
    analyze(&trace, &opts).map_err(|e| e.to_string())
}

/// The cost model's time for `p` on this machine, in milliseconds ([`crate::analysis::cost`]):
/// the program analyzed at the caches' line granularity, sampled like [`dmd`], with this
/// machine's calibrated costs (measured on first use, then kept: see `crate::bench::calibrate`).
pub fn estimate_ms(p: &Program) -> Result<f64, String> {
    let p = lowered(p)?;
    let caches = Caches::detect().map_err(|e| e.to_string())?;
    let (model, _) = cost_model(&caches, false).map_err(|e| e.to_string())?;
    let opts = Options {
        line: Some(caches.line_bytes()),
        caches: Some(caches),
        sample: sample_rate(work(&p)),
        ..Options::default()
    };
    let trace = IrTrace::new(&p).map_err(|e| e.to_string())?;
    let report = analyze(&trace, &opts).map_err(|e| e.to_string())?;
    Ok(model.estimate_ms(&report.total))
}

/// Bytes moved by `p`: the sum over its top-level nodes of their outer memlets' volume times
/// element size — the `bytes_moved` total of `dmove analyze`'s report, computed without
/// streaming the trace.
pub fn bytes(p: &Program) -> Result<f64, String> {
    let p = lowered(p)?;
    let trace = IrTrace::new(&p).map_err(|e| e.to_string())?;
    Ok(trace.bytes_moved()? as f64)
}

/// The median wall time of `reps` runs of `p`'s generated C, in milliseconds, after one warm-up
/// run, on random inputs from a fixed seed. The binary is cached by content hash, so timing the
/// same program twice compiles it once.
pub fn time_ms(p: &Program, reps: usize) -> Result<f64, String> {
    if reps == 0 {
        return Err("timing needs at least one repetition".into());
    }
    let p = lowered(p)?;
    let compiled = Compiled::build(&p).map_err(|e| e.to_string())?;
    let inputs = crate::check::random_inputs(&p, TIME_SEED).map_err(|e| e.to_string())?;
    let samples = compiled
        .bench(&inputs, 1, reps)
        .map_err(|e| e.to_string())?;
    let stats = Stats::from_samples(&samples)
        .ok_or_else(|| "the compiled program returned no timings".to_string())?;
    Ok(stats.median_ms)
}

/// `p`, or a copy with every library node expanded to maps and tasklets (what both the trace
/// and the C backend need).
fn lowered(p: &Program) -> Result<Cow<'_, Program>, String> {
    let mut has_library = false;
    p.graph
        .each(&mut |n| has_library |= matches!(n.kind, NodeKind::Library(_)));
    if !has_library {
        return Ok(Cow::Borrowed(p));
    }
    let mut q = p.clone();
    expand_all(&mut q).map_err(|e| format!("cannot lower the program: {e}"))?;
    Ok(Cow::Owned(q))
}

/// `None` (exact) up to [`EXACT_WORK`] tasklet executions, else the largest power-of-two rate
/// that brings the sampled work under it (at least [`MIN_RATE`]). Unknown work (a symbolic
/// extent) is measured exactly: the trace itself reports an unbound symbol.
fn sample_rate(work: Option<u64>) -> Option<f64> {
    let mut work = work?;
    let mut rate = 1.0;
    while work > EXACT_WORK && rate > MIN_RATE {
        work /= 2;
        rate /= 2.0;
    }
    (rate < 1.0).then_some(rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixtures::matmul;
    use crate::ir::{Schedule, SymExpr};

    fn small() -> Program {
        let n = || SymExpr::from(8);
        matmul(n(), n(), n(), Schedule::Sequential)
    }

    #[test]
    fn small_programs_are_measured_exactly_and_large_ones_sampled_by_powers_of_two() {
        assert_eq!(sample_rate(Some(1000)), None);
        assert_eq!(sample_rate(Some(EXACT_WORK)), None);
        assert_eq!(sample_rate(Some(EXACT_WORK * 2)), Some(0.5));
        assert_eq!(sample_rate(Some(EXACT_WORK * 5)), Some(0.125));
        assert_eq!(sample_rate(Some(u64::MAX)), Some(MIN_RATE));
        assert_eq!(sample_rate(None), None);
    }

    #[test]
    fn dmd_is_the_analysis_total_and_deterministic() {
        let p = small();
        let want = analyze(&IrTrace::new(&p).expect("trace"), &Options::default())
            .expect("analysis")
            .total
            .dmd;
        assert_eq!(dmd(&p), Ok(want));
        assert_eq!(dmd(&p), dmd(&p));
    }

    #[test]
    fn bytes_is_the_reports_bytes_moved() {
        let p = small();
        let report =
            analyze(&IrTrace::new(&p).expect("trace"), &Options::default()).expect("analysis");
        let want = report.total.bytes_moved.expect("constant volumes") as f64;
        assert_eq!(bytes(&p), Ok(want));
        assert!(want > 0.0);
    }

    #[test]
    fn symbolic_sizes_are_errors_not_panics() {
        let s = || SymExpr::sym("n");
        let p = matmul(s(), s(), s(), Schedule::Sequential);
        assert!(dmd(&p).is_err());
        assert!(bytes(&p).is_err());
        assert!(time_ms(&p, 0).is_err());
    }
}
