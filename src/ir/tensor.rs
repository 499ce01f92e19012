//! Concrete tensors: constant data in programs and values in the interpreter.

use super::data::DType;
use super::scalar::{self, FloatFormat};
use serde::{Deserialize, Serialize};

/// Element storage: a native vector for the common types, and two shared variants for the rest
/// (one for exact integers, one for bit patterns of narrow floats) so that code matching on
/// buffers stays small while every dtype is exact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
    /// The other integer types (i8, u8, i16, u16, u32, u64, i4, u4): each value within the
    /// type's range (u64 as its two's-complement `i64`, see [`scalar::int_value`]).
    Int(DType, Vec<i64>),
    /// Narrow float formats (f16, bf16, float8) as their bit patterns.
    Narrow(DType, Vec<u16>),
}

impl Buffer {
    /// Elements of `dtype` from their little-endian bytes (the C side file, ONNX `raw_data`,
    /// hex blobs), or `None` when `bytes` is not a whole number of elements. Booleans are any
    /// non-zero byte.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<Buffer> {
        fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
            bytes
                .chunks_exact(N)
                .map(|c| c.try_into().expect("chunks_exact yields N bytes"))
        }
        if !bytes.len().is_multiple_of(dtype.size_bytes()) {
            return None;
        }
        let int = |v: Vec<i64>| Buffer::Int(dtype, v);
        Some(match dtype {
            DType::F32 => Buffer::F32(words(bytes).map(f32::from_le_bytes).collect()),
            DType::F64 => Buffer::F64(words(bytes).map(f64::from_le_bytes).collect()),
            DType::I64 => Buffer::I64(words(bytes).map(i64::from_le_bytes).collect()),
            DType::I32 => Buffer::I32(words(bytes).map(i32::from_le_bytes).collect()),
            DType::Bool => Buffer::Bool(bytes.iter().map(|b| *b != 0).collect()),
            DType::I8 | DType::I4 => int(bytes.iter().map(|b| i64::from(*b as i8)).collect()),
            DType::U8 | DType::U4 => int(bytes.iter().map(|b| i64::from(*b)).collect()),
            DType::I16 => int(words(bytes).map(|w| i16::from_le_bytes(w).into()).collect()),
            DType::U16 => int(words(bytes).map(|w| u16::from_le_bytes(w).into()).collect()),
            DType::U32 => int(words(bytes).map(|w| u32::from_le_bytes(w).into()).collect()),
            DType::U64 => int(words(bytes).map(i64::from_le_bytes).collect()),
            DType::F16 | DType::BF16 => {
                Buffer::Narrow(dtype, words(bytes).map(u16::from_le_bytes).collect())
            }
            _ => Buffer::Narrow(dtype, bytes.iter().map(|b| u16::from(*b)).collect()),
        })
    }
}

/// A dense row-major tensor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Buffer,
}

impl Tensor {
    pub fn f32(shape: Vec<usize>, data: Vec<f32>) -> Tensor {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        Tensor {
            shape,
            data: Buffer::F32(data),
        }
    }

    pub fn i64(shape: Vec<usize>, data: Vec<i64>) -> Tensor {
        Tensor {
            shape,
            data: Buffer::I64(data),
        }
    }

    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Tensor {
        let n = shape.iter().product();
        let data = match dtype {
            DType::F32 => Buffer::F32(vec![0.0; n]),
            DType::F64 => Buffer::F64(vec![0.0; n]),
            DType::I64 => Buffer::I64(vec![0; n]),
            DType::I32 => Buffer::I32(vec![0; n]),
            DType::Bool => Buffer::Bool(vec![false; n]),
            // +0 is the all-zero pattern in every narrow float format.
            d if d.is_narrow_float() => Buffer::Narrow(d, vec![0; n]),
            d => Buffer::Int(d, vec![0; n]),
        };
        Tensor { shape, data }
    }

    pub fn dtype(&self) -> DType {
        match self.data {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::I64(_) => DType::I64,
            Buffer::I32(_) => DType::I32,
            Buffer::Bool(_) => DType::Bool,
            Buffer::Int(d, _) | Buffer::Narrow(d, _) => d,
        }
    }

    pub fn len(&self) -> usize {
        match &self.data {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I64(v) | Buffer::Int(_, v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::Bool(v) => v.len(),
            Buffer::Narrow(_, v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` (row-major) converted to `f64`.
    pub fn get_f64(&self, i: usize) -> f64 {
        match &self.data {
            Buffer::F32(v) => f64::from(v[i]),
            Buffer::F64(v) => v[i],
            Buffer::I64(v) => v[i] as f64,
            Buffer::I32(v) => f64::from(v[i]),
            Buffer::Bool(v) => f64::from(u8::from(v[i])),
            Buffer::Int(d, v) => scalar::int_value(*d, v[i]),
            Buffer::Narrow(d, v) => f64::from(narrow_format(*d).decode(v[i])),
        }
    }

    /// Stores `x` at element `i`, converting to the tensor's dtype by the rules of
    /// [`scalar`] (integers wrap, narrow floats round to nearest-even).
    pub fn set_f64(&mut self, i: usize, x: f64) {
        match &mut self.data {
            Buffer::F32(v) => v[i] = x as f32,
            Buffer::F64(v) => v[i] = x,
            Buffer::I64(v) => v[i] = x as i64,
            Buffer::I32(v) => v[i] = scalar::to_int(DType::I32, x) as i32,
            Buffer::Bool(v) => v[i] = x != 0.0,
            Buffer::Int(d, v) => v[i] = scalar::to_int(*d, x),
            Buffer::Narrow(d, v) => v[i] = narrow_format(*d).encode(x as f32),
        }
    }

    /// All elements as `f64` (for comparisons and reporting).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.get_f64(i)).collect()
    }

    /// A tensor of `dtype` built from `f64` values.
    pub fn from_f64(dtype: DType, shape: Vec<usize>, values: &[f64]) -> Tensor {
        let mut t = Tensor::zeros(dtype, shape);
        for (i, x) in values.iter().enumerate() {
            t.set_f64(i, *x);
        }
        t
    }

    /// Integer view of the elements (for shape and index tensors).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        match &self.data {
            Buffer::I64(v) => v.clone(),
            Buffer::I32(v) => v.iter().map(|x| i64::from(*x)).collect(),
            _ => self.to_f64_vec().iter().map(|x| *x as i64).collect(),
        }
    }

    /// Little-endian bytes of the elements (the side-file format of the C backend).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let width = self.dtype().size_bytes();
        match &self.data {
            Buffer::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::Bool(v) => v.iter().map(|x| u8::from(*x)).collect(),
            // Two's complement truncated to the element width is the stored pattern for
            // signed and unsigned values alike.
            Buffer::Int(_, v) => v
                .iter()
                .flat_map(|x| x.to_le_bytes()[..width].to_vec())
                .collect(),
            Buffer::Narrow(_, v) => v
                .iter()
                .flat_map(|x| x.to_le_bytes()[..width].to_vec())
                .collect(),
        }
    }

    /// Row-major strides in elements.
    pub fn strides(&self) -> Vec<usize> {
        row_major_strides(&self.shape)
    }
}

/// Row-major strides in elements for `shape`.
pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The format of a narrow-float buffer's dtype (the buffer only ever holds such dtypes).
fn narrow_format(d: DType) -> FloatFormat {
    FloatFormat::of(d).expect("Buffer::Narrow holds a narrow float dtype")
}
