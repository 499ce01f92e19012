//! Types of graph inputs (with the user's dimension bindings) and checks of declared types
//! (graph outputs, `value_info`) against inferred ones.

use super::error::OnnxError;
use super::import::ImportOptions;
use super::proto::tensor_shape_proto::dimension::Value as DimValue;
use super::proto::type_proto::Value as TypeValue;
use super::proto::{TensorShapeProto, ValueInfoProto};
use super::tensor::dtype_of;
use crate::ir::{DType, SymExpr};
use crate::ops::TensorType;
use std::collections::{BTreeMap, BTreeSet};

/// What a `ValueInfoProto` says about a tensor: its element type code and, when known, its
/// shape (`None` = unknown rank).
fn tensor_type<'v>(
    vi: &'v ValueInfoProto,
    name: &str,
) -> Result<(i32, Option<&'v TensorShapeProto>), OnnxError> {
    match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(TypeValue::TensorType(t)) => Ok((t.elem_type.unwrap_or(0), t.shape.as_ref())),
        Some(TypeValue::SequenceType(_)) => not_dense(name, "a sequence (TypeProto.sequence_type)"),
        Some(TypeValue::MapType(_)) => not_dense(name, "a map (TypeProto.map_type)"),
        Some(TypeValue::OptionalType(_)) => {
            not_dense(name, "an optional (TypeProto.optional_type)")
        }
        Some(TypeValue::SparseTensorType(_)) => {
            not_dense(name, "a sparse tensor (TypeProto.sparse_tensor_type)")
        }
        Some(TypeValue::OpaqueType(_)) => {
            not_dense(name, "an opaque value (TypeProto.opaque_type)")
        }
        None => Err(OnnxError::value_type(name, "has no type")),
    }
}

fn not_dense<T>(name: &str, kind: &str) -> Result<T, OnnxError> {
    Err(OnnxError::value_type(
        name,
        format!("is {kind}; dmove supports dense tensors only"),
    ))
}

/// Symbol bindings collected while typing the graph inputs.
#[derive(Default)]
pub struct Symbols {
    /// Every symbol in input shapes, with its value when bound.
    pub values: BTreeMap<String, Option<i64>>,
}

