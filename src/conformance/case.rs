//! Reading one case from disk: the model and its `test_data_set_*` directories of serialized
//! `TensorProto`s, decoded with the project's own protobuf types.

use super::run::Failure;
use super::Stage;
use crate::ir::{Buffer, DType, Tensor};
use crate::onnx::proto::{ModelProto, TensorProto};
use crate::onnx::tensor::decode_tensor;
use prost::Message;
use std::path::{Path, PathBuf};

/// One set of inputs with the outputs they must produce, in the model's signature order.
pub struct DataSet {
    pub name: String,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
}

/// A load failure naming the file by its last two components (`test_data_set_0/input_1.pb`):
/// the case is already named.
fn load_failure(path: &Path, message: impl std::fmt::Display) -> Failure {
    let parts: Vec<String> = path
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let short: Vec<&str> = parts.iter().rev().map(String::as_str).collect();
    Failure::new(Stage::Load, format!("{}: {message}", short.join("/")))
}

/// The raw model (not yet checked: the caller classifies its operators first).
pub fn read_model(dir: &Path) -> Result<ModelProto, Failure> {
    let path = dir.join("model.onnx");
    let bytes = std::fs::read(&path).map_err(|e| load_failure(&path, e))?;
    ModelProto::decode(bytes.as_slice()).map_err(|e| load_failure(&path, e))
}

/// Every `test_data_set_*` directory of the case, in name order.
pub fn read_data_sets(dir: &Path) -> Result<Vec<DataSet>, Failure> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| load_failure(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
        })
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(load_failure(dir, "no test_data_set_* directory"));
    }
    dirs.iter()
        .map(|d| {
            Ok(DataSet {
                name: super::case_name(d),
                inputs: read_numbered(d, "input")?,
                outputs: read_numbered(d, "output")?,
            })
        })
        .collect()
}

/// `<prefix>_0.pb`, `<prefix>_1.pb`, … until the first missing index.
fn read_numbered(dir: &Path, prefix: &str) -> Result<Vec<Tensor>, Failure> {
    let mut out = Vec::new();
    loop {
        let path = dir.join(format!("{prefix}_{}.pb", out.len()));
        if !path.is_file() {
            return Ok(out);
        }
        out.push(read_tensor(&path)?);
    }
}

/// A serialized `TensorProto` file.
pub fn read_tensor(path: &Path) -> Result<Tensor, Failure> {
    let bytes = std::fs::read(path).map_err(|e| load_failure(path, e))?;
    let proto = TensorProto::decode(bytes.as_slice()).map_err(|e| load_failure(path, e))?;
    let name = proto
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| path.display().to_string());
    decode_tensor(&proto, &name, path.parent()).map_err(|e| load_failure(path, e))
}

/// `t` as the model declares it: the ONNX backend tests store bfloat16 data as `uint16` bit
/// patterns (numpy has no bfloat16), which are reinterpreted, not converted. Any other tensor
/// is returned as it is (a real type mismatch is reported where it is used).
pub fn as_declared(t: Tensor, declared: Option<DType>) -> Tensor {
    match (t.data, declared) {
        (Buffer::Int(DType::U16, v), Some(DType::BF16)) => Tensor {
            shape: t.shape,
            data: Buffer::Narrow(DType::BF16, v.into_iter().map(|x| x as u16).collect()),
        },
        (data, _) => Tensor {
            shape: t.shape,
            data,
        },
    }
}
