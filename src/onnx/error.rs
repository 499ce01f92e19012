//! Everything that can go wrong between an ONNX file and a validated [`crate::ir::Program`].
//!
//! Every variant names the thing at fault (the file, the tensor, the node, the attribute) so a
//! user can find it in the model without a debugger.

use super::opsets::VersionRefusal;
use crate::ir::validate::InvalidIr;
use crate::ops::OpError;
use std::path::PathBuf;

/// An operator occurrence the importer cannot handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedNode {
    /// The node's label (its name, or `<op>_<index>` when unnamed).
    pub node: String,
    pub op: String,
    /// The operator's domain; empty for the default ONNX domain.
    pub domain: String,
}

impl std::fmt::Display for UnsupportedNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.domain.is_empty() {
            write!(f, "`{}` ({})", self.node, self.op)
        } else {
            write!(f, "`{}` ({}::{})", self.node, self.domain, self.op)
        }
    }
}

/// Why an ONNX model could not be loaded or imported.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum OnnxError {
    #[error("cannot read `{}`", path.display())]
    #[diagnostic(code(dmove::onnx::io))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{origin} is empty, not an ONNX model")]
    #[diagnostic(code(dmove::onnx::empty))]
    Empty { origin: String },

    #[error("{origin} is not an ONNX model: {reason}")]
    #[diagnostic(
        code(dmove::onnx::not_onnx),
        help("pass a binary `.onnx` file (a serialized onnx.ModelProto); a truncated download also looks like this")
    )]
    NotOnnx { origin: String, reason: String },

    #[error("{origin} has no graph")]
    #[diagnostic(
        code(dmove::onnx::no_graph),
        help("an ONNX model must contain a GraphProto in field `graph`")
    )]
    MissingGraph { origin: String },

    #[error("{origin} has IR version {version}; dmove reads IR version {min} and later")]
    #[diagnostic(
        code(dmove::onnx::ir_version),
        help("IR version 3 introduced `opset_import`, which says what each operator means; convert the model with onnx.version_converter")
    )]
    IrVersion {
        origin: String,
        version: i64,
        min: i64,
    },

    #[error("{origin} uses {field}, which dmove does not read: {why}")]
    #[diagnostic(
        code(dmove::onnx::unread_field),
        help("dmove ignores only the fields that cannot change what the model computes (documentation, metadata, multi-device placement, training information)")
    )]
    UnreadField {
        origin: String,
        /// The protobuf field, e.g. `GraphProto.sparse_initializer`.
        field: String,
        why: String,
    },

    #[error("{what} has element type {name}{}, which dmove does not support", added_in(.ir_version))]
    #[diagnostic(
        code(dmove::onnx::element_type),
        help("dmove supports float32/64, float16, bfloat16, the float8 formats, bool and the integer types (int4/uint4 to int64/uint64)")
    )]
    ElementType {
        /// The tensor, graph input or attribute that has it.
        what: String,
        /// ONNX's spelling, e.g. `FLOAT4E2M1`.
        name: String,
        /// The IR version that introduced it, for types newer than the original ones.
        ir_version: Option<i64>,
    },
    #[error("{origin} does not import the default ONNX operator set (domain \"\" or \"ai.onnx\")")]
    #[diagnostic(code(dmove::onnx::no_opset))]
    MissingOpset { origin: String },

    #[error("{origin} imports default opset version {version}; opsets start at 1")]
    #[diagnostic(code(dmove::onnx::opset_version))]
    OpsetVersion { origin: String, version: i64 },

    #[error("{} node(s) follow operator definitions dmove does not implement: {}", .nodes.len(), .nodes.iter().map(|(n, r)| format!("`{n}`: {r}")).collect::<Vec<_>>().join("; "))]
    #[diagnostic(
        code(dmove::onnx::operator_version),
        help("a node follows the latest definition of its operator at or below the model's opset; convert the model with onnx.version_converter to an opset whose definitions dmove implements")
    )]
    OperatorVersions {
        /// Node label and why its definition is refused.
        nodes: Vec<(String, VersionRefusal)>,
    },

    #[error("{origin} uses operator domains dmove does not support: {}", .domains.join("; "))]
    #[diagnostic(
        code(dmove::onnx::unknown_domain),
        help("only the default ONNX domain (\"\" / \"ai.onnx\") is supported")
    )]
    UnknownDomains {
        origin: String,
        /// One entry per domain: `domain (nodes: a, b)`.
        domains: Vec<String>,
    },

    #[error("{} unsupported operator(s): {}", .nodes.len(), list(.nodes))]
    #[diagnostic(
        code(dmove::onnx::unsupported),
        help("every listed node must be replaced or implemented in src/ops before the model can be imported")
    )]
    Unsupported { nodes: Vec<UnsupportedNode> },

    #[error("node `{node}` reads tensor `{tensor}`, which no node, input or initializer produces{}", later_hint(.produced_later))]
    #[diagnostic(code(dmove::onnx::dangling))]
    Dangling {
        node: String,
        tensor: String,
        /// Set when a later node produces it: the graph is not topologically sorted.
        produced_later: Option<String>,
    },

    #[error("tensor `{tensor}` is defined twice (second time by {by})")]
    #[diagnostic(
        code(dmove::onnx::duplicate),
        help("ONNX graphs are in SSA form: every tensor name has exactly one producer")
    )]
    Duplicate { tensor: String, by: String },

    #[error("{what} has an empty name")]
    #[diagnostic(code(dmove::onnx::empty_name))]
    EmptyName { what: String },

    #[error("tensor `{tensor}`: {message}")]
    #[diagnostic(code(dmove::onnx::tensor))]
    TensorData { tensor: String, message: String },

    #[error("tensor `{tensor}` keeps its data in external file `{}`: {message}", file.display())]
    #[diagnostic(
        code(dmove::onnx::external_data),
        help("external data files are looked up relative to the directory of the model file")
    )]
    ExternalData {
        tensor: String,
        file: PathBuf,
        message: String,
    },

    #[error(
        "node `{node}` ({op}): attribute `{attr}` must be {expected}, but the model gives {found}"
    )]
    #[diagnostic(
        code(dmove::onnx::attribute_type),
        help("the type is the one the ONNX definition of {op} at opset {version} declares")
    )]
    AttributeType {
        node: String,
        op: &'static str,
        attr: String,
        /// The declared type (`ints`, `float`, …).
        expected: &'static str,
        /// The type the node's attribute has.
        found: &'static str,
        /// The definition's since-version.
        version: i64,
    },

    #[error("node `{node}` ({op}) lacks required attribute `{attr}` ({expected})")]
    #[diagnostic(
        code(dmove::onnx::missing_attribute),
        help("the ONNX definition of {op} at opset {version} requires it")
    )]
    MissingAttribute {
        node: String,
        op: &'static str,
        attr: String,
        expected: &'static str,
        version: i64,
    },

    #[error("node `{node}` ({op}): `{attr}` is not an attribute of {op} as defined at opset {version} (its attributes: {known})")]
    #[diagnostic(
        code(dmove::onnx::unknown_attribute),
        help("ONNX Runtime refuses such a node too; an attribute added by a later opset needs a model importing that opset")
    )]
    UnknownAttribute {
        node: String,
        op: &'static str,
        attr: String,
        version: i64,
        /// The declared attributes, comma-separated (`none` when there are none).
        known: String,
    },

    #[error("node `{node}`: attribute `{attr}`: {message}")]
    #[diagnostic(code(dmove::onnx::attribute))]
    Attribute {
        node: String,
        attr: String,
        message: String,
    },

    #[error("graph input or output `{tensor}`: {message}")]
    #[diagnostic(code(dmove::onnx::value_type))]
    ValueType { tensor: String, message: String },

    #[error("import option: {message}")]
    #[diagnostic(code(dmove::onnx::options))]
    Options { message: String },

    #[error("node `{node}` ({op}): {source}")]
    #[diagnostic(code(dmove::onnx::infer))]
    Infer {
        node: String,
        op: String,
        /// Boxed: operator errors are large and this enum travels through every `?`.
        #[source]
        source: Box<OpError>,
    },

    #[error("tensor `{tensor}` is declared as {declared} but node `{node}` computes {inferred}")]
    #[diagnostic(code(dmove::onnx::shape_mismatch))]
    ShapeMismatch {
        tensor: String,
        node: String,
        declared: String,
        inferred: String,
    },

    #[error("graph output `{tensor}` is not computed by any node ({reason})")]
    #[diagnostic(
        code(dmove::onnx::output_not_computed),
        help("outputs that are graph inputs or constants are not supported; route them through an Identity node")
    )]
    OutputNotComputed { tensor: String, reason: String },

    #[error("input `{input}` {shape}: dimension {dim} (`{symbol}`) has no value, but generated code needs every size")]
    #[diagnostic(
        code(dmove::onnx::unbound_dimension),
        help("bind it on the command line with `--dim {symbol}=VALUE`, or give the whole shape with `--shape {input}=D0xD1x…`")
    )]
    UnboundDimension {
        input: String,
        dim: usize,
        symbol: String,
        /// The input's declared shape, for the message.
        shape: String,
    },

    #[error(
        "node `{node}` ({op}) needs a shape computed from unbound dimensions ({symbols}): {source}"
    )]
    #[diagnostic(
        code(dmove::onnx::shape_from_unbound_dimension),
        help("bind them with `{flags}` (or give input shapes with `--shape`), so the shape computation folds into constants")
    )]
    ShapeFromUnboundDimension {
        node: String,
        op: String,
        /// The symbols, rendered as `` `a`, `b` ``.
        symbols: String,
        /// The command-line flags that bind them.
        flags: String,
        #[source]
        source: Box<OpError>,
    },

    #[error("node `{node}` ({op}) cannot be imported: {reason}")]
    #[diagnostic(code(dmove::onnx::control_flow), help("{hint}"))]
    ControlFlow {
        node: String,
        /// `If`, `Loop` or `Scan`.
        op: String,
        reason: String,
        /// What would make it importable.
        hint: String,
    },

    #[error("the imported program is invalid: {0}")]
    #[diagnostic(code(dmove::onnx::invalid_ir))]
    InvalidIr(#[from] InvalidIr),
}

