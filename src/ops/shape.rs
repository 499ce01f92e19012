//! Data-movement operators that only rearrange elements: Transpose, Squeeze and Unsqueeze here,
//! Reshape and Flatten (which relinearise) in [`reshape`].
//!
//! Their expansions are single copy maps over the output whose source index is computed from the
//! output index: a permutation, an insertion or removal of size-1 indices, or (for reshapes)
//! floor division and modulo of the row-major linear position.

mod reshape;

use super::expand::{copy_map, elementwise_index};
use super::support::{arg, input_type, offset, opt_arg, resolve_axis, sym_shape, unravel};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, SymExpr, Tensor};
use std::collections::BTreeSet;

pub static OPS: &[&dyn Operator] = &[
    &Transpose,
    &reshape::Reshape,
    &reshape::Flatten,
    &Squeeze,
    &Unsqueeze,
];

/// First opset in which Squeeze / Unsqueeze take `axes` as an input instead of an attribute.
const AXES_INPUT_OPSET: i64 = 13;

/// Copies `x` into output 0 reading, for output index `idx`, the input element `source(idx)`.
fn expand_copy(
    ctx: &mut ExpandCtx,
    source: impl Fn(&[SymExpr]) -> Vec<SymExpr>,
) -> Result<(), OpError> {
    let (x, _) = ctx.input(0)?.clone();
    let (y, y_desc) = ctx.output(0)?.clone();
    let (params, idx) = elementwise_index(&y_desc.shape);
    copy_map(ctx.b, &ctx.label, params, &x, source(&idx), &y, idx);
    Ok(())
}

/// `x` with the same row-major data viewed under another shape.
fn reshaped(x: &Tensor, shape: Vec<usize>) -> Tensor {
    Tensor {
        shape,
        data: x.data.clone(),
    }
}

/// Static shape of an inferred type (for `eval`, which runs the shape rules on concrete shapes).
fn concrete(op: &str, t: &TensorType) -> Result<Vec<usize>, OpError> {
    t.static_shape()
        .ok_or_else(|| OpError::shape(op, "output shape is not concrete"))
}

/// Type of a concrete tensor.
fn type_of(t: &Tensor) -> TensorType {
    TensorType::new(t.dtype(), sym_shape(&t.shape))
}

/// `Y = transpose(X, perm)`; `perm` defaults to reversing the dimensions.
pub struct Transpose;

impl Transpose {
    fn perm(node: &LibraryNode, rank: usize) -> Result<Vec<usize>, OpError> {
        let Some(perm) = node.ints("perm") else {
            return Ok((0..rank).rev().collect());
        };
        let valid: Option<Vec<usize>> = perm
            .iter()
            .map(|&p| usize::try_from(p).ok().filter(|&p| p < rank))
            .collect();
        match valid {
            Some(v) if v.len() == rank && v.iter().collect::<BTreeSet<_>>().len() == rank => Ok(v),
            _ => Err(OpError::attr(
                "Transpose",
                "perm",
                format!("{perm:?} is not a permutation of 0..{rank}"),
            )),
        }
    }
}

