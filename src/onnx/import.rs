//! ONNX graph → IR [`Program`] with one library node per ONNX node (see the module docs of
//! [`crate::onnx`] for the contract).

mod control;
mod legacy;
mod nodes;
mod subgraph;
mod unroll;

use super::attrs::constant_value;
use super::error::{OnnxError, UnsupportedNode};
use super::graphs::mentioned_names;
use super::idioms::IMPORTER_HANDLED;
use super::load::{check_model, load_file, load_model, node_label};
use super::opsets::{resolve, VersionRefusal};
use super::proto::{GraphProto, ModelProto, NodeProto, ValueInfoProto};
use super::signature::{check_declared, check_options, input_type, Symbols};
use super::tensor::decode_tensor;
use crate::ir::build::ScopeBuilder;
use crate::ir::validate::validate;
use crate::ir::{Attr, Constant, DataDesc, DataKind, Program, Storage, SymExpr, Tensor};
use crate::ops::{self, TensorType};
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
    /// Keep the graph exactly as the model writes it: no constant folding, no removal of
    /// `Identity`/`Dropout` (for studying or rewriting those nodes explicitly, e.g. with the
    /// ConstantFolding transformation).
    pub as_written: bool,
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
    // DFT's axis is an attribute (default 1) before opset 20 and an input (default -2) from it.
    if op == "DFT" && opset < DFT_AXIS_INPUT_OPSET && !attrs.contains_key("axis") {
        attrs.insert("axis".into(), Attr::Int(1));
    }
}

/// The opset from which DFT takes its axis as an input.
const DFT_AXIS_INPUT_OPSET: i64 = 20;

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

/// The operator the importer uses to copy a value into a graph output.
const IDENTITY: &str = "Identity";
/// Operators that only rename their first input at inference time.
const PASS_THROUGH: [&str; 2] = [IDENTITY, "Dropout"];

/// Loads `path` (which inlines external data found next to it) and imports it.
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<Program, OnnxError> {
    import(&load_file(path)?, opts)
}

/// Decodes, checks and imports a model held in memory; external data is read relative to
/// `opts.base_dir`. The entry point for untrusted bytes (the fuzz target calls it).
pub fn import_bytes(bytes: &[u8], opts: &ImportOptions) -> Result<Program, OnnxError> {
    import(&load_model(bytes)?, opts)
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
    let labelled: Vec<(String, &NodeProto)> = labels.iter().cloned().zip(&graph.node).collect();
    check_supported(&labelled)?;
    check_versions(&labelled, opset)?;
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
        all_names: mentioned_names(graph),
        alias: BTreeMap::new(),
        unbound_values: BTreeMap::new(),
        unrolled: 0,
    };
    let mut p = Program::new(name);
    imp.initializers(&mut p)?;
    imp.inputs(&mut p)?;
    imp.index_declarations()?;
    p.build(|b| imp.nodes(b))?;
    imp.signature_outputs(&mut p)?;
    p.constants = std::mem::take(&mut imp.constants).into();
    validate(&p)?;
    Ok(p)
}

