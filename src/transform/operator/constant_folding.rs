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

use crate::ir::{DataKind, NodeId, Program, Tensor};
use crate::ops::{lookup, Operator};
use crate::transform::support::opgraph::{
    become_constants, constant, containers, declared, library_nodes, op_node, prune, shown, OpNode,
};
use crate::transform::{
    refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};

pub struct ConstantFolding;

const SCHEMA: Schema = Schema {
    name: "ConstantFolding",
    level: Level::Operator,
    doc: "evaluate a library node whose inputs are all constants; its outputs become constants",
    site: &[Role::new(
        "node",
        NodeClass::Library { ops: &[] },
        "the library node to evaluate; every input it reads is a constant",
    )],
    params: &[],
};

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
            let kind = declared(self, p, name, id)?.kind;
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

    /// The operator's values on the constant inputs of `foldable`, checked against the declared
    /// outputs.
    fn evaluate(
        &self,
        p: &Program,
        (node, op, values): &Foldable<'_>,
    ) -> Result<Vec<(String, Tensor)>, NotApplicable> {
        let id = node.id;
        let outs = op
            .eval(&node.lib, values)
            .map_err(|e| refuse(self, id, format!("evaluating it failed: {e}")))?;
        let mut folded = Vec::new();
        for (i, port) in node.outputs.iter().enumerate() {
            let Some((_, name)) = port else { continue };
            let desc = declared(self, p, name, id)?;
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
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        library_nodes(p, &[])
            .into_iter()
            .filter(|site| self.preconditions(p, site[0]).is_ok())
            .collect()
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, .. } = call;
        let id = site[0];
        let foldable = self.preconditions(p, id)?;
        let folded = self.evaluate(p, &foldable)?;
        let node = foldable.0;
        let names = containers(&[&node]);
        Ok(Plan::new(move |p| {
            let edit = p
                .edit(id)
                .ok_or_else(|| refuse(&ConstantFolding, id, "no such node"))?;
            edit.graph.remove_node(node.idx);
            become_constants(p, folded);
            prune(p, &names);
            Ok(vec![id])
        }))
    }
}
