//! The C backend: a fully lowered program (maps and tasklets only) becomes one C11 file with
//! OpenMP pragmas, compiled by the system compiler, run and benchmarked through files.
//!
//! Architecture: [`emit`] turns a [`Program`](crate::ir::Program) into a [`CProgram`] (source
//! text plus the weights side file); [`Compiled::build`] compiles it (cached by content hash)
//! and [`Compiled::run`] / [`Compiled::bench`] execute the binary. The generated program reads
//! its inputs from and writes its outputs to raw little-endian files in a directory it is given,
//! so the Rust side never links against generated code.
//!
//! Safety invariant: no model-supplied string reaches the C source except through
//! [`names`] (identifiers and comments are rebuilt from a safe alphabet).

mod compile;
mod deliverable;
mod emit;
mod excerpt;
mod expr;
mod harness;
mod helpers;
mod names;

mod run;
mod scope;
mod writer;

pub use compile::{builds_on_this_thread, cache_dir, BuildConfig, Compiled};
pub use deliverable::{Deliverable, DeliverableError};
pub use emit::emit;
pub use excerpt::excerpt;
pub use run::{available_cpus, omp_settings, OmpDefault, OMP_DEFAULTS};

use crate::ir::{DType, NodeId};
use std::fmt;
use std::path::PathBuf;

/// Generated C plus what the harness needs at run time.
#[derive(Clone, Debug, PartialEq)]
pub struct CProgram {
    pub source: String,
    /// All constant values, each at a 64-byte aligned offset, little-endian.
    pub weights: Vec<u8>,
    /// The entry point's prototype exactly as `source` defines it (`void dm_run(…)`, no body):
    /// the parameters are the inputs then the outputs, in signature order.
    pub entry: String,
    /// The program's inputs and outputs in signature order (files `in<k>.bin` / `out<k>.bin`).
    pub inputs: Vec<CArg>,
    pub outputs: Vec<CArg>,
    /// Every constant in the weights file, by name.
    pub constants: Vec<CConstant>,
}

/// One argument of the generated entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CArg {
    /// The name in the model (untrusted: sanitize before it reaches C, see `names`).
    pub name: String,
    /// The C identifier the source gives it.
    pub cname: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl CArg {
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn bytes(&self) -> usize {
        self.elements() * self.dtype.size_bytes()
    }
}

/// Where one constant lives in the weights file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CConstant {
    pub arg: CArg,
    /// Byte offset in the weights file (a multiple of 64).
    pub offset: usize,
}

/// A library node still present when code generation needs loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unlowered {
    pub id: NodeId,
    pub label: String,
    pub op: String,
}

impl fmt::Display for Unlowered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}` ({})", self.id, self.label, self.op)
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|x| format!("  - {x}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything that can go wrong between a program and its measured run.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CodegenError {
    #[error("the program still has {} library node(s), which C cannot express:\n{}", .0.len(), list(.0))]
    #[diagnostic(
        code(dmove::codegen::not_lowered),
        help("expand first (expand every library node into maps and tasklets)")
    )]
    NotLowered(Vec<Unlowered>),
    #[error("symbol(s) without a value: {}", .0.join(", "))]
    #[diagnostic(
        code(dmove::codegen::unbound_symbol),
        help("bind every symbol in `Program::symbols` before generating code")
    )]
    UnboundSymbols(Vec<String>),
    #[error("container `{data}`: {message}")]
    #[diagnostic(code(dmove::codegen::bad_data))]
    BadData { data: String, message: String },
    #[error("node {id}: {message}")]
    #[diagnostic(code(dmove::codegen::malformed))]
    Malformed { id: NodeId, message: String },
    #[error("{context}: {source}")]
    #[diagnostic(code(dmove::codegen::io))]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the C compiler `{compiler}` failed; the source is kept at {}:\n{stderr}", .source_path.display())]
    #[diagnostic(code(dmove::codegen::compile))]
    Compile {
        compiler: String,
        stderr: String,
        source_path: PathBuf,
    },
    #[error("input `{name}` is missing")]
    #[diagnostic(code(dmove::codegen::missing_input))]
    MissingInput { name: String },
    #[error("`{name}` is not an input of the program (inputs: {expected})")]
    #[diagnostic(code(dmove::codegen::unexpected_input))]
    UnexpectedInput { name: String, expected: String },
    #[error("input `{name}` is {got}, but the program expects {expected}")]
    #[diagnostic(code(dmove::codegen::input_mismatch))]
    InputMismatch {
        name: String,
        expected: String,
        got: String,
    },
    #[error("the generated program failed ({status}):\n{stderr}")]
    #[diagnostic(code(dmove::codegen::run))]
    Run { status: String, stderr: String },
    #[error("the generated program produced unreadable results: {0}")]
    #[diagnostic(code(dmove::codegen::bad_output))]
    BadOutput(String),
}

impl CodegenError {
    fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> CodegenError {
        let context = context.into();
        move |source| CodegenError::Io { context, source }
    }
}
