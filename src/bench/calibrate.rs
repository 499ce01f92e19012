//! Measuring the cost model's costs on this machine.
//!
//! The probes are programs dmove generates like any other: a stream `y[i] = x[i] + y[i + 1] / 2`
//! swept over working sets sized to sit in each cache level in turn and well beyond the last
//! (so DRAM), the same stream in loops of four iterations, a reduction `s += x[i]` and a walk
//! over one line of each of more pages than the TLB holds, compiled
//! with the build flags every program gets and timed on one thread. Each probe's features
//! (accesses, FLOPs by kind, loop runs, misses per level) come from the same analysis the model
//! is applied to, so the fitted costs ([`CostModel::fit`]) are what that analysis' counts cost
//! in dmove's own code. The result is kept in the cache directory under the machine's
//! fingerprint, so a machine is calibrated once (about twenty seconds with a 32 MB last-level
//! cache; 2.5 minutes with a 480 MB one, as the DRAM probes sweep 4 and 8 times it) and again
//! only when asked or when the fingerprint changes.

use super::load;
use super::machine::Machine;
use super::Stats;
use crate::analysis::caches::Caches;
use crate::analysis::cost::{features, CostModel, Probe};
use crate::analysis::trace::IrTrace;
use crate::analysis::{analyze, Options};
use crate::codegen::{cache_dir, BuildConfig, Compiled};
use crate::ir::build::{In, Out};
use crate::ir::{
    BinOp, DType, DataDesc, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Wcr,
};
use sha2::{Digest, Sha256};
use std::sync::{Mutex, OnceLock};

/// Accesses each probe makes (about; at least one sweep).
const PROBE_ACCESSES: u64 = 1 << 25;
/// At most this many sampled accesses per probe's analysis.
const ANALYZED_ACCESSES: u64 = 1 << 22;
/// Timed runs per probe (after one warm-up); the median counts.
const REPS: usize = 5;
/// A calibration during which more cores than this were busy is not kept.
const KEEP_BELOW_BUSY_CORES: f64 = 1.5;

/// Why calibration failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CalibrateError {
    #[error("{kind} probe of {bytes} bytes: {message}")]
    Probe {
        kind: &'static str,
        bytes: u64,
        message: String,
    },
    #[error("the probes' timings do not determine the costs (every probe has the same traffic)")]
    Undetermined,
    #[error("cannot keep the calibration in {path}: {message}")]
    Store { path: String, message: String },
}

/// The machine's cost model: the one kept for its fingerprint, or a fresh calibration when there
/// is none or `fresh` asks for one (kept for next time unless the machine was busy meanwhile).
/// The flag says whether it was measured now.
pub fn cost_model(caches: &Caches, fresh: bool) -> Result<(CostModel, bool), CalibrateError> {
    let memo = MEMO.get_or_init(Mutex::default);
    let mut memo = memo.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // The CPU and compiler do not change within a process: the same caches mean the same
    // machine, without running the compiler again for its fingerprint (a search asks per
    // candidate).
    if let Some(model) = memo.as_ref().filter(|m| !fresh && m.caches == *caches) {
        return Ok((model.clone(), false));
    }
    let (model, measured) = kept_or_calibrated(caches, fingerprint(caches), fresh)?;
    *memo = Some(model.clone());
    Ok((model, measured))
}

/// The cost model this process last used: a search scores many candidates, and a calibration
/// that could not be kept (a busy machine) must not run again for each.
static MEMO: OnceLock<Mutex<Option<CostModel>>> = OnceLock::new();

fn kept_or_calibrated(
    caches: &Caches,
    fingerprint: String,
    fresh: bool,
) -> Result<(CostModel, bool), CalibrateError> {
    let path = cache_dir().join(format!("costs-{fingerprint}.json"));
    if !fresh {
        let kept = std::fs::read(&path).ok();
        if let Some(model) = kept.and_then(|b| serde_json::from_slice::<CostModel>(&b).ok()) {
            if model.fingerprint == fingerprint && model.caches == *caches {
                return Ok((model, false));
            }
        }
    }
    let start = load::read();
    let model = calibrate(caches, fingerprint)?;
    // The probes run on one core: more than this many cores busy over the calibration means
    // something else ran (other processes, or other threads of this one), and costs measured
    // beside it are not kept for later runs.
    let busy = start.zip(load::read()).map(|(a, b)| {
        let total = b.total.saturating_sub(a.total).max(1) as f64;
        b.busy.saturating_sub(a.busy) as f64 / total * crate::codegen::available_cpus() as f64
    });
    if busy.is_some_and(|cores| cores > KEEP_BELOW_BUSY_CORES) {
        eprintln!(
            "note: the machine was busy during calibration ({:.1} cores in use); the costs are used for this run only",
            busy.unwrap_or_default()
        );
        return Ok((model, true));
    }
    let store = |message: String| CalibrateError::Store {
        path: path.display().to_string(),
        message,
    };
    let json = serde_json::to_vec_pretty(&model).map_err(|e| store(e.to_string()))?;
    std::fs::create_dir_all(cache_dir()).map_err(|e| store(e.to_string()))?;
    crate::fsutil::write_atomic(&path, &json).map_err(|e| store(e.to_string()))?;
    Ok((model, true))
}