fn list(nodes: &[UnsupportedNode]) -> String {
    nodes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn added_in(ir_version: &Option<i64>) -> String {
    ir_version.map_or_else(String::new, |v| format!(" (added in IR version {v})"))
}

fn later_hint(producer: &Option<String>) -> String {
    match producer {
        Some(p) => format!(
            " before it (node `{p}` produces it later: the graph is not topologically sorted)"
        ),
        None => String::new(),
    }
}

impl OnnxError {
    /// `source` raised by `node`, whose inputs depend on the values of the unbound `symbols`.
    pub(crate) fn shape_from_unbound<'a>(
        node: &str,
        op: &str,
        symbols: impl IntoIterator<Item = &'a String> + Clone,
        source: OpError,
    ) -> Self {
        let render = |f: fn(&String) -> String, sep: &str| {
            symbols
                .clone()
                .into_iter()
                .map(f)
                .collect::<Vec<_>>()
                .join(sep)
        };
        OnnxError::ShapeFromUnboundDimension {
            node: node.to_string(),
            op: op.to_string(),
            symbols: render(|s| format!("`{s}`"), ", "),
            flags: render(|s| format!("--dim {s}=VALUE"), " "),
            source: Box::new(source),
        }
    }

    pub(crate) fn tensor(tensor: &str, message: impl Into<String>) -> Self {
        OnnxError::TensorData {
            tensor: tensor.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn attribute(node: &str, attr: &str, message: impl Into<String>) -> Self {
        OnnxError::Attribute {
            node: node.to_string(),
            attr: attr.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn value_type(tensor: &str, message: impl Into<String>) -> Self {
        OnnxError::ValueType {
            tensor: tensor.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn options(message: impl Into<String>) -> Self {
        OnnxError::Options {
            message: message.into(),
        }
    }
}
