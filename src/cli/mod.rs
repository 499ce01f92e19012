//! The glue between the command line and the library: the commands' arguments (declared here
//! with clap's derive, so `main.rs` only lists the commands), loading models given as paths,
//! parsing option values, and the commands' bodies.

pub mod analyze;
pub mod apply;
pub mod bench;
pub mod build;
pub mod commands;
pub mod conformance;
pub mod lsp;
pub mod matching;
pub mod models;
pub mod recipe;
pub mod transforms;
pub mod view;

use crate::ir::text::{parse_named, ParseError};
use crate::ir::validate::{validate, InvalidIr};
use crate::ir::{NodeId, Program};
use crate::onnx::{import_file, ImportOptions, OnnxError};
use crate::transform::{parse_value, ParamValue, Params, Schema};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors of the command-line layer.
///
/// A variant that carries a `#[source]` does not repeat it in its own message: miette prints
/// the cause under the message (`╰─▶ …`), so it appears exactly once.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CliError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Onnx(#[from] OnnxError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Text(#[from] ParseError),
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The input itself breaks the IR invariants (e.g. textual IR naming an undeclared
    /// container): the user's file is at fault, not a transformation.
    #[error("`{}` is not a valid program", path.display())]
    #[diagnostic(
        code(dmove::cli::invalid_input),
        help("the input breaks the IR invariants above; fix it (nothing was run on it)")
    )]
    InvalidInput {
        path: PathBuf,
        #[source]
        #[diagnostic_source]
        error: InvalidIr,
    },
    #[error("{} elides the values of {} constant(s) ({})", path.display(), names.len(), names.join(", "))]
    #[diagnostic(help(
        "write it with `dmove import --exact` so every constant's values are kept"
    ))]
    ElidedConstants { path: PathBuf, names: Vec<String> },
    #[error("`{text}` is not a valid {what}")]
    #[diagnostic(help("{hint}"))]
    BadOption {
        what: &'static str,
        text: String,
        hint: &'static str,
    },
    /// A `--param KEY=VALUE` whose value does not read as the kind the transformation declares.
    #[error("{transformation}: parameter `{key}` expects {expected}, but `{text}` is not one")]
    #[diagnostic(
        code(dmove::cli::param),
        help("`dmove transforms` lists every parameter with its kind")
    )]
    BadParam {
        transformation: &'static str,
        key: String,
        expected: String,
        text: String,
    },
    /// A command line that lacks something only the combination of flags makes required.
    #[error("{0}")]
    Usage(String),
    /// Cases the manifest lists as passing that did not pass.
    #[error("{} case(s) listed in the manifest did not pass: {}", cases.len(), cases.join(", "))]
    #[diagnostic(code(dmove::cli::regressed))]
    Regressed { cases: Vec<String> },
    #[error(transparent)]
    #[diagnostic(transparent)]
    UnknownTransformation(#[from] crate::transform::UnknownTransformation),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Codegen(#[from] crate::codegen::CodegenError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Deliverable(#[from] crate::codegen::DeliverableError),
    #[error(transparent)]
    Expand(#[from] crate::ops::expand::ExpandError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Demo(#[from] crate::demo::DemoError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lsp(#[from] crate::lsp::LspError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Variant(#[from] crate::bench::variants::VariantError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Workload(#[from] crate::bench::workload::WorkloadError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Calibrate(#[from] crate::bench::calibrate::CalibrateError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Refused(#[from] crate::transform::engine::Refusal),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(#[from] InvalidIr),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Pattern(#[from] crate::pattern::PatternError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Analysis(Box<crate::analysis::AnalysisError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Conformance(#[from] crate::conformance::ConformanceError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Manifest(#[from] crate::conformance::manifest::ManifestError),
    #[error("cannot render JSON")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Recipe(#[from] recipe::RecipeError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    View(#[from] crate::view::ViewError),
}

/// Shape and dimension bindings given on the command line.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Bindings {
    /// Bind an input's shape, e.g. `--shape input=1x3x224x224`.
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    pub shapes: Vec<String>,
    /// Bind a symbolic dimension, e.g. `--dim batch=1`.
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<String>,
    /// Import the ONNX graph as written: no constant folding, no Identity/Dropout removal.
    #[arg(long)]
    pub as_written: bool,
}

