//! `dmove demo`: the whole pipeline on a built-in transformer encoder layer, with no files;
//! and the built-in models and pipeline of `dmove bench` (`bench.rs`, `suite.rs`).
//!
//! ONNX bytes in memory → import → reference outputs from the interpreter → naive lowering
//! (baseline) → the standard recipe `std::cpu` (optimized) → C for both → outputs checked
//! against the reference → both timed side by side (and ONNX Runtime on the same model when
//! installed).

pub mod bench;
pub mod model;
pub mod suite;

use crate::bench::peer::Peer;
use crate::bench::variants::{measure, require_agreement, steps, Settings, VariantError};
use crate::bench::workload::{Workload, WorkloadError};
use crate::bench::Row;
use crate::ir::Program;
use crate::onnx::{import, load_model, ImportOptions, OnnxError};
use crate::ops::expand::{expand_all, ExpandError};
use crate::progress::{Mode, Progress};
use crate::recipe::run::{run as run_recipe, RunOptions, RunReport};
use crate::recipe::{check, load_source, stdlib, Loaded};
use crate::transform::engine::{Checks, Step};
use model::{encoder_model, EncoderConfig};
use serde::Serialize;

/// How the demo runs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    pub config: EncoderConfig,
    pub warmup: usize,
    pub reps: usize,
    /// Threads of the generated programs and the peers.
    pub threads: usize,
    /// Also time ONNX Runtime and OpenVINO (each when Python can import it).
    pub peer: bool,
    pub seed: u64,
    /// Checks run after each rewrite of the optimization sequence.
    pub checks: Checks,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            config: EncoderConfig::default(),
            warmup: 3,
            reps: 15,
            threads: crate::codegen::available_cpus(),
            peer: true,
            seed: 2024,
            // Every layer on every step, as for any user: a step that cannot be checked is refused.
            checks: Checks::default(),
        }
    }
}

