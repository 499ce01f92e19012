//! `dmove bench`: a model (or every workload of the [`super::suite`]) lowered as the baseline,
//! optimized by a recipe (`std::cpu` by default) as the `dmove` variant, and both measured
//! beside the peers through the benchmark pipeline ([`crate::bench::variants::measure`]); then,
//! with `--load`, measured once more while one busy process the benchmark starts and stops
//! competes for the CPU.

use super::{optimize_with, DemoError};
use crate::bench::load::BusyProcess;
use crate::bench::peer::Peer;
use crate::bench::variants::{measure, steps, Settings};
use crate::bench::workload::{Reference, Workload};
use crate::bench::Row;
use crate::ir::Program;
use crate::onnx::{import, load_model, ImportOptions};
use crate::progress::{Mode, Progress};
use crate::recipe::run::value::ParamValue;
use crate::recipe::run::RunOptions;
use crate::recipe::Loaded;
use crate::transform::engine::Checks;
use std::collections::BTreeMap;

/// What `dmove bench` measures and how.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub settings: Settings,
    /// Also measure the baseline (the ratio base when present).
    pub baseline: bool,
    pub peers: Vec<Peer>,
    /// numpy was asked for by name: where it does not apply its row says so (otherwise it is
    /// left out of workloads it does not apply to).
    pub numpy_explicit: bool,
    pub seed: u64,
    /// Checks on every step of the recipe.
    pub checks: Checks,
}

/// A workload with its `dmove` variant built, ready to be measured (again, under load).
pub struct Prepared {
    pub workload: Workload,
    pub title: String,
    pub optimized: Program,
    /// Steps the recipe applied.
    pub steps: usize,
}

/// What one workload measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub name: String,
    pub title: String,
    pub flops: u64,
    pub reference: Reference,
    pub rows: Vec<Row>,
}

/// Imports `onnx` (bytes of a model) as the program to benchmark, its symbolic dimensions
/// bound to `dims`.
pub fn import_bytes(onnx: &[u8], dims: &[(&str, i64)]) -> Result<Program, DemoError> {
    let opts = ImportOptions {
        dims: (dims.iter()).map(|&(k, v)| (k.to_string(), v)).collect(),
        ..ImportOptions::default()
    };
    Ok(import(&load_model(onnx)?, &opts)?)
}

/// Prepares `library` (as imported): inputs, reference, baseline, and the recipe's result.
pub fn prepare(
    name: &str,
    title: &str,
    library: Program,
    onnx: Option<Vec<u8>>,
    recipe: &Loaded,
    fixed: BTreeMap<String, ParamValue>,
    opts: &BenchOptions,
) -> Result<Prepared, DemoError> {
    let mut optimized = library.clone();
    // Decisions replayed from a lock (`fixed`) are not searched; the others are, measured
    // like `dmove run` measures them. The caller's bar counts workloads; a spinner of steps
    // under it would fight it for the line.
    let run = RunOptions {
        checks: opts.checks.clone(),
        fixed,
        measure: true,
        seed: opts.seed,
        progress: Mode::Quiet,
        ..RunOptions::default()
    };
    let report = optimize_with(recipe, &mut optimized, &run)?;
    crate::ops::expand::expand_all(&mut optimized)?;
    Ok(Prepared {
        workload: Workload::new(name, library, onnx, opts.seed)?,
        title: title.to_string(),
        optimized,
        steps: report.steps.len(),
    })
}

/// The peers measured on `w`: numpy only where it applies, unless asked for by name.
fn peers_for(w: &Workload, opts: &BenchOptions) -> Vec<Peer> {
    (opts.peers.iter().copied())
        .filter(|p| *p != Peer::Numpy || w.matmul.is_some() || opts.numpy_explicit)
        .collect()
}

/// Progress steps [`measure_all`] takes for `prepared`.
pub fn measure_steps(prepared: &[Prepared], opts: &BenchOptions) -> u64 {
    let variants = 1 + usize::from(opts.baseline);
    (prepared.iter())
        .map(|p| steps(variants, peers_for(&p.workload, opts).len()))
        .sum()
}

/// Measures every prepared workload side by side with its peers.
pub fn measure_all(
    prepared: &[Prepared],
    opts: &BenchOptions,
    progress: &Progress,
) -> Result<Vec<Measured>, DemoError> {
    let mut out = Vec::new();
    for p in prepared {
        let w = &p.workload;
        let mut variants = Vec::new();
        if opts.baseline {
            variants.push(("baseline", &w.baseline));
        }
        variants.push(("dmove", &p.optimized));
        let rows = measure(w, &variants, &peers_for(w, opts), &opts.settings, progress)?;
        out.push(Measured {
            name: w.name.clone(),
            title: p.title.clone(),
            flops: w.flops,
            reference: w.reference.clone(),
            rows,
        });
    }
    Ok(out)
}

/// [`measure_all`] while one busy process (started here, stopped before returning) competes for
/// the CPU.
pub fn measure_under_load(
    prepared: &[Prepared],
    opts: &BenchOptions,
    progress: &Progress,
) -> Result<Vec<Measured>, DemoError> {
    let busy = BusyProcess::start().map_err(DemoError::Load)?;
    progress.note(&format!(
        "started a competing busy process (pid {})",
        busy.pid()
    ));
    let result = measure_all(prepared, opts, progress);
    drop(busy);
    result
}
