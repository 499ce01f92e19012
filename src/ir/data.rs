//! Data descriptors: what a container holds, how big it is and where it lives.

use super::sym::SymExpr;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Element types. Tasklets compute in `f32` or `f64` depending on the containers they touch
/// (see [`super::texpr::Precision`]); `i64` and `bool` carry indices, shapes and masks. The
/// narrow floats (f16, bf16, float8) are storage formats computed in `f32`; how every type
/// stores a value is stated in [`super::scalar`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    F32,
    F64,
    I64,
    I32,
    Bool,
    I8,
    U8,
    I16,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    /// Signed 4-bit integers, one per byte in the IR and in C (packed only in ONNX files).
    I4,
    /// Unsigned 4-bit integers, one per byte like [`DType::I4`].
    U4,
}

impl DType {
    pub const ALL: [DType; 19] = [
        DType::F32,
        DType::F64,
        DType::I64,
        DType::I32,
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::I4,
        DType::U4,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3FN => "f8e4m3fn",
            DType::F8E4M3FNUZ => "f8e4m3fnuz",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E5M2FNUZ => "f8e5m2fnuz",
            DType::I4 => "i4",
            DType::U4 => "u4",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element in memory (4-bit integers take a byte each).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            _ => 1,
        }
    }

    /// Floating-point types, native or narrow storage formats.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64) || self.is_narrow_float()
    }

    /// The storage-only float formats (f16, bf16, float8), kept as bit patterns.
    pub fn is_narrow_float(self) -> bool {
        super::scalar::FloatFormat::of(self).is_some()
    }

    /// Integer types (not `bool`).
    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool
    }

    /// The smallest and largest value of an integer type (`u64`'s maximum rounded to `f64`).
    pub fn int_range(self) -> Option<(f64, f64)> {
        let bits = |b: i32, signed: bool| {
            if signed {
                (-(2f64.powi(b - 1)), 2f64.powi(b - 1) - 1.0)
            } else {
                (0.0, 2f64.powi(b) - 1.0)
            }
        };
        Some(match self {
            DType::I4 => bits(4, true),
            DType::U4 => bits(4, false),
            DType::I8 => bits(8, true),
            DType::U8 => bits(8, false),
            DType::I16 => bits(16, true),
            DType::U16 => bits(16, false),
            DType::I32 => bits(32, true),
            DType::U32 => bits(32, false),
            DType::I64 => bits(64, true),
            DType::U64 => bits(64, false),
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a container lives; the C backend allocates accordingly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Storage {
    /// Heap memory visible to the whole program.
    Global,
    /// A local array inside the innermost map scope that uses it (stack).
    Local,
    /// A scalar the compiler should keep in a register.
    Register,
}

impl Storage {
    pub fn name(self) -> &'static str {
        match self {
            Storage::Global => "global",
            Storage::Local => "local",
            Storage::Register => "register",
        }
    }

    pub fn from_name(name: &str) -> Option<Storage> {
        [Storage::Global, Storage::Local, Storage::Register]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// The role a container plays for the program's caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DataKind {
    /// Supplied by the caller.
    Input,
    /// Returned to the caller.
    Output,
    /// Internal to the program; may be removed or reused by transformations.
    Transient,
    /// Known at compile time (weights, initializers); values live in `Program::constants`.
    Constant,
}

impl DataKind {
    pub fn name(self) -> &'static str {
        match self {
            DataKind::Input => "input",
            DataKind::Output => "output",
            DataKind::Transient => "transient",
            DataKind::Constant => "const",
        }
    }

    pub fn from_name(name: &str) -> Option<DataKind> {
        [
            DataKind::Input,
            DataKind::Output,
            DataKind::Transient,
            DataKind::Constant,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// A data container: a dense row-major array of `shape` elements of `dtype`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataDesc {
    pub dtype: DType,
    pub shape: Vec<SymExpr>,
    pub kind: DataKind,
    pub storage: Storage,
}

impl DataDesc {
    pub fn new(dtype: DType, shape: Vec<SymExpr>, kind: DataKind) -> Self {
        DataDesc {
            dtype,
            shape,
            kind,
            storage: Storage::Global,
        }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (symbolic).
    pub fn elements(&self) -> SymExpr {
        self.shape
            .iter()
            .fold(SymExpr::Int(1), |acc, d| acc * d.clone())
    }

    /// Concrete shape when every dimension is a literal.
    pub fn static_shape(&self) -> Option<Vec<usize>> {
        self.shape
            .iter()
            .map(|d| d.as_int().and_then(|v| usize::try_from(v).ok()))
            .collect()
    }
}