/// Lists every node (with its label) whose operator the library lacks, all at once.
fn check_supported(labelled: &[(String, &NodeProto)]) -> Result<(), OnnxError> {
    let nodes: Vec<UnsupportedNode> = labelled
        .iter()
        .filter_map(|(label, n)| {
            let op = n.op_type.clone().unwrap_or_default();
            let known = IMPORTER_HANDLED.contains(&op.as_str()) || ops::lookup(&op).is_some();
            (!known).then(|| UnsupportedNode {
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

/// Lists every node (with its label) whose operator definition (the one the model's opset
/// selects) dmove does not implement, all at once.
fn check_versions(labelled: &[(String, &NodeProto)], opset: i64) -> Result<(), OnnxError> {
    let nodes: Vec<(String, VersionRefusal)> = labelled
        .iter()
        .filter_map(|(label, n)| {
            let op = n.op_type.as_deref().unwrap_or_default();
            resolve(op, opset).err().map(|r| (label.clone(), r))
        })
        .collect();
    if nodes.is_empty() {
        Ok(())
    } else {
        Err(OnnxError::OperatorVersions { nodes })
    }
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
    constants: BTreeMap<String, Constant>,
    /// Who defined each tensor: "graph input", "initializer" or a node label.
    producer: BTreeMap<String, String>,
    /// Declared types of graph outputs and `value_info` entries.
    declared: BTreeMap<String, &'m ValueInfoProto>,
    outputs: BTreeSet<String>,
    all_names: BTreeSet<String>,
    /// Outputs of removed `Identity`/`Dropout` nodes → the container they rename.
    alias: BTreeMap<String, String>,
    /// Tensors whose values depend on unbound symbols (outputs of `Shape`/`Size` that could not
    /// fold, and what is computed from them) → those symbols, to name them when a node needs
    /// such a value as a constant.
    unbound_values: BTreeMap<String, BTreeSet<String>>,
    /// Body nodes imported so far by unrolling `Loop`s and `Scan`s, against
    /// [`control::UNROLL_LIMIT`].
    unrolled: usize,
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
            self.constants.insert(name, value.into());
        }
        Ok(())
    }

    /// Graph inputs that are not initializers, in order, with their symbols. Typed twice: the
    /// first pass collects every binding (`--shape` of one input binds a symbol another input
    /// uses too), the second gives each input its type with every bound symbol's value.
    fn inputs(&mut self, p: &mut Program) -> Result<(), OnnxError> {
        let mut syms = Symbols::default();
        let graph_inputs: Vec<(String, &ValueInfoProto)> = (self.graph.input.iter().enumerate())
            .map(|(i, vi)| {
                Ok((
                    non_empty(vi.name.as_ref(), || format!("graph input #{i}"))?,
                    vi,
                ))
            })
            .filter(|r| !matches!(r, Ok((name, _)) if self.constants.contains_key(name)))
            .collect::<Result<_, OnnxError>>()?;
        for (name, vi) in &graph_inputs {
            input_type(vi, name, self.opts, &mut syms)?;
        }
        let mut names = BTreeSet::new();
        for (name, vi) in graph_inputs {
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
        let (graph, labels) = (self.graph, self.labels);
        for (i, node) in graph.node.iter().enumerate() {
            self.any_node(i, node, &labels[i], b)?;
        }
        Ok(())
    }

    /// One node of the graph or of an inlined subgraph (`index` is the position of the
    /// top-level node it comes from): a `Constant`, a control-flow node, or an ordinary one.
    fn any_node(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        match node.op_type.as_deref() {
            Some("Constant") => {
                let [out] = node.output.as_slice() else {
                    return Err(OnnxError::attribute(
                        label,
                        "output",
                        format!("a Constant node has one output, not {}", node.output.len()),
                    ));
                };
                let value = constant_value(node, label, self.opts.base_dir.as_deref())?;
                self.constant_result(b, label, out, value)
            }
            Some(op) if control::CONTROL_FLOW.contains(&op) => self.control(index, node, label, b),
            _ => self.node(index, node, label, b),
        }
    }

    /// The container that holds tensor `name`: itself, or the input of the `Identity`/`Dropout`
    /// it was renamed from.
    fn resolve<'n>(&'n self, name: &'n str) -> &'n str {
        self.alias.get(name).map_or(name, String::as_str)
    }

    /// Records a value computed at import time (a `Constant` node or a folded node). A graph
    /// output keeps its name as an output container filled by an `Identity` copy of a hidden
    /// constant, because callers expect every output to be computed.
    fn constant_result(
        &mut self,
        b: &mut ScopeBuilder,
        label: &str,
        name: &str,
        value: Tensor,
    ) -> Result<(), OnnxError> {
        let name = non_empty(Some(&name.to_string()), || {
            format!("the output of node `{label}`")
        })?;
        let ty = TensorType::new(value.dtype(), static_shape(&value));
        if self.outputs.contains(&name) {
            let hidden = self.fresh_name(b, &format!("{name}_value"));
            self.declare(b, &hidden, label, &ty, DataKind::Constant)?;
            self.types.insert(hidden.clone(), ty.clone());
            self.constants.insert(hidden.clone(), value.into());
            return self.emit(
                b,
                label,
                IDENTITY,
                BTreeMap::new(),
                &[Some(hidden)],
                &[ty],
                &[name],
            );
        }
        self.define(&name, label)?;
        self.check_declared(&name, label, &ty)?;
        self.declare(b, &name, label, &ty, DataKind::Constant)?;
        self.types.insert(name.clone(), ty);
        self.constants.insert(name, value.into());
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

    /// The type of the tensor a node reads, or a dangling-reference error naming a later
    /// producer if any.
    fn resolve_input(
        &self,
        index: usize,
        label: &str,
        tensor: &str,
    ) -> Result<TensorType, OnnxError> {
        self.types
            .get(self.resolve(tensor))
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

    /// A container name starting with `base` that avoids every tensor name in the model and
    /// every declared container.
    fn fresh_name(&self, b: &ScopeBuilder, base: &str) -> String {
        std::iter::once(base.to_string())
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