/// What the demo measured.
#[derive(Debug, Serialize)]
pub struct DemoReport {
    pub config: EncoderConfig,
    pub flops: u64,
    pub baseline_ms: f64,
    pub optimized_ms: f64,
    pub speedup: f64,
    /// Largest absolute difference of the optimized program's output from the interpreter's.
    pub max_abs_error: f64,
    pub rows: Vec<Row>,
    /// The recipe that optimized it (`std::cpu 0.2.0`).
    pub recipe: String,
    /// The steps the recipe applied, in order, with parameters, the check record of every layer
    /// and the hashes (replayable as a trace).
    pub steps: Vec<Step>,
    /// Every step the recipe tried that did not apply, with the reason (each left the program
    /// unchanged).
    pub refused: Vec<String>,
    /// Where the time of the recipe's checked steps went.
    pub check_time: crate::transform::engine::TimeSummary,
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DemoError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Import(#[from] OnnxError),
    #[error(transparent)]
    Expand(#[from] ExpandError),
    /// The recipe (`std::cpu` unless the user gave one) failed: its title and diagnostics,
    /// rendered.
    #[error("the recipe {0} failed:\n{1}")]
    Recipe(String, String),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Workload(#[from] WorkloadError),
    #[error("cannot start the competing busy process")]
    Load(#[source] std::io::Error),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Variant(#[from] VariantError),
}

/// Runs the demo, reporting progress through `say` and the benchmark's through `progress`.
pub fn run(
    opts: &DemoOptions,
    progress: Mode,
    say: &mut dyn FnMut(&str),
) -> Result<DemoReport, DemoError> {
    let cfg = opts.config;
    say(&format!(
        "building the encoder layer (sequence {}, hidden {}, {} heads, FFN {}) as ONNX, importing, lowering, optimizing",
        cfg.seq, cfg.hidden, cfg.heads, cfg.ffn
    ));
    let Pipeline {
        bytes,
        library,
        optimized,
        recipe,
        report,
    } = pipeline(&cfg, opts.seed, &opts.checks, progress)?;
    say("running the reference interpreter");
    let workload = Workload::new("encoder layer", library, Some(bytes), opts.seed)?;
    let peers: &[Peer] = if opts.peer {
        &[Peer::OnnxRuntime, Peer::OpenVino]
    } else {
        &[]
    };
    let settings = Settings {
        warmup: opts.warmup,
        reps: opts.reps,
        threads: opts.threads,
    };
    let variants = [("baseline", &workload.baseline), ("optimized", &optimized)];
    let bar = Progress::new(progress, "benchmark", steps(variants.len(), peers.len()));
    let rows = measure(&workload, &variants, peers, &settings, &bar)?;
    drop(bar);
    require_agreement(&rows)?;
    let (baseline_ms, optimized_ms) = (median(&rows, 0), median(&rows, 1));
    Ok(DemoReport {
        config: cfg,
        flops: workload.flops,
        baseline_ms,
        optimized_ms,
        speedup: baseline_ms / optimized_ms,
        max_abs_error: rows[1].max_abs_error.unwrap_or(f64::NAN),
        rows,
        recipe,
        check_time: crate::transform::engine::TimeSummary::of(&report.step_times),
        steps: report.steps.into_iter().map(|s| s.step).collect(),
        refused: report.skipped.into_iter().map(|s| s.reason).collect(),
    })
}

/// The median of row `i` (NaN when it has none).
fn median(rows: &[Row], i: usize) -> f64 {
    rows.get(i).and_then(Row::median_ms).unwrap_or(f64::NAN)
}

/// Every stage of the demo's program, from ONNX bytes to the optimized IR.
struct Pipeline {
    bytes: Vec<u8>,
    /// As imported: library nodes.
    library: Program,
    /// The imported program after `std::cpu`.
    optimized: Program,
    /// The recipe's name and version.
    recipe: String,
    report: RunReport,
}

/// The standard recipe the demo runs.
const CPU_RECIPE: &str = "std::cpu";

fn pipeline(
    cfg: &EncoderConfig,
    seed: u64,
    checks: &Checks,
    progress: Mode,
) -> Result<Pipeline, DemoError> {
    let bytes = encoder_model(cfg, seed);
    let library = import(&load_model(&bytes)?, &ImportOptions::default())?;
    let mut optimized = library.clone();
    let recipe = cpu_recipe()?;
    let report = optimize(&recipe, &mut optimized, checks, seed, progress)?;
    Ok(Pipeline {
        bytes,
        library,
        optimized,
        recipe: title(&recipe),
        report,
    })
}

/// `std::cpu`, loaded from the embedded standard library and checked.
pub fn cpu_recipe() -> Result<Loaded, DemoError> {
    let loaded = load_source(CPU_RECIPE, stdlib::source("cpu").unwrap_or_default(), None);
    let errors: Vec<_> = (check(&loaded).into_iter())
        .filter(|d| d.is_error())
        .collect();
    if errors.is_empty() {
        Ok(loaded)
    } else {
        Err(DemoError::Recipe(
            CPU_RECIPE.to_string(),
            loaded.sources.render_plain(&errors),
        ))
    }
}

/// Runs the loaded recipe on `p` with `checks` on every step.
pub fn optimize(
    recipe: &Loaded,
    p: &mut Program,
    checks: &Checks,
    seed: u64,
    progress: Mode,
) -> Result<RunReport, DemoError> {
    let opts = RunOptions {
        checks: checks.clone(),
        measure: false,
        seed,
        progress: progress.without_lines(),
        ..RunOptions::default()
    };
    optimize_with(recipe, p, &opts)
}

/// Runs the loaded recipe on `p` with `opts`, a failure rendered with the recipe's sources.
pub fn optimize_with(
    recipe: &Loaded,
    p: &mut Program,
    opts: &RunOptions,
) -> Result<RunReport, DemoError> {
    run_recipe(recipe, p, opts).map_err(|e| {
        let diagnostic = std::slice::from_ref(&e.diagnostic);
        DemoError::Recipe(title(recipe), recipe.sources.render_plain(diagnostic))
    })
}

/// `std::cpu 0.2.0`: the recipe's name and version, from its header.
fn title(recipe: &Loaded) -> String {
    match &recipe.root().ast.header {
        Some(h) => format!("{} {}", h.name.value, h.version.value),
        None => recipe.root().name.clone(),
    }
}

/// The baseline and optimized programs for `cfg`, without compiling or timing (for tests and
/// tools that inspect the generated code).
pub fn programs(
    cfg: &EncoderConfig,
    seed: u64,
    checks: &Checks,
) -> Result<(Program, Program, RunReport), DemoError> {
    let p = pipeline(cfg, seed, checks, Mode::Quiet)?;
    let mut baseline = p.library;
    expand_all(&mut baseline)?;
    Ok((baseline, p.optimized, p.report))
}
