//! ONNX node attributes → IR library-node attributes, and the values of `Constant` nodes.

use super::error::OnnxError;
use super::opsets::{type_name, Schema};
use super::proto::attribute_proto::AttributeType;
use super::proto::{AttributeProto, GraphProto, NodeProto};
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
///
/// `schema` is the ONNX definition the node follows ([`super::opsets::resolve`]); with it,
/// every attribute is checked against its declared type and the required ones must be present,
/// before anything is converted. This is the one place attribute types are checked: operators
/// read attributes through `LibraryNode::int`/`ints`/…, which cannot tell a wrongly typed
/// attribute from an absent one, so a Conv whose `kernel_shape` is written as floats must be
/// refused here or it would silently fall back to the default.
pub fn convert(
    node: &NodeProto,
    label: &str,
    schema: Option<&Schema>,
) -> Result<BTreeMap<String, Attr>, OnnxError> {
    if let Some(schema) = schema {
        check_declared(node, label, schema)?;
    }
    attribute_values(node, &node.attribute, label, schema)
}

/// A node's graph attributes by name.
pub type GraphAttributes<'n> = BTreeMap<String, &'n GraphProto>;

/// The attributes of a control-flow node (`If`, `Loop`, `Scan`), checked like [`convert`]'s:
/// its graph attributes by name, and the others converted.
pub fn convert_with_graphs<'n>(
    node: &'n NodeProto,
    label: &str,
    schema: Option<&Schema>,
) -> Result<(BTreeMap<String, Attr>, GraphAttributes<'n>), OnnxError> {
    if let Some(schema) = schema {
        check_declared(node, label, schema)?;
    }
    let (graphs, plain): (Vec<&AttributeProto>, Vec<&AttributeProto>) = node
        .attribute
        .iter()
        .partition(|a| kind(a) == AttributeType::Graph);
    let plain: Vec<AttributeProto> = plain.into_iter().cloned().collect();
    let attrs = attribute_values(node, &plain, label, schema)?;
    let mut out = BTreeMap::new();
    for a in graphs {
        let name = a.name.clone().unwrap_or_default();
        let graph =
            a.g.as_ref()
                .ok_or_else(|| OnnxError::attribute(label, &name, "the graph is missing"))?;
        if out.insert(name.clone(), graph).is_some() {
            return Err(OnnxError::attribute(label, &name, "given twice"));
        }
    }
    Ok((attrs, out))
}

/// Converts `attributes` (those of `node`, or a part of them) to IR attributes.
fn attribute_values(
    node: &NodeProto,
    attributes: &[AttributeProto],
    label: &str,
    schema: Option<&Schema>,
) -> Result<BTreeMap<String, Attr>, OnnxError> {
    let mut out = BTreeMap::new();
    for a in attributes {
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
        let declared = schema.and_then(|s| s.declared(&name)).map(|d| d.ty);
        let ty = match (kind(a), declared) {
            (AttributeType::Undefined, Some(d)) => d,
            (found, _) => found,
        };
        let value = match ty {
            AttributeType::Int => Attr::Int(a.i.unwrap_or(0)),
            AttributeType::Float => Attr::Float(f64::from(a.f.unwrap_or(0.0))),
            AttributeType::Ints => Attr::Ints(a.ints.clone()),
            AttributeType::Floats => Attr::Floats(a.floats.iter().map(|v| f64::from(*v)).collect()),
            AttributeType::Strings => Attr::Strs(
                (a.strings.iter())
                    .map(|s| utf8(s, label, &name))
                    .collect::<Result<_, _>>()?,
            ),
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
                        "{} attributes are not supported (only int, float, ints, floats, string, strings)",
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

/// Checks the node's attributes against the definition it follows: each one declared (by it
/// or by an older definition of the operator) and of the declared type, each required one
/// present.
fn check_declared(node: &NodeProto, label: &str, schema: &Schema) -> Result<(), OnnxError> {
    let op = schema.op;
    for a in &node.attribute {
        let name = a.name.as_deref().unwrap_or_default();
        if name.is_empty() || a.ref_attr_name.is_some() {
            continue; // reported by `convert` with its own message
        }
        let Some(declared) = schema.declared(name) else {
            let known: Vec<&str> = schema.attrs.iter().map(|a| a.name).collect();
            return Err(OnnxError::UnknownAttribute {
                node: label.to_string(),
                op,
                attr: name.to_string(),
                version: schema.since,
                known: match known.is_empty() {
                    true => "none".into(),
                    false => known.join(", "),
                },
            });
        };
        let found = kind(a);
        // A list written without a `type` and without elements is an empty list of any type.
        let empty_list = found == AttributeType::Undefined
            && matches!(
                declared.ty,
                AttributeType::Ints | AttributeType::Floats | AttributeType::Strings
            );
        if found != declared.ty && !empty_list {
            return Err(OnnxError::AttributeType {
                node: label.to_string(),
                op,
                attr: name.to_string(),
                expected: type_name(declared.ty),
                found: type_name(found),
                version: schema.since,
            });
        }
    }
    let given = |name: &str| {
        node.attribute
            .iter()
            .any(|a| a.name.as_deref() == Some(name))
    };
    if let Some(missing) = schema.attrs.iter().find(|a| a.required && !given(a.name)) {
        return Err(OnnxError::MissingAttribute {
            node: label.to_string(),
            op,
            attr: missing.name.to_string(),
            expected: type_name(missing.ty),
            version: schema.since,
        });
    }
    Ok(())
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
    fn every_attribute_type_maps_to_its_ir_counterpart() {
        let attr = |name: &str, ty: AttributeType, f: fn(&mut AttributeProto)| {
            let mut a = AttributeProto {
                name: Some(name.into()),
                r#type: Some(ty as i32),
                ..Default::default()
            };
            f(&mut a);
            a
        };
        let node = NodeProto {
            op_type: Some("Anything".into()),
            attribute: vec![
                attr("i", AttributeType::Int, |a| a.i = Some(-2)),
                attr("f", AttributeType::Float, |a| a.f = Some(0.25)),
                attr("is", AttributeType::Ints, |a| a.ints = vec![1, 0]),
                attr("fs", AttributeType::Floats, |a| a.floats = vec![0.5, 2.0]),
                attr("s", AttributeType::String, |a| a.s = Some(b"edge".to_vec())),
            ],
            ..Default::default()
        };
        let expected = BTreeMap::from([
            ("i".to_string(), Attr::Int(-2)),
            ("f".to_string(), Attr::Float(0.25)),
            ("is".to_string(), Attr::Ints(vec![1, 0])),
            ("fs".to_string(), Attr::Floats(vec![0.5, 2.0])),
            ("s".to_string(), Attr::Str("edge".into())),
        ]);
        assert_eq!(convert(&node, "n", None).expect("converts"), expected);
    }

    #[test]
    fn constant_of_shape_value_becomes_number_and_type() {
        let big = (1i64 << 60) + 1;
        let attrs =
            convert(&node("ConstantOfShape", int64_tensor(vec![big])), "n", None).expect("ok");
        assert_eq!(attrs.get("value"), Some(&Attr::Int(big)));
        assert_eq!(attrs.get("value_type"), Some(&Attr::Str("i64".into())));
        let two = convert(
            &node("ConstantOfShape", int64_tensor(vec![1, 2])),
            "n",
            None,
        );
        assert!(matches!(two, Err(OnnxError::Attribute { attr, .. }) if attr == "value"));
        // Other operators' tensor attributes are still rejected.
        assert!(convert(&node("Cast", int64_tensor(vec![1])), "n", None).is_err());
    }
}
