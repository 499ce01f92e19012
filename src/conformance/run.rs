//! Running one case: classify its operators, then for each data set import (binding symbolic
//! dimensions from the input tensors), interpret, expand, compile, run and compare.

use super::case::{as_declared, read_data_sets, read_model, DataSet};
use super::{case_name, CaseResult, Stage, Status, REQUIRED_OPS};
use crate::check::{compare_outputs, NumericsError};
use crate::codegen::Compiled;
use crate::interp;
use crate::ir::validate::validate;
use crate::ir::{DType, Program, Tensor};
use crate::onnx::idioms::{require_bound_inputs, IMPORTER_HANDLED};
use crate::onnx::load::is_default_domain;
use crate::onnx::proto::ModelProto;
use crate::onnx::tensor::encode_tensor;
use crate::onnx::{import, ImportOptions};
use crate::ops::expand::expand_all;
use crate::ops::lookup;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

/// Why a case failed: the stage, what happened and, for wrong results, the error.
#[derive(Debug)]
pub struct Failure {
    pub stage: Stage,
    pub message: String,
    pub max_error: Option<f64>,
}

impl Failure {
    pub fn new(stage: Stage, message: impl Into<String>) -> Failure {
        Failure {
            stage,
            message: message.into(),
            max_error: None,
        }
    }
}

/// `map_err` adapter: any displayable error as a failure of `stage`.
fn at<E: std::fmt::Display>(stage: Stage) -> impl FnOnce(E) -> Failure {
    move |e| Failure::new(stage, e.to_string())
}

enum Outcome {
    /// Every output of every data set matched; the largest absolute error.
    Pass(f64),
    Unsupported(String),
}

/// Runs the case in `dir` (with the generated C when `c`), never panicking: a panic inside the
/// library is reported as a failure of the stage that was running.
pub fn run_case(dir: &Path, c: bool) -> CaseResult {
    let start = Instant::now();
    let stage = Cell::new(Stage::Load);
    let outcome = catch_unwind(AssertUnwindSafe(|| evaluate(dir, c, &stage)));
    let (status, max_error, stage, message) = match outcome {
        Ok(Ok(Outcome::Pass(err))) => (Status::Pass, Some(err), None, None),
        Ok(Ok(Outcome::Unsupported(msg))) => (Status::Unsupported, None, None, Some(msg)),
        Ok(Err(f)) => (Status::Fail, f.max_error, Some(f.stage), Some(f.message)),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".into());
            let msg = format!("panicked: {what}");
            (Status::Fail, None, Some(stage.get()), Some(msg))
        }
    };
    CaseResult {
        name: case_name(dir),
        status,
        max_error,
        stage,
        message,
        seconds: start.elapsed().as_secs_f64(),
    }
}

fn evaluate(dir: &Path, c: bool, stage: &Cell<Stage>) -> Result<Outcome, Failure> {
    let model = read_model(dir)?;
    let missing = unsupported_ops(&model);
    if !missing.is_empty() {
        let list: Vec<String> = missing.into_iter().collect();
        return Ok(Outcome::Unsupported(format!(
            "operators dmove does not implement: {}",
            list.join(", ")
        )));
    }
    let mut worst: f64 = 0.0;
    for set in read_data_sets(dir)? {
        stage.set(Stage::Import);
        let (p, inputs) = import_for(&model, dir, &set)?;
        let declared = |name: &str| p.data.get(name).map(|d| d.dtype);
        let inputs: BTreeMap<String, Tensor> = inputs
            .into_iter()
            .map(|(n, t)| {
                let t = as_declared(t, declared(&n));
                (n, t)
            })
            .collect();
        let want: BTreeMap<String, Tensor> = p
            .outputs
            .iter()
            .zip(set.outputs)
            .map(|(n, t)| (n.clone(), as_declared(t, declared(n))))
            .collect();
        stage.set(Stage::Interpreter);
        let got = interp::run(&p, &inputs).map_err(at(Stage::Interpreter))?;
        worst = worst.max(compare(&got, &want, Stage::Interpreter)?);
        if c {
            stage.set(Stage::Expand);
            let lowered = lower(&p)?;
            stage.set(Stage::CCompile);
            let compiled = Compiled::build(&lowered).map_err(at(Stage::CCompile))?;
            stage.set(Stage::CRun);
            let got = compiled.run(&inputs).map_err(at(Stage::CRun))?;
            worst = worst.max(compare(&got, &want, Stage::CRun)?);
        }
    }
    Ok(Outcome::Pass(worst))
}

