//! The data-centric IR: data descriptors, dataflow graphs of access / library / map / tasklet
//! nodes connected by memlets, symbolic integer expressions and the invariants that hold them
//! together.
//!
//! Architecture invariant: this module knows nothing about ONNX, operators' semantics, C or
//! transformations. Everything else builds on it.

pub mod build;
pub mod constant;
pub mod data;
pub mod decls;
pub mod dot;
pub mod graph;
pub mod node;
pub mod rewrite;
pub mod scalar;
pub mod subset;
pub mod sym;
pub mod tensor;
pub mod texpr;
pub mod text;
pub mod validate;

pub use constant::Constant;
pub use data::{DType, DataDesc, DataKind, Storage};
pub use decls::{Constants, Decls, Names, Shared};
pub use graph::{Graph, Program};
pub use node::{
    Attr, LibraryNode, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Schedule, Tasklet, Wcr,
    CALL_WORK,
};
pub use subset::{Dim, Range, Subset};
pub use sym::{SymEnv, SymError, SymExpr};
pub use tensor::{Buffer, Tensor};
pub use texpr::{BinOp, Precision, TExpr, UnOp};
