//! Building ONNX models in memory, so demos and tests need no Python or model files.
//!
//! ```
//! use dmove::onnx::writer::{AttrValue, ModelBuilder};
//! let bytes = ModelBuilder::new("chain", 17)
//!     .input("x", ["N", "3"])
//!     .node("Identity", &["x"], &["y"], vec![])
//!     .output("y", ["N", "3"])
//!     .encode();
//! assert!(!bytes.is_empty());
//! ```

use super::proto::attribute_proto::AttributeType;
use super::proto::tensor_proto::DataType;
use super::proto::tensor_shape_proto::dimension::Value as DimValue;
use super::proto::tensor_shape_proto::Dimension;
use super::proto::type_proto::{Tensor as TensorTypeProto, Value as TypeValue};
use super::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use super::tensor::{code_of, encode_tensor};
use crate::ir::{DType, Tensor};
use prost::Message;

/// The IR version written (ONNX 1.15 and later read it).
const IR_VERSION: i64 = 9;

/// One dimension of a declared shape: a number, or a symbolic `dim_param`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimSpec {
    Fixed(i64),
    Param(String),
}

impl From<i64> for DimSpec {
    fn from(v: i64) -> Self {
        DimSpec::Fixed(v)
    }
}

impl From<&str> for DimSpec {
    /// A string that parses as an integer is a fixed dimension, anything else a `dim_param`, so
    /// mixed shapes can be written as `["N", "3"]`.
    fn from(s: &str) -> Self {
        s.parse()
            .map_or_else(|_| DimSpec::Param(s.to_string()), DimSpec::Fixed)
    }
}

/// A node attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    Int(i64),
    Float(f32),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    Str(String),
}

/// Builds a `ModelProto` with one graph importing the default opset.
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    model: ModelProto,
    graph: GraphProto,
}

fn value_info(name: &str, elem: DataType, dims: Vec<DimSpec>) -> ValueInfoProto {
    let dim = dims
        .into_iter()
        .map(|d| Dimension {
            denotation: None,
            value: Some(match d {
                DimSpec::Fixed(v) => DimValue::DimValue(v),
                DimSpec::Param(p) => DimValue::DimParam(p),
            }),
        })
        .collect();
    ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(TypeProto {
            denotation: None,
            value: Some(TypeValue::TensorType(TensorTypeProto {
                elem_type: Some(elem as i32),
                shape: Some(TensorShapeProto { dim }),
            })),
        }),
        ..Default::default()
    }
}

pub(crate) fn attribute(name: &str, value: AttrValue) -> AttributeProto {
    let mut a = AttributeProto {
        name: Some(name.to_string()),
        ..Default::default()
    };
    let ty = match value {
        AttrValue::Int(v) => {
            a.i = Some(v);
            AttributeType::Int
        }
        AttrValue::Float(v) => {
            a.f = Some(v);
            AttributeType::Float
        }
        AttrValue::Ints(v) => {
            a.ints = v;
            AttributeType::Ints
        }
        AttrValue::Floats(v) => {
            a.floats = v;
            AttributeType::Floats
        }
        AttrValue::Str(v) => {
            a.s = Some(v.into_bytes());
            AttributeType::String
        }
    };
    a.r#type = Some(ty as i32);
    a
}

/// A tensor with little-endian `raw_data`, the layout exporters write for weights.
fn raw_tensor(name: &str, dims: &[i64], elem: DataType, raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        dims: dims.to_vec(),
        data_type: Some(elem as i32),
        raw_data: Some(raw),
        ..Default::default()
    }
}

