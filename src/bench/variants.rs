//! The benchmark pipeline `dmove demo`, `dmove run --bench` and `dmove bench` all time through:
//! dmove's variants of one workload are compiled, run once on the workload's inputs and checked
//! against its reference, then timed one after another in this process run, and the peers
//! (ONNX Runtime, OpenVINO, numpy) run the same model on the same inputs after them, so every
//! row is measured side by side. Each timed run is bracketed by a [`LoadMeter`], so each row
//! says how much CPU other processes took while it ran.

use super::load::LoadMeter;
use super::peer::{self, Peer, PeerJob};
use super::workload::Workload;
use super::{Row, Stats};
use crate::analysis::trace::IrTrace;
use crate::check::{compare_outputs, NumericsError};
use crate::codegen::{CodegenError, Compiled};
use crate::ir::{Program, Tensor};
use crate::progress::Progress;
use std::collections::BTreeMap;

/// Why a variant could not be timed, or (for callers that require it) disagreed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum VariantError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Codegen(#[from] CodegenError),
    #[error("the {variant} program's outputs differ from the reference: {detail}")]
    #[diagnostic(
        code(dmove::bench::mismatch),
        help("a variant that computes something else has no meaningful time")
    )]
    Mismatch { variant: String, detail: String },
    /// Ctrl-C between two variants (or while one ran: its process was killed).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Interrupted(#[from] crate::interrupt::Interrupted),
}

/// How every variant and peer is run.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Settings {
    /// Untimed runs before the timed ones.
    pub warmup: usize,
    /// Timed runs (the median is the headline figure).
    pub reps: usize,
    /// Threads for dmove's programs (`OMP_NUM_THREADS`) and for every peer.
    pub threads: usize,
}

/// Compiles and checks every variant of `workload`, then times them and `peers` side by side
/// (see the module doc). The first variant is the base of the rows' speedups. A variant or peer
/// whose outputs disagree with the reference still gets its row, with the disagreement said
/// (see [`require_agreement`]); a peer that is not installed gets a row saying so and how to
/// install it.
pub fn measure(
    workload: &Workload,
    variants: &[(&str, &Program)],
    peers: &[Peer],
    settings: &Settings,
    progress: &Progress,
) -> Result<Vec<Row>, VariantError> {
    let inputs = &workload.inputs;
    let mut built = Vec::new();
    for (name, p) in variants {
        crate::interrupt::check()?;
        progress.step(&format!("{}: compiling {name}", workload.name));
        let c = Compiled::build(p)?;
        let outputs = c.run(inputs)?;
        built.push((*name, *p, c, outputs));
        progress.advance();
    }
    let reference = match (&workload.expected, built.first()) {
        (Some(r), _) => r,
        (None, Some((_, _, _, first))) => first,
        (None, None) => return Ok(Vec::new()),
    };
    let mut rows = Vec::new();
    for (name, p, c, outputs) in &built {
        crate::interrupt::check()?;
        progress.step(&format!(
            "{}: timing {name} ({} warm-up, {} timed runs)",
            workload.name, settings.warmup, settings.reps
        ));
        let meter = LoadMeter::start();
        let samples = c.bench_threads(
            inputs,
            settings.warmup,
            settings.reps,
            Some(settings.threads),
        )?;
        let foreign_load = meter.stop();
        let base = rows.first().and_then(Row::median_ms);
        let mut row = match Stats::from_samples(&samples) {
            Some(s) => Row::measured(name, s, workload.flops, base),
            None => Row::unavailable(name, "no timed runs"),
        };
        row.foreign_load = foreign_load;
        row.bytes_moved = IrTrace::new(p).ok().and_then(|t| t.bytes_moved().ok());
        (row.max_abs_error, row.disagreement) = agreement(outputs, reference);
        rows.push(row);
        progress.advance();
    }
    for &peer in peers {
        crate::interrupt::check()?;
        progress.step(&format!("{}: timing {}", workload.name, peer.name()));
        let base = rows.first().and_then(Row::median_ms);
        rows.push(peer_row(workload, peer, settings, reference, base));
        progress.advance();
    }
    Ok(rows)
}

/// The steps [`measure`] reports to its progress: a build and a run per variant, a run per peer.
pub fn steps(variants: usize, peers: usize) -> u64 {
    (2 * variants + peers) as u64
}

