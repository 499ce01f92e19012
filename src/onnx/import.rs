//! ONNX graph → IR [`Program`] with one library node per ONNX node (see the module docs of
//! [`crate::onnx`] for the contract).

use super::attrs::{constant_value, convert};
use super::error::{OnnxError, UnsupportedNode};
use super::load::{check_model, load_file, node_label};
use super::proto::{GraphProto, ModelProto, NodeProto, ValueInfoProto};
use super::signature::{check_declared, check_options, input_type, Symbols};
use super::tensor::decode_tensor;
use crate::ir::build::ScopeBuilder;
use crate::ir::validate::validate;
use crate::ir::{Attr, DataDesc, DataKind, LibraryNode, Program, Storage, SymExpr, Tensor};
use crate::ops::{self, OpError, TensorType};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How to specialise a model while importing it.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Values for symbolic dimensions (`dim_param`s), by name.
    pub dims: BTreeMap<String, i64>,
    /// Concrete shapes for graph inputs, by input name; binds their symbolic dimensions.
    pub input_shapes: BTreeMap<String, Vec<i64>>,
    /// Directory that external tensor data is relative to. Only models from [`super::load_model`]
    /// or built in memory need it: [`super::load_file`] already inlines external data.
    pub base_dir: Option<PathBuf>,
}

/// Operators whose pre-opset-13 semantics ("flatten to 2-D at `axis`, default 1") differ from
/// the current ones; they receive the `opset` attribute.
const FLATTENING_SOFTMAX_OPS: [&str; 3] = ["Softmax", "LogSoftmax", "Hardmax"];
/// The opset from which those operators reduce along one axis only.
const SOFTMAX_AXIS_OPSET: i64 = 13;

/// Adds the `opset` attribute where an operator's meaning depends on the opset (see the module
/// docs of [`crate::onnx`]).
fn mark_opset_semantics(op: &str, opset: i64, attrs: &mut BTreeMap<String, Attr>) {
    if FLATTENING_SOFTMAX_OPS.contains(&op) && opset < SOFTMAX_AXIS_OPSET {
        attrs.insert("opset".into(), Attr::Int(opset));
    }
}

/// Gives a `Split` without explicit sizes its output count as `num_outputs` (the opset-18
/// attribute of the same meaning): equal splitting depends on how many outputs the node lists,
/// which the operator otherwise cannot see.
fn mark_split_count(node: &NodeProto, attrs: &mut BTreeMap<String, Attr>) {
    let sized = attrs.contains_key("split")
        || attrs.contains_key("num_outputs")
        || node.input.get(1).is_some_and(|t| !t.is_empty());
    if node.op_type.as_deref() == Some("Split") && !sized {
        let count = i64::try_from(node.output.len()).unwrap_or(i64::MAX);
        attrs.insert("num_outputs".into(), Attr::Int(count));
    }
}

/// Loads `path` (which inlines external data found next to it) and imports it.
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<Program, OnnxError> {
    import(&load_file(path)?, opts)
}

/// Imports a checked or unchecked model into a validated program.
pub fn import(model: &ModelProto, opts: &ImportOptions) -> Result<Program, OnnxError> {
    let opset = check_model(model, "the model")?;
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::MissingGraph {
            origin: "the model".into(),
        })?;
    let labels: Vec<String> = graph
        .node
        .iter()
        .enumerate()
        .map(|(i, n)| node_label(n, i))
        .collect();
    check_supported(graph, &labels)?;
    let name = graph
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "model".into());
    let mut imp = Importer {
        graph,
        opts,
        opset,
        labels: &labels,
        types: BTreeMap::new(),
        constants: BTreeMap::new(),
        producer: BTreeMap::new(),
        declared: BTreeMap::new(),
        outputs: BTreeSet::new(),
        all_names: all_names(graph),
    };
    let mut p = Program::new(name);
    imp.initializers(&mut p)?;
    imp.inputs(&mut p)?;
    imp.index_declarations()?;
    p.build(|b| imp.nodes(b))?;
    imp.signature_outputs(&mut p)?;
    p.constants = std::mem::take(&mut imp.constants);
    validate(&p)?;
    Ok(p)
}

