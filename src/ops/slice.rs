//! Slice: a strided window along some axes, `starts`/`ends`/`axes` as attributes before opset
//! 10 and as constant inputs (with `steps`) from opset 10.
//!
//! ONNX clamps out-of-range bounds instead of rejecting them, counts negative bounds from the
//! end, and walks backwards for negative steps; the result may be empty. After clamping every
//! sliced axis is an affine map `o ↦ start + o·step` from output to input positions, so the
//! expansion is one copy map. An empty result is a tensor with a zero extent: its copy map has
//! an empty range and moves nothing.

use super::expand::{copy_map, elementwise_index};
use super::movement::{attr_or_input, concrete, gather, resolve_axes, type_of, Param};
use super::support::{arg, input_type, offset};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Slice];

const OP: &str = "Slice";

/// One sliced axis after clamping: output position `o` reads input position `start + o·step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cut {
    start: i64,
    step: i64,
    len: i64,
}

impl Cut {
    /// The clamping rules for one axis of extent `dim`. They are numpy's (`slice.indices`),
    /// which ONNX's reference implementation and therefore its conformance data follow: for a
    /// negative step both bounds clamp to `[-1, dim - 1]`, so a start before the first element
    /// selects nothing (the specification's text clamps such a start to 0 instead).
    fn new(start: i64, end: i64, step: i64, dim: i64) -> Cut {
        let (lower, upper) = if step > 0 { (0, dim) } else { (-1, dim - 1) };
        let bound = |v: i64| {
            let v = if v < 0 { v.saturating_add(dim) } else { v };
            v.max(lower).min(upper)
        };
        let (start, end) = (bound(start), bound(end));
        // In i128: `end - start` and `step` can be anywhere in i64.
        let (span, stride) = (i128::from(end) - i128::from(start), i128::from(step));
        let len = if (span > 0) == (stride > 0) && span != 0 {
            (span.abs() + stride.abs() - 1) / stride.abs()
        } else {
            0
        };
        Cut {
            start,
            step,
            len: i64::try_from(len).unwrap_or(0),
        }
    }
}

/// The cut of every axis (`None` where the axis is not sliced) from the operator's parameters.
fn cuts<'a>(
    node: &LibraryNode,
    shape: &[SymExpr],
    param: &dyn Fn(usize) -> Param<'a>,
) -> Result<Vec<Option<Cut>>, OpError> {
    let required = |name: &str, i: usize| {
        attr_or_input(OP, node, name, param(i))?
            .ok_or_else(|| OpError::attr(OP, name, "is required"))
    };
    let starts = required("starts", 1)?;
    let ends = required("ends", 2)?;
    let n = starts.len();
    let axes =
        attr_or_input(OP, node, "axes", param(3))?.unwrap_or_else(|| (0..n as i64).collect());
    let steps = param(4).ints(OP, "steps")?.unwrap_or_else(|| vec![1; n]);
    for (name, len) in [
        ("ends", ends.len()),
        ("axes", axes.len()),
        ("steps", steps.len()),
    ] {
        if len != n {
            return Err(OpError::attr(
                OP,
                name,
                format!("has {len} entries but `starts` has {n}"),
            ));
        }
    }
    let axes = resolve_axes(OP, &axes, shape.len())?;
    let mut out = vec![None; shape.len()];
    for (k, &d) in axes.iter().enumerate() {
        if steps[k] == 0 {
            return Err(OpError::attr(OP, "steps", "a step is 0"));
        }
        let Some(dim) = shape[d].as_int() else {
            if starts[k] == 0 && steps[k] == 1 && ends[k] >= i64::from(i32::MAX) {
                continue; // The whole of a symbolic axis: left as it is.
            }
            return Err(OpError::symbolic(OP, format!("dimension {d}"), &shape[d]));
        };
        out[d] = Some(Cut::new(starts[k], ends[k], steps[k], dim));
    }
    Ok(out)
}

/// The output type given the cuts.
fn out_type(x: &TensorType, cuts: &[Option<Cut>]) -> TensorType {
    let shape = x
        .shape
        .iter()
        .zip(cuts)
        .map(|(dim, c)| c.map_or_else(|| dim.clone(), |c| SymExpr::Int(c.len)))
        .collect();
    TensorType::new(x.dtype, shape)
}

/// `Y = X[starts:ends:steps]` along `axes`.
pub struct Slice;

impl Operator for Slice {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 5)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        let cuts = cuts(node, &x.shape, &|i| Param::of_infer(inputs, consts, i))?;
        Ok(vec![out_type(x, &cuts)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let xt = type_of(x);
        let cuts = cuts(node, &xt.shape, &|i| Param::of_eval(inputs, i))?;
        let shape = concrete(OP, &out_type(&xt, &cuts))?;
        let strides = x.strides();
        let y = gather(x, &shape, 0.0, |idx| {
            let src: Vec<usize> = idx
                .iter()
                .zip(&cuts)
                .map(|(&o, c)| match c {
                    Some(c) => usize::try_from(c.start + o as i64 * c.step).unwrap_or(0),
                    None => o,
                })
                .collect();
            Some(offset(&src, &strides))
        });
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let cuts = cuts(ctx.node, &x_desc.shape, &|i| Param::of_expand(ctx, i))?;
        let (params, idx) = elementwise_index(&y_desc.shape);
        let src = idx
            .iter()
            .zip(&cuts)
            .map(|(i, c)| match c {
                Some(c) => i * c.step + c.start,
                None => i.clone(),
            })
            .collect();
        copy_map(ctx.b, &ctx.label, params, &x, src, &y, idx);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::Cut;

    /// Hand-checked against numpy's `range(dim)[start:end:step]`.
    #[test]
    fn clamps_like_numpy() {
        let cut = |s, e, st, d| {
            let c = Cut::new(s, e, st, d);
            (c.start, c.len)
        };
        assert_eq!(cut(1, 1000, 1, 5), (1, 4));
        assert_eq!(cut(-3, -1, 1, 5), (2, 2));
        assert_eq!(cut(-1, i64::MIN, -1, 5), (4, 5));
        assert_eq!(cut(i64::MAX, 0, -2, 5), (4, 2));
        assert_eq!(cut(3, 1, 1, 5), (3, 0));
        assert_eq!(cut(0, 5, i64::MAX, 5), (0, 1));
        assert_eq!(cut(0, -1, -1, 0), (-1, 0));
        assert_eq!(cut(-100, 100, 3, 7), (0, 3));
        assert_eq!(cut(-9, -9, -1, 6), (-1, 0));
    }
}
