//! Reading ONNX model files: protobuf decoding, the model-level sanity checks and resolution
//! of external tensor data.

use super::error::OnnxError;
use super::proto::tensor_proto::DataLocation;
use super::proto::{ModelProto, NodeProto, TensorProto};
use super::tensor::read_external;
use prost::Message;
use std::collections::BTreeMap;
use std::path::Path;

/// IR version 3 introduced `opset_import`, which the importer needs to know operator semantics.
/// There is no upper bound: a newer IR version is refused only through the fields it uses
/// (see [`check_model`]), never for its number.
pub const MIN_IR_VERSION: i64 = 3;
/// The first opset; models older than opset 7 are upgraded while importing (see
/// `onnx::import::legacy`). Each node then follows the definition of its operator that the
/// opset selects (see [`super::opsets`]); no opset is refused for its number.
pub const MIN_OPSET: i64 = 1;

/// Domains that name the default ONNX operator set.
pub fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// A node's human label: its name, or `<op>_<index>` when it has none.
pub fn node_label(node: &NodeProto, index: usize) -> String {
    match node.name.as_deref() {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => format!("{}_{index}", node.op_type.as_deref().unwrap_or("node")),
    }
}

/// Decodes and checks a model held in memory. External data stays unresolved (the importer
/// reads it when given `ImportOptions::base_dir`).
pub fn load_model(bytes: &[u8]) -> Result<ModelProto, OnnxError> {
    let origin = "the model bytes";
    let model = decode(bytes, origin)?;
    check_model(&model, origin)?;
    Ok(model)
}

/// Reads, decodes and checks a model file, and inlines external tensor data found relative to
/// the file's directory, so the returned model is self-contained.
pub fn load_file(path: &Path) -> Result<ModelProto, OnnxError> {
    let bytes = std::fs::read(path).map_err(|source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let origin = format!("`{}`", path.display());
    let mut model = decode(&bytes, &origin)?;
    check_model(&model, &origin)?;
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    resolve_external_data(&mut model, base)?;
    Ok(model)
}

fn decode(bytes: &[u8], origin: &str) -> Result<ModelProto, OnnxError> {
    if bytes.is_empty() {
        return Err(OnnxError::Empty {
            origin: origin.to_string(),
        });
    }
    let model = ModelProto::decode(bytes).map_err(|e| OnnxError::NotOnnx {
        origin: origin.to_string(),
        reason: format!("protobuf decoding failed ({e})"),
    })?;
    // Protobuf skips unknown fields, so arbitrary bytes can decode to an empty message.
    if model.graph.is_none() && model.ir_version.is_none() && model.opset_import.is_empty() {
        return Err(OnnxError::NotOnnx {
            origin: origin.to_string(),
            reason: "it contains none of a model's fields (graph, ir_version, opset_import)".into(),
        });
    }
    Ok(model)
}

/// Model-level checks: a graph, an IR version with `opset_import`, a default opset, no field
/// that would change what the model computes unread, and no node in a foreign domain. Returns
/// the default-domain opset version.
///
/// Of what IR versions 4–14 added, the importer reads element types (checked where tensors and
/// types are read: the types added by IR versions 11–14, float4e2m1, float8e8m0, int2/uint2 and
/// float6, are refused by name), and it ignores what cannot change the computed values:
/// documentation and metadata, `training_info` (inference runs the main graph), quantization
/// annotations, and the multi-device annotations of IR version 11 (`ModelProto.configuration`,
/// `NodeProto.device_configurations`: they say where a value is computed, not what it is). It
/// refuses sparse initializers by field name; non-tensor types (including IR version 14's opaque
/// type) are refused where graph signatures are read, and model-local functions by their
/// domain like any foreign operator.
///
/// Imports of foreign domains that no node uses are tolerated: exporters often declare
/// `ai.onnx.ml` and the like without using them.
pub fn check_model(model: &ModelProto, origin: &str) -> Result<i64, OnnxError> {
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::MissingGraph {
            origin: origin.to_string(),
        })?;
    let ir_version = model.ir_version.unwrap_or(0);
    if ir_version < MIN_IR_VERSION {
        return Err(OnnxError::IrVersion {
            origin: origin.to_string(),
            version: ir_version,
            min: MIN_IR_VERSION,
        });
    }
    let version = default_opset(model).ok_or_else(|| OnnxError::MissingOpset {
        origin: origin.to_string(),
    })?;
    if version < MIN_OPSET {
        return Err(OnnxError::OpsetVersion {
            origin: origin.to_string(),
            version,
        });
    }
    if let Some(sparse) = graph.sparse_initializer.first() {
        let name = sparse
            .values
            .as_ref()
            .and_then(|v| v.name.clone())
            .unwrap_or_default();
        return Err(OnnxError::UnreadField {
            origin: origin.to_string(),
            field: "GraphProto.sparse_initializer".into(),
            why: format!("sparse initializer `{name}` is a value the graph reads"),
        });
    }
    let labelled = graph
        .node
        .iter()
        .enumerate()
        .map(|(i, n)| (node_label(n, i), n));
    check_domains(labelled, origin)?;
    Ok(version)
}

/// Refuses nodes outside the default domain, all at once, by their labels.
pub fn check_domains<'n>(
    nodes: impl IntoIterator<Item = (String, &'n NodeProto)>,
    origin: &str,
) -> Result<(), OnnxError> {
    let mut foreign: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (label, node) in nodes {
        let domain = node.domain.as_deref().unwrap_or("");
        if !is_default_domain(domain) {
            foreign.entry(domain.to_string()).or_default().push(label);
        }
    }
    if foreign.is_empty() {
        return Ok(());
    }
    Err(OnnxError::UnknownDomains {
        origin: origin.to_string(),
        domains: foreign
            .into_iter()
            .map(|(d, nodes)| format!("`{d}` (nodes: {})", nodes.join(", ")))
            .collect(),
    })
}

/// The version of the default operator set the model imports, if any.
pub fn default_opset(model: &ModelProto) -> Option<i64> {
    model
        .opset_import
        .iter()
        .find(|o| is_default_domain(o.domain.as_deref().unwrap_or("")))
        .map(|o| o.version.unwrap_or(0))
}

/// Replaces the data of every external-data initializer (and `Constant` value) by its bytes, read relative to `base_dir`.
pub fn resolve_external_data(model: &mut ModelProto, base_dir: &Path) -> Result<(), OnnxError> {
    let Some(graph) = model.graph.as_mut() else {
        return Ok(());
    };
    let inline = |t: &mut TensorProto, name: &str| -> Result<(), OnnxError> {
        if t.data_location == Some(DataLocation::External as i32) {
            t.raw_data = Some(read_external(t, name, Some(base_dir))?);
            t.data_location = Some(DataLocation::Default as i32);
            t.external_data.clear();
        }
        Ok(())
    };
    for t in &mut graph.initializer {
        let name = t.name.clone().unwrap_or_default();
        inline(t, &name)?;
    }
    for node in graph
        .node
        .iter_mut()
        .filter(|n| n.op_type.as_deref() == Some("Constant"))
    {
        let name = node.output.first().cloned().unwrap_or_default();
        for t in node.attribute.iter_mut().filter_map(|a| a.t.as_mut()) {
            inline(t, &name)?;
        }
    }
    Ok(())
}
