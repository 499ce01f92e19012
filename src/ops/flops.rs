//! Floating-point work of a program at the operator level.

use super::{lookup, TensorType};
use crate::ir::{LibraryNode, NodeKind, Program};

/// Sum of the operators' FLOP counts over every library node (nodes with unknown operators or
/// symbolic shapes count zero).
pub fn program_flops(p: &Program) -> u64 {
    let mut total = 0u64;
    let g = &p.graph;
    for idx in g.ordered() {
        let NodeKind::Library(lib) = &g.node(idx).kind else {
            continue;
        };
        let Some(op) = lookup(&lib.op) else { continue };
        let ty = |data: &str| {
            p.data
                .get(data)
                .map(|d| TensorType::new(d.dtype, d.shape.clone()))
        };
        let mut inputs: Vec<Option<TensorType>> = Vec::new();
        for e in g.in_edges(idx) {
            if let Some(pos) = e
                .memlet
                .dst_conn
                .as_deref()
                .and_then(|c| LibraryNode::connector_index(c, "in"))
            {
                if inputs.len() <= pos {
                    inputs.resize(pos + 1, None);
                }
                inputs[pos] = ty(&e.memlet.data);
            }
        }
        let outputs: Vec<TensorType> = g
            .out_edges(idx)
            .iter()
            .filter_map(|e| ty(&e.memlet.data))
            .collect();
        total = total.saturating_add(op.flops(lib, &inputs, &outputs));
    }
    total
}