/// What a probe exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `y[i] = x[i] + y[i + 1] / 2`: vector arithmetic, streaming traffic.
    Stream,
    /// `y[0] += x[i]`: scalar arithmetic (a reduction into one element).
    Reduction,
    /// The stream in innermost loops of four iterations: loop runs.
    ShortLoops,
    /// `y[i] += x[i · page]`: one line of each of more pages than the TLB holds.
    PageWalk,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Stream => "stream",
            Kind::Reduction => "reduction",
            Kind::ShortLoops => "short loops",
            Kind::PageWalk => "page walk",
        }
    }
}

/// Measures every probe and fits the costs.
pub fn calibrate(caches: &Caches, fingerprint: String) -> Result<CostModel, CalibrateError> {
    let mut plan: Vec<(Kind, u64)> = probe_sizes(caches)
        .into_iter()
        .map(|b| (Kind::Stream, b))
        .collect();
    let (inner, outer) = (
        caches.levels[0].size_bytes / 2,
        4 * caches.levels[caches.levels.len() - 1].size_bytes,
    );
    for kind in [Kind::Reduction, Kind::ShortLoops] {
        plan.extend([(kind, inner), (kind, outer)]);
    }
    if let Some(t) = &caches.tlb {
        plan.extend([4, 8].map(|k| (Kind::PageWalk, k * t.entries * t.page_bytes)));
    }
    let mut rows = Vec::new();
    for &(kind, bytes) in &plan {
        rows.push(probe(caches, kind, bytes)?);
    }
    let costs = CostModel::fit(&rows).ok_or(CalibrateError::Undetermined)?;
    let probes = (plan.iter().zip(&rows))
        .map(|(&(kind, bytes), (x, ns))| Probe {
            kind: kind.name().to_string(),
            working_set_bytes: bytes,
            measured_ns: *ns,
            modelled_ns: x.iter().zip(&costs).map(|(a, c)| a * c).sum(),
        })
        .collect();
    Ok(CostModel::new(fingerprint, caches.clone(), &costs, probes))
}

/// Working sets (all arrays together, in bytes): half the innermost level; for each further
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

/// One probe: its features (see [`features`]) and its median nanoseconds.
fn probe(caches: &Caches, kind: Kind, bytes: u64) -> Result<(Vec<f64>, f64), CalibrateError> {
    let fail = |message: String| CalibrateError::Probe {
        kind: kind.name(),
        bytes,
        message,
    };
    let n = (bytes / 8).next_multiple_of(4).max(16);
    let page_floats = caches.tlb.as_ref().map_or(1, |t| t.page_bytes / 4);
    let pages = bytes / (4 * page_floats);
    let per_sweep = match kind {
        Kind::Reduction => 2 * n,
        Kind::PageWalk => 3 * pages,
        Kind::Stream | Kind::ShortLoops => 3 * n,
    };
    let sweeps = (PROBE_ACCESSES / per_sweep).max(1);
    let i = || SymExpr::sym("i");
    let p = match kind {
        Kind::Stream => stream(n, sweeps, 1),
        Kind::ShortLoops => stream(n, sweeps, 4),
        // `y[0] += x[i]`: a reduction into one element.
        Kind::Reduction => accumulation((2 * n, 1), 2 * n, sweeps, i(), SymExpr::Int(0)),
        // `y[i] += x[i · page]`: every access touches another page, each page only one line.
        Kind::PageWalk => {
            let at = i() * page_floats as i64;
            accumulation((pages * page_floats, pages), pages, sweeps, at, i())
        }
    };
    let rate = (ANALYZED_ACCESSES as f64 / (per_sweep * sweeps) as f64).min(1.0);
    let opts = Options {
        line: Some(caches.line_bytes()),
        caches: Some(caches.clone()),
        sample: (rate < 1.0).then_some(rate.max(1.0 / 1024.0)),
        ..Options::default()
    };
    let trace = IrTrace::new(&p).map_err(|e| fail(e.to_string()))?;
    let report = analyze(&trace, &opts).map_err(|e| fail(e.to_string()))?;
    let compiled =
        Compiled::build_with(&p, &BuildConfig::from_env()).map_err(|e| fail(e.to_string()))?;
    let inputs = crate::check::random_inputs(&p, 1).map_err(|e| fail(e.to_string()))?;
    let samples =
        (compiled.bench_threads(&inputs, 1, REPS, Some(1))).map_err(|e| fail(e.to_string()))?;
    let ms = Stats::from_samples(&samples)
        .ok_or_else(|| fail("no timing".into()))?
        .median_ms;
    Ok((features(&report.total, caches.levels.len()), ms * 1e6))
}

