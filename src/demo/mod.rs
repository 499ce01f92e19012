//! `dmove demo`: the whole pipeline on a built-in transformer encoder layer, with no files.
//!
//! ONNX bytes in memory → import → reference outputs from the interpreter → naive lowering
//! (baseline) → the CPU optimization sequence (optimized) → C for both → outputs checked against
//! the reference → both timed side by side (and ONNX Runtime on the same model when installed).

pub mod model;
pub mod schedule;

use crate::bench::peer::onnxruntime;
use crate::bench::{Row, Stats};
use crate::codegen::{CodegenError, Compiled};
use crate::interp::InterpError;
use crate::ir::{Program, Tensor};
use crate::numerics::compare;
use crate::onnx::{import, load_model, ImportOptions, OnnxError};
use crate::ops::expand::{expand_all, ExpandError};
use crate::transform::engine::{Checks, Step};
use model::{encoder_model, EncoderConfig, INPUT, OUTPUT};
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
    /// The steps the optimization sequence applied, in order, with parameters, the check record
    /// of every layer and the hashes (replayable as a trace).
    pub steps: Vec<Step>,
    /// Every step the sequence tried and the engine refused, with the reason.
    pub refused: Vec<String>,
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DemoError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Import(#[from] OnnxError),
    #[error(transparent)]
    Expand(#[from] ExpandError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Schedule(#[from] crate::transform::UnknownTransformation),
    #[error("the reference interpreter failed: {0}")]
    Interp(#[from] InterpError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Codegen(#[from] CodegenError),
    #[error("the {variant} program's output `{output}` differs from the interpreter's: max abs error {max_abs_error:e}{detail}")]
    Mismatch {
        variant: String,
        output: String,
        max_abs_error: f64,
        detail: String,
    },
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
        report,
    } = pipeline(&cfg, opts.seed, &opts.checks)?;
    let flops = crate::ops::flops::program_flops(&library);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0xda7a);
    let x = crate::check::random_tensor(&[1, cfg.seq as usize, cfg.hidden as usize], &mut rng);
    let inputs = BTreeMap::from([(INPUT.to_string(), x.clone())]);
    say("running the reference interpreter");
    let reference = crate::interp::run(&library, &inputs)?;

    say("compiling both variants");
    let variants = [("baseline", &baseline), ("optimized", &optimized)];
    let mut rows = Vec::new();
    let mut medians = Vec::new();
    let mut errors = Vec::new();
    let mut compiled = Vec::new();
    for (name, p) in variants {
        let c = Compiled::build(p)?;
        errors.push(check_outputs(name, &c.run(&inputs)?, &reference)?);
        compiled.push((name, c));
    }
    say(&format!(
        "timing both variants ({} warm-up runs, {} timed runs each)",
        opts.warmup, opts.reps
    ));
    for ((name, c), err) in compiled.iter().zip(&errors) {
        let stats =
            Stats::from_samples(&c.bench(&inputs, opts.warmup, opts.reps)?).unwrap_or(Stats {
                median_ms: f64::NAN,
                min_ms: f64::NAN,
                max_ms: f64::NAN,
                reps: 0,
            });
        medians.push(stats.median_ms);
        rows.push(Row::measured(
            name,
            stats,
            flops,
            medians.first().copied(),
            Some(*err),
        ));
    }
    if opts.peer {
        say("timing ONNX Runtime on the same model");
        rows.push(
            match onnxruntime(&bytes, &[(INPUT.to_string(), x)], opts.warmup, opts.reps) {
                Ok(run) => {
                    let err = run
                        .outputs
                        .get(OUTPUT)
                        .map(|t| compare(t, &reference[OUTPUT]).max_abs_error);
                    match Stats::from_samples(&run.samples_ms) {
                        Some(s) => {
                            Row::measured("onnxruntime", s, flops, medians.first().copied(), err)
                        }
                        None => Row::unavailable("onnxruntime", "no timings returned"),
                    }
                }
                Err(e) => Row::unavailable("onnxruntime", e.to_string()),
            },
        );
    }
    Ok(DemoReport {
        config: cfg,
        flops,
        baseline_ms: medians[0],
        optimized_ms: medians[1],
        speedup: medians[0] / medians[1],
        max_abs_error: errors[1],
        rows,
        steps: report.steps,
        refused: report.refused,
    })
}

/// Largest absolute error over all outputs, or the mismatch when one exceeds the tolerance.
fn check_outputs(
    variant: &str,
    got: &BTreeMap<String, Tensor>,
    want: &BTreeMap<String, Tensor>,
) -> Result<f64, DemoError> {
    crate::check::compare_outputs(got, want)
        .map(|report| report.values().map(|c| c.max_abs_error).fold(0.0, f64::max))
        .map_err(|e| match e {
            crate::check::NumericsError::Differs {
                output,
                max_abs_error,
                detail,
                ..
            } => DemoError::Mismatch {
                variant: variant.to_string(),
                output,
                max_abs_error,
                detail,
            },
            other => DemoError::Mismatch {
                variant: variant.to_string(),
                output: String::new(),
                max_abs_error: f64::INFINITY,
                detail: format!(": {other}"),
            },
        })
}

/// Every stage of the demo's program, from ONNX bytes to the optimized IR.
struct Pipeline {
    bytes: Vec<u8>,
    /// As imported: library nodes.
    library: Program,
    /// Every operator expanded with its default ("pure") implementation.
    baseline: Program,
    /// The baseline after the CPU optimization sequence.
    optimized: Program,
    report: schedule::ScheduleReport,
}

fn pipeline(cfg: &EncoderConfig, seed: u64, checks: &Checks) -> Result<Pipeline, DemoError> {
    let bytes = encoder_model(cfg, seed);
    let library = import(&load_model(&bytes)?, &ImportOptions::default())?;
    let mut baseline = library.clone();
    expand_all(&mut baseline)?;
    let mut optimized = baseline.clone();
    let report = schedule::optimize(&mut optimized, checks)?;
    Ok(Pipeline {
        bytes,
        library,
        baseline,
        optimized,
        report,
    })
}

/// The baseline and optimized programs for `cfg`, without compiling or timing (for tests and
/// tools that inspect the generated code).
pub fn programs(
    cfg: &EncoderConfig,
    seed: u64,
    checks: &Checks,
) -> Result<(Program, Program, schedule::ScheduleReport), DemoError> {
    let p = pipeline(cfg, seed, checks)?;
    Ok((p.baseline, p.optimized, p.report))
}
