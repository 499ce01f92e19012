//! Models from before opset 7 (old PyTorch and Caffe2 exports): their nodes are read with
//! today's semantics after three kinds of upgrade, the ones ONNX's own version converter makes.
//!
//! * Attributes that no longer mean anything are dropped: `consumed_inputs` (opset 1's
//!   in-place hints), `is_test` (BatchNormalization and Dropout; dmove only runs inference,
//!   which is what opset 7 made implicit) and Gemm's `broadcast` (always on since opset 7).
//! * Renamed or retyped attributes take their new form: Pad-1's `paddings` is `pads`, Cast-1's
//!   `to` names its type as a string, Concat before opset 4 defaults `axis` to 1, and Selu-1's
//!   defaults (`alpha` 1.6732, `gamma` 1.0507) become explicit, since Selu-6 changed them.
//! * Element-wise binary operators broadcast only with `broadcast = 1`, and then align `B` with
//!   `A` starting at `axis` instead of from the right. Numpy-style broadcasting of today
//!   computes the same result once `B` gets trailing unit axes, so an `Unsqueeze` of `B` is
//!   inserted where `axis` leaves some of `A`'s trailing axes uncovered. PRelu before opset 7
//!   applies a vector slope per channel (axis 1): the same rewrite at axis 1.

use super::Importer;
use crate::ir::build::ScopeBuilder;
use crate::ir::Attr;
use crate::onnx::error::OnnxError;
use crate::onnx::proto::attribute_proto::AttributeType;
use crate::onnx::proto::tensor_proto::DataType;
use crate::onnx::proto::{AttributeProto, NodeProto};
use crate::ops::OpError;
use std::collections::BTreeMap;

/// The first opset with numpy-style broadcasting and without the attributes upgraded here.
pub(super) const MODERN_OPSET: i64 = 7;

/// Operators that took `broadcast`/`axis` attributes before opset 7.
const LEGACY_BROADCAST: [&str; 11] = [
    "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less",
];

/// Rewrites the attributes of a pre-opset-7 node to their opset-7 form (see the module docs).
pub(super) fn upgrade_attrs(
    op: &str,
    opset: i64,
    attrs: &mut BTreeMap<String, Attr>,
) -> Result<(), OpError> {
    attrs.remove("consumed_inputs");
    if matches!(op, "BatchNormalization" | "Dropout") {
        attrs.remove("is_test");
    }
    if op == "BatchNormalization" && attrs.get("spatial").is_some_and(|s| *s != Attr::Int(1)) {
        return Err(OpError::unsupported(
            op,
            "`spatial = 0` (statistics per element instead of per channel) is not supported",
        ));
    }
    if op == "Gemm" || LEGACY_BROADCAST.contains(&op) {
        // Binary operators' broadcasting is rewritten in `Importer::legacy_broadcast`.
        attrs.remove("broadcast");
        attrs.remove("axis");
    }
    if op == "Pad" {
        if let Some(pads) = attrs.remove("paddings") {
            attrs.insert("pads".into(), pads);
        }
    }
    if op == "Selu" {
        // Selu-1's defaults were rounded to four decimals; Selu-6 made them exact.
        for (name, value) in [("alpha", 1.6732_f32), ("gamma", 1.0507_f32)] {
            attrs
                .entry(name.into())
                .or_insert(Attr::Float(f64::from(value)));
        }
    }
    if op == "Concat" && opset < 4 {
        attrs.entry("axis".into()).or_insert(Attr::Int(1));
    }
    if op == "Cast" {
        if let Some(Attr::Str(name)) = attrs.get("to") {
            let to = DataType::from_str_name(name).ok_or_else(|| {
                OpError::unsupported(op, format!("`to = {name}` names no ONNX element type"))
            })?;
            attrs.insert("to".into(), Attr::Int(to as i64));
        }
    }
    Ok(())
}

/// The integer attribute `name` of `node`, if present.
fn int_attr(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute
        .iter()
        .find(|a| a.name.as_deref() == Some(name))
        .and_then(|a| a.i)
}

impl Importer<'_> {
    /// For a pre-opset-7 binary node with `broadcast = 1` whose `axis` leaves trailing axes of
    /// `A` uncovered by `B`: imports an `Unsqueeze` giving `B` those unit axes and returns the
    /// node rewritten to read it. `None` when the node needs no rewrite.
    pub(super) fn legacy_broadcast(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        b: &mut ScopeBuilder,
    ) -> Result<Option<NodeProto>, OnnxError> {
        let op = node.op_type.as_deref().unwrap_or_default();
        let prelu = op == "PRelu";
        if !prelu && (!LEGACY_BROADCAST.contains(&op) || int_attr(node, "broadcast") != Some(1)) {
            return Ok(None);
        }
        let [a, b_name] = node.input.as_slice() else {
            return Ok(None);
        };
        let rank_a = self.resolve_input(index, label, a)?.shape.len();
        let slope = self.resolve_input(index, label, b_name)?.shape;
        let rank_b = slope.len();
        let axis = if prelu {
            // PRelu-6's slope is one value or one per channel (axis 1).
            let per_channel = rank_a >= 2 && rank_b == 1 && slope[0].as_int() != Some(1);
            if !per_channel {
                return Ok(None);
            }
            1
        } else {
            int_attr(node, "axis").unwrap_or((rank_a - rank_b.min(rank_a)) as i64)
        };
        let axis = if axis < 0 { axis + rank_a as i64 } else { axis };
        let trailing = rank_a as i64 - axis - rank_b as i64;
        if axis < 0 || trailing < 0 {
            return Err(OnnxError::Infer {
                node: label.to_string(),
                op: op.to_string(),
                source: Box::new(OpError::shape(
                    op,
                    format!(
                        "legacy broadcast of a rank-{rank_b} B at axis {axis} does not fit \
                         in a rank-{rank_a} A"
                    ),
                )),
            });
        }
        let mut upgraded = node.clone();
        upgraded
            .attribute
            .retain(|a| !matches!(a.name.as_deref(), Some("broadcast" | "axis")));
        if trailing == 0 {
            return Ok(Some(upgraded));
        }
        let unit_axes = AttributeProto {
            name: Some("axes".into()),
            r#type: Some(AttributeType::Ints as i32),
            ints: (rank_b as i64..rank_b as i64 + trailing).collect(),
            ..AttributeProto::default()
        };
        let unsqueezed = self.fresh_onnx_name(&format!("{b_name}_aligned"));
        let unsqueeze = NodeProto {
            op_type: Some("Unsqueeze".into()),
            input: vec![b_name.clone()],
            output: vec![unsqueezed.clone()],
            attribute: vec![unit_axes],
            ..NodeProto::default()
        };
        self.node(index, &unsqueeze, &format!("{label}_align_b"), b)?;
        upgraded.input[1] = unsqueezed;
        Ok(Some(upgraded))
    }

    /// A tensor name the model does not use, reserved for an importer-made node.
    fn fresh_onnx_name(&mut self, base: &str) -> String {
        let name = std::iter::once(base.to_string())
            .chain((1..).map(|j| format!("{base}_{j}")))
            .find(|n| !self.all_names.contains(n))
            .expect("unbounded candidate names");
        self.all_names.insert(name.clone());
        name
    }
}
