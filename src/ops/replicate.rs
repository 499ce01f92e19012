//! Expand and Tile: replicating a tensor into a larger one.
//!
//! Expand broadcasts (a size-1 dimension is read at index 0, see [`super::broadcast`]); Tile
//! repeats whole copies (the input index is the output index modulo the input extent). Both are
//! one copy map over the output whose source index is that rule.

use super::broadcast::{broadcast_shapes, source_index, source_offsets};
use super::expand::{copy_map, elementwise_index};
use super::movement::{concrete, gather, type_of, Param};
use super::support::{arg, input_type, offset};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Expand, &Tile];

/// The integer vector of required constant input 1 (`what`: `shape` or `repeats`).
fn int_input(op: &str, what: &str, param: Param) -> Result<Vec<i64>, OpError> {
    param
        .ints(op, what)?
        .ok_or_else(|| OpError::shape(op, format!("missing input 1 ({what})")))
}

/// Checks that input 1 is a 1-D integer tensor.
fn check_int_vector(op: &str, what: &str, inputs: &[Option<TensorType>]) -> Result<(), OpError> {
    let t = input_type(op, inputs, 1)?;
    if !matches!(t.dtype, DType::I64 | DType::I32) || t.shape.len() != 1 {
        return Err(OpError::shape(
            op,
            format!(
                "`{what}` must be a 1-D integer tensor, got {} of rank {}",
                t.dtype,
                t.shape.len()
            ),
        ));
    }
    Ok(())
}

/// `Y = X` broadcast with `shape` (bidirectionally: the output may be larger than `shape`).
pub struct Expand;

impl Expand {
    fn out_type(x: &TensorType, shape: Param) -> Result<TensorType, OpError> {
        let target = int_input("Expand", "shape", shape)?;
        if let Some(&bad) = target.iter().find(|&&d| d < 0) {
            return Err(OpError::shape(
                "Expand",
                format!("`shape` has the negative extent {bad}"),
            ));
        }
        let target: Vec<SymExpr> = target.into_iter().map(SymExpr::Int).collect();
        let shape = broadcast_shapes("Expand", &[&x.shape, &target])?;
        Ok(TensorType::new(x.dtype, shape))
    }
}

impl Operator for Expand {
    fn name(&self) -> &'static str {
        "Expand"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        check_int_vector("Expand", "shape", inputs)?;
        let x = input_type("Expand", inputs, 0)?;
        Ok(vec![Self::out_type(x, Param::of_infer(inputs, consts, 1))?])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Expand", inputs, 0)?;
        let out = Self::out_type(&type_of(x), Param::of_eval(inputs, 1))?;
        let shape = concrete("Expand", &out)?;
        let mut sources = source_offsets(&x.shape, &shape).into_iter();
        Ok(vec![gather(x, &shape, 0.0, |_| sources.next())])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let (params, idx) = elementwise_index(&y_desc.shape);
        let src = source_index(&x_desc.shape, &idx);
        copy_map(ctx.b, &ctx.label, params, &x, src, &y, idx);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `Y = X` repeated `repeats[d]` times along every dimension `d`.
pub struct Tile;

impl Tile {
    fn repeats(rank: usize, repeats: Param) -> Result<Vec<i64>, OpError> {
        let r = int_input("Tile", "repeats", repeats)?;
        if r.len() != rank {
            return Err(OpError::shape(
                "Tile",
                format!(
                    "`repeats` has {} entries for an input of rank {rank}",
                    r.len()
                ),
            ));
        }
        if let Some(&bad) = r.iter().find(|&&v| v < 0) {
            return Err(OpError::shape(
                "Tile",
                format!("negative repeat count {bad}"),
            ));
        }
        Ok(r)
    }

    fn out_type(x: &TensorType, repeats: Param) -> Result<TensorType, OpError> {
        let r = Self::repeats(x.shape.len(), repeats)?;
        let shape = x.shape.iter().zip(r).map(|(d, r)| d * r).collect();
        Ok(TensorType::new(x.dtype, shape))
    }
}

impl Operator for Tile {
    fn name(&self) -> &'static str {
        "Tile"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        check_int_vector("Tile", "repeats", inputs)?;
        let x = input_type("Tile", inputs, 0)?;
        Ok(vec![Self::out_type(x, Param::of_infer(inputs, consts, 1))?])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Tile", inputs, 0)?;
        let out = Self::out_type(&type_of(x), Param::of_eval(inputs, 1))?;
        let shape = concrete("Tile", &out)?;
        let strides = x.strides();
        let y = gather(x, &shape, 0.0, |idx| {
            let src: Vec<usize> = idx.iter().zip(&x.shape).map(|(o, n)| o % n).collect();
            Some(offset(&src, &strides))
        });
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let repeats = Self::repeats(x_desc.shape.len(), Param::of_expand(ctx, 1))?;
        let (params, idx) = elementwise_index(&y_desc.shape);
        let src = idx
            .iter()
            .zip(&x_desc.shape)
            .zip(&repeats)
            .map(|((i, dim), &r)| match r {
                1 => i.clone(),
                _ => i.clone().modulo(dim.clone()),
            })
            .collect();
        copy_map(ctx.b, &ctx.label, params, &x, src, &y, idx);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
