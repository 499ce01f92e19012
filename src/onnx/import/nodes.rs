//! The per-node part of the import: each ordinary ONNX node is renamed away (`Identity`,
//! inference `Dropout`), folded into constants (static `Shape`/`Size`, or every input constant,
//! through the operator's reference `eval`), or appended as a library node.

use super::legacy::{upgrade_attrs, MODERN_OPSET};
use super::{mark_opset_semantics, mark_split_count, Importer, IDENTITY, PASS_THROUGH};
use crate::ir::build::ScopeBuilder;
use crate::ir::{Attr, DataKind, LibraryNode, SymExpr, Tensor};
use crate::onnx::attrs::convert;
use crate::onnx::error::{OnnxError, UnsupportedNode};
use crate::onnx::idioms::{all_kept, dropout_refusal, shape_from_type};
use crate::onnx::opsets::resolve;
use crate::onnx::proto::NodeProto;
use crate::onnx::tensor::dtype_of;
use crate::ops::{self, OpError, TensorType};
use std::collections::{BTreeMap, BTreeSet};

/// Cast's target type, named by ONNX when dmove lacks it (the operator only knows its code).
fn check_cast_target(attrs: &BTreeMap<String, Attr>, label: &str) -> Result<(), OnnxError> {
    let what = format!("attribute `to` of node `{label}`");
    match attrs.get("to") {
        Some(Attr::Int(code)) => {
            let code = i32::try_from(*code).map_err(|_| {
                OnnxError::attribute(label, "to", format!("unknown element type code {code}"))
            })?;
            dtype_of(code, &what).map(|_| ())
        }
        _ => Ok(()),
    }
}

