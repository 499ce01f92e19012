//! ONNX node attributes → IR library-node attributes, and the values of `Constant` nodes.

use super::error::OnnxError;
use super::proto::attribute_proto::AttributeType;
use super::proto::{AttributeProto, NodeProto};
use super::tensor::decode_tensor;
use crate::ir::{Attr, DType, Tensor};
use std::collections::BTreeMap;
use std::path::Path;

/// The attribute's type: the declared one, or for files that predate the `type` field
/// (IR version < 3 writers), the one implied by the populated field.
fn kind(a: &AttributeProto) -> AttributeType {
    match a.r#type.and_then(|t| AttributeType::try_from(t).ok()) {
        Some(t) if t != AttributeType::Undefined => t,
        _ if a.f.is_some() => AttributeType::Float,
        _ if a.i.is_some() => AttributeType::Int,
        _ if a.s.is_some() => AttributeType::String,
        _ if a.t.is_some() => AttributeType::Tensor,
        _ if a.g.is_some() => AttributeType::Graph,
        _ if !a.floats.is_empty() => AttributeType::Floats,
        _ if !a.ints.is_empty() => AttributeType::Ints,
        _ if !a.strings.is_empty() => AttributeType::Strings,
        _ => AttributeType::Undefined,
    }
}

/// Converts the attributes of an ordinary (non-`Constant`) node; `label` names the node in errors.
/// Tensor, graph and other compound attributes have no IR counterpart and are rejected, except
/// ConstantOfShape's one-element `value` tensor (see [`fill_value`]).
pub fn convert(node: &NodeProto, label: &str) -> Result<BTreeMap<String, Attr>, OnnxError> {
    let mut out = BTreeMap::new();
    for a in &node.attribute {
        let name = a.name.clone().unwrap_or_default();
        if name.is_empty() {
            return Err(OnnxError::EmptyName {
                what: format!("an attribute of node `{label}`"),
            });
        }
        if a.ref_attr_name.is_some() {
            return Err(OnnxError::attribute(
                label,
                &name,
                "references a function attribute, which is only valid inside functions",
            ));
        }
        let value = match kind(a) {
            AttributeType::Int => Attr::Int(a.i.unwrap_or(0)),
            AttributeType::Float => Attr::Float(f64::from(a.f.unwrap_or(0.0))),
            AttributeType::Ints => Attr::Ints(a.ints.clone()),
            AttributeType::Floats => Attr::Floats(a.floats.iter().map(|v| f64::from(*v)).collect()),
            AttributeType::String => {
                Attr::Str(utf8(a.s.as_deref().unwrap_or_default(), label, &name)?)
            }
            AttributeType::Tensor
                if name == "value" && node.op_type.as_deref() == Some("ConstantOfShape") =>
            {
                let (value, dtype) = fill_value(a, label)?;
                out.insert(
                    "value_type".to_string(),
                    Attr::Str(dtype.name().to_string()),
                );
                value
            }
            other => {
                return Err(OnnxError::attribute(
                    label,
                    &name,
                    format!(
                        "{} attributes are not supported (only int, float, ints, floats, string)",
                        other.as_str_name()
                    ),
                ))
            }
        };
        if out.insert(name.clone(), value).is_some() {
            return Err(OnnxError::attribute(label, &name, "given twice"));
        }
    }
    Ok(out)
}

/// ConstantOfShape's `value`: a one-element tensor whose type is the output's. It becomes the
/// number (`Attr::Int` for integer types, so large values stay exact, else `Attr::Float`) and
/// its element type, which the operator reads back as attribute `value_type`.
fn fill_value(a: &AttributeProto, label: &str) -> Result<(Attr, DType), OnnxError> {
    let t =
        a.t.as_ref()
            .ok_or_else(|| OnnxError::attribute(label, "value", "the tensor is missing"))?;
    let value = decode_tensor(t, label, None)?;
    if value.len() != 1 {
        return Err(OnnxError::attribute(
            label,
            "value",
            format!("must hold exactly one element, holds {}", value.len()),
        ));
    }
    let dtype = value.dtype();
    let attr = match dtype {
        d if d.is_int() => Attr::Int(value.to_i64_vec()[0]),
        _ => Attr::Float(value.get_f64(0)),
    };
    Ok((attr, dtype))
}

fn utf8(bytes: &[u8], label: &str, name: &str) -> Result<String, OnnxError> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| OnnxError::attribute(label, name, "string is not valid UTF-8"))
}

/// The value of a `Constant` node: exactly one of `value`, `value_float(s)`, `value_int(s)`.
/// Scalars become rank-0 tensors, lists rank-1, as in the ONNX specification.
pub fn constant_value(
    node: &NodeProto,
    label: &str,
    base_dir: Option<&Path>,
) -> Result<Tensor, OnnxError> {
    let [a] = node.attribute.as_slice() else {
        return Err(OnnxError::attribute(
            label,
            "value",
            format!(
                "a Constant node needs exactly one value attribute, found {}",
                node.attribute.len()
            ),
        ));
    };
    let name = a.name.as_deref().unwrap_or_default();
    let wrong_type =
        || OnnxError::attribute(label, name, format!("has type {}", kind(a).as_str_name()));
    match (name, kind(a)) {
        ("value", AttributeType::Tensor) => {
            let t = a.t.as_ref().ok_or_else(wrong_type)?;
            let output = node.output.first().map(String::as_str).unwrap_or(label);
            decode_tensor(t, output, base_dir)
        }
        ("value_float", AttributeType::Float) => Ok(Tensor::f32(vec![], vec![a.f.unwrap_or(0.0)])),
        ("value_floats", AttributeType::Floats) => {
            Ok(Tensor::f32(vec![a.floats.len()], a.floats.clone()))
        }
        ("value_int", AttributeType::Int) => Ok(Tensor::i64(vec![], vec![a.i.unwrap_or(0)])),
        ("value_ints", AttributeType::Ints) => Ok(Tensor::i64(vec![a.ints.len()], a.ints.clone())),
        ("value" | "value_float" | "value_floats" | "value_int" | "value_ints", _) => {
            Err(wrong_type())
        }
        _ => Err(OnnxError::attribute(
            label,
            name,
            "unsupported Constant attribute (value, value_float(s) and value_int(s) are supported)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::TensorProto;

    fn node(op: &str, value: TensorProto) -> NodeProto {
        NodeProto {
            op_type: Some(op.to_string()),
            attribute: vec![AttributeProto {
                name: Some("value".into()),
                r#type: Some(AttributeType::Tensor as i32),
                t: Some(value),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn int64_tensor(values: Vec<i64>) -> TensorProto {
        TensorProto {
            dims: vec![values.len() as i64],
            data_type: Some(7),
            int64_data: values,
            ..Default::default()
        }
    }

    #[test]
    fn constant_of_shape_value_becomes_number_and_type() {
        let big = (1i64 << 60) + 1;
        let attrs = convert(&node("ConstantOfShape", int64_tensor(vec![big])), "n").expect("ok");
        assert_eq!(attrs.get("value"), Some(&Attr::Int(big)));
        assert_eq!(attrs.get("value_type"), Some(&Attr::Str("i64".into())));
        let two = convert(&node("ConstantOfShape", int64_tensor(vec![1, 2])), "n");
        assert!(matches!(two, Err(OnnxError::Attribute { attr, .. }) if attr == "value"));
        // Other operators' tensor attributes are still rejected.
        assert!(convert(&node("Cast", int64_tensor(vec![1])), "n").is_err());
    }
}