fn peer_row(
    workload: &Workload,
    peer: Peer,
    settings: &Settings,
    reference: &BTreeMap<String, Tensor>,
    base: Option<f64>,
) -> Row {
    let Some(model) = workload.onnx.as_deref() else {
        return Row::unavailable(peer.name(), "the model is not an ONNX file");
    };
    let mut inputs: Vec<(String, Tensor)> = (workload.inputs.iter())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let matmul = workload.matmul.as_ref().filter(|_| peer == Peer::Numpy);
    if let Some(m) = matmul {
        inputs.extend(m.constants.iter().cloned());
    }
    let job = PeerJob {
        model,
        inputs: &inputs,
        warmup: settings.warmup,
        reps: settings.reps,
        threads: settings.threads,
        matmul: matmul.map(|m| (m.a.clone(), m.b.clone(), m.output.clone())),
    };
    let meter = LoadMeter::start();
    let run = match peer::run(peer, &job) {
        Ok(run) => run,
        Err(e) => return Row::unavailable(peer.name(), e.to_string()),
    };
    let foreign_load = meter.stop();
    let Some(stats) = Stats::from_samples(&run.samples_ms) else {
        return Row::unavailable(peer.name(), "no timings returned");
    };
    let mut row = Row::measured(peer.name(), stats, workload.flops, base);
    row.foreign_load = foreign_load;
    row.version = Some(run.version);
    (row.max_abs_error, row.disagreement) = agreement(&run.outputs, reference);
    row
}

/// The largest absolute error of `got` against `want` over every output `want` has, and why
/// they disagree when one output is outside `numerics`' tolerance (or missing, or of another
/// shape or type).
pub fn agreement(
    got: &BTreeMap<String, Tensor>,
    want: &BTreeMap<String, Tensor>,
) -> (Option<f64>, Option<String>) {
    match compare_outputs(got, want) {
        Ok(report) => (
            Some(report.values().map(|c| c.max_abs_error).fold(0.0, f64::max)),
            None,
        ),
        Err(e @ NumericsError::Differs { max_abs_error, .. }) => {
            (Some(max_abs_error), Some(e.to_string()))
        }
        Err(e) => (None, Some(e.to_string())),
    }
}

/// The first disagreement among `rows` as an error (the demo and `dmove run --bench` refuse
/// to report a time for a program that computes something else).
pub fn require_agreement(rows: &[Row]) -> Result<(), VariantError> {
    match rows
        .iter()
        .find_map(|r| Some((r, r.disagreement.as_ref()?)))
    {
        Some((r, detail)) => Err(VariantError::Mismatch {
            variant: r.variant.clone(),
            detail: detail.clone(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(values: Vec<f32>) -> BTreeMap<String, Tensor> {
        BTreeMap::from([("y".to_string(), Tensor::f32(vec![values.len()], values))])
    }

    #[test]
    fn agreeing_outputs_report_their_error() {
        let (err, why) = agreement(&outputs(vec![1.0, 2.00001]), &outputs(vec![1.0, 2.0]));
        assert!(why.is_none());
        assert!(err.expect("compared") > 0.0);
    }

    #[test]
    fn a_wrong_variant_is_caught_and_refused() {
        // One element off by 0.5: far outside atol + rtol·|ref| for f32.
        let (err, why) = agreement(&outputs(vec![1.0, 2.5]), &outputs(vec![1.0, 2.0]));
        assert_eq!(err, Some(0.5));
        let why = why.expect("disagrees");
        assert!(why.contains("`y`"), "{why}");
        let wrong = Row {
            disagreement: Some(why),
            ..Row::unavailable("dmove", "")
        };
        let e = require_agreement(&[Row::unavailable("baseline", ""), wrong]).unwrap_err();
        assert!(e.to_string().contains("dmove program"), "{e}");
        let (_, missing) = agreement(&BTreeMap::new(), &outputs(vec![1.0]));
        assert!(missing.expect("missing output").contains("missing"));
        let (_, shape) = agreement(&outputs(vec![1.0, 2.0, 3.0]), &outputs(vec![1.0, 2.0]));
        assert!(shape.expect("shape differs").contains("shape"));
    }
}
