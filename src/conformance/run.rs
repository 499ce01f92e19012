//! Running one case: classify its operators, then for each data set import (binding symbolic
//! dimensions from the input tensors), interpret, expand, compile, run and compare.

use super::case::{as_declared, read_data_sets, read_model, DataSet};
use super::{case_name, CaseResult, Stage, Status, REQUIRED_OPS};
use crate::check::{compare_outputs, NumericsError};
use crate::codegen::Compiled;
use crate::interp;
use crate::ir::validate::validate;
use crate::ir::{DType, Program, Tensor};
use crate::onnx::graphs::labelled_nodes;
use crate::onnx::idioms::{require_bound_inputs, IMPORTER_HANDLED};
use crate::onnx::load::is_default_domain;
use crate::onnx::proto::type_proto::Value as TypeValue;
use crate::onnx::proto::{GraphProto, ModelProto};
use crate::onnx::tensor::{dtype_of, encode_tensor};
use crate::onnx::OnnxError;
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
    /// Every output of every data set matched: the largest absolute error, and the graph
    /// inputs that were made constants (see [`Specialise`]).
    Pass {
        worst: f64,
        specialised: Vec<String>,
    },
    Unsupported(String),
}

/// Runs the case in `dir` (with the generated C when `c`), never panicking: a panic inside the
/// library is reported as a failure of the stage that was running.
pub fn run_case(dir: &Path, c: bool) -> CaseResult {
    run_case_observed(dir, c, &|_| {})
}

/// [`run_case`], telling `entered` each stage as the case enters it (the worker process
/// reports them, so a case stopped by its time limit says where it was).
pub fn run_case_observed(dir: &Path, c: bool, entered: &dyn Fn(Stage)) -> CaseResult {
    let start = Instant::now();
    let stage = StageCell {
        current: Cell::new(Stage::Load),
        entered,
    };
    entered(Stage::Load);
    let outcome = catch_unwind(AssertUnwindSafe(|| evaluate(dir, c, &stage)));
    let mut specialised_inputs = Vec::new();
    let (status, max_error, stage, message) = match outcome {
        Ok(Ok(Outcome::Pass { worst, specialised })) => {
            specialised_inputs = specialised;
            (Status::Pass, Some(worst), None, None)
        }
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
        listed: uses_only_required_ops(dir),
        specialised_inputs,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The stage a case is in, announced to an observer on every change.
struct StageCell<'a> {
    current: Cell<Stage>,
    entered: &'a dyn Fn(Stage),
}

impl StageCell<'_> {
    fn set(&self, stage: Stage) {
        if self.current.replace(stage) != stage {
            (self.entered)(stage);
        }
    }

    fn get(&self) -> Stage {
        self.current.get()
    }
}

/// Whether the case in `dir` uses only [`REQUIRED_OPS`] (false when its model cannot be read).
pub fn uses_only_required_ops(dir: &Path) -> bool {
    read_model(dir).is_ok_and(|m| only_listed_ops(&m))
}

fn evaluate(dir: &Path, c: bool, stage: &StageCell) -> Result<Outcome, Failure> {
    let model = read_model(dir)?;
    let missing = unsupported_ops(&model);
    if !missing.is_empty() {
        let list: Vec<String> = missing.into_iter().collect();
        return Ok(Outcome::Unsupported(format!(
            "operators dmove does not implement: {}",
            list.join(", ")
        )));
    }
    let types = unsupported_types(&model);
    if !types.is_empty() {
        let list: Vec<String> = types.into_iter().collect();
        return Ok(Outcome::Unsupported(format!(
            "element types dmove does not implement: {}",
            list.join(", ")
        )));
    }
    let mut worst: f64 = 0.0;
    let mut specialised = BTreeSet::new();
    for set in read_data_sets(dir)? {
        let ready = prepare(&model, dir, &set, c, stage)?;
        specialised.extend(ready.specialised);
        let declared = |name: &str| ready.program.data.get(name).map(|d| d.dtype);
        let inputs: BTreeMap<String, Tensor> = ready
            .inputs
            .into_iter()
            .map(|(n, t)| {
                let t = as_declared(t, declared(&n));
                (n, t)
            })
            .collect();
        let want: BTreeMap<String, Tensor> = ready
            .program
            .outputs
            .iter()
            .zip(set.outputs)
            .map(|(n, t)| (n.clone(), as_declared(t, declared(n))))
            .collect();
        stage.set(Stage::Interpreter);
        let got = interp::run(&ready.program, &inputs).map_err(at(Stage::Interpreter))?;
        worst = worst.max(compare(&got, &want, Stage::Interpreter)?);
        if let Some(lowered) = &ready.lowered {
            stage.set(Stage::CCompile);
            let compiled = Compiled::build(lowered).map_err(at(Stage::CCompile))?;
            stage.set(Stage::CRun);
            let got = compiled.run(&inputs).map_err(at(Stage::CRun))?;
            worst = worst.max(compare(&got, &want, Stage::CRun)?);
        }
    }
    Ok(Outcome::Pass {
        worst,
        specialised: specialised.into_iter().collect(),
    })
}