impl ModelBuilder {
    /// A model named `name` importing opset `opset` of the default domain.
    pub fn new(name: &str, opset: i64) -> Self {
        let model = ModelProto {
            ir_version: Some(IR_VERSION),
            producer_name: Some("dmove".into()),
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(opset),
            }],
            ..Default::default()
        };
        let graph = GraphProto {
            name: Some(name.to_string()),
            ..Default::default()
        };
        ModelBuilder { model, graph }
    }

    /// Sets the IR version the model claims (the default is an older one every reader knows).
    pub fn ir_version(mut self, version: i64) -> Self {
        self.model.ir_version = Some(version);
        self
    }

    /// Declares an additional operator-set import.
    pub fn opset_import(mut self, domain: &str, version: i64) -> Self {
        self.model.opset_import.push(OperatorSetIdProto {
            domain: Some(domain.to_string()),
            version: Some(version),
        });
        self
    }

    /// A float graph input.
    pub fn input<D: Into<DimSpec>>(
        mut self,
        name: &str,
        dims: impl IntoIterator<Item = D>,
    ) -> Self {
        let dims = dims.into_iter().map(Into::into).collect();
        self.graph
            .input
            .push(value_info(name, DataType::Float, dims));
        self
    }

    /// A float graph output.
    pub fn output<D: Into<DimSpec>>(
        mut self,
        name: &str,
        dims: impl IntoIterator<Item = D>,
    ) -> Self {
        let dims = dims.into_iter().map(Into::into).collect();
        self.graph
            .output
            .push(value_info(name, DataType::Float, dims));
        self
    }

    /// A graph input of element type `dtype`.
    pub fn input_typed<D: Into<DimSpec>>(
        mut self,
        name: &str,
        dtype: DType,
        dims: impl IntoIterator<Item = D>,
    ) -> Self {
        let dims = dims.into_iter().map(Into::into).collect();
        self.graph
            .input
            .push(value_info(name, code_of(dtype), dims));
        self
    }

    /// A graph output of element type `dtype`.
    pub fn output_typed<D: Into<DimSpec>>(
        mut self,
        name: &str,
        dtype: DType,
        dims: impl IntoIterator<Item = D>,
    ) -> Self {
        let dims = dims.into_iter().map(Into::into).collect();
        self.graph
            .output
            .push(value_info(name, code_of(dtype), dims));
        self
    }

    /// An initializer of any element type, stored as `raw_data` (4-bit integers packed).
    pub fn initializer_tensor(mut self, name: &str, value: &Tensor) -> Self {
        self.graph.initializer.push(encode_tensor(name, value));
        self
    }

    /// A declared float type for an intermediate tensor (`value_info`).
    pub fn value_info<D: Into<DimSpec>>(
        mut self,
        name: &str,
        dims: impl IntoIterator<Item = D>,
    ) -> Self {
        let dims = dims.into_iter().map(Into::into).collect();
        self.graph
            .value_info
            .push(value_info(name, DataType::Float, dims));
        self
    }

    /// A float initializer stored as `raw_data`.
    pub fn initializer(mut self, name: &str, dims: &[i64], values: Vec<f32>) -> Self {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.graph
            .initializer
            .push(raw_tensor(name, dims, DataType::Float, raw));
        self
    }

    /// An int64 initializer stored as `raw_data`.
    pub fn initializer_i64(mut self, name: &str, dims: &[i64], values: Vec<i64>) -> Self {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.graph
            .initializer
            .push(raw_tensor(name, dims, DataType::Int64, raw));
        self
    }

    /// An unnamed node (the importer labels it `<op>_<index>`).
    pub fn node(
        self,
        op: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<(&str, AttrValue)>,
    ) -> Self {
        self.named_node("", op, inputs, outputs, attrs)
    }

    /// A node with a name (an empty input name is an absent optional input).
    pub fn named_node(
        mut self,
        name: &str,
        op: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<(&str, AttrValue)>,
    ) -> Self {
        self.graph.node.push(NodeProto {
            name: (!name.is_empty()).then(|| name.to_string()),
            op_type: Some(op.to_string()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            attribute: attrs.into_iter().map(|(n, v)| attribute(n, v)).collect(),
            ..Default::default()
        });
        self
    }

    /// A control-flow node (`If`, `Loop`, `Scan`): `graphs` are its graph attributes (bodies and
    /// branches, built with [`ModelBuilder::into_graph`]), `attrs` the others.
    pub fn control_node(
        mut self,
        op: &str,
        inputs: &[&str],
        outputs: &[&str],
        graphs: Vec<(&str, GraphProto)>,
        attrs: Vec<(&str, AttrValue)>,
    ) -> Self {
        self = self.node(op, inputs, outputs, attrs);
        let node = self.graph.node.last_mut().expect("just added");
        node.attribute
            .extend(graphs.into_iter().map(|(name, g)| AttributeProto {
                name: Some(name.to_string()),
                r#type: Some(AttributeType::Graph as i32),
                g: Some(g),
                ..Default::default()
            }));
        self
    }

    /// The graph alone, as the body or branch of a control-flow node: its inputs, outputs,
    /// initializers and nodes (the opset is the enclosing model's).
    pub fn into_graph(self) -> GraphProto {
        self.graph
    }

    /// A `Constant` node whose `value` attribute is a float tensor.
    pub fn constant(self, output: &str, dims: &[i64], values: Vec<f32>) -> Self {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant_node(raw_tensor(output, dims, DataType::Float, raw))
    }

    /// A `Constant` node whose `value` attribute is an int64 tensor: PyTorch's exporter writes
    /// the axes, indices and shape pieces of its shape subgraphs this way.
    pub fn constant_i64(self, output: &str, dims: &[i64], values: Vec<i64>) -> Self {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant_node(raw_tensor(output, dims, DataType::Int64, raw))
    }

    /// A `Constant` node producing `value` under the tensor's own name.
    fn constant_node(mut self, value: TensorProto) -> Self {
        let output = value.name.clone();
        self.graph.node.push(NodeProto {
            op_type: Some("Constant".into()),
            output: output.into_iter().collect(),
            attribute: vec![AttributeProto {
                name: Some("value".into()),
                r#type: Some(AttributeType::Tensor as i32),
                t: Some(value),
                ..Default::default()
            }],
            ..Default::default()
        });
        self
    }

    pub fn build(self) -> ModelProto {
        ModelProto {
            graph: Some(self.graph),
            ..self.model
        }
    }

    /// The serialized model, as it would be stored in a `.onnx` file.
    pub fn encode(self) -> Vec<u8> {
        self.build().encode_to_vec()
    }
}
