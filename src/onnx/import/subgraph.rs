//! Inlining subgraphs into the graph being imported: an `If` branch once, a `Loop` or `Scan`
//! body once per iteration. Everything a subgraph defines gets a fresh name under the scope
//! it is inlined in (`loop/iter2/sum`), its inputs stand for containers the caller chooses,
//! and its outer references read the enclosing graph's containers; its nodes then go through
//! the ordinary per-node import, so they fold, infer and nest (a `Loop` body containing an
//! `If`) like top-level nodes.
//!
//! Also the few nodes control flow synthesises around inlined bodies (copies into the node's
//! outputs, `Gather` of a scan element, `Unsqueeze`+`Concat` stacking of scan outputs), built
//! as ONNX nodes so they take the same path.

use super::{check_supported, check_versions, Importer, IDENTITY};
use crate::ir::build::ScopeBuilder;
use crate::ir::Tensor;
use crate::onnx::error::OnnxError;
use crate::onnx::graphs::rename_node;
use crate::onnx::load::{check_domains, node_label};
use crate::onnx::proto::{AttributeProto, GraphProto, NodeProto};
use crate::onnx::tensor::decode_tensor;
use crate::onnx::writer::{attribute, AttrValue};
use std::collections::BTreeMap;

/// The opset from which `Unsqueeze` takes its axes as an input instead of an attribute.
const UNSQUEEZE_AXES_INPUT: i64 = 13;

