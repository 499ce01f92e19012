//! ReductionFusion and LayoutTransform on the real expansions of single operators: each applied
//! (checked by the engine's numerics and again here against values computed independently),
//! refused with the expected reason on the expected node (program untouched), and compiled to C
//! and compared with the interpreter.

mod batch_index;
mod layout;
mod online;
mod reduction;
mod tile_fusions;
mod welford;

use dmove::check::single_op_program;
use dmove::ir::{Attr, DType, NodeId, NodeKind, Program, SymExpr};
use dmove::ops::expand::expand_all;
use dmove::ops::TensorType;

pub use crate::steps::{
    apply_checked, assert_values, compiled_matches_interpreter, refused, rejected, run, values,
};

/// The expansion of one operator applied to f32 inputs of the given shapes.
pub fn expanded(op: &str, attrs: &[(&str, Attr)], shapes: &[&[i64]]) -> Program {
    let attrs = attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let inputs: Vec<Option<TensorType>> = shapes
        .iter()
        .map(|s| {
            let dims = s.iter().map(|&d| SymExpr::Int(d)).collect();
            Some(TensorType::new(DType::F32, dims))
        })
        .collect();
    let mut p = single_op_program(op, attrs, &inputs, &vec![None; shapes.len()])
        .expect("the operator applies");
    expand_all(&mut p).expect("the operator expands");
    p
}

/// Ids of the maps directly in the top-level graph, in program order, with their labels.
pub fn top_maps(p: &Program) -> Vec<(NodeId, String)> {
    p.graph
        .ordered()
        .into_iter()
        .map(|i| p.graph.node(i))
        .filter(|n| matches!(n.kind, NodeKind::Map(_)))
        .map(|n| (n.id, n.label.clone()))
        .collect()
}