impl Importer<'_> {
    /// One ordinary node: renamed away (`Identity`, inference `Dropout`), folded into constants
    /// (static `Shape`/`Size`, or every input constant), or kept as a library node.
    pub(super) fn node(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        if self.opset < MODERN_OPSET {
            if let Some(upgraded) = self.legacy_broadcast(index, node, label, b)? {
                return self.node(index, &upgraded, label, b);
            }
        }
        let op_name = node.op_type.clone().unwrap_or_default();
        let infer_err = |source: OpError| OnnxError::Infer {
            node: label.to_string(),
            op: op_name.clone(),
            source: Box::new(source),
        };
        let schema =
            resolve(&op_name, self.opset).map_err(|refusal| OnnxError::OperatorVersions {
                nodes: vec![(label.to_string(), refusal)],
            })?;
        let mut attrs = convert(node, label, schema)?;
        if self.opset < MODERN_OPSET {
            upgrade_attrs(&op_name, self.opset, &mut attrs).map_err(infer_err)?;
        }
        if op_name == "Cast" {
            check_cast_target(&attrs, label)?;
        }
        mark_opset_semantics(&op_name, self.opset, &mut attrs);
        mark_split_count(node, &mut attrs);
        let inputs: Vec<Option<String>> = node
            .input
            .iter()
            .map(|t| (!t.is_empty()).then(|| self.resolve(t).to_string()))
            .collect();
        let mut in_types = Vec::with_capacity(node.input.len());
        for tensor in &node.input {
            in_types.push(match tensor.is_empty() {
                true => None,
                false => Some(self.resolve_input(index, label, tensor)?),
            });
        }
        // Trailing empty names are omitted optional outputs.
        let listed = node
            .output
            .iter()
            .rposition(|o| !o.is_empty())
            .map_or(0, |k| k + 1);
        let outputs = &node.output[..listed];
        let idioms = !self.opts.as_written;
        if let Some(folded) = self
            .fold_by_type(&op_name, &attrs, &in_types, outputs.len())
            .filter(|_| idioms)
        {
            return self.constant_result(b, label, &outputs[0], folded);
        }
        let unbound = self.unbound_symbols(&op_name, &inputs, &in_types);
        for out in outputs.iter().filter(|_| !unbound.is_empty()) {
            self.unbound_values.insert(out.clone(), unbound.clone());
        }
        // A node that needs such a value as a constant fails because of the unbound symbol, and
        // one that needs an extent as a number (Resize by scales) because of the extent's
        // symbols: both name the symbols and the flags that bind them.
        let infer_err = |source: OpError| match &source {
            _ if !unbound.is_empty() => {
                OnnxError::shape_from_unbound(label, &op_name, &unbound, source)
            }
            OpError::SymbolicExtent { extent, .. } => {
                let symbols: BTreeSet<String> = extent.free_symbols().into_iter().collect();
                OnnxError::shape_from_unbound(label, &op_name, &symbols, source)
            }
            _ => infer_err(source),
        };
        if idioms && PASS_THROUGH.contains(&op_name.as_str()) {
            return self.pass_through(b, label, &op_name, attrs, &inputs, &in_types, outputs);
        }
        let op = ops::lookup(&op_name).ok_or_else(|| OnnxError::Unsupported {
            nodes: vec![UnsupportedNode {
                node: label.to_string(),
                op: op_name.clone(),
                domain: node.domain.clone().unwrap_or_default(),
            }],
        })?;
        ops::check_arity(op, node.input.len()).map_err(infer_err)?;
        if listed > op.output_count() {
            return Err(infer_err(OpError::unsupported(
                &op_name,
                format!(
                    "the node lists {listed} outputs but the operator produces {}",
                    op.output_count()
                ),
            )));
        }
        let lib = LibraryNode {
            op: op_name.clone(),
            attrs,
        };
        let (out_types, folded) = {
            let consts: Vec<Option<&Tensor>> = inputs
                .iter()
                .map(|t| {
                    t.as_ref()
                        .and_then(|t| self.constants.get(t))
                        .map(|c| c.tensor())
                })
                .collect();
            let out_types = op.infer(&lib, &in_types, &consts).map_err(infer_err)?;
            let all_constant = inputs
                .iter()
                .zip(&consts)
                .all(|(name, value)| name.is_none() || value.is_some());
            let folded = match idioms && inputs.iter().any(Option::is_some) && all_constant {
                true => Some(op.eval(&lib, &consts).map_err(infer_err)?),
                false => None,
            };
            (out_types, folded)
        };
        let Some(values) = folded else {
            return self.emit(b, label, &op_name, lib.attrs, &inputs, &out_types, outputs);
        };
        for (k, tensor) in outputs.iter().enumerate() {
            let value = values.get(k).cloned().ok_or_else(|| {
                infer_err(OpError::shape(
                    &op_name,
                    format!("evaluation returned no value for output {k}"),
                ))
            })?;
            if !tensor.is_empty() {
                self.constant_result(b, label, tensor, value)?;
            }
        }
        Ok(())
    }

    /// The unbound symbols the values of this node's outputs depend on: those of its inputs'
    /// values, and for `Shape`/`Size` the unbound symbols of the input's type.
    fn unbound_symbols(
        &self,
        op: &str,
        inputs: &[Option<String>],
        in_types: &[Option<TensorType>],
    ) -> BTreeSet<String> {
        let mut symbols: BTreeSet<String> = inputs
            .iter()
            .flatten()
            .filter_map(|t| self.unbound_values.get(t))
            .flatten()
            .cloned()
            .collect();
        if let ("Shape" | "Size", Some(Some(ty))) = (op, in_types.first()) {
            let free = ty.shape.iter().flat_map(SymExpr::free_symbols);
            symbols.extend(free);
        }
        symbols
    }

    /// `Shape`/`Size` of an input whose shape is static (bound symbols are numbers from the
    /// graph inputs on), whatever the operator library offers.
    fn fold_by_type(
        &self,
        op: &str,
        attrs: &BTreeMap<String, Attr>,
        in_types: &[Option<TensorType>],
        outputs: usize,
    ) -> Option<Tensor> {
        let ([Some(ty)], 1) = (in_types, outputs) else {
            return None;
        };
        shape_from_type(op, attrs, ty)
    }

    /// `Identity` and inference-mode `Dropout`: later readers of the output read the input
    /// directly. A graph output keeps its name and becomes an `Identity` copy (with the node's
    /// attributes, which the copy ignores).
    #[allow(clippy::too_many_arguments)]
    fn pass_through(
        &mut self,
        b: &mut ScopeBuilder,
        label: &str,
        op: &str,
        attrs: BTreeMap<String, Attr>,
        inputs: &[Option<String>],
        in_types: &[Option<TensorType>],
        outputs: &[String],
    ) -> Result<(), OnnxError> {
        let err = |source: OpError| OnnxError::Infer {
            node: label.to_string(),
            op: op.to_string(),
            source: Box::new(source),
        };
        let (max_in, max_out) = if op == IDENTITY { (1, 1) } else { (3, 2) };
        let (Some(Some(src)), Some(Some(ty))) = (inputs.first(), in_types.first()) else {
            return Err(err(OpError::shape(op, "missing first input")));
        };
        if inputs.len() > max_in || outputs.len() > max_out {
            return Err(err(OpError::shape(
                op,
                format!(
                    "{} input(s) and {} output(s), at most {max_in} and {max_out} allowed",
                    inputs.len(),
                    outputs.len()
                ),
            )));
        }
        if op != IDENTITY {
            let consts: Vec<Option<&Tensor>> = inputs
                .iter()
                .map(|t| {
                    t.as_ref()
                        .and_then(|t| self.constants.get(t))
                        .map(|c| c.tensor())
                })
                .collect();
            let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
            if let Some(reason) = dropout_refusal(&consts, &present) {
                return Err(err(OpError::unsupported(op, reason)));
            }
        }
        if let Some(mask) = outputs.get(1).filter(|m| !m.is_empty()) {
            let shape = ty.static_shape().ok_or_else(|| {
                err(OpError::unsupported(
                    op,
                    "the mask output of a symbolically shaped tensor is not supported",
                ))
            })?;
            self.constant_result(b, label, mask, all_kept(&shape))?;
        }
        let Some(out) = outputs.first().filter(|o| !o.is_empty()) else {
            return Ok(());
        };
        if self.outputs.contains(out) {
            let out = [out.clone()];
            let src = [Some(src.clone())];
            return self.emit(
                b,
                label,
                IDENTITY,
                attrs,
                &src,
                std::slice::from_ref(ty),
                &out,
            );
        }
        self.define(out, label)?;
        self.check_declared(out, label, ty)?;
        self.alias.insert(out.clone(), src.clone());
        Ok(())
    }

    /// Appends library node `label` reading `inputs` (container names, `None` for absent
    /// optional inputs) and writing `outputs` (ONNX names, empty for unused ones) typed
    /// `out_types`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit(
        &mut self,
        b: &mut ScopeBuilder,
        label: &str,
        op: &str,
        attrs: BTreeMap<String, Attr>,
        inputs: &[Option<String>],
        out_types: &[TensorType],
        outputs: &[String],
    ) -> Result<(), OnnxError> {
        let mut outs = Vec::with_capacity(outputs.len());
        for (k, tensor) in outputs.iter().enumerate() {
            let ty = out_types.get(k).ok_or_else(|| OnnxError::Infer {
                node: label.to_string(),
                op: op.to_string(),
                source: Box::new(OpError::shape(
                    op,
                    format!("type inference returned no type for output {k}"),
                )),
            })?;
            let name = if tensor.is_empty() {
                self.fresh_name(b, &format!("{label}_unused_out{k}"))
            } else {
                self.define(tensor, label)?;
                self.check_declared(tensor, label, ty)?;
                self.types.insert(tensor.clone(), ty.clone());
                tensor.clone()
            };
            let kind = if self.outputs.contains(&name) {
                DataKind::Output
            } else {
                DataKind::Transient
            };
            self.declare(b, &name, label, ty, kind)?;
            outs.push(name);
        }
        let inputs: Vec<Option<&str>> = inputs.iter().map(Option::as_deref).collect();
        let outputs: Vec<&str> = outs.iter().map(String::as_str).collect();
        b.library(label, op, attrs, &inputs, &outputs);
        Ok(())
    }
}
