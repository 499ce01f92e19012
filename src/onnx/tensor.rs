//! Decoding `TensorProto`s (initializers and `Constant` values) into [`Tensor`]s, including
//! data kept in external files.

use super::error::OnnxError;
use super::proto::tensor_proto::{DataLocation, DataType};
use super::proto::TensorProto;
use crate::ir::{Buffer, DType, Tensor};
use crate::ops::logic::{dtype_of_onnx, onnx_code};
use std::path::{Component, Path, PathBuf};

/// The IR element type of an ONNX `TensorProto.DataType` code, or an
/// [`OnnxError::ElementType`] naming `what` (e.g. "tensor `w`") and the type: one ONNX defines
/// and dmove lacks (strings, complex numbers, the types of IR versions 11–14) or a code ONNX
/// does not define.
pub fn dtype_of(code: i32, what: &str) -> Result<DType, OnnxError> {
    if let Some(d) = dtype_of_onnx(i64::from(code)) {
        return Ok(d);
    }
    match DataType::try_from(code) {
        Ok(other) => Err(OnnxError::ElementType {
            what: what.to_string(),
            name: other.as_str_name().to_string(),
            ir_version: added_in_ir(other),
        }),
        Err(_) => Err(OnnxError::ElementType {
            what: what.to_string(),
            name: format!("code {code} (unknown to ONNX)"),
            ir_version: None,
        }),
    }
}

/// The IR version that introduced element type `t`, for those newer than dmove's own types.
fn added_in_ir(t: DataType) -> Option<i64> {
    match t {
        DataType::Float4e2m1 => Some(11),
        DataType::Float8e8m0 => Some(12),
        DataType::Uint2 | DataType::Int2 => Some(13),
        DataType::Float6e2m3 | DataType::Float6e3m2 => Some(14),
        _ => None,
    }
}

/// The ONNX code of an IR element type (for the writer).
pub fn code_of(dtype: DType) -> DataType {
    let code = i32::try_from(onnx_code(dtype)).expect("ONNX type codes are small");
    DataType::try_from(code).expect("the IR's ONNX codes are valid TensorProto codes")
}

/// `t` as an ONNX tensor called `name` with little-endian `raw_data` (4-bit integers packed two
/// per byte, low nibble first): the inverse of [`decode_tensor`].
pub fn encode_tensor(name: &str, t: &Tensor) -> TensorProto {
    let bytes = t.to_le_bytes();
    let raw = if matches!(t.dtype(), DType::I4 | DType::U4) {
        bytes
            .chunks(2)
            .map(|pair| (pair[0] & 0xf) | (pair.get(1).map_or(0, |b| b & 0xf) << 4))
            .collect()
    } else {
        bytes
    };
    TensorProto {
        name: Some(name.to_string()),
        dims: t.shape.iter().map(|d| *d as i64).collect(),
        data_type: Some(code_of(t.dtype()) as i32),
        raw_data: Some(raw),
        ..TensorProto::default()
    }
}

/// Decodes `t`, called `name` in errors. External data is read relative to `base_dir`; without
/// one it is an error.
pub fn decode_tensor(
    t: &TensorProto,
    name: &str,
    base_dir: Option<&Path>,
) -> Result<Tensor, OnnxError> {
    let dtype = dtype_of(t.data_type.unwrap_or(0), &format!("tensor `{name}`"))?;
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
/// 4-bit integers come packed two per byte, the first element in the low nibble.
fn from_le_bytes(
    dtype: DType,
    bytes: &[u8],
    count: usize,
    name: &str,
    source: &str,
) -> Result<Buffer, OnnxError> {
    let packed = matches!(dtype, DType::I4 | DType::U4);
    let needed = if packed {
        Some(count.div_ceil(2))
    } else {
        count.checked_mul(dtype.size_bytes())
    };
    if Some(bytes.len()) != needed {
        return Err(OnnxError::tensor(
            name,
            format!(
                "its dims need {count} element(s) of {dtype} ({} bytes) but {source} has {} bytes",
                needed.unwrap_or(usize::MAX),
                bytes.len()
            ),
        ));
    }
    if packed {
        let bytes: Vec<i64> = bytes.iter().map(|b| i64::from(*b)).collect();
        return Ok(unpack_4bit(dtype, &bytes, count));
    }
    Ok(Buffer::from_le_bytes(dtype, bytes).expect("length checked against the element width"))
}

/// `count` 4-bit integers from bytes holding two each (low nibble first), sign-extended for
/// `i4`.
fn unpack_4bit(dtype: DType, bytes: &[i64], count: usize) -> Buffer {
    let values = (0..count)
        .map(|i| {
            let nibble = (bytes[i / 2] >> (4 * (i % 2))) & 0xf;
            if dtype == DType::I4 && nibble >= 8 {
                nibble - 16
            } else {
                nibble
            }
        })
        .collect();
    Buffer::Int(dtype, values)
}

/// The typed repeated fields (`float_data`, …). ONNX stores bools, the integers narrower than
/// 32 bits and the bit patterns of narrow floats in `int32_data` (4-bit integers packed two
/// per entry), and u32/u64 in `uint64_data`.
fn typed_fields(
    t: &TensorProto,
    dtype: DType,
    count: usize,
    name: &str,
) -> Result<Buffer, OnnxError> {
    let ints = |v: &[i32]| v.iter().map(|x| i64::from(*x)).collect::<Vec<i64>>();
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
        DType::U32 | DType::U64 => (
            t.uint64_data.len(),
            "uint64_data",
            Buffer::Int(dtype, t.uint64_data.iter().map(|v| *v as i64).collect()),
        ),
        DType::I4 | DType::U4 => {
            let len = t.int32_data.len();
            if len != count.div_ceil(2) {
                return Err(OnnxError::tensor(
                    name,
                    format!(
                        "its dims {:?} need {count} packed 4-bit element(s) but int32_data has {len} entries",
                        t.dims
                    ),
                ));
            }
            return Ok(unpack_4bit(dtype, &ints(&t.int32_data), count));
        }
        d if d.is_narrow_float() => (
            t.int32_data.len(),
            "int32_data",
            Buffer::Narrow(d, t.int32_data.iter().map(|v| *v as u16).collect()),
        ),
        d => (
            t.int32_data.len(),
            "int32_data",
            Buffer::Int(d, ints(&t.int32_data)),
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