impl Symbols {
    /// Records `name`, bound to `value` if given; a second, different binding is an error.
    fn bind(&mut self, name: &str, value: Option<i64>, input: &str) -> Result<(), OnnxError> {
        let slot = self.values.entry(name.to_string()).or_insert(None);
        match (*slot, value) {
            (Some(old), Some(new)) if old != new => Err(OnnxError::options(format!(
                "dimension `{name}` is bound to {old} and, through input `{input}`, to {new}"
            ))),
            (None, Some(new)) => {
                *slot = Some(new);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Symbol `name` of input `input`, bound by `opts.dims` if it says so: its value when it
    /// has one, else the symbol.
    fn dimension(
        &mut self,
        name: &str,
        opts: &ImportOptions,
        input: &str,
    ) -> Result<SymExpr, OnnxError> {
        self.bind(name, opts.dims.get(name).copied(), input)?;
        Ok(match self.values.get(name).copied().flatten() {
            Some(v) => SymExpr::Int(v),
            None => SymExpr::sym(name),
        })
    }
}

/// The type of graph input `vi`. Fixed dimensions stay literals. A `dim_param` is a symbol,
/// replaced by its value wherever one is known — from `opts.dims`, or from `opts.input_shapes`
/// of any input that uses it (so `syms` must already hold every input's bindings: the importer
/// types the inputs once to collect them, then again) — because every shape computation
/// downstream (convolution arithmetic, Resize, Reshape, Slice…) then sees numbers. A dimension
/// with neither a value nor a name (`-1`, an empty `dim_param`, nothing), as Paddle and
/// TensorFlow exports write them, is the position's value from `opts.input_shapes`, or else a
/// fresh symbol `<input>_dim<i>` that `opts.dims` may bind.
pub fn input_type(
    vi: &ValueInfoProto,
    name: &str,
    opts: &ImportOptions,
    syms: &mut Symbols,
) -> Result<TensorType, OnnxError> {
    let (elem, shape) = tensor_type(vi, name)?;
    let dtype = dtype_of(elem, &format!("graph input `{name}`"))?;
    let given = opts.input_shapes.get(name);
    if let Some(g) = given {
        if let Some(d) = g.iter().find(|d| **d < 0) {
            return Err(OnnxError::options(format!(
                "input_shapes gives input `{name}` the negative dimension {d}"
            )));
        }
    }
    let Some(shape) = shape else {
        return match given {
            Some(g) => Ok(TensorType::new(
                dtype,
                g.iter().map(|d| SymExpr::Int(*d)).collect(),
            )),
            None => Err(OnnxError::value_type(
                name,
                "has no shape; give one with the input shape option",
            )),
        };
    };
    if let Some(g) = given.filter(|g| g.len() != shape.dim.len()) {
        return Err(OnnxError::options(format!(
            "input_shapes gives input `{name}` {} dimension(s) but the model declares {}",
            g.len(),
            shape.dim.len()
        )));
    }
    let mut dims = Vec::with_capacity(shape.dim.len());
    for (i, d) in shape.dim.iter().enumerate() {
        let wanted = given.map(|g| g[i]);
        let dim = match &d.value {
            Some(DimValue::DimValue(v)) if *v >= 0 => {
                if let Some(w) = wanted.filter(|w| w != v) {
                    return Err(OnnxError::options(format!(
                        "input_shapes gives dimension {i} of input `{name}` the value {w} but the model fixes it to {v}"
                    )));
                }
                SymExpr::Int(*v)
            }
            Some(DimValue::DimParam(p)) if !p.is_empty() => {
                syms.bind(p, wanted, name)?;
                syms.dimension(p, opts, name)?
            }
            _ => match wanted {
                Some(w) => SymExpr::Int(w),
                None => syms.dimension(&format!("{name}_dim{i}"), opts, name)?,
            },
        };
        dims.push(dim);
    }
    Ok(TensorType::new(dtype, dims))
}

/// Rejects options that name nothing in the model, so a typo does not pass silently.
pub fn check_options(
    opts: &ImportOptions,
    inputs: &BTreeSet<String>,
    syms: &Symbols,
) -> Result<(), OnnxError> {
    let names = |set: Vec<&String>| {
        if set.is_empty() {
            "none".to_string()
        } else {
            set.iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    if let Some(bad) = opts.input_shapes.keys().find(|k| !inputs.contains(*k)) {
        return Err(OnnxError::options(format!(
            "input_shapes names `{bad}`, which is not a graph input (inputs: {})",
            names(inputs.iter().collect())
        )));
    }
    if let Some(bad) = opts.dims.keys().find(|k| !syms.values.contains_key(*k)) {
        return Err(OnnxError::options(format!(
            "dims binds `{bad}`, which no input dimension uses (symbolic dimensions: {})",
            names(syms.values.keys().collect())
        )));
    }
    Ok(())
}

/// Checks a declared type against the inferred one: element type, rank and every dimension
/// that both sides fix to a number. `node` is the producer, for the message.
pub fn check_declared(
    vi: &ValueInfoProto,
    name: &str,
    node: &str,
    inferred: &TensorType,
) -> Result<(), OnnxError> {
    let (elem, shape) = tensor_type(vi, name)?;
    let dtype: Option<DType> = if elem == 0 {
        None
    } else {
        Some(dtype_of(elem, &format!("the declared type of `{name}`"))?)
    };
    let declared_dims: Option<Vec<Option<i64>>> = shape.map(|s| {
        s.dim
            .iter()
            .map(|d| match d.value {
                // `-1` is how some exporters write "unknown".
                Some(DimValue::DimValue(v)) if v >= 0 => Some(v),
                _ => None,
            })
            .collect()
    });
    let dtype_ok = dtype.is_none_or(|d| d == inferred.dtype);
    let shape_ok = declared_dims.as_ref().is_none_or(|dims| {
        dims.len() == inferred.shape.len()
            && dims
                .iter()
                .zip(&inferred.shape)
                .all(|(d, e)| match (d, e.as_int()) {
                    (Some(a), Some(b)) => *a == b,
                    _ => true,
                })
    });
    if dtype_ok && shape_ok {
        return Ok(());
    }
    let declared = format!(
        "{}[{}]",
        dtype.map_or("?".to_string(), |d| d.to_string()),
        declared_dims.map_or("?".to_string(), |dims| dims
            .iter()
            .map(|d| d.map_or("?".to_string(), |v| v.to_string()))
            .collect::<Vec<_>>()
            .join(", "))
    );
    Err(OnnxError::ShapeMismatch {
        tensor: name.to_string(),
        node: node.to_string(),
        declared,
        inferred: render(inferred),
    })
}

/// `f32[N, 3]`.
pub fn render(t: &TensorType) -> String {
    let dims: Vec<String> = t.shape.iter().map(ToString::to_string).collect();
    format!("{}[{}]", t.dtype, dims.join(", "))
}