/// Lists every node whose operator the library lacks, all at once.
fn check_supported(graph: &GraphProto, labels: &[String]) -> Result<(), OnnxError> {
    let nodes: Vec<UnsupportedNode> = graph
        .node
        .iter()
        .zip(labels)
        .filter_map(|(n, label)| {
            let op = n.op_type.clone().unwrap_or_default();
            (op != "Constant" && ops::lookup(&op).is_none()).then(|| UnsupportedNode {
                node: label.clone(),
                op,
                domain: n.domain.clone().unwrap_or_default(),
            })
        })
        .collect();
    if nodes.is_empty() {
        Ok(())
    } else {
        Err(OnnxError::Unsupported { nodes })
    }
}

/// Every tensor name the model mentions, so generated names can avoid them.
fn all_names(graph: &GraphProto) -> BTreeSet<String> {
    let vi = graph
        .input
        .iter()
        .chain(&graph.output)
        .chain(&graph.value_info);
    vi.filter_map(|v| v.name.clone())
        .chain(graph.initializer.iter().filter_map(|t| t.name.clone()))
        .chain(
            graph
                .node
                .iter()
                .flat_map(|n| n.input.iter().chain(&n.output).cloned()),
        )
        .collect()
}

/// Import state shared by the phases.
struct Importer<'m> {
    graph: &'m GraphProto,
    opts: &'m ImportOptions,
    opset: i64,
    labels: &'m [String],
    /// Type of every tensor defined so far.
    types: BTreeMap<String, TensorType>,
    /// Values of initializers and `Constant` outputs.
    constants: BTreeMap<String, Tensor>,
    /// Who defined each tensor: "graph input", "initializer" or a node label.
    producer: BTreeMap<String, String>,
    /// Declared types of graph outputs and `value_info` entries.
    declared: BTreeMap<String, &'m ValueInfoProto>,
    outputs: BTreeSet<String>,
    all_names: BTreeSet<String>,
}

fn non_empty(name: Option<&String>, what: impl FnOnce() -> String) -> Result<String, OnnxError> {
    match name {
        Some(n) if !n.is_empty() => Ok(n.clone()),
        _ => Err(OnnxError::EmptyName { what: what() }),
    }
}

fn static_shape(t: &Tensor) -> Vec<SymExpr> {
    t.shape.iter().map(|d| SymExpr::from(*d)).collect()
}

impl<'m> Importer<'m> {
    /// Records that `by` defines `tensor`; ONNX graphs are SSA, so a second definition is an error.
    fn define(&mut self, tensor: &str, by: &str) -> Result<(), OnnxError> {
        if self.producer.contains_key(tensor) {
            return Err(OnnxError::Duplicate {
                tensor: tensor.to_string(),
                by: by.to_string(),
            });
        }
        self.producer.insert(tensor.to_string(), by.to_string());
        Ok(())
    }

    fn initializers(&mut self, p: &mut Program) -> Result<(), OnnxError> {
        for (i, t) in self.graph.initializer.iter().enumerate() {
            let name = non_empty(t.name.as_ref(), || format!("initializer #{i}"))?;
            self.define(&name, "initializer")?;
            let value = decode_tensor(t, &name, self.opts.base_dir.as_deref())?;
            let shape = static_shape(&value);
            p.data.insert(
                name.clone(),
                DataDesc::new(value.dtype(), shape.clone(), DataKind::Constant),
            );
            self.types
                .insert(name.clone(), TensorType::new(value.dtype(), shape));
            self.constants.insert(name, value);
        }
        Ok(())
    }

