//! A model made ready to benchmark: its baseline (every operator lowered with its default
//! implementation, nothing optimized), seeded random inputs, the reference outputs every
//! variant is checked against, its work, and whether numpy can run it as a peer.
//!
//! The reference is the interpreter's operator-level evaluation (straightforward code,
//! accumulating in f64, independent of every expansion) when the model's work is small enough
//! to evaluate in seconds; above that, the baseline's compiled C (itself checked against the
//! interpreter by the conformance and expansion tests), and the report says which.

use crate::check::{random_inputs, NumericsError};
use crate::interp::InterpError;
use crate::ir::{LibraryNode, NodeKind, Program, Tensor};
use crate::ops::expand::{expand_all, ExpandError};
use std::collections::BTreeMap;

/// Up to this many FLOPs the reference interpreter computes the reference outputs.
pub const INTERPRETER_FLOPS: u64 = 1 << 31;

/// Why a model cannot be benchmarked.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum WorkloadError {
    #[error(transparent)]
    Expand(#[from] ExpandError),
    #[error("cannot make inputs to benchmark the model: {0}")]
    Inputs(#[source] Box<NumericsError>),
    #[error("the reference interpreter failed: {0}")]
    Interp(#[from] InterpError),
}

/// Where the reference outputs come from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    Interpreter,
    /// The first variant's outputs (the baseline's C).
    Baseline,
}

impl Reference {
    pub fn describe(&self) -> &'static str {
        match self {
            Reference::Interpreter => "the reference interpreter",
            Reference::Baseline => "the baseline's compiled C",
        }
    }
}

/// numpy's job for a model that is one MatMul: `output = a @ b`, with the constant operands
/// passed as inputs.
#[derive(Clone, Debug)]
pub struct MatMulOperands {
    pub a: String,
    pub b: String,
    pub output: String,
    pub constants: Vec<(String, Tensor)>,
}

/// A model ready to benchmark.
pub struct Workload {
    pub name: String,
    /// The ONNX model, for the peers (`None` for textual IR).
    pub onnx: Option<Vec<u8>>,
    /// As imported (library nodes).
    pub library: Program,
    pub baseline: Program,
    pub inputs: BTreeMap<String, Tensor>,
    pub reference: Reference,
    /// The interpreter's outputs when `reference` is [`Reference::Interpreter`].
    pub expected: Option<BTreeMap<String, Tensor>>,
    pub flops: u64,
    pub matmul: Option<MatMulOperands>,
}

impl Workload {
    /// Prepares `library` (as imported) with inputs drawn from `seed`.
    pub fn new(
        name: &str,
        library: Program,
        onnx: Option<Vec<u8>>,
        seed: u64,
    ) -> Result<Workload, WorkloadError> {
        let mut baseline = library.clone();
        expand_all(&mut baseline)?;
        let inputs =
            random_inputs(&baseline, seed).map_err(|e| WorkloadError::Inputs(Box::new(e)))?;
        let flops = crate::ops::flops::program_flops(&library);
        let expected = if flops <= INTERPRETER_FLOPS {
            Some(crate::interp::run(&library, &inputs)?)
        } else {
            None
        };
        Ok(Workload {
            name: name.to_string(),
            onnx,
            matmul: single_matmul(&library),
            reference: match expected {
                Some(_) => Reference::Interpreter,
                None => Reference::Baseline,
            },
            expected,
            library,
            baseline,
            inputs,
            flops,
        })
    }
}

/// The operands of `p` when it is exactly one MatMul from inputs or constants to an output.
pub fn single_matmul(p: &Program) -> Option<MatMulOperands> {
    let g = &p.graph;
    let mut libs = g
        .ordered()
        .into_iter()
        .filter(|&i| matches!(g.node(i).kind, NodeKind::Library(_)));
    let idx = libs.next()?;
    if libs.next().is_some() {
        return None;
    }
    let NodeKind::Library(lib) = &g.node(idx).kind else {
        return None;
    };
    if lib.op != "MatMul" {
        return None;
    }
    let operand = |k: usize| {
        let conn = LibraryNode::input_connector(k);
        (g.in_edges(idx).into_iter())
            .find(|e| e.memlet.dst_conn.as_deref() == Some(conn.as_str()))
            .map(|e| e.memlet.data.clone())
    };
    let (a, b) = (operand(0)?, operand(1)?);
    let output = match g.out_edges(idx).as_slice() {
        [e] => e.memlet.data.clone(),
        _ => return None,
    };
    if !p.outputs.contains(&output) {
        return None;
    }
    let mut constants = Vec::new();
    for name in [&a, &b] {
        if let Some(t) = p.constants.get(name) {
            constants.push((name.clone(), t.tensor().clone()));
        } else if !p.inputs.contains(name) {
            return None;
        }
    }
    Some(MatMulOperands {
        a,
        b,
        output,
        constants,
    })
}
