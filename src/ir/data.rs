//! Data descriptors: what a container holds, how big it is and where it lives.

use super::sym::SymExpr;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Element types. Tasklets compute in `f32` or `f64` depending on the containers they touch
/// (see [`super::texpr::Precision`]); `i64` and `bool` carry indices, shapes and masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    F32,
    F64,
    I64,
    I32,
    Bool,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F32, DType::F64, DType::I64, DType::I32, DType::Bool];

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::Bool => "bool",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
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
