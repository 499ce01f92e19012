//! Concat and Split: joining tensors along an axis and cutting one into slabs.
//!
//! Both expand into one copy map per slab, the slab's position along the axis being a constant
//! offset added to (Concat) or read from (Split) the map parameter of that axis. Slabs of size
//! zero get no map.

use super::expand::{copy_map, elementwise_index};
use super::movement::{
    attr_or_input, concrete, copy_element, gather, has_zero_extent, to_usize, type_of, Param,
};
use super::support::{arg, input_type, resolve_axis, same_dtype};
use super::window::{multi_indices, same_dim, static_dims};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Concat, &Split];

/// Upper bound on the inputs of Concat and the outputs of Split: the operators are variadic, the
/// bound only keeps arity checks meaningful.
const MAX_VARIADIC: usize = 4096;

/// Running sums `[0, a, a+b, …]` of the extents along an axis.
fn offsets(extents: impl Iterator<Item = SymExpr>) -> Vec<SymExpr> {
    let mut out = vec![SymExpr::Int(0)];
    for e in extents {
        let last = out.last().cloned().unwrap_or(SymExpr::Int(0));
        out.push(last + e);
    }
    out
}

/// `Y = concat(X₀, X₁, …; axis)`: every input has the same rank and the same extents outside
/// `axis`.
pub struct Concat;

impl Concat {
    /// The resolved axis and the output type.
    fn out_type(
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
    ) -> Result<(usize, TensorType), OpError> {
        const OP: &str = "Concat";
        let first = input_type(OP, inputs, 0)?;
        let rank = first.shape.len();
        if rank == 0 {
            return Err(OpError::shape(OP, "cannot concatenate scalars (rank 0)"));
        }
        let axis = node
            .int("axis")
            .ok_or_else(|| OpError::attr(OP, "axis", "is required"))?;
        let axis = resolve_axis(OP, "axis", axis, rank, false)?;
        let mut shape = first.shape.clone();
        for i in 1..inputs.len() {
            let t = input_type(OP, inputs, i)?;
            same_dtype(OP, first, t, i)?;
            if t.shape.len() != rank {
                return Err(OpError::shape(
                    OP,
                    format!(
                        "input {i} has rank {} but input 0 has rank {rank}",
                        t.shape.len()
                    ),
                ));
            }
            for d in (0..rank).filter(|&d| d != axis) {
                same_dim(OP, &t.shape[d], &first.shape[d], || {
                    format!(
                        "input {i} has extent {} in dimension {d} but input 0 has {}",
                        t.shape[d], first.shape[d]
                    )
                })?;
            }
            shape[axis] = &shape[axis] + t.shape[axis].clone();
        }
        Ok((axis, TensorType::new(first.dtype, shape)))
    }
}