    /// Graph inputs that are not initializers, in order, with their symbols.
    fn inputs(&mut self, p: &mut Program) -> Result<(), OnnxError> {
        let mut syms = Symbols::default();
        let mut names = BTreeSet::new();
        for (i, vi) in self.graph.input.iter().enumerate() {
            let name = non_empty(vi.name.as_ref(), || format!("graph input #{i}"))?;
            if self.constants.contains_key(&name) {
                continue;
            }
            self.define(&name, "graph input")?;
            let ty = input_type(vi, &name, self.opts, &mut syms)?;
            p.data.insert(
                name.clone(),
                DataDesc::new(ty.dtype, ty.shape.clone(), DataKind::Input),
            );
            self.types.insert(name.clone(), ty);
            p.inputs.push(name.clone());
            names.insert(name);
        }
        check_options(self.opts, &names, &syms)?;
        p.symbols = syms.values;
        Ok(())
    }

    /// Indexes graph outputs and `value_info` by name (outputs win: they are the signature).
    fn index_declarations(&mut self) -> Result<(), OnnxError> {
        for (i, vi) in self.graph.value_info.iter().enumerate() {
            let name = non_empty(vi.name.as_ref(), || format!("value_info #{i}"))?;
            self.declared.insert(name, vi);
        }
        for (i, vi) in self.graph.output.iter().enumerate() {
            let name = non_empty(vi.name.as_ref(), || format!("graph output #{i}"))?;
            if !self.outputs.insert(name.clone()) {
                return Err(OnnxError::Duplicate {
                    tensor: name,
                    by: "the graph output list".into(),
                });
            }
            self.declared.insert(name, vi);
        }
        Ok(())
    }

    fn nodes(&mut self, b: &mut ScopeBuilder) -> Result<(), OnnxError> {
        for (i, node) in self.graph.node.iter().enumerate() {
            let label = &self.labels[i];
            if node.op_type.as_deref() == Some("Constant") {
                self.constant(node, label, b)?;
            } else {
                self.library(i, node, label, b)?;
            }
        }
        Ok(())
    }

    fn constant(
        &mut self,
        node: &NodeProto,
        label: &str,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let [out] = node.output.as_slice() else {
            return Err(OnnxError::attribute(
                label,
                "output",
                format!("a Constant node has one output, not {}", node.output.len()),
            ));
        };
        let out = non_empty(Some(out), || format!("the output of node `{label}`"))?;
        self.define(&out, label)?;
        let value = constant_value(node, label, self.opts.base_dir.as_deref())?;
        let ty = TensorType::new(value.dtype(), static_shape(&value));
        self.check_declared(&out, label, &ty)?;
        self.declare(b, &out, label, &ty, DataKind::Constant)?;
        self.types.insert(out.clone(), ty);
        self.constants.insert(out, value);
        Ok(())
    }

    /// Declares container `name` under exactly that name.
    fn declare(
        &self,
        b: &mut ScopeBuilder,
        name: &str,
        by: &str,
        ty: &TensorType,
        kind: DataKind,
    ) -> Result<(), OnnxError> {
        if b.desc(name).is_some() {
            return Err(OnnxError::Duplicate {
                tensor: name.to_string(),
                by: by.to_string(),
            });
        }
        b.declare(name, ty.dtype, ty.shape.clone(), kind, Storage::Global);
        Ok(())
    }

    fn check_declared(&self, name: &str, node: &str, ty: &TensorType) -> Result<(), OnnxError> {
        match self.declared.get(name) {
            Some(vi) => check_declared(vi, name, node, ty),
            None => Ok(()),
        }
    }

    /// The tensor a node reads, or a dangling-reference error naming a later producer if any.
    fn resolve_input(
        &self,
        index: usize,
        label: &str,
        tensor: &str,
    ) -> Result<TensorType, OnnxError> {
        self.types
            .get(tensor)
            .cloned()
            .ok_or_else(|| OnnxError::Dangling {
                node: label.to_string(),
                tensor: tensor.to_string(),
                produced_later: self.graph.node[index..]
                    .iter()
                    .position(|n| n.output.iter().any(|o| o == tensor))
                    .map(|k| self.labels[index + k].clone()),
            })
    }

