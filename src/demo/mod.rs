//! `dmove demo`: the whole pipeline on a built-in transformer encoder layer, with no files.
//!
//! ONNX bytes in memory → import → reference outputs from the interpreter → naive lowering
//! (baseline) → the standard recipe `std::cpu` (optimized) → C for both → outputs checked
//! against the reference → both timed side by side (and ONNX Runtime on the same model when
//! installed).

pub mod model;

use crate::bench::variants::{time_variants, Timed, Timing, VariantError};
use crate::bench::Row;
use crate::interp::InterpError;
use crate::ir::Program;
use crate::onnx::{import, load_model, ImportOptions, OnnxError};
use crate::ops::expand::{expand_all, ExpandError};
use crate::recipe::run::{run as run_recipe, RunOptions, RunReport};
use crate::recipe::{check, load_source, stdlib, Loaded};
use crate::transform::engine::{Checks, Step};
use model::{encoder_model, EncoderConfig, INPUT};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;

/// How the demo runs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    pub config: EncoderConfig,
    pub warmup: usize,
    pub reps: usize,
    /// Also time ONNX Runtime (when Python can import it).
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
    /// The recipe that optimized it (`std::cpu 0.1.0`).
    pub recipe: String,
    /// The steps the recipe applied, in order, with parameters, the check record of every layer
    /// and the hashes (replayable as a trace).
    pub steps: Vec<Step>,
    /// Every step the recipe tried that did not apply, with the reason (each left the program
    /// unchanged).
    pub refused: Vec<String>,
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DemoError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Import(#[from] OnnxError),
    #[error(transparent)]
    Expand(#[from] ExpandError),
    /// `std::cpu` failed (its diagnostics, rendered).
    #[error("the standard recipe std::cpu failed:\n{0}")]
    Recipe(String),
    #[error("the reference interpreter failed: {0}")]
    Interp(#[from] InterpError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Variant(#[from] VariantError),
}

/// Runs the demo, reporting progress through `say`.
pub fn run(opts: &DemoOptions, say: &mut dyn FnMut(&str)) -> Result<DemoReport, DemoError> {
    let cfg = opts.config;
    say(&format!(
        "building the encoder layer (sequence {}, hidden {}, {} heads, FFN {}) as ONNX, importing, lowering, optimizing",
        cfg.seq, cfg.hidden, cfg.heads, cfg.ffn
    ));
    let Pipeline {
        bytes,
        library,
        baseline,
        optimized,
        recipe,
        report,
    } = pipeline(&cfg, opts.seed, &opts.checks)?;
    let flops = crate::ops::flops::program_flops(&library);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0xda7a);
    let x = crate::check::random_tensor(&[1, cfg.seq as usize, cfg.hidden as usize], &mut rng);
    let inputs = BTreeMap::from([(INPUT.to_string(), x)]);
    say("running the reference interpreter");
    let reference = crate::interp::run(&library, &inputs)?;

    let timing = Timing {
        warmup: opts.warmup,
        reps: opts.reps,
        peer: opts.peer.then_some(bytes.as_slice()),
        flops,
    };
    let variants = [("baseline", &baseline), ("optimized", &optimized)];
    let Timed {
        rows,
        medians,
        errors,
    } = time_variants(&variants, &inputs, Some(&reference), &timing, say)?;
    Ok(DemoReport {
        config: cfg,
        flops,
        baseline_ms: medians[0],
        optimized_ms: medians[1],
        speedup: medians[0] / medians[1],
        max_abs_error: errors[1],
        rows,
        recipe,
        steps: report.steps.into_iter().map(|s| s.step).collect(),
        refused: report.skipped.into_iter().map(|s| s.reason).collect(),
    })
}

/// Every stage of the demo's program, from ONNX bytes to the optimized IR.
struct Pipeline {
    bytes: Vec<u8>,
    /// As imported: library nodes.
    library: Program,
    /// Every operator expanded with its default ("pure") implementation.
    baseline: Program,
    /// The imported program after `std::cpu`.
    optimized: Program,
    /// The recipe's name and version.
    recipe: String,
    report: RunReport,
}

/// The standard recipe the demo runs.
const CPU_RECIPE: &str = "std::cpu";

fn pipeline(cfg: &EncoderConfig, seed: u64, checks: &Checks) -> Result<Pipeline, DemoError> {
    let bytes = encoder_model(cfg, seed);
    let library = import(&load_model(&bytes)?, &ImportOptions::default())?;
    let mut baseline = library.clone();
    expand_all(&mut baseline)?;
    let mut optimized = library.clone();
    let recipe = cpu_recipe()?;
    let report = optimize(&recipe, &mut optimized, checks, seed)?;
    Ok(Pipeline {
        bytes,
        library,
        baseline,
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
        Err(DemoError::Recipe(loaded.sources.render_plain(&errors)))
    }
}

/// Runs the loaded recipe on `p` with `checks` on every step.
pub fn optimize(
    recipe: &Loaded,
    p: &mut Program,
    checks: &Checks,
    seed: u64,
) -> Result<RunReport, DemoError> {
    let opts = RunOptions {
        checks: checks.clone(),
        measure: false,
        seed,
        ..RunOptions::default()
    };
    run_recipe(recipe, p, &opts).map_err(|e| {
        let diagnostic = std::slice::from_ref(&e.diagnostic);
        DemoError::Recipe(recipe.sources.render_plain(diagnostic))
    })
}

/// `std::cpu 0.1.0`: the recipe's name and version, from its header.
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
    let p = pipeline(cfg, seed, checks)?;
    Ok((p.baseline, p.optimized, p.report))
}
