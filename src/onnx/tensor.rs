//! Decoding `TensorProto`s (initializers and `Constant` values) into [`Tensor`]s, including
//! data kept in external files.

use super::error::OnnxError;
use super::proto::tensor_proto::{DataLocation, DataType};
use super::proto::TensorProto;
use crate::ir::{Buffer, DType, Tensor};
use std::path::{Component, Path, PathBuf};

/// The IR element type of an ONNX `TensorProto.DataType` code, or an error naming `what`.
pub fn dtype_of(code: i32, what: &str) -> Result<DType, OnnxError> {
    match DataType::try_from(code) {
        Ok(DataType::Float) => Ok(DType::F32),
        Ok(DataType::Double) => Ok(DType::F64),
        Ok(DataType::Int64) => Ok(DType::I64),
        Ok(DataType::Int32) => Ok(DType::I32),
        Ok(DataType::Bool) => Ok(DType::Bool),
        Ok(other) => Err(OnnxError::tensor(
            what,
            format!(
                "element type {} is not supported (float, double, int64, int32, bool are)",
                other.as_str_name()
            ),
        )),
        Err(_) => Err(OnnxError::tensor(
            what,
            format!("unknown element type code {code}"),
        )),
    }
}

/// The ONNX code of an IR element type (for the writer).
pub fn code_of(dtype: DType) -> DataType {
    match dtype {
        DType::F32 => DataType::Float,
        DType::F64 => DataType::Double,
        DType::I64 => DataType::Int64,
        DType::I32 => DataType::Int32,
        DType::Bool => DataType::Bool,
    }
}

/// Decodes `t`, called `name` in errors. External data is read relative to `base_dir`; without
/// one it is an error.
pub fn decode_tensor(
    t: &TensorProto,
    name: &str,
    base_dir: Option<&Path>,
) -> Result<Tensor, OnnxError> {
    let dtype = dtype_of(t.data_type.unwrap_or(0), name)?;
    let shape = t
        .dims
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                OnnxError::tensor(name, format!("negative dimension {d} in dims {:?}", t.dims))
            })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let count = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            OnnxError::tensor(
                name,
                format!("dims {:?} overflow the element count", t.dims),
            )
        })?;
    if t.segment.is_some() {
        return Err(OnnxError::tensor(
            name,
            "segmented tensors are not supported",
        ));
    }
    let data = if t.data_location == Some(DataLocation::External as i32) {
        let bytes = read_external(t, name, base_dir)?;
        let location = external_entry(t, "location").unwrap_or_default();
        from_le_bytes(
            dtype,
            &bytes,
            count,
            name,
            &format!("external file `{location}`"),
        )?
    } else if let Some(raw) = &t.raw_data {
        from_le_bytes(dtype, raw, count, name, "raw_data")?
    } else {
        typed_fields(t, dtype, count, name)?
    };
    Ok(Tensor { shape, data })
}

/// Reads the element bytes of an external-data tensor. The `location` must stay inside
/// `base_dir` (no absolute paths, no `..`): a model file must not be able to read arbitrary files.
pub fn read_external(
    t: &TensorProto,
    name: &str,
    base_dir: Option<&Path>,
) -> Result<Vec<u8>, OnnxError> {
    let entry = |key: &str| external_entry(t, key);
    let location = entry("location")
        .ok_or_else(|| OnnxError::tensor(name, "external data without a `location`"))?;
    let relative = PathBuf::from(&location);
    let err = |message: String| OnnxError::ExternalData {
        tensor: name.to_string(),
        file: relative.clone(),
        message,
    };
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(err(
            "the location must be a relative path inside the model's directory".into(),
        ));
    }
    let base = base_dir.ok_or_else(|| {
        err(
            "the model's directory is unknown (load it from a file or set ImportOptions::base_dir)"
                .into(),
        )
    })?;
    let file = base.join(&relative);
    let bytes = std::fs::read(&file).map_err(|e| OnnxError::ExternalData {
        tensor: name.to_string(),
        file: file.clone(),
        message: format!("cannot read it: {e}"),
    })?;
    let number = |key: &str| -> Result<Option<usize>, OnnxError> {
        entry(key)
            .map(|v| {
                v.parse::<usize>()
                    .map_err(|_| err(format!("`{key}` is `{v}`, not a byte count")))
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let end = match number("length")? {
        Some(len) => offset.checked_add(len),
        None => Some(bytes.len()),
    };
    match end {
        Some(end) if offset <= end && end <= bytes.len() => Ok(bytes[offset..end].to_vec()),
        _ => Err(OnnxError::ExternalData {
            tensor: name.to_string(),
            file,
            message: format!(
                "the requested byte range starting at {offset} exceeds the file's {} bytes",
                bytes.len()
            ),
        }),
    }
}

/// The value of `key` in a tensor's external-data description.
fn external_entry(t: &TensorProto, key: &str) -> Option<String> {
    t.external_data
        .iter()
        .find(|e| e.key.as_deref() == Some(key))
        .and_then(|e| e.value.clone())
}

/// Little-endian element bytes (ONNX `raw_data` and external files), checked against `count`.
fn from_le_bytes(
    dtype: DType,
    bytes: &[u8],
    count: usize,
    name: &str,
    source: &str,
) -> Result<Buffer, OnnxError> {
    let width = dtype.size_bytes();
    if Some(bytes.len()) != count.checked_mul(width) {
        return Err(OnnxError::tensor(
            name,
            format!(
                "its dims need {count} element(s) of {dtype} ({} bytes) but {source} has {} bytes",
                count.saturating_mul(width),
                bytes.len()
            ),
        ));
    }
    let chunks = bytes.chunks_exact(width);
    Ok(match dtype {
        DType::F32 => Buffer::F32(
            chunks
                .map(|c| f32::from_le_bytes(c.try_into().expect("4-byte chunk")))
                .collect(),
        ),
        DType::F64 => Buffer::F64(
            chunks
                .map(|c| f64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                .collect(),
        ),
        DType::I64 => Buffer::I64(
            chunks
                .map(|c| i64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                .collect(),
        ),
        DType::I32 => Buffer::I32(
            chunks
                .map(|c| i32::from_le_bytes(c.try_into().expect("4-byte chunk")))
                .collect(),
        ),
        DType::Bool => Buffer::Bool(bytes.iter().map(|b| *b != 0).collect()),
    })
}

/// The typed repeated fields (`float_data`, …); ONNX stores bools in `int32_data`.
fn typed_fields(
    t: &TensorProto,
    dtype: DType,
    count: usize,
    name: &str,
) -> Result<Buffer, OnnxError> {
    let (len, field, data) = match dtype {
        DType::F32 => (
            t.float_data.len(),
            "float_data",
            Buffer::F32(t.float_data.clone()),
        ),
        DType::F64 => (
            t.double_data.len(),
            "double_data",
            Buffer::F64(t.double_data.clone()),
        ),
        DType::I64 => (
            t.int64_data.len(),
            "int64_data",
            Buffer::I64(t.int64_data.clone()),
        ),
        DType::I32 => (
            t.int32_data.len(),
            "int32_data",
            Buffer::I32(t.int32_data.clone()),
        ),
        DType::Bool => (
            t.int32_data.len(),
            "int32_data",
            Buffer::Bool(t.int32_data.iter().map(|v| *v != 0).collect()),
        ),
    };
    if len != count {
        return Err(OnnxError::tensor(
            name,
            format!(
                "its dims {:?} need {count} element(s) but {field} has {len}",
                t.dims
            ),
        ));
    }
    Ok(data)
}
