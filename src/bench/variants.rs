//! Timing several variants of one program side by side, in one process run: each is compiled,
//! its outputs checked against a reference, then all are timed one after another (and ONNX
//! Runtime on the same inputs when asked), so the rows are ratios measured together. `dmove
//! demo` and `dmove run --bench` both time through here.

use super::peer::onnxruntime;
use super::{Row, Stats};
use crate::codegen::{CodegenError, Compiled};
use crate::ir::{Program, Tensor};
use crate::numerics::compare;
use std::collections::BTreeMap;

/// Why a variant could not be timed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum VariantError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Codegen(#[from] CodegenError),
    #[error("the {variant} program's output `{output}` differs from the reference: max abs error {max_abs_error:e}{detail}")]
    Mismatch {
        variant: String,
        output: String,
        max_abs_error: f64,
        detail: String,
    },
    /// Ctrl-C between two variants (or while one ran: its process was killed).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Interrupted(#[from] crate::interrupt::Interrupted),
}

/// How [`time_variants`] times.
pub struct Timing<'a> {
    pub warmup: usize,
    pub reps: usize,
    /// The ONNX model to time in ONNX Runtime as well (when Python can import it).
    pub peer: Option<&'a [u8]>,
    /// Work per run, for the GFLOP/s column.
    pub flops: u64,
}

/// What [`time_variants`] measured.
pub struct Timed {
    /// One row per variant, then the peer's.
    pub rows: Vec<Row>,
    /// Each variant's median in milliseconds (NaN when it returned no timings).
    pub medians: Vec<f64>,
    /// Each variant's largest absolute error from the reference.
    pub errors: Vec<f64>,
}

/// Compiles every variant and checks its outputs on `inputs` against `reference` (or, without
/// one, against the first variant's), then times them one after another in this process, and
/// ONNX Runtime on the same inputs when `timing.peer` is given, so the rows are a side-by-side
/// comparison; speedups are relative to the first variant.
pub fn time_variants(
    variants: &[(&str, &Program)],
    inputs: &BTreeMap<String, Tensor>,
    reference: Option<&BTreeMap<String, Tensor>>,
    timing: &Timing,
    say: &mut dyn FnMut(&str),
) -> Result<Timed, VariantError> {
    say(&format!("compiling {} variants", variants.len()));
    let mut compiled = Vec::new();
    let mut outputs = Vec::new();
    for (name, p) in variants {
        crate::interrupt::check()?;
        let c = Compiled::build(p)?;
        outputs.push((*name, c.run(inputs)?));
        compiled.push((*name, c));
    }
    let reference = match (reference, outputs.first()) {
        (Some(r), _) => r,
        (None, Some((_, first))) => first,
        (None, None) => {
            return Ok(Timed {
                rows: Vec::new(),
                medians: Vec::new(),
                errors: Vec::new(),
            })
        }
    };
    let errors = (outputs.iter())
        .map(|(name, got)| check_outputs(name, got, reference))
        .collect::<Result<Vec<_>, _>>()?;
    say(&format!(
        "timing the variants ({} warm-up runs, {} timed runs each)",
        timing.warmup, timing.reps
    ));
    let mut rows = Vec::new();
    let mut medians = Vec::new();
    for ((name, c), err) in compiled.iter().zip(&errors) {
        crate::interrupt::check()?;
        let stats =
            Stats::from_samples(&c.bench(inputs, timing.warmup, timing.reps)?).unwrap_or(Stats {
                median_ms: f64::NAN,
                min_ms: f64::NAN,
                max_ms: f64::NAN,
                reps: 0,
            });
        medians.push(stats.median_ms);
        rows.push(Row::measured(
            name,
            stats,
            timing.flops,
            medians.first().copied(),
            Some(*err),
        ));
    }
    crate::interrupt::check()?;
    if let Some(model) = timing.peer {
        say("timing ONNX Runtime on the same model");
        let feeds: Vec<(String, Tensor)> =
            inputs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        rows.push(
            match onnxruntime(model, &feeds, timing.warmup, timing.reps) {
                Ok(run) => {
                    let err = (run.outputs.iter())
                        .filter_map(|(k, t)| reference.get(k).map(|r| compare(t, r).max_abs_error))
                        .reduce(f64::max);
                    match Stats::from_samples(&run.samples_ms) {
                        Some(s) => Row::measured(
                            "onnxruntime",
                            s,
                            timing.flops,
                            medians.first().copied(),
                            err,
                        ),
                        None => Row::unavailable("onnxruntime", "no timings returned"),
                    }
                }
                Err(e) => Row::unavailable("onnxruntime", e.to_string()),
            },
        );
    }
    crate::interrupt::check()?;
    Ok(Timed {
        rows,
        medians,
        errors,
    })
}

/// Largest absolute error over all outputs, or the mismatch when one exceeds the tolerance.
fn check_outputs(
    variant: &str,
    got: &BTreeMap<String, Tensor>,
    want: &BTreeMap<String, Tensor>,
) -> Result<f64, VariantError> {
    crate::check::compare_outputs(got, want)
        .map(|report| report.values().map(|c| c.max_abs_error).fold(0.0, f64::max))
        .map_err(|e| match e {
            crate::check::NumericsError::Differs {
                output,
                max_abs_error,
                detail,
                ..
            } => VariantError::Mismatch {
                variant: variant.to_string(),
                output,
                max_abs_error,
                detail,
            },
            other => VariantError::Mismatch {
                variant: variant.to_string(),
                output: String::new(),
                max_abs_error: f64::INFINITY,
                detail: format!(": {other}"),
            },
        })
}