impl Operator for Concat {
    fn name(&self) -> &'static str {
        "Concat"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, MAX_VARIADIC)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        Ok(vec![Self::out_type(node, inputs)?.1])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let xs: Vec<&Tensor> = (0..inputs.len())
            .map(|i| arg("Concat", inputs, i))
            .collect::<Result<_, _>>()?;
        let types: Vec<Option<TensorType>> = xs.iter().map(|x| Some(type_of(x))).collect();
        let (axis, out) = Self::out_type(node, &types)?;
        let shape = concrete("Concat", &out)?;
        let strides = crate::ir::tensor::row_major_strides(&shape);
        let mut y = Tensor::zeros(out.dtype, shape);
        let mut base = 0;
        for x in xs {
            for (e, mut idx) in multi_indices(&x.shape).enumerate() {
                idx[axis] += base;
                copy_element(x, e, &mut y, super::window::offset(&strides, &idx));
            }
            base += x.shape[axis];
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let types: Vec<Option<TensorType>> = ctx
            .inputs
            .iter()
            .map(|i| {
                i.as_ref()
                    .map(|(_, d)| TensorType::new(d.dtype, d.shape.clone()))
            })
            .collect();
        let (axis, _) = Self::out_type(ctx.node, &types)?;
        let (y, _) = ctx.output(0)?.clone();
        let inputs: Vec<(String, Vec<SymExpr>)> = (0..ctx.inputs.len())
            .map(|i| ctx.input(i).map(|(n, d)| (n.clone(), d.shape.clone())))
            .collect::<Result<_, _>>()?;
        let starts = offsets(inputs.iter().map(|(_, s)| s[axis].clone()));
        for (k, (x, shape)) in inputs.iter().enumerate() {
            if has_zero_extent(shape) {
                continue;
            }
            let (params, idx) = elementwise_index(shape);
            let mut dst = idx.clone();
            dst[axis] = &dst[axis] + starts[k].clone();
            let label = format!("{}_in{k}", ctx.label);
            copy_map(ctx.b, &label, params, x, idx, &y, dst);
        }
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `Y₀, Y₁, … = split(X; axis)`: slab sizes from `split` (attribute before opset 13, input 1
/// from opset 13), or `num_outputs` equal chunks with a smaller last one (opset 18).
pub struct Split;

impl Split {
    /// The resolved axis and the extent of every output along it.
    fn sizes(
        node: &LibraryNode,
        x: &TensorType,
        split: Param,
    ) -> Result<(usize, Vec<SymExpr>), OpError> {
        const OP: &str = "Split";
        let rank = x.shape.len();
        let axis = resolve_axis(OP, "axis", node.int("axis").unwrap_or(0), rank, false)?;
        let dim = &x.shape[axis];
        if let Some(sizes) = attr_or_input(OP, node, "split", split)? {
            if let Some(&bad) = sizes.iter().find(|&&s| s < 0) {
                return Err(OpError::attr(OP, "split", format!("negative size {bad}")));
            }
            if sizes.is_empty() {
                return Err(OpError::attr(OP, "split", "is empty"));
            }
            let sizes: Vec<SymExpr> = sizes.into_iter().map(SymExpr::Int).collect();
            let total = offsets(sizes.iter().cloned())
                .pop()
                .unwrap_or(SymExpr::Int(0));
            same_dim(OP, &total, dim, || {
                format!("split sizes add up to {total} but dimension {axis} has extent {dim}")
            })?;
            return Ok((axis, sizes));
        }
        let n = node.int("num_outputs").ok_or_else(|| {
            OpError::attr(OP, "split", "is required: give `split` or `num_outputs`")
        })?;
        if n < 1 || to_usize(n) > MAX_VARIADIC {
            return Err(OpError::attr(
                OP,
                "num_outputs",
                format!("{n} is outside 1..={MAX_VARIADIC}"),
            ));
        }
        let d = static_dims(OP, "the split dimension", std::slice::from_ref(dim))?[0];
        let chunk = (d + n - 1) / n;
        let last = d - chunk * (n - 1);
        if last < 0 {
            return Err(OpError::shape(
                OP,
                format!(
                    "extent {d} cannot be cut into {n} chunks of {chunk} and a smaller last one"
                ),
            ));
        }
        let mut sizes = vec![SymExpr::Int(chunk); to_usize(n - 1)];
        sizes.push(SymExpr::Int(last));
        Ok((axis, sizes))
    }

    fn out_types(
        node: &LibraryNode,
        x: &TensorType,
        split: Param,
    ) -> Result<(usize, Vec<TensorType>), OpError> {
        let (axis, sizes) = Self::sizes(node, x, split)?;
        let types = sizes
            .into_iter()
            .map(|s| {
                let mut shape = x.shape.clone();
                shape[axis] = s;
                TensorType::new(x.dtype, shape)
            })
            .collect();
        Ok((axis, types))
    }
}

impl Operator for Split {
    fn name(&self) -> &'static str {
        "Split"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 2)
    }

    fn output_count(&self) -> usize {
        MAX_VARIADIC
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Split", inputs, 0)?;
        Ok(Self::out_types(node, x, Param::of_infer(inputs, consts, 1))?.1)
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Split", inputs, 0)?;
        let (axis, types) = Self::out_types(node, &type_of(x), Param::of_eval(inputs, 1))?;
        let strides = x.strides();
        let mut base = 0;
        let mut outs = Vec::with_capacity(types.len());
        for t in &types {
            let shape = concrete("Split", t)?;
            outs.push(gather(x, &shape, 0.0, |idx| {
                let mut src = idx.to_vec();
                src[axis] += base;
                Some(super::window::offset(&strides, &src))
            }));
            base += shape[axis];
        }
        Ok(outs)
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let x_type = TensorType::new(x_desc.dtype, x_desc.shape.clone());
        let (axis, sizes) = Self::sizes(ctx.node, &x_type, Param::of_expand(ctx, 1))?;
        if ctx.outputs.len() > sizes.len() {
            return Err(OpError::shape(
                "Split",
                format!(
                    "the node has {} outputs but the split gives {} slabs",
                    ctx.outputs.len(),
                    sizes.len()
                ),
            ));
        }
        let starts = offsets(sizes.into_iter());
        let outputs = ctx.outputs.clone();
        for (k, out) in outputs.iter().enumerate() {
            let Some((y, y_desc)) = out else { continue };
            if has_zero_extent(&y_desc.shape) {
                continue;
            }
            let (params, idx) = elementwise_index(&y_desc.shape);
            let mut src = idx.clone();
            src[axis] = &src[axis] + starts[k].clone();
            let label = format!("{}_out{k}", ctx.label);
            copy_map(ctx.b, &label, params, &x, src, y, idx);
        }
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