/// `y[i] = x[i] + y[i + 1] / 2` for `sweeps` sweeps over `n` elements, on one thread, with
/// innermost loops of `inner` iterations. Each sweep reads what the one before wrote one element
/// further on, so the compiler can neither interchange the loops (keeping `y[i]` in a register
/// across sweeps, which would hide the traffic being measured) nor drop a sweep, and the values
/// stay bounded.
fn stream(n: u64, sweeps: u64, inner: i64) -> Program {
    let mut p = probe_program(&[("x", n, DataKind::Input), ("y", n + 1, DataKind::Output)]);
    let s = SymExpr::sym;
    let i = || {
        if inner == 1 {
            s("i")
        } else {
            s("i") * inner + s("j")
        }
    };
    let at = |offset: i64| Subset::element([i() + offset]);
    let value = TExpr::binary(
        BinOp::Add,
        TExpr::input("a"),
        TExpr::binary(BinOp::Mul, TExpr::input("b"), TExpr::Const(0.5)),
    );
    let mut params = vec![
        ("t", Range::upto(sweeps as i64)),
        ("i", Range::upto(n as i64 / inner)),
        ("j", Range::upto(inner)),
    ];
    if inner == 1 {
        // One loop over the elements, not loops of one iteration.
        params.pop();
    }
    p.build(|b| {
        b.map("sweep", params, Schedule::Sequential, |b| {
            b.tasklet(
                "step",
                vec![In("a", "x", at(0)), In("b", "y", at(1))],
                vec![Out("c", "y", at(0), None, value)],
            );
        });
    });
    p
}

/// `y[at_y] += x[at_x]` for `i` in `0..count`, `sweeps` times, over an `x` of `x_len` and a `y`
/// of `y_len` elements (indices in terms of `i`).
fn accumulation(
    (x_len, y_len): (u64, u64),
    count: u64,
    sweeps: u64,
    at_x: SymExpr,
    at_y: SymExpr,
) -> Program {
    let mut p = probe_program(&[
        ("x", x_len, DataKind::Input),
        ("y", y_len, DataKind::Output),
    ]);
    let params = vec![
        ("t", Range::upto(sweeps as i64)),
        ("i", Range::upto(count as i64)),
    ];
    p.build(|b| {
        b.map("sweep", params, Schedule::Sequential, |b| {
            b.tasklet(
                "add",
                vec![In("a", "x", Subset::element([at_x]))],
                vec![Out(
                    "b",
                    "y",
                    Subset::element([at_y]),
                    Some(Wcr::Sum),
                    TExpr::input("a"),
                )],
            );
        });
    });
    p
}

/// A program over one-dimensional `f32` arrays (name, length, kind).
fn probe_program(arrays: &[(&str, u64, DataKind)]) -> Program {
    let mut p = Program::new("calibration_probe");
    for &(name, len, kind) in arrays {
        let shape = vec![SymExpr::Int(len as i64)];
        p.data
            .insert(name.into(), DataDesc::new(DType::F32, shape, kind));
    }
    let named = |k: DataKind| {
        (arrays.iter())
            .filter(|a| a.2 == k)
            .map(|a| a.0.to_string())
            .collect::<Vec<_>>()
    };
    p.inputs = named(DataKind::Input).into();
    p.outputs = named(DataKind::Output).into();
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
