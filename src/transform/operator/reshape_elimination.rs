//! ReshapeElimination: remove shape-only operators that change nothing, and fuse consecutive
//! ones into a single Reshape.
//!
//! ```text
//! identity (site = [r]):
//!   before:  T = Reshape(X, [2, 3])    Y = Relu(T)        X: f32[2, 3]
//!   after:   Y = Relu(X)
//! chain (site = [r1, r2]):
//!   before:  T = Flatten(X)            U = Unsqueeze(T, [0])     X: f32[2, 3, 4]
//!   after:   U = Reshape(X, [1, 2, 12])                          (keeps r2's id)
//! ```
//! Reshape, Flatten, Squeeze and Unsqueeze only reinterpret row-major data, so a chain of them is
//! one Reshape to the last shape, and a reshape to the same shape is a copy. Each one removed is
//! a full copy of the tensor saved. Repeated application collapses a chain and then removes it if
//! it was an identity.

use crate::ir::{Attr, LibraryNode, NodeId, Program, Tensor};
use crate::transform::support::opgraph::{
    add_access, containers, declare_constant, declared, feeds, forwardable_checked, library_nodes,
    only_output, op_in, op_node, pairs, prune, redirect_readers, set_inputs, set_op, shown, OpNode,
    Port,
};
use crate::transform::{
    refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use std::collections::BTreeMap;

pub struct ReshapeElimination;

/// The operators that only reinterpret the shape of row-major data.
const SHAPE_OPS: &[&str] = &["Reshape", "Flatten", "Squeeze", "Unsqueeze"];

const SCHEMA: Schema = Schema {
    name: "ReshapeElimination",
    level: Level::Operator,
    doc: "remove a reshape to the same shape; fuse two consecutive shape-only operators into one Reshape",
    site: &[
        Role::new(
            "first",
            NodeClass::Library { ops: SHAPE_OPS },
            "alone: the reshape to remove (an identity); with `second`: the one feeding it",
        ),
        Role::optional(
            "second",
            NodeClass::Library { ops: SHAPE_OPS },
            "the shape operator reading `first`; it becomes the fused Reshape (keeping its id)",
        ),
    ],
    params: &[],
};

/// What a checked site rewrites.
enum Rewrite {
    /// The reshape at this node is an identity: readers of its output read its input.
    Identity {
        node: OpNode,
        source: Port,
        result: Port,
    },
    /// `first` feeds `second`; `second` becomes one Reshape of `source` to `shape`.
    Chain {
        first: OpNode,
        second: OpNode,
        source: Port,
        shape: Vec<usize>,
    },
}

impl ReshapeElimination {
    fn data_input(&self, node: &OpNode) -> Result<Port, NotApplicable> {
        node.input(0)
            .cloned()
            .ok_or_else(|| refuse(self, node.id, "the data input is not wired"))
    }

    /// The identity site `[id]`: its output may be replaced by its input.
    fn identity(
        &self,
        p: &Program,
        id: NodeId,
        legality: &mut Legality,
    ) -> Result<Rewrite, NotApplicable> {
        let (g, node) = op_node(self, p, id, SHAPE_OPS)?;
        let source = self.data_input(&node)?;
        let result = only_output(self, &node)?.clone();
        forwardable_checked(self, p, g, &source, &result, id, legality)?;
        Ok(Rewrite::Identity {
            node,
            source,
            result,
        })
    }

    /// The chain site `[a, b]`: `b` reads `a` and has a constant output shape.
    fn chain(
        &self,
        p: &Program,
        a: NodeId,
        b: NodeId,
        legality: &mut Legality,
    ) -> Result<Rewrite, NotApplicable> {
        let (g, first) = op_node(self, p, a, SHAPE_OPS)?;
        let second = op_in(self, g, b, SHAPE_OPS)?;
        let (link, pos) = feeds(self, p, &first, &second, legality)?;
        if pos != 0 {
            return Err(refuse(
                self,
                b,
                format!("reads `{}` as input {pos}, not as its data", link.1),
            ));
        }
        let source = self.data_input(&first)?;
        let out = only_output(self, &second)?;
        let desc = declared(self, p, &out.1, b)?;
        let shape = desc.static_shape().ok_or_else(|| {
            refuse(
                self,
                b,
                format!(
                    "output `{}` has the symbolic shape {}; a fused Reshape needs a constant shape",
                    out.1,
                    shown(&desc.shape)
                ),
            )
        })?;
        Ok(Rewrite::Chain {
            first,
            second,
            source,
            shape,
        })
    }
}

impl Transformation for ReshapeElimination {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut v = library_nodes(p, SHAPE_OPS);
        v.extend(pairs(p, SHAPE_OPS, SHAPE_OPS));
        v
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let rewrite = match site.get(1) {
            None => self.identity(p, site[0], legality)?,
            Some(&b) => self.chain(p, site[0], b, legality)?,
        };
        let touched = site.to_vec();
        Ok(Plan::new(move |p| {
            match rewrite {
                Rewrite::Identity {
                    node,
                    source,
                    result,
                } => remove_identity(p, node, &source, &result)?,
                Rewrite::Chain {
                    first,
                    second,
                    source,
                    shape,
                } => fuse_chain(p, first, second, source, &shape)?,
            }
            Ok(touched)
        }))
    }
}

/// Readers of `result` read `source`; `node` goes.
fn remove_identity(
    p: &mut Program,
    node: OpNode,
    source: &Port,
    result: &Port,
) -> Result<(), NotApplicable> {
    let edit = p
        .edit(node.id)
        .ok_or_else(|| refuse(&ReshapeElimination, node.id, "gone"))?;
    redirect_readers(edit.graph, result, source);
    edit.graph.remove_node(node.idx);
    prune(p, &containers(&[&node]));
    Ok(())
}

/// `second` becomes one Reshape of `source` to `shape`; `first` goes.
fn fuse_chain(
    p: &mut Program,
    first: OpNode,
    second: OpNode,
    source: Port,
    shape: &[usize],
) -> Result<(), NotApplicable> {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let spec = Tensor::i64(vec![dims.len()], dims);
    let spec_name = declare_constant(p, &format!("{}_shape", source.1), spec);
    let mut edit = p
        .edit(second.id)
        .ok_or_else(|| refuse(&ReshapeElimination, second.id, "gone"))?;
    let spec_port = add_access(&mut edit, &spec_name);
    set_inputs(
        edit.graph,
        edit.data,
        second.idx,
        &[Some(source), Some(spec_port)],
    );
    // A zero in the spec would mean "copy that input dimension" unless allowzero.
    let mut attrs = BTreeMap::new();
    if shape.contains(&0) {
        attrs.insert("allowzero".to_string(), Attr::Int(1));
    }
    set_op(
        edit.graph,
        second.idx,
        LibraryNode {
            op: "Reshape".into(),
            attrs,
        },
    );
    edit.graph.remove_node(first.idx);
    prune(p, &containers(&[&first, &second]));
    Ok(())
}
