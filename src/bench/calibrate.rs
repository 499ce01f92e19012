//! Measuring the cost model's per-access and per-miss costs on this machine.
//!
//! The probes are programs dmove generates like any other: `y[i] = x[i] + y[i + 1] / 2` swept
//! `r` times over
//! working sets sized to sit in each cache level in turn and well beyond the last (so DRAM),
//! compiled with the build flags every program gets and timed on one thread. Each probe's
//! accesses and per-level misses come from the same analysis the model is applied to, so the
//! fitted costs ([`CostModel::fit`]) are what that analysis' counts cost in dmove's own code.
//! The result is kept in the cache directory under the machine's fingerprint, so a machine is
//! calibrated once (about ten seconds) and again only when asked or when the fingerprint changes.

use super::machine::Machine;
use super::Stats;
use crate::analysis::caches::Caches;
use crate::analysis::cost::{CostModel, Probe};
use crate::analysis::trace::IrTrace;
use crate::analysis::{analyze, Options};
use crate::codegen::{cache_dir, BuildConfig, Compiled};
use crate::ir::build::{In, Out};
use crate::ir::{
    BinOp, DType, DataDesc, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr,
};
use sha2::{Digest, Sha256};

/// Accesses each probe makes (about; at least one sweep).
const PROBE_ACCESSES: u64 = 1 << 25;
/// At most this many sampled accesses per probe's analysis.
const ANALYZED_ACCESSES: u64 = 1 << 22;
/// Timed runs per probe (after one warm-up); the median counts.
const REPS: usize = 5;

/// Why calibration failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CalibrateError {
    #[error("probe of {bytes} bytes: {message}")]
    Probe { bytes: u64, message: String },
    #[error("the probes' timings do not determine the costs (every probe has the same traffic)")]
    Undetermined,
    #[error("cannot keep the calibration in {path}: {message}")]
    Store { path: String, message: String },
}

/// The machine's cost model: the one kept for its fingerprint, or a fresh calibration (kept for
/// next time) when there is none or `fresh` asks for one. The flag says whether it was measured now.
pub fn cost_model(caches: &Caches, fresh: bool) -> Result<(CostModel, bool), CalibrateError> {
    let fingerprint = fingerprint(caches);
    let path = cache_dir().join(format!("costs-{fingerprint}.json"));
    if !fresh {
        let kept = std::fs::read(&path).ok();
        if let Some(model) = kept.and_then(|b| serde_json::from_slice::<CostModel>(&b).ok()) {
            if model.fingerprint == fingerprint && model.caches == *caches {
                return Ok((model, false));
            }
        }
    }
    let model = calibrate(caches, fingerprint)?;
    let store = |message: String| CalibrateError::Store {
        path: path.display().to_string(),
        message,
    };
    let json = serde_json::to_vec_pretty(&model).map_err(|e| store(e.to_string()))?;
    std::fs::create_dir_all(cache_dir()).map_err(|e| store(e.to_string()))?;
    crate::fsutil::write_atomic(&path, &json).map_err(|e| store(e.to_string()))?;
    Ok((model, true))
}

/// Measures every probe and fits the costs.
pub fn calibrate(caches: &Caches, fingerprint: String) -> Result<CostModel, CalibrateError> {
    let sizes = probe_sizes(caches);
    let mut rows = Vec::new();
    for &bytes in &sizes {
        rows.push(probe(caches, bytes)?);
    }
    let costs = CostModel::fit(&rows).ok_or(CalibrateError::Undetermined)?;
    let probes = (sizes.iter().zip(&rows))
        .map(|(&bytes, (x, ns))| Probe {
            working_set_bytes: bytes,
            measured_ns: *ns,
            modelled_ns: x.iter().zip(&costs).map(|(a, c)| a * c).sum(),
        })
        .collect();
    Ok(CostModel {
        fingerprint,
        caches: caches.clone(),
        access_ns: costs[0],
        miss_ns: costs[1..].to_vec(),
        probes,
    })
}

