//! Control flow at import: dmove's IR has no data-dependent control flow, so `If`, `Loop` and
//! `Scan` import only when what decides them is known at import, and then disappear.
//!
//! - `If` whose condition is a constant (an initializer, a `Constant`, or a value the importer
//!   folds, such as `Equal(Shape(x)[0], 1)` once `x`'s shape is bound) becomes its taken
//!   branch, inlined in place; its outputs are the branch's outputs.
//! - `Loop` with a known trip count and condition, and `Scan` over inputs whose sequence axis
//!   has a known length, are unrolled (see `unroll`).
//!
//! Otherwise the node is refused with [`OnnxError::ControlFlow`], naming what is unknown and,
//! when it depends on unbound input dimensions, the `--dim` flags that would make it known.

use super::Importer;
use crate::ir::build::ScopeBuilder;
use crate::ir::Tensor;
use crate::onnx::attrs::convert_with_graphs;
use crate::onnx::error::OnnxError;
use crate::onnx::opsets::resolve;
use crate::onnx::proto::{GraphProto, NodeProto};
use std::collections::BTreeMap;

/// The control-flow operators, which the importer inlines itself.
pub const CONTROL_FLOW: [&str; 3] = ["If", "Loop", "Scan"];

/// The most body nodes unrolling may import in one model, so that a loop of a million
/// iterations is refused instead of exhausting memory.
pub const UNROLL_LIMIT: usize = 4096;

/// A control-flow node's refusal.
pub(super) fn refusal(
    label: &str,
    op: &str,
    reason: impl Into<String>,
    hint: impl Into<String>,
) -> OnnxError {
    OnnxError::ControlFlow {
        node: label.to_string(),
        op: op.to_string(),
        reason: reason.into(),
        hint: hint.into(),
    }
}

/// The hint for a node whose form (inputs, outputs, attributes) breaks the ONNX definition.
pub(super) const MALFORMED: &str = "the node does not follow the ONNX definition of its operator";