/// Operators (as `domain::op` outside the default domain) that dmove neither implements nor
/// promises; empty when the case must pass.
fn unsupported_ops(model: &ModelProto) -> BTreeSet<String> {
    let Some(graph) = &model.graph else {
        return BTreeSet::new();
    };
    graph
        .node
        .iter()
        .filter_map(|n| {
            let op = n.op_type.clone().unwrap_or_default();
            let domain = n.domain.as_deref().unwrap_or_default();
            if !is_default_domain(domain) {
                return Some(format!("{domain}::{op}"));
            }
            let known = IMPORTER_HANDLED.contains(&op.as_str())
                || REQUIRED_OPS.contains(&op.as_str())
                || lookup(&op).is_some();
            (!known).then_some(op)
        })
        .collect()
}

/// Imports the model with every graph input's shape taken from the data set, so symbolic
/// dimensions are bound as the case intends, and returns the program with its inputs by name.
///
/// dmove needs shapes at import time, so when the model does not import as it is and has integer
/// inputs (the node tests feed `Reshape`'s shape, `Slice`'s starts, … as inputs), they are
/// specialised to the data set's values, as `--shape` specialises dimensions; a model that
/// imports as it is keeps every input, so its operators run on real inputs.
fn import_for(
    model: &ModelProto,
    dir: &Path,
    set: &DataSet,
) -> Result<(Program, BTreeMap<String, Tensor>), Failure> {
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| Failure::new(Stage::Load, "the model has no graph"))?;
    let initializers: BTreeSet<&str> = graph
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
    let names: Vec<String> = graph
        .input
        .iter()
        .filter_map(|v| v.name.clone())
        .filter(|n| !initializers.contains(n.as_str()))
        .collect();
    let counts = |what: &str, files: usize, declared: usize| {
        Failure::new(
            Stage::Load,
            format!(
                "{}: {files} {what} file(s) for {declared} graph {what}(s)",
                set.name
            ),
        )
    };
    if names.len() != set.inputs.len() {
        return Err(counts("input", set.inputs.len(), names.len()));
    }
    if graph.output.len() != set.outputs.len() {
        return Err(counts("output", set.outputs.len(), graph.output.len()));
    }
    let inputs: BTreeMap<String, Tensor> = names.into_iter().zip(set.inputs.clone()).collect();
    let import_with = |model: &ModelProto, inputs: &BTreeMap<String, Tensor>| {
        let opts = ImportOptions {
            input_shapes: inputs
                .iter()
                .map(|(n, t)| (n.clone(), t.shape.iter().map(|d| *d as i64).collect()))
                .collect(),
            base_dir: Some(dir.to_path_buf()),
            ..ImportOptions::default()
        };
        import(model, &opts)
    };
    let first = match import_with(model, &inputs) {
        Ok(p) => return Ok((p, inputs)),
        Err(e) => Failure::new(Stage::Import, e.to_string()),
    };
    let (integers, rest): (BTreeMap<String, Tensor>, BTreeMap<String, Tensor>) = inputs
        .into_iter()
        .partition(|(_, t)| matches!(t.dtype(), DType::I64 | DType::I32));
    if integers.is_empty() {
        return Err(first);
    }
    let mut specialised = model.clone();
    if let Some(g) = specialised.graph.as_mut() {
        g.initializer
            .extend(integers.iter().map(|(name, t)| encode_tensor(name, t)));
    }
    match import_with(&specialised, &rest) {
        Ok(p) => Ok((p, rest)),
        Err(_) => Err(first),
    }
}

/// Every operator expanded, the result validated, every input dimension bound.
fn lower(p: &Program) -> Result<Program, Failure> {
    let mut lowered = p.clone();
    expand_all(&mut lowered).map_err(at(Stage::Expand))?;
    validate(&lowered).map_err(at(Stage::Expand))?;
    require_bound_inputs(&lowered).map_err(at(Stage::Expand))?;
    Ok(lowered)
}

/// The largest absolute error over the outputs, or the first output out of tolerance.
fn compare(
    got: &BTreeMap<String, Tensor>,
    want: &BTreeMap<String, Tensor>,
    stage: Stage,
) -> Result<f64, Failure> {
    match compare_outputs(got, want) {
        Ok(report) => Ok(report.values().map(|c| c.max_abs_error).fold(0.0, f64::max)),
        Err(e) => {
            let max_error = match &e {
                NumericsError::Differs { max_abs_error, .. } => Some(*max_abs_error),
                _ => None,
            };
            Err(Failure {
                stage,
                message: e.to_string(),
                max_error,
            })
        }
    }
}
