//! OneHot: `indices` expanded by a new axis of `depth` positions holding `values[1]` (on) where
//! the position equals the index and `values[0]` (off) elsewhere.
//!
//! The new axis is inserted at `axis` (default −1, the last). Indices in `[-depth, 0)` count
//! from the end (opset 11); any other index outside `[0, depth)` matches no position, so its
//! line is all off. An index matches a position when it equals it, as ONNX's reference
//! compares them (a non-integral float index matches none). `depth` decides the output shape,
//! so it must be a constant; the conformance runner fixes it from a case's data.
//!
//! The expansion is one pointwise map over the output: each element reads its index (the
//! output's index without the new axis), wraps it and selects on or off.

use super::index::wrapped;
use super::support::{arg, element_map, input_type, params_over, resolve_axis, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&OneHot];

/// `OneHot(indices, depth, values)`.
pub struct OneHot;

impl OneHot {
    /// The position of the new axis in the output (of rank `rank + 1`).
    fn axis(node: &LibraryNode, rank: usize) -> Result<usize, OpError> {
        resolve_axis(
            "OneHot",
            "axis",
            node.int("axis").unwrap_or(-1),
            rank + 1,
            false,
        )
    }

    /// The number of positions: the one value of `depth`, a positive integer.
    fn depth(t: &Tensor) -> Result<usize, OpError> {
        if t.len() != 1 {
            return Err(OpError::shape(
                "OneHot",
                format!("depth must hold one value, it has shape {:?}", t.shape),
            ));
        }
        let d = t.get_f64(0);
        if d.fract() != 0.0 || d < 1.0 || d > super::support::MAX_ELEMENTS as f64 {
            return Err(OpError::shape(
                "OneHot",
                format!("depth must be a positive integer, got {d}"),
            ));
        }
        Ok(d as usize)
    }
}

impl Operator for OneHot {
    fn name(&self) -> &'static str {
        "OneHot"
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name();
        let indices = input_type(op, inputs, 0)?;
        let values = input_type(op, inputs, 2)?;
        if indices.dtype == DType::Bool {
            return Err(OpError::shape(op, "indices must be numeric, got bool"));
        }
        if values.static_shape().is_some_and(|s| s != [2]) {
            return Err(OpError::shape(
                op,
                format!("values must be [off, on], got shape {:?}", values.shape),
            ));
        }
        let axis = Self::axis(node, indices.shape.len())?;
        let depth = consts.get(1).copied().flatten().ok_or_else(|| {
            OpError::unsupported(op, "depth must be a constant: it decides the output shape")
        })?;
        let mut shape = indices.shape.clone();
        shape.insert(axis, SymExpr::from(Self::depth(depth)?));
        Ok(vec![TensorType::new(values.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let (indices, values) = (arg(op, inputs, 0)?, arg(op, inputs, 2)?);
        let depth = Self::depth(arg(op, inputs, 1)?)?;
        let axis = Self::axis(node, indices.shape.len())?;
        let (off, on) = (values.get_f64(0), values.get_f64(1));
        let inner: usize = indices.shape[axis..].iter().product();
        let mut shape = indices.shape.clone();
        shape.insert(axis, depth);
        let total: usize = shape.iter().product();
        let y: Vec<f64> = (0..total)
            .map(|e| {
                let (outer, rest) = (e / (depth * inner), e % (depth * inner));
                let (k, i) = (rest / inner, rest % inner);
                let index = indices.get_f64(outer * inner + i);
                let index = if index < 0.0 {
                    index + depth as f64
                } else {
                    index
                };
                if index == k as f64 {
                    on
                } else {
                    off
                }
            })
            .collect();
        Ok(vec![Tensor::from_f64(values.dtype(), shape, &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (indices, id) = ctx.input(0)?.clone();
        let (values, _) = ctx.input(2)?.clone();
        let (y, yd) = ctx.output(0)?.clone();
        let axis = Self::axis(ctx.node, id.shape.len())?;
        let (params, idx) = params_over("i", &yd.shape);
        let mut at = idx.clone();
        let k = at.remove(axis);
        let reads = vec![
            Read::new("i", &indices, at),
            Read::new("off", &values, vec![SymExpr::Int(0)]),
            Read::new("on", &values, vec![SymExpr::Int(1)]),
        ];
        let index = wrapped(TExpr::input("i"), &yd.shape[axis]);
        let hit = TExpr::binary(BinOp::Eq, index, TExpr::Index(k));
        let value = TExpr::select(hit, TExpr::input("on"), TExpr::input("off"));
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
