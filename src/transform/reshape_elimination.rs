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

use super::opgraph::{
    add_access, containers, declare_constant, feeds, forwardable, op_in, op_node, pairs, prune,
    redirect_readers, set_inputs, set_op, shown, OpNode, Port,
};
use super::{refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{Attr, LibraryNode, NodeId, Program, Tensor};
use std::collections::BTreeMap;

pub struct ReshapeElimination;

/// The operators that only reinterpret the shape of row-major data.
const SHAPE_OPS: [&str; 4] = ["Reshape", "Flatten", "Squeeze", "Unsqueeze"];

/// What a checked site rewrites.
enum Plan {
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
    fn plan(&self, p: &Program, site: &[NodeId]) -> Result<Plan, NotApplicable> {
        let data_input = |node: &OpNode| {
            node.input(0)
                .cloned()
                .ok_or_else(|| refuse(self, node.id, "the data input is not wired"))
        };
        match site {
            [id] => {
                let (g, node) = op_node(self, p, *id, &SHAPE_OPS)?;
                let source = data_input(&node)?;
                let result = super::opgraph::only_output(self, &node)?.clone();
                forwardable(self, p, g, &source, &result, *id)?;
                Ok(Plan::Identity {
                    node,
                    source,
                    result,
                })
            }
            [a, b] => {
                let (g, first) = op_node(self, p, *a, &SHAPE_OPS)?;
                let second = op_in(self, g, *b, &SHAPE_OPS)?;
                let (link, pos) = feeds(self, p, &first, &second)?;
                if pos != 0 {
                    return Err(refuse(
                        self,
                        *b,
                        format!("reads `{}` as input {pos}, not as its data", link.1),
                    ));
                }
                let source = data_input(&first)?;
                let out = super::opgraph::only_output(self, &second)?;
                let desc = &p.data[&out.1];
                let shape = desc.static_shape().ok_or_else(|| {
                    refuse(
                        self,
                        *b,
                        format!(
                            "output `{}` has the symbolic shape {}; a fused Reshape needs a \
                             constant shape",
                            out.1,
                            shown(&desc.shape)
                        ),
                    )
                })?;
                Ok(Plan::Chain {
                    first,
                    second,
                    source,
                    shape,
                })
            }
            _ => Err(refuse(
                self,
                site.first().copied().unwrap_or(NodeId(0)),
                "a site is one shape operator, or two consecutive ones",
            )),
        }
    }
}

impl Transformation for ReshapeElimination {
    fn name(&self) -> &'static str {
        "ReshapeElimination"
    }

    fn level(&self) -> Level {
        Level::Operator
    }

    fn doc(&self) -> &'static str {
        "remove a reshape to the same shape; fuse two consecutive shape-only operators into one Reshape"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut v = super::opgraph::library_nodes(p, &SHAPE_OPS);
        v.extend(pairs(p, &SHAPE_OPS, &SHAPE_OPS));
        v
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
        self.plan(p, site).map(|_| ())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let plan = self.plan(p, site)?;
        let anchor = site[site.len() - 1];
        match plan {
            Plan::Identity {
                node,
                source,
                result,
            } => {
                let edit = p
                    .edit(node.id)
                    .ok_or_else(|| refuse(self, node.id, "gone"))?;
                redirect_readers(edit.graph, &result, &source);
                edit.graph.g.remove_node(node.idx);
                prune(p, &containers(&[&node]));
            }
            Plan::Chain {
                first,
                second,
                source,
                shape,
            } => {
                let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                let spec = Tensor::i64(vec![dims.len()], dims);
                let spec_name = declare_constant(p, &format!("{}_shape", source.1), spec);
                let mut edit = p
                    .edit(second.id)
                    .ok_or_else(|| refuse(self, anchor, "gone"))?;
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
                edit.graph.g.remove_node(first.idx);
                prune(p, &containers(&[&first, &second]));
            }
        }
        Ok(site.to_vec())
    }
}
