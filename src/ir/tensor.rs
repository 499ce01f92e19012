//! Concrete tensors: constant data in programs and values in the interpreter.

use super::data::DType;
use serde::{Deserialize, Serialize};

/// Element storage, one variant per family of dtypes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
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
        }
    }

    pub fn len(&self) -> usize {
        match &self.data {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::Bool(v) => v.len(),
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
        }
    }

    /// Stores `x` at element `i`, converting to the tensor's dtype.
    pub fn set_f64(&mut self, i: usize, x: f64) {
        match &mut self.data {
            Buffer::F32(v) => v[i] = x as f32,
            Buffer::F64(v) => v[i] = x,
            Buffer::I64(v) => v[i] = x as i64,
            Buffer::I32(v) => v[i] = x as i32,
            Buffer::Bool(v) => v[i] = x != 0.0,
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
        match &self.data {
            Buffer::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buffer::Bool(v) => v.iter().map(|x| u8::from(*x)).collect(),
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