impl Importer<'_> {
    /// Imports `graph`'s nodes under `scope` (a label prefix, also the base of the fresh
    /// names), reading each name in `bindings` (the graph's inputs and initializers) from the
    /// container it maps to, and returns the containers holding the graph's outputs, in order.
    /// `index` is the top-level node being imported.
    pub(super) fn inline(
        &mut self,
        index: usize,
        scope: &str,
        graph: &GraphProto,
        bindings: &BTreeMap<String, String>,
        b: &mut ScopeBuilder,
    ) -> Result<Vec<String>, OnnxError> {
        let labelled: Vec<(String, &NodeProto)> = (graph.node.iter().enumerate())
            .map(|(i, n)| (format!("{scope}/{}", node_label(n, i)), n))
            .collect();
        check_domains(
            labelled.iter().cloned(),
            &format!("the subgraph of `{scope}`"),
        )?;
        check_supported(&labelled)?;
        check_versions(&labelled, self.opset)?;
        let mut renames = bindings.clone();
        for name in graph.node.iter().flat_map(|n| &n.output) {
            if !name.is_empty() && !renames.contains_key(name) {
                let fresh = self.reserve(b, &format!("{scope}/{name}"));
                renames.insert(name.clone(), fresh);
            }
        }
        for (label, node) in &labelled {
            self.any_node(index, &rename_node(node, &renames), label, b)?;
        }
        (graph.output.iter().enumerate())
            .map(|(k, v)| match v.name.as_deref() {
                Some(name) if !name.is_empty() => {
                    Ok(renames.get(name).map_or(name, String::as_str).to_string())
                }
                _ => Err(OnnxError::EmptyName {
                    what: format!("output #{k} of the subgraph of `{scope}`"),
                }),
            })
            .collect()
    }

    /// Imports `graph`'s initializers as constants under `scope`, returning the binding of each
    /// name to its container (once per body, however many times it is inlined).
    pub(super) fn inline_initializers(
        &mut self,
        scope: &str,
        graph: &GraphProto,
        b: &mut ScopeBuilder,
    ) -> Result<BTreeMap<String, String>, OnnxError> {
        let mut bindings = BTreeMap::new();
        for (i, t) in graph.initializer.iter().enumerate() {
            let name = match t.name.as_deref() {
                Some(n) if !n.is_empty() => n.to_string(),
                _ => {
                    return Err(OnnxError::EmptyName {
                        what: format!("initializer #{i} of the subgraph of `{scope}`"),
                    })
                }
            };
            let value = decode_tensor(t, &name, self.opts.base_dir.as_deref())?;
            let container = self.fresh_constant(b, scope, &format!("{scope}/{name}"), value)?;
            bindings.insert(name, container);
        }
        Ok(bindings)
    }

    /// A container name starting with `base` that nothing else uses or will be given.
    pub(super) fn reserve(&mut self, b: &ScopeBuilder, base: &str) -> String {
        let name = self.fresh_name(b, base);
        self.all_names.insert(name.clone());
        name
    }

    /// A new constant container named after `base` holding `value`, defined by `label`.
    pub(super) fn fresh_constant(
        &mut self,
        b: &mut ScopeBuilder,
        label: &str,
        base: &str,
        value: Tensor,
    ) -> Result<String, OnnxError> {
        let name = self.reserve(b, base);
        self.constant_result(b, label, &name, value)?;
        Ok(name)
    }

    /// Imports a node control flow synthesises (see [`synthetic`]) as if the model held it.
    pub(super) fn synthesized(
        &mut self,
        index: usize,
        b: &mut ScopeBuilder,
        node: NodeProto,
    ) -> Result<(), OnnxError> {
        let label = node.name.clone().unwrap_or_default();
        self.node(index, &node, &label, b)
    }

    /// `dst` (an output of the control-flow node `label`) becomes a copy of container `src`:
    /// a renaming, or an `Identity` when `dst` is a graph output.
    pub(super) fn copy_into(
        &mut self,
        index: usize,
        b: &mut ScopeBuilder,
        label: &str,
        src: &str,
        dst: &str,
    ) -> Result<(), OnnxError> {
        let copy = format!("{label}/copy_{dst}");
        self.synthesized(index, b, synthetic(&copy, IDENTITY, &[src], dst, vec![]))
    }

    /// `dst` = the `values` (equal shapes) stacked along a new axis `axis` of the result, in
    /// order: each one `Unsqueeze`d there, then all `Concat`enated.
    pub(super) fn stack_into(
        &mut self,
        index: usize,
        b: &mut ScopeBuilder,
        label: &str,
        values: &[String],
        axis: i64,
        dst: &str,
    ) -> Result<(), OnnxError> {
        let (axes_input, axes_attr) = if self.opset >= UNSQUEEZE_AXES_INPUT {
            let axes = Tensor::i64(vec![1], vec![axis]);
            let name = self.fresh_constant(b, label, &format!("{label}/{dst}_axes"), axes)?;
            (Some(name), vec![])
        } else {
            (None, vec![attribute("axes", AttrValue::Ints(vec![axis]))])
        };
        let single = values.len() == 1;
        let mut pieces = Vec::with_capacity(values.len());
        for (k, v) in values.iter().enumerate() {
            let piece = match single {
                true => dst.to_string(),
                false => self.reserve(b, &format!("{label}/{dst}_{k}")),
            };
            let inputs: Vec<&str> = std::iter::once(v.as_str())
                .chain(axes_input.as_deref())
                .collect();
            let unsqueeze = format!("{label}/stack_{dst}_{k}");
            let node = synthetic(&unsqueeze, "Unsqueeze", &inputs, &piece, axes_attr.clone());
            self.synthesized(index, b, node)?;
            pieces.push(piece);
        }
        if single {
            return Ok(());
        }
        let inputs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let concat = format!("{label}/stack_{dst}");
        let axis_attr = vec![attribute("axis", AttrValue::Int(axis))];
        self.synthesized(
            index,
            b,
            synthetic(&concat, "Concat", &inputs, dst, axis_attr),
        )
    }
}

/// A one-output node labelled `label` that control flow adds around an inlined body.
pub(super) fn synthetic(
    label: &str,
    op: &str,
    inputs: &[&str],
    output: &str,
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        name: Some(label.to_string()),
        op_type: Some(op.to_string()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        attribute: attrs,
        ..Default::default()
    }
}