    fn library(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let op_name = node.op_type.clone().unwrap_or_default();
        let infer_err = |source: OpError| OnnxError::Infer {
            node: label.to_string(),
            op: op_name.clone(),
            source: Box::new(source),
        };
        let op = ops::lookup(&op_name).ok_or_else(|| OnnxError::Unsupported {
            nodes: vec![UnsupportedNode {
                node: label.to_string(),
                op: op_name.clone(),
                domain: node.domain.clone().unwrap_or_default(),
            }],
        })?;
        let mut attrs = convert(node, label)?;
        mark_opset_semantics(&op_name, self.opset, &mut attrs);
        mark_split_count(node, &mut attrs);
        let mut in_types = Vec::with_capacity(node.input.len());
        for tensor in &node.input {
            in_types.push(match tensor.is_empty() {
                true => None,
                false => Some(self.resolve_input(index, label, tensor)?),
            });
        }
        ops::check_arity(op, node.input.len()).map_err(infer_err)?;
        // Trailing empty names are omitted optional outputs.
        let listed = node
            .output
            .iter()
            .rposition(|o| !o.is_empty())
            .map_or(0, |k| k + 1);
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
        let consts: Vec<Option<&Tensor>> =
            node.input.iter().map(|t| self.constants.get(t)).collect();
        let out_types = op.infer(&lib, &in_types, &consts).map_err(infer_err)?;
        let mut outs = Vec::with_capacity(listed);
        for (k, tensor) in node.output[..listed].iter().enumerate() {
            let ty = out_types.get(k).ok_or_else(|| {
                infer_err(OpError::shape(
                    &op_name,
                    format!("type inference returned no type for output {k}"),
                ))
            })?;
            let name = if tensor.is_empty() {
                self.unused_output_name(b, label, k)
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
        let inputs: Vec<Option<&str>> = node
            .input
            .iter()
            .map(|t| (!t.is_empty()).then_some(t.as_str()))
            .collect();
        let outputs: Vec<&str> = outs.iter().map(String::as_str).collect();
        b.library(label, &op_name, lib.attrs, &inputs, &outputs);
        Ok(())
    }

    /// A container for an output the model leaves unnamed in the middle of the output list; the
    /// name avoids every tensor name in the model and every declared container.
    fn unused_output_name(&self, b: &ScopeBuilder, label: &str, k: usize) -> String {
        let base = format!("{label}_unused_out{k}");
        std::iter::once(base.clone())
            .chain((1..).map(|j| format!("{base}_{j}")))
            .find(|n| !self.all_names.contains(n) && b.desc(n).is_none())
            .expect("unbounded candidate names")
    }

    /// The caller-visible outputs, in the model's order; each must be computed by a node.
    fn signature_outputs(&self, p: &mut Program) -> Result<(), OnnxError> {
        for vi in &self.graph.output {
            let name = vi.name.clone().unwrap_or_default();
            let reason = match self.producer.get(&name).map(String::as_str) {
                None => Some("nothing produces it".to_string()),
                Some(by @ ("graph input" | "initializer")) => Some(format!("it is a {by}")),
                Some(_) if self.constants.contains_key(&name) => {
                    Some("it is a Constant node's value".into())
                }
                Some(_) => None,
            };
            if let Some(reason) = reason {
                return Err(OnnxError::OutputNotComputed {
                    tensor: name,
                    reason,
                });
            }
            p.outputs.push(name);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pre_13_softmax_family_gets_the_opset_attribute() {
        let marked = |op: &str, opset: i64| {
            let mut attrs = BTreeMap::from([("axis".to_string(), Attr::Int(1))]);
            mark_opset_semantics(op, opset, &mut attrs);
            attrs.get("opset").cloned()
        };
        for op in FLATTENING_SOFTMAX_OPS {
            assert_eq!(marked(op, 11), Some(Attr::Int(11)), "{op}");
            assert_eq!(marked(op, 12), Some(Attr::Int(12)), "{op}");
            assert_eq!(marked(op, 13), None, "{op}");
        }
        assert_eq!(marked("Relu", 11), None);
    }
}