impl Bindings {
    pub fn import_options(&self, base_dir: Option<PathBuf>) -> Result<ImportOptions, CliError> {
        let mut opts = ImportOptions {
            base_dir,
            as_written: self.as_written,
            ..ImportOptions::default()
        };
        for s in &self.shapes {
            let (name, dims) = split_binding(
                s,
                "shape binding",
                "write NAME=D0xD1x…, e.g. input=1x3x224x224",
            )?;
            let dims = dims
                .split('x')
                .map(|d| d.trim().parse::<i64>().ok().filter(|v| *v >= 0))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    bad(
                        "shape binding",
                        s,
                        "dimensions are non-negative integers separated by `x`",
                    )
                })?;
            opts.input_shapes.insert(name, dims);
        }
        for s in &self.dims {
            let (name, v) =
                split_binding(s, "dimension binding", "write NAME=VALUE, e.g. batch=1")?;
            let v = v
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|v| *v >= 0)
                .ok_or_else(|| {
                    bad(
                        "dimension binding",
                        s,
                        "the value is a non-negative integer",
                    )
                })?;
            opts.dims.insert(name, v);
        }
        Ok(opts)
    }
}

fn bad(what: &'static str, text: &str, hint: &'static str) -> CliError {
    CliError::BadOption {
        what,
        text: text.to_string(),
        hint,
    }
}

fn split_binding(
    s: &str,
    what: &'static str,
    hint: &'static str,
) -> Result<(String, String), CliError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(bad(what, s, hint)),
    }
}

/// Whether `path` names an ONNX model (by its extension); anything else is textual IR.
pub fn is_onnx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// Loads a program from an `.onnx` model or a textual IR file (anything else), and checks the
/// IR invariants before any command works on it, so a broken input is reported as the input's
/// fault ([`CliError::InvalidInput`]) rather than as a failure of whatever ran on it.
pub fn load_program(path: &Path, bindings: &Bindings) -> Result<Program, CliError> {
    let p = if is_onnx(path) {
        let opts = bindings.import_options(path.parent().map(Path::to_path_buf))?;
        import_file(path, &opts)?
    } else {
        let src = std::fs::read_to_string(path).map_err(|source| CliError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let parsed = parse_named(&path.display().to_string(), &src)?;
        if !parsed.elided.is_empty() {
            return Err(CliError::ElidedConstants {
                path: path.to_path_buf(),
                names: parsed.elided.keys().cloned().collect(),
            });
        }
        parsed.program
    };
    validated(path, p)
}

/// `p`, read from `path`, if it satisfies the IR invariants.
pub fn validated(path: &Path, p: Program) -> Result<Program, CliError> {
    match validate(&p) {
        Ok(()) => Ok(p),
        Err(error) => Err(CliError::InvalidInput {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// Writes `bytes` to `path` atomically, or to standard output when `path` is `-`.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let result = if path == Path::new("-") {
        use std::io::Write;
        std::io::stdout().write_all(bytes)
    } else {
        crate::fsutil::write_atomic(path, bytes)
    };
    result.map_err(|source| CliError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Where an optional `-o FILE` sends output: the file, or standard output.
pub fn output_path(output: Option<&Path>) -> &Path {
    output.unwrap_or_else(|| Path::new("-"))
}

/// `k=v` transformation parameters, each value read as the kind `schema` declares for `k`
/// (`tiles=16` is a one-entry list for MapTiling, an integer elsewhere). A key the schema does
/// not declare is kept as text, so the engine's validator reports it with the accepted keys and
/// the closest spelling.
pub fn parse_params(schema: &Schema, pairs: &[String]) -> Result<Params, CliError> {
    let mut out = BTreeMap::new();
    for s in pairs {
        let (k, v) = split_binding(
            s,
            "transformation parameter",
            "write NAME=VALUE, e.g. tiles=32,32,0",
        )?;
        let value = match schema.params.iter().find(|d| d.name == k) {
            None => ParamValue::Str(v.trim().to_string()),
            Some(d) => parse_value(&d.kind, &v).ok_or_else(|| CliError::BadParam {
                transformation: schema.name,
                key: k.clone(),
                expected: d.kind.describe(),
                text: v.trim().to_string(),
            })?,
        };
        out.insert(k, value);
    }
    Ok(out)
}

/// A node id written `n12` or `12`.
pub fn parse_node_id(s: &str) -> Result<NodeId, CliError> {
    s.parse::<NodeId>()
        .map_err(|_| bad("node id", s, "write the id as printed in the IR, e.g. n12"))
}

/// Writes `value` as pretty JSON (one trailing newline) to standard output.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    write_output(Path::new("-"), text.as_bytes())
}
