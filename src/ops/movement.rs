//! Helpers shared by the data-movement operators (Concat, Split, Slice, Expand, Tile, Pad,
//! Resize): where their integer parameters come from, and exact element copies for the
//! reference implementations.
//!
//! Many of these operators took a parameter as an attribute in older opsets and as an input in
//! newer ones (Slice's `starts`, Pad's `pads`, Split's `split`). The importer passes both forms
//! through as written, so each operator accepts either, but never both. Input values must be
//! constants: the output shapes depend on them, and shapes are fixed at import time.

use super::window::multi_indices;
use super::{ExpandCtx, OpError, TensorType};
use crate::ir::{Buffer, LibraryNode, SymExpr, Tensor};

/// What an operator knows about one of its optional parameter inputs.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    /// Not wired.
    Absent,
    /// Wired, but its value is only known at run time.
    Dynamic,
    /// Wired to a constant with this value.
    Value(&'a Tensor),
}

impl<'a> Param<'a> {
    /// Input `i` during shape inference.
    pub fn of_infer(
        inputs: &[Option<TensorType>],
        consts: &[Option<&'a Tensor>],
        i: usize,
    ) -> Self {
        match (inputs.get(i).and_then(|t| t.as_ref()), consts.get(i)) {
            (None, _) => Param::Absent,
            (Some(_), Some(Some(v))) => Param::Value(v),
            (Some(_), _) => Param::Dynamic,
        }
    }

    /// Input `i` of a reference evaluation, where every present input has a value.
    pub fn of_eval(inputs: &[Option<&'a Tensor>], i: usize) -> Self {
        match inputs.get(i).copied().flatten() {
            Some(v) => Param::Value(v),
            None => Param::Absent,
        }
    }

    /// Input `i` during expansion.
    pub fn of_expand(ctx: &'a ExpandCtx, i: usize) -> Self {
        match ctx.inputs.get(i).and_then(|x| x.as_ref()) {
            None => Param::Absent,
            Some(_) => ctx.constant_input(i).map_or(Param::Dynamic, Param::Value),
        }
    }

    /// The value, `None` when absent; a present input whose value is unknown is refused.
    pub fn value(self, op: &str, what: &str) -> Result<Option<&'a Tensor>, OpError> {
        match self {
            Param::Absent => Ok(None),
            Param::Value(v) => Ok(Some(v)),
            Param::Dynamic => Err(OpError::unsupported(
                op,
                format!("`{what}` must be a constant (output shapes depend on it)"),
            )),
        }
    }

    /// The value as integers, `None` when absent.
    pub fn ints(self, op: &str, what: &str) -> Result<Option<Vec<i64>>, OpError> {
        Ok(self.value(op, what)?.map(Tensor::to_i64_vec))
    }
}

/// An integer-list parameter given as attribute `name` (older opsets) or as an input of the
/// same name (newer opsets); `None` when neither is given.
pub fn attr_or_input(
    op: &str,
    node: &LibraryNode,
    name: &str,
    input: Param,
) -> Result<Option<Vec<i64>>, OpError> {
    let from_input = input.ints(op, name)?;
    match (node.ints(name), from_input) {
        (Some(_), Some(_)) => Err(OpError::attr(
            op,
            name,
            "given both as an attribute and as an input",
        )),
        (Some(a), None) => Ok(Some(a.to_vec())),
        (None, v) => Ok(v),
    }
}

/// Resolves possibly negative `axes` against `rank`, rejecting duplicates.
pub fn resolve_axes(op: &str, axes: &[i64], rank: usize) -> Result<Vec<usize>, OpError> {
    let mut out: Vec<usize> = Vec::with_capacity(axes.len());
    for &a in axes {
        let d = super::support::resolve_axis(op, "axes", a, rank, false)?;
        if out.contains(&d) {
            return Err(OpError::attr(op, "axes", format!("axis {a} appears twice")));
        }
        out.push(d);
    }
    Ok(out)
}

/// Copies element `s` of `x` to element `e` of `y`, exactly when both have the same dtype (data
/// movement must not round i64 shape values through a float).
pub fn copy_element(x: &Tensor, s: usize, y: &mut Tensor, e: usize) {
    match (&x.data, &mut y.data) {
        (Buffer::F32(a), Buffer::F32(b)) => b[e] = a[s],
        (Buffer::F64(a), Buffer::F64(b)) => b[e] = a[s],
        (Buffer::I64(a), Buffer::I64(b)) => b[e] = a[s],
        (Buffer::I32(a), Buffer::I32(b)) => b[e] = a[s],
        (Buffer::Bool(a), Buffer::Bool(b)) => b[e] = a[s],
        _ => y.set_f64(e, x.get_f64(s)),
    }
}

/// A tensor of `shape` with `x`'s dtype whose element at each multi-index `idx` is `x`'s
/// element at row-major offset `source(idx)`, or `fill` where `source` gives `None` (padding).
pub fn gather(
    x: &Tensor,
    shape: &[usize],
    fill: f64,
    mut source: impl FnMut(&[usize]) -> Option<usize>,
) -> Tensor {
    let mut y = Tensor::zeros(x.dtype(), shape.to_vec());
    for (e, idx) in multi_indices(shape).enumerate() {
        match source(&idx) {
            Some(s) => copy_element(x, s, &mut y, e),
            None => y.set_f64(e, fill),
        }
    }
    y
}

/// Static shape of an inferred output, for reference implementations (which infer on the
/// concrete shapes of their inputs, so this only fails on a bug).
pub fn concrete(op: &str, t: &TensorType) -> Result<Vec<usize>, OpError> {
    t.static_shape()
        .ok_or_else(|| OpError::shape(op, "output shape is not concrete"))
}

/// The type of a concrete tensor.
pub fn type_of(t: &Tensor) -> TensorType {
    TensorType::new(t.dtype(), super::support::sym_shape(&t.shape))
}

/// True when some extent is the literal 0: the tensor holds no element, so nothing reads or
/// writes it.
pub fn has_zero_extent(shape: &[SymExpr]) -> bool {
    shape.contains(&SymExpr::Int(0))
}

/// A non-negative integer as `usize` (shape rules have already checked the sign).
pub fn to_usize(v: i64) -> usize {
    usize::try_from(v).unwrap_or(0)
}