impl Operator for Transpose {
    fn name(&self) -> &'static str {
        "Transpose"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Transpose", inputs, 0)?;
        let perm = Self::perm(node, x.shape.len())?;
        let shape = perm.iter().map(|&p| x.shape[p].clone()).collect();
        Ok(vec![TensorType::new(x.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Transpose", inputs, 0)?;
        let perm = Self::perm(node, x.shape.len())?;
        let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
        let strides = x.strides();
        let mut y = Tensor::zeros(x.dtype(), shape.clone());
        for e in 0..y.len() {
            let out = unravel(e, &shape);
            let mut src = vec![0; out.len()];
            for (d, &p) in perm.iter().enumerate() {
                src[p] = out[d];
            }
            y.set_f64(e, x.get_f64(offset(&src, &strides)));
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let perm = Self::perm(ctx.node, ctx.input(0)?.1.shape.len())?;
        expand_copy(ctx, |idx| {
            let mut src = vec![SymExpr::Int(0); idx.len()];
            for (d, &p) in perm.iter().enumerate() {
                src[p] = idx[d].clone();
            }
            src
        })
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// The `axes` of Squeeze / Unsqueeze: an attribute before opset 13, input 1 from opset 13. With
/// no `opset` attribute either form is accepted. `input` is `Some(value)` when input 1 is
/// present, with `None` as value when it is not a constant.
fn axes_of(
    op: &str,
    node: &LibraryNode,
    input: Option<Option<&Tensor>>,
) -> Result<Option<Vec<i64>>, OpError> {
    let opset = node.int("opset");
    let from_input = match input {
        None => None,
        Some(Some(t)) => Some(t.to_i64_vec()),
        Some(None) => {
            return Err(OpError::unsupported(
                op,
                "the axes (input 1) must be a constant",
            ))
        }
    };
    let from_attr = node.ints("axes").map(<[i64]>::to_vec);
    match opset {
        Some(v) if v < AXES_INPUT_OPSET => {
            if from_input.is_some() {
                return Err(OpError::shape(
                    op,
                    format!("opset {v} takes axes as an attribute, not as input 1"),
                ));
            }
            Ok(from_attr)
        }
        Some(_) => Ok(from_input),
        None => Ok(from_input.or(from_attr)),
    }
}

/// Resolves `axes` against `rank`, rejecting duplicates.
fn resolve_axes(op: &str, axes: &[i64], rank: usize) -> Result<BTreeSet<usize>, OpError> {
    let mut set = BTreeSet::new();
    for &a in axes {
        if !set.insert(resolve_axis(op, "axes", a, rank, false)?) {
            return Err(OpError::attr(op, "axes", format!("axis {a} appears twice")));
        }
    }
    Ok(set)
}

/// Input 1 as seen by [`axes_of`] during inference.
fn axes_input<'a>(
    inputs: &[Option<TensorType>],
    consts: &[Option<&'a Tensor>],
) -> Option<Option<&'a Tensor>> {
    inputs
        .get(1)
        .and_then(|t| t.as_ref())
        .map(|_| consts.get(1).copied().flatten())
}

/// Input 1 as seen by [`axes_of`] during expansion.
fn axes_constant<'a>(ctx: &'a ExpandCtx) -> Option<Option<&'a Tensor>> {
    ctx.inputs
        .get(1)
        .and_then(|i| i.as_ref())
        .map(|_| ctx.constant_input(1))
}

/// Removes size-1 dimensions: the listed `axes`, or every dimension of literal size 1.
pub struct Squeeze;

impl Squeeze {
    /// The input dimensions removed.
    fn removed(
        node: &LibraryNode,
        shape: &[SymExpr],
        input: Option<Option<&Tensor>>,
    ) -> Result<BTreeSet<usize>, OpError> {
        let one = SymExpr::Int(1);
        let Some(axes) = axes_of("Squeeze", node, input)? else {
            return Ok((0..shape.len()).filter(|&d| shape[d] == one).collect());
        };
        let set = resolve_axes("Squeeze", &axes, shape.len())?;
        if let Some(&d) = set.iter().find(|&&d| shape[d] != one) {
            return Err(OpError::shape(
                "Squeeze",
                format!("dimension {d} has size {}, not 1", shape[d]),
            ));
        }
        Ok(set)
    }

    fn out_type(
        node: &LibraryNode,
        x: &TensorType,
        input: Option<Option<&Tensor>>,
    ) -> Result<TensorType, OpError> {
        let removed = Self::removed(node, &x.shape, input)?;
        let shape = (0..x.shape.len())
            .filter(|d| !removed.contains(d))
            .map(|d| x.shape[d].clone())
            .collect();
        Ok(TensorType::new(x.dtype, shape))
    }
}

impl Operator for Squeeze {
    fn name(&self) -> &'static str {
        "Squeeze"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Squeeze", inputs, 0)?;
        Ok(vec![Self::out_type(node, x, axes_input(inputs, consts))?])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Squeeze", inputs, 0)?;
        let input = opt_arg(inputs, 1).map(Some);
        let out = Self::out_type(node, &type_of(x), input)?;
        Ok(vec![reshaped(x, concrete("Squeeze", &out)?)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let shape = ctx.input(0)?.1.shape.clone();
        let input = axes_constant(ctx);
        let removed = Self::removed(ctx.node, &shape, input)?;
        expand_copy(ctx, |idx| {
            let mut kept = idx.iter();
            (0..shape.len())
                .map(|d| match removed.contains(&d) {
                    true => SymExpr::Int(0),
                    false => kept.next().cloned().unwrap_or(SymExpr::Int(0)),
                })
                .collect()
        })
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// Inserts size-1 dimensions at `axes` (positions in the output).
pub struct Unsqueeze;

impl Unsqueeze {
    /// The output dimensions inserted.
    fn inserted(
        node: &LibraryNode,
        rank: usize,
        input: Option<Option<&Tensor>>,
    ) -> Result<BTreeSet<usize>, OpError> {
        let axes = axes_of("Unsqueeze", node, input)?
            .ok_or_else(|| OpError::attr("Unsqueeze", "axes", "is required"))?;
        resolve_axes("Unsqueeze", &axes, rank + axes.len())
    }

    fn out_type(
        node: &LibraryNode,
        x: &TensorType,
        input: Option<Option<&Tensor>>,
    ) -> Result<TensorType, OpError> {
        let inserted = Self::inserted(node, x.shape.len(), input)?;
        let mut dims = x.shape.iter();
        let shape = (0..x.shape.len() + inserted.len())
            .map(|d| match inserted.contains(&d) {
                true => SymExpr::Int(1),
                false => dims.next().cloned().unwrap_or(SymExpr::Int(1)),
            })
            .collect();
        Ok(TensorType::new(x.dtype, shape))
    }
}

impl Operator for Unsqueeze {
    fn name(&self) -> &'static str {
        "Unsqueeze"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Unsqueeze", inputs, 0)?;
        Ok(vec![Self::out_type(node, x, axes_input(inputs, consts))?])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Unsqueeze", inputs, 0)?;
        let input = opt_arg(inputs, 1).map(Some);
        let out = Self::out_type(node, &type_of(x), input)?;
        Ok(vec![reshaped(x, concrete("Unsqueeze", &out)?)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let rank = ctx.input(0)?.1.shape.len();
        let input = axes_constant(ctx);
        let inserted = Self::inserted(ctx.node, rank, input)?;
        expand_copy(ctx, |idx| {
            (0..idx.len())
                .filter(|d| !inserted.contains(d))
                .map(|d| idx[d].clone())
                .collect()
        })
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// Row-major strides of a symbolic shape.
fn sym_strides(shape: &[SymExpr]) -> Vec<SymExpr> {
    let mut strides = vec![SymExpr::Int(1); shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = &strides[d + 1] * shape[d + 1].clone();
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::tensor::row_major_strides;

    #[test]
    fn symbolic_strides_match_concrete_ones() {
        let shape = [2usize, 3, 4];
        let sym: Vec<SymExpr> = shape.iter().map(|&d| SymExpr::from(d)).collect();
        let strides: Vec<usize> = sym_strides(&sym)
            .iter()
            .map(|s| usize::try_from(s.as_int().unwrap_or(-1)).unwrap_or(0))
            .collect();
        assert_eq!(strides, row_major_strides(&shape));
    }
}
