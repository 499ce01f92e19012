//! ConstantFolding: evaluate a library node whose inputs are all constants, once, at compile
//! time.
//!
//! ```text
//! before:  W: const f32[4, 3]      Wt = Transpose(W)      Y = MatMul(X, Wt)
//! after:   Wt: const f32[3, 4] (= Wᵀ, computed now)       Y = MatMul(X, Wt)
//! ```
//! The value comes from the operator's reference `eval`, the same oracle every numerics check
//! uses, so folding cannot change results. The node disappears, and so do constants that only
//! it read. Exporters leave such subgraphs behind (weight transposes, shape arithmetic); folding
//! them removes work from every run.

use super::opgraph::{constant, containers, library_nodes, op_node, prune, shown, OpNode};
use super::{refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{DataKind, NodeId, Program, Tensor};
use crate::ops::{lookup, Operator};

pub struct ConstantFolding;

/// A foldable node: the node, its operator and the values of its inputs by position.
type Foldable<'p> = (OpNode, &'static dyn Operator, Vec<Option<&'p Tensor>>);

impl ConstantFolding {
    /// The node, its operator and its constant input values, or why it cannot be folded.
    fn preconditions<'p>(&self, p: &'p Program, id: NodeId) -> Result<Foldable<'p>, NotApplicable> {
        let (_, node) = op_node(self, p, id, &[])?;
        let op = lookup(&node.lib.op)
            .ok_or_else(|| refuse(self, id, format!("unknown operator `{}`", node.lib.op)))?;
        let mut values = Vec::with_capacity(node.inputs.len());
        for (i, port) in node.inputs.iter().enumerate() {
            values.push(match port {
                Some((_, name)) => Some(
                    constant(p, name, &format!("input {i}")).map_err(|r| refuse(self, id, r))?,
                ),
                None => None,
            });
        }
        for (_, name) in node.outputs.iter().flatten() {
            let kind = p.data[name].kind;
            if kind != DataKind::Transient {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "output `{name}` is {}; only transients can become constants",
                        kind.name()
                    ),
                ));
            }
        }
        Ok((node, op, values))
    }

    /// The operator's values on the constant inputs, checked against the declared outputs.
    fn evaluate(&self, p: &Program, id: NodeId) -> Result<Vec<(String, Tensor)>, NotApplicable> {
        let (node, op, values) = self.preconditions(p, id)?;
        let outs = op
            .eval(&node.lib, &values)
            .map_err(|e| refuse(self, id, format!("evaluating it failed: {e}")))?;
        let mut folded = Vec::new();
        for (i, port) in node.outputs.iter().enumerate() {
            let Some((_, name)) = port else { continue };
            let desc = &p.data[name];
            let value = outs
                .get(i)
                .ok_or_else(|| refuse(self, id, format!("evaluation produced no output {i}")))?;
            if desc.static_shape().as_deref() != Some(value.shape.as_slice())
                || desc.dtype != value.dtype()
            {
                return Err(refuse(
                    self,
                    id,
                    format!(
                        "output `{name}` is declared {} {} but evaluates to {} {:?}",
                        desc.dtype,
                        shown(&desc.shape),
                        value.dtype(),
                        value.shape
                    ),
                ));
            }
            folded.push((name.clone(), value.clone()));
        }
        Ok(folded)
    }
}

impl Transformation for ConstantFolding {
    fn name(&self) -> &'static str {
        "ConstantFolding"
    }

    fn level(&self) -> Level {
        Level::Operator
    }

    fn doc(&self) -> &'static str {
        "evaluate a library node whose inputs are all constants; its outputs become constants"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        library_nodes(p, &[])
            .into_iter()
            .filter(|site| self.preconditions(p, site[0]).is_ok())
            .collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
        match site {
            [id] => self.preconditions(p, *id).map(|_| ()),
            _ => Err(refuse(
                self,
                site.first().copied().unwrap_or(NodeId(0)),
                "a site is one library node",
            )),
        }
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let id = site[0];
        let folded = self.evaluate(p, id)?;
        let (_, node) = op_node(self, p, id, &[])?;
        let names = containers(&[&node]);
        let edit = p.edit(id).ok_or_else(|| refuse(self, id, "no such node"))?;
        edit.graph.g.remove_node(node.idx);
        for (name, value) in folded {
            if let Some(desc) = p.data.get_mut(&name) {
                desc.kind = DataKind::Constant;
            }
            p.constants.insert(name, value);
        }
        prune(p, &names);
        Ok(vec![id])
    }
}
