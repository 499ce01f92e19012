//! The glue between the command line and the library: loading models given as paths, parsing
//! option values, and the commands' bodies. `main.rs` only declares the arguments.

pub mod analyze;
pub mod commands;
pub mod conformance;
pub mod matching;

use crate::ir::text::{parse_named, ParseError};
use crate::ir::Program;
use crate::onnx::{import_file, ImportOptions, OnnxError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors of the command-line layer.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CliError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Onnx(#[from] OnnxError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Text(#[from] ParseError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{text}` is not a valid {what}")]
    #[diagnostic(help("{hint}"))]
    BadOption {
        what: &'static str,
        text: String,
        hint: &'static str,
    },
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Codegen(#[from] crate::codegen::CodegenError),
    #[error(transparent)]
    Expand(#[from] crate::ops::expand::ExpandError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Demo(#[from] crate::demo::DemoError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Refused(#[from] crate::transform::engine::Refusal),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(#[from] crate::ir::validate::InvalidIr),
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
}

/// Shape and dimension bindings given on the command line.
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    /// `--shape name=1x3x224x224`
    pub shapes: Vec<String>,
    /// `--dim batch=1`
    pub dims: Vec<String>,
    /// `--as-written`: no constant folding or Identity/Dropout removal at import.
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

/// Loads a program from an `.onnx` model or a textual IR file (anything else).
pub fn load_program(path: &Path, bindings: &Bindings) -> Result<Program, CliError> {
    if is_onnx(path) {
        let opts = bindings.import_options(path.parent().map(Path::to_path_buf))?;
        return Ok(import_file(path, &opts)?);
    }
    let src = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let parsed = parse_named(&path.display().to_string(), &src)?;
    if !parsed.elided.is_empty() {
        return Err(CliError::Failed(format!(
            "{} elides the values of {} constant(s) ({}); write it with `dmove import --exact`",
            path.display(),
            parsed.elided.len(),
            parsed.elided.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(parsed.program)
}

/// Writes `bytes` to `path` atomically, or to standard output when `path` is `-`.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    if path == Path::new("-") {
        use std::io::Write;
        return std::io::stdout()
            .write_all(bytes)
            .map_err(|source| CliError::Write {
                path: path.to_path_buf(),
                source,
            });
    }
    crate::fsutil::write_atomic(path, bytes).map_err(|source| CliError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// `k=v` transformation parameters: integers, comma-separated integer lists, or strings.
pub fn parse_params(pairs: &[String]) -> Result<crate::transform::Params, CliError> {
    use crate::transform::ParamValue;
    let mut out = BTreeMap::new();
    for s in pairs {
        let (k, v) = split_binding(
            s,
            "transformation parameter",
            "write NAME=VALUE, e.g. tiles=32,32,0",
        )?;
        let value = if let Ok(i) = v.trim().parse::<i64>() {
            ParamValue::Int(i)
        } else if let Some(list) = v
            .split(',')
            .map(|x| x.trim().parse::<i64>().ok())
            .collect::<Option<Vec<_>>>()
        {
            ParamValue::Ints(list)
        } else {
            ParamValue::Str(v)
        };
        out.insert(k, value);
    }
    Ok(out)
}

/// A node id written `n12` or `12`.
pub fn parse_node_id(s: &str) -> Result<crate::ir::NodeId, CliError> {
    s.trim()
        .trim_start_matches('n')
        .parse::<u32>()
        .map(crate::ir::NodeId)
        .map_err(|_| bad("node id", s, "write the id as printed in the IR, e.g. n12"))
}