/// Operators (as `domain::op` outside the default domain) that dmove neither implements nor
/// promises, in the graph or any of its subgraphs; empty when the case must pass.
fn unsupported_ops(model: &ModelProto) -> BTreeSet<String> {
    let Some(graph) = &model.graph else {
        return BTreeSet::new();
    };
    labelled_nodes(graph)
        .into_iter()
        .filter_map(|(_, n)| {
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

/// ONNX element types that dmove lacks, used by the graph's signature, initializers or
/// `Cast` targets: like a missing operator, such a case is unsupported rather than failed.
fn unsupported_types(model: &ModelProto) -> BTreeSet<String> {
    let Some(graph) = &model.graph else {
        return BTreeSet::new();
    };
    let declared = graph.input.iter().chain(&graph.output).filter_map(|v| {
        match v.r#type.as_ref()?.value.as_ref()? {
            TypeValue::TensorType(t) => t.elem_type,
            _ => None,
        }
    });
    let stored = graph.initializer.iter().filter_map(|t| t.data_type);
    let nodes = labelled_nodes(graph);
    let cast_targets = nodes
        .iter()
        .map(|(_, n)| n)
        .filter(|n| n.op_type.as_deref() == Some("Cast"))
        .flat_map(|n| &n.attribute)
        .filter(|a| a.name.as_deref() == Some("to"))
        .filter_map(|a| a.i.and_then(|code| i32::try_from(code).ok()));
    declared
        .chain(stored)
        .chain(cast_targets)
        .filter_map(|code| match dtype_of(code, "") {
            Err(OnnxError::ElementType { name, .. }) => Some(name),
            _ => None,
        })
        .collect()
}

/// How far a case's graph inputs may be turned into constants from its data set, tried in
/// this order until the model imports (and lowers, when C runs).
///
/// dmove decides shapes and loop structure at import and expansion time, so values that decide
/// them (`Reshape`'s shape, `Slice`'s starts, `Resize`'s scales, `CumSum`'s axis, `Range`'s
/// bounds, …), which the node tests feed as graph inputs, must be known then — as `--shape`
/// specialises dimensions. A model that works as it is keeps every input, so its operators run
/// on real inputs; the specialised inputs are listed in the case's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Specialise {
    Nothing,
    /// Scalars and inputs read only at non-data positions (a node's input 1, 2, …).
    Parameters,
    /// Also integer inputs: indices and shapes at data positions (`ConstantOfShape`'s shape).
    Integers,
}

impl Specialise {
    const ORDER: [Specialise; 3] = [
        Specialise::Nothing,
        Specialise::Parameters,
        Specialise::Integers,
    ];

    fn applies(self, name: &str, t: &Tensor, graph: &GraphProto) -> bool {
        let integer = matches!(t.dtype(), DType::I64 | DType::I32);
        let parameter = || {
            t.shape.is_empty()
                || graph
                    .node
                    .iter()
                    .all(|n| n.input.iter().position(|i| i == name).is_none_or(|k| k > 0))
        };
        match self {
            Specialise::Nothing => false,
            Specialise::Parameters => parameter(),
            Specialise::Integers => integer || parameter(),
        }
    }
}

/// A data set ready to run: the imported program, its lowering when C runs, the remaining
/// inputs by name, and the inputs that were turned into constants.
struct Prepared {
    program: Program,
    lowered: Option<Program>,
    inputs: BTreeMap<String, Tensor>,
    specialised: Vec<String>,
}

/// Whether every node's operator is in [`REQUIRED_OPS`] (the scope of issue 3's pass rate).
fn only_listed_ops(model: &ModelProto) -> bool {
    model.graph.as_ref().is_some_and(|g| {
        g.node.iter().all(|n| {
            is_default_domain(n.domain.as_deref().unwrap_or_default())
                && REQUIRED_OPS.contains(&n.op_type.as_deref().unwrap_or_default())
        })
    })
}

/// Imports (and lowers, when `c`) the model with every graph input's shape taken from the data
/// set, so symbolic dimensions are bound as the case intends, specialising inputs only as far
/// as needed (see [`Specialise`]). The failure reported is the unspecialised one.
fn prepare(
    model: &ModelProto,
    dir: &Path,
    set: &DataSet,
    c: bool,
    stage: &StageCell,
) -> Result<Prepared, Failure> {
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
    let all: BTreeMap<String, Tensor> = names.into_iter().zip(set.inputs.clone()).collect();
    let mut first = None;
    let mut tried = BTreeSet::new();
    for level in Specialise::ORDER {
        let (constant, inputs): (BTreeMap<_, _>, BTreeMap<_, _>) = all
            .clone()
            .into_iter()
            .partition(|(name, t)| level.applies(name, t, graph));
        if !tried.insert(constant.keys().cloned().collect::<Vec<_>>()) {
            continue;
        }
        stage.set(Stage::Import);
        let attempt = import_specialised(model, dir, &constant, &inputs).and_then(|program| {
            stage.set(Stage::Expand);
            let lowered = c.then(|| lower(&program)).transpose()?;
            Ok((program, lowered))
        });
        match attempt {
            Ok((program, lowered)) => {
                return Ok(Prepared {
                    program,
                    lowered,
                    specialised: constant.into_keys().collect(),
                    inputs,
                })
            }
            Err(f) => {
                first.get_or_insert(f);
            }
        }
    }
    Err(first.expect("the unspecialised attempt always runs"))
}

/// Imports `model` with `constant` inputs made initializers and the shapes of `inputs` bound.
fn import_specialised(
    model: &ModelProto,
    dir: &Path,
    constant: &BTreeMap<String, Tensor>,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<Program, Failure> {
    let mut specialised = model.clone();
    if let Some(g) = specialised.graph.as_mut() {
        g.initializer
            .extend(constant.iter().map(|(name, t)| encode_tensor(name, t)));
    }
    let opts = ImportOptions {
        input_shapes: inputs
            .iter()
            .map(|(n, t)| (n.clone(), t.shape.iter().map(|d| *d as i64).collect()))
            .collect(),
        base_dir: Some(dir.to_path_buf()),
        ..ImportOptions::default()
    };
    import(&specialised, &opts).map_err(at(Stage::Import))
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