/// Working sets (both arrays together, in bytes): half the innermost level; for each further
/// level, the geometric mean of it and the level inside, and half of it; then 4× and 8× the
/// last level.
fn probe_sizes(caches: &Caches) -> Vec<u64> {
    let sizes: Vec<u64> = caches.levels.iter().map(|l| l.size_bytes).collect();
    let mut out = vec![sizes[0] / 2];
    for w in sizes.windows(2) {
        out.push(((w[0] as f64 * w[1] as f64).sqrt()) as u64);
        out.push(w[1] / 2);
    }
    let last = sizes[sizes.len() - 1];
    out.extend([4 * last, 8 * last]);
    out
}

/// One probe: (accesses, misses per level) and its median nanoseconds.
fn probe(caches: &Caches, bytes: u64) -> Result<(Vec<f64>, f64), CalibrateError> {
    let fail = |message: String| CalibrateError::Probe { bytes, message };
    let n = (bytes / 8).max(16);
    let sweeps = (PROBE_ACCESSES / (3 * n)).max(1);
    let p = stream(n, sweeps);
    let accesses = 3 * n * sweeps;
    let rate = (ANALYZED_ACCESSES as f64 / accesses as f64).min(1.0);
    let opts = Options {
        line: Some(caches.line_bytes()),
        caches: Some(caches.clone()),
        sample: (rate < 1.0).then_some(rate.max(1.0 / 1024.0)),
        ..Options::default()
    };
    let trace = IrTrace::new(&p).map_err(|e| fail(e.to_string()))?;
    let d = analyze(&trace, &opts)
        .map_err(|e| fail(e.to_string()))?
        .total
        .stats;
    let compiled =
        Compiled::build_with(&p, &BuildConfig::from_env()).map_err(|e| fail(e.to_string()))?;
    let inputs = crate::check::random_inputs(&p, 1).map_err(|e| fail(e.to_string()))?;
    let samples =
        (compiled.bench_threads(&inputs, 1, REPS, Some(1))).map_err(|e| fail(e.to_string()))?;
    let ms = Stats::from_samples(&samples)
        .ok_or_else(|| fail("no timing".into()))?
        .median_ms;
    let mut features = vec![d.accesses as f64];
    features.extend(
        (0..caches.levels.len()).map(|k| d.level_misses.get(k).copied().unwrap_or(0) as f64),
    );
    Ok((features, ms * 1e6))
}

/// `y[i] = x[i] + y[i + 1] / 2` for `sweeps` sweeps over `n` elements, on one thread. Each
/// sweep reads what the one before wrote one element further on, so the compiler can neither
/// interchange the loops (keeping `y[i]` in a register across sweeps, which would hide the
/// traffic being measured) nor drop a sweep, and the values stay bounded.
fn stream(n: u64, sweeps: u64) -> Program {
    let mut p = Program::new("calibration_stream");
    for (name, len, kind) in [("x", n, DataKind::Input), ("y", n + 1, DataKind::Output)] {
        let shape = vec![SymExpr::Int(len as i64)];
        p.data
            .insert(name.into(), DataDesc::new(DType::F32, shape, kind));
    }
    p.inputs = vec!["x".into()].into();
    p.outputs = vec!["y".into()].into();
    let at = |offset: i64| Subset::element([SymExpr::sym("i") + offset]);
    let value = TExpr::binary(
        BinOp::Add,
        TExpr::input("a"),
        TExpr::binary(BinOp::Mul, TExpr::input("b"), TExpr::Const(0.5)),
    );
    p.build(|b| {
        b.map(
            "sweep",
            vec![
                ("t", Range::upto(sweeps as i64)),
                ("i", Range::upto(n as i64)),
            ],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "step",
                    vec![In("a", "x", at(0)), In("b", "y", at(1))],
                    vec![Out("c", "y", at(0), None, value)],
                );
            },
        );
    });
    p
}

/// What the costs depend on: the CPU, its caches, the compiler and the build flags.
fn fingerprint(caches: &Caches) -> String {
    let m = Machine::detect();
    let config = BuildConfig::from_env();
    let mut h = Sha256::new();
    for part in [
        m.cpu.as_str(),
        m.compiler.as_str(),
        config.compiler.as_str(),
        &config.flags.join(" "),
        &serde_json::to_string(&caches.levels).unwrap_or_default(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..8])
}