impl Importer<'_> {
    /// Imports control-flow node `node` (an `If`, `Loop` or `Scan`) by inlining its subgraphs.
    pub(super) fn control(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let op = node.op_type.as_deref().unwrap_or_default();
        let schema = resolve(op, self.opset).map_err(|refusal| OnnxError::OperatorVersions {
            nodes: vec![(label.to_string(), refusal)],
        })?;
        let (attrs, graphs) = convert_with_graphs(node, label, schema)?;
        let graph = |name: &str| {
            graphs.get(name).copied().ok_or_else(|| {
                refusal(
                    label,
                    op,
                    format!("graph attribute `{name}` is missing"),
                    MALFORMED,
                )
            })
        };
        match op {
            "If" => self.if_node(
                index,
                node,
                label,
                graph("then_branch")?,
                graph("else_branch")?,
                b,
            ),
            "Loop" => self.loop_node(index, node, label, graph("body")?, b),
            _ => self.scan_node(index, node, label, &attrs, graph("body")?, b),
        }
    }

    /// `If`: the taken branch, inlined under `<label>/then` or `<label>/else`.
    fn if_node(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        then_branch: &GraphProto,
        else_branch: &GraphProto,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let [cond] = node.input.as_slice() else {
            let reason = format!(
                "If has one input, the condition; this node has {}",
                node.input.len()
            );
            return Err(refusal(label, "If", reason, MALFORMED));
        };
        let taken = self
            .known(index, label, "If", "the condition", cond)?
            .get_f64(0)
            != 0.0;
        let (branch, scope) = match taken {
            true => (then_branch, format!("{label}/then")),
            false => (else_branch, format!("{label}/else")),
        };
        if !branch.input.is_empty() || branch.output.len() != node.output.len() {
            let reason = format!(
                "the taken branch has {} input(s) and {} output(s); it must have none and {}, as \
                 many as the node",
                branch.input.len(),
                branch.output.len(),
                node.output.len()
            );
            return Err(refusal(label, "If", reason, MALFORMED));
        }
        let bindings = self.inline_initializers(&scope, branch, b)?;
        let results = self.inline(index, &scope, branch, &bindings, b)?;
        for (dst, src) in node.output.iter().zip(&results) {
            if !dst.is_empty() {
                self.copy_into(index, b, label, src, dst)?;
            }
        }
        Ok(())
    }

    /// The one-element value of `tensor` (what decides node `label`'s control flow, described
    /// by `what`), which must be known at import.
    pub(super) fn known(
        &self,
        index: usize,
        label: &str,
        op: &str,
        what: &str,
        tensor: &str,
    ) -> Result<Tensor, OnnxError> {
        self.resolve_input(index, label, tensor)?;
        let container = self.resolve(tensor);
        if let Some(value) = self.constants.get(container) {
            if value.len() != 1 {
                let reason = format!("{what} (`{tensor}`) has {} elements, not one", value.len());
                return Err(refusal(label, op, reason, MALFORMED));
            }
            return Ok(value.tensor().clone());
        }
        Err(match self.unbound_values.get(container) {
            Some(symbols) if !symbols.is_empty() => {
                let names: Vec<String> = symbols.iter().map(|s| format!("`{s}`")).collect();
                let flags: Vec<String> =
                    symbols.iter().map(|s| format!("--dim {s}=VALUE")).collect();
                refusal(
                    label,
                    op,
                    format!(
                        "{what} (`{tensor}`) is not known at import: it depends on the unbound \
                         dimension(s) {}",
                        names.join(", ")
                    ),
                    format!(
                        "bind them with `{}` (or give the input's shape with `--shape`), so {what} \
                         folds to a constant at import",
                        flags.join(" ")
                    ),
                )
            }
            _ => refusal(
                label,
                op,
                format!("{what} (`{tensor}`) is computed from input values at run time"),
                "dmove has no data-dependent control flow: a condition or trip count must be a \
                 constant, or computed from input shapes (bound with `--dim`/`--shape`)",
            ),
        })
    }

    /// Charges `iterations` unrolled iterations of a body of `body_nodes` nodes against
    /// [`UNROLL_LIMIT`], refusing node `label` when they would exceed it.
    pub(super) fn charge_unrolled(
        &mut self,
        label: &str,
        op: &str,
        iterations: u64,
        body_nodes: usize,
    ) -> Result<(), OnnxError> {
        // An empty body still costs its copies and stacking.
        let per_iteration = u64::try_from(body_nodes.max(1)).unwrap_or(u64::MAX);
        let total = iterations
            .saturating_mul(per_iteration)
            .saturating_add(u64::try_from(self.unrolled).unwrap_or(u64::MAX));
        match usize::try_from(total) {
            Ok(total) if total <= UNROLL_LIMIT => {
                self.unrolled = total;
                Ok(())
            }
            _ => Err(refusal(
                label,
                op,
                format!(
                    "unrolling {iterations} iteration(s) of its {body_nodes}-node body would bring \
                     the unrolled body nodes of the model to {total}, more than the limit of \
                     {UNROLL_LIMIT}"
                ),
                "dmove unrolls loops at import; a loop this long cannot be imported",
            )),
        }
    }

    /// The container of every name in `names` (each must be defined), in order.
    pub(super) fn containers(
        &self,
        index: usize,
        label: &str,
        op: &str,
        names: &[String],
    ) -> Result<Vec<String>, OnnxError> {
        names
            .iter()
            .map(|name| {
                if name.is_empty() {
                    let reason = "a loop-carried or scanned input is empty".to_string();
                    return Err(refusal(label, op, reason, MALFORMED));
                }
                self.resolve_input(index, label, name)?;
                Ok(self.resolve(name).to_string())
            })
            .collect()
    }
}

/// The names of `graph`'s inputs, each non-empty.
pub(super) fn input_names(
    graph: &GraphProto,
    label: &str,
    op: &str,
) -> Result<Vec<String>, OnnxError> {
    (graph.input.iter().enumerate())
        .map(|(k, v)| match v.name.as_deref() {
            Some(n) if !n.is_empty() => Ok(n.to_string()),
            _ => Err(refusal(
                label,
                op,
                format!("body input #{k} has no name"),
                MALFORMED,
            )),
        })
        .collect()
}

/// Reads an `ints` attribute of length `len`, defaulting to zeros.
pub(super) fn ints_or_zeros(
    attrs: &BTreeMap<String, crate::ir::Attr>,
    name: &str,
    len: usize,
    label: &str,
) -> Result<Vec<i64>, OnnxError> {
    match attrs.get(name) {
        None => Ok(vec![0; len]),
        Some(crate::ir::Attr::Ints(v)) if v.len() == len => Ok(v.clone()),
        Some(other) => Err(refusal(
            label,
            "Scan",
            format!("attribute `{name}` must list {len} value(s), it is {other:?}"),
            MALFORMED,
        )),
    }
}
