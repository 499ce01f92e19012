//! Data-dependent indexing: Gather and GatherElements.
//!
//! Both read the data tensor at positions taken from an integer index tensor, so their
//! expansions use element reads at computed indices (`t[…]`): the tasklet's memlet on the data
//! covers the whole extent of the gathered axis (one index elsewhere), and the index value picks
//! the element. ONNX allows negative indices in `[-n, 0)`, counting from the end; the wrap is
//! part of the expansion (`select(i < 0, i + n, i)`), and anything outside `[-n, n)` is an error
//! (the interpreter reports it; `eval` does too).

use super::support::{arg, input_type, params_over, resolve_axis, sym_shape, unravel};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, Out, ScopeBuilder};
use crate::ir::tensor::row_major_strides;
use crate::ir::{
    BinOp, DType, Dim, LibraryNode, NodeId, Range, Schedule, Subset, SymExpr, TExpr, Tensor, Wcr,
};

pub static OPS: &[&dyn Operator] = &[&Gather, &GatherElements];

/// Requires an integer index tensor (ONNX `Tind`: int32 or int64).
fn require_indices(op: &str, t: &TensorType) -> Result<(), OpError> {
    match t.dtype {
        DType::I64 | DType::I32 => Ok(()),
        other => Err(OpError::shape(
            op,
            format!("indices must be int32 or int64, got {other}"),
        )),
    }
}

/// Resolves a gathered index against an axis of `extent` elements: `[-extent, extent)` is
/// valid, negative values count from the end.
fn wrap_index(op: &str, index: i64, extent: usize) -> Result<usize, OpError> {
    let n = i64::try_from(extent).unwrap_or(i64::MAX);
    let wrapped = if index < 0 { index + n } else { index };
    usize::try_from(wrapped)
        .ok()
        .filter(|&v| v < extent)
        .ok_or_else(|| {
            OpError::shape(
                op,
                format!("index {index} is outside [-{extent}, {extent}) on the gathered axis"),
            )
        })
}

/// The expansion's form of [`wrap_index`]: `select(i < 0, i + extent, i)` over connector `i`.
pub fn wrapped(i: TExpr, extent: &SymExpr) -> TExpr {
    TExpr::select(
        TExpr::binary(BinOp::Lt, i.clone(), TExpr::Const(0.0)),
        TExpr::binary(BinOp::Add, i.clone(), TExpr::Index(extent.clone())),
        i,
    )
}

/// The subset of `shape` read at `idx` except along `axis`, which is covered whole.
fn axis_window(shape: &[SymExpr], idx: &[SymExpr], axis: usize) -> Subset {
    Subset(
        idx.iter()
            .enumerate()
            .map(|(d, i)| {
                if d == axis {
                    Dim::Range(Range::upto(shape[d].clone()))
                } else {
                    Dim::Index(i.clone())
                }
            })
            .collect(),
    )
}

/// Indices of an element read `t[…]` into an [`axis_window`]: 0 for the single-index
/// dimensions and `along` for `axis`.
fn window_indices(rank: usize, axis: usize, along: TExpr) -> Vec<TExpr> {
    (0..rank)
        .map(|d| {
            if d == axis {
                along.clone()
            } else {
                TExpr::Const(0.0)
            }
        })
        .collect()
}

/// A sequential map over `params` whose tasklet reads `inputs` (single elements or, for
/// connectors read by element, ranges) and writes `value` to `dst[dst_idx]`.
pub fn lookup_map(
    b: &mut ScopeBuilder,
    label: &str,
    params: &[(String, Range)],
    inputs: Vec<In>,
    dst: (&str, Vec<SymExpr>),
    wcr: Option<Wcr>,
    value: TExpr,
) -> NodeId {
    let params_ref = params
        .iter()
        .map(|(n, r)| (n.as_str(), r.clone()))
        .collect();
    b.map(label, params_ref, Schedule::Sequential, |b| {
        b.tasklet(
            label,
            inputs,
            vec![Out("y", dst.0, Subset::element(dst.1), wcr, value)],
        );
    })
}

/// Resolves the `axis` attribute (default 0) against `rank`.
fn axis_attr(op: &str, node: &LibraryNode, rank: usize) -> Result<usize, OpError> {
    if rank == 0 {
        return Err(OpError::shape(op, "data must have rank at least 1"));
    }
    resolve_axis(op, "axis", node.int("axis").unwrap_or(0), rank, false)
}

/// `Gather(data, indices)`: `out[a…, j…, b…] = data[a…, indices[j…], b…]` along `axis`.
pub struct Gather;

impl Operator for Gather {
    fn name(&self) -> &'static str {
        "Gather"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let data = input_type("Gather", inputs, 0)?;
        let indices = input_type("Gather", inputs, 1)?;
        require_indices("Gather", indices)?;
        let axis = axis_attr("Gather", node, data.shape.len())?;
        let mut shape = data.shape[..axis].to_vec();
        shape.extend(indices.shape.iter().cloned());
        shape.extend(data.shape[axis + 1..].iter().cloned());
        Ok(vec![TensorType::new(data.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let data = arg("Gather", inputs, 0)?;
        let indices = arg("Gather", inputs, 1)?;
        let axis = axis_attr("Gather", node, data.shape.len())?;
        let q = indices.shape.len();
        let mut shape = data.shape[..axis].to_vec();
        shape.extend(&indices.shape);
        shape.extend(&data.shape[axis + 1..]);
        let ind = indices.to_i64_vec();
        let ind_strides = row_major_strides(&indices.shape);
        let strides = data.strides();
        let mut y = Tensor::zeros(data.dtype(), shape.clone());
        for e in 0..y.len() {
            let out = unravel(e, &shape);
            let j: usize = out[axis..axis + q]
                .iter()
                .zip(&ind_strides)
                .map(|(a, s)| a * s)
                .sum();
            let src = wrap_index("Gather", ind[j], data.shape[axis])?;
            let mut off = src * strides[axis];
            for d in 0..axis {
                off += out[d] * strides[d];
            }
            for d in axis + 1..data.shape.len() {
                off += out[d - 1 + q] * strides[d];
            }
            y.set_f64(e, data.get_f64(off));
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (data, data_desc) = ctx.input(0)?.clone();
        let (indices, ind_desc) = ctx.input(1)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let rank = data_desc.shape.len();
        let axis = axis_attr("Gather", ctx.node, rank)?;
        let q = ind_desc.shape.len();
        let (params, idx) = params_over("i", &y_desc.shape);
        // The data element's index: the output's, with the indices' block replaced by one slot.
        let mut src: Vec<SymExpr> = idx[..axis].to_vec();
        src.push(SymExpr::Int(0));
        src.extend(idx[axis + q..].iter().cloned());
        let window = axis_window(&data_desc.shape, &src, axis);
        let along = wrapped(TExpr::input("i"), &data_desc.shape[axis]);
        let value = TExpr::element("t", window_indices(rank, axis, along));
        let inputs = vec![
            In("i", &indices, Subset::element(idx[axis..axis + q].to_vec())),
            In("t", &data, window),
        ];
        lookup_map(ctx.b, &ctx.label, &params, inputs, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `GatherElements(data, indices)`: `out[p] = data[p with p[axis] = indices[p]]`; the output
/// has the indices' shape.
pub struct GatherElements;

impl Operator for GatherElements {
    fn name(&self) -> &'static str {
        "GatherElements"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = "GatherElements";
        let data = input_type(op, inputs, 0)?;
        let indices = input_type(op, inputs, 1)?;
        require_indices(op, indices)?;
        let axis = axis_attr(op, node, data.shape.len())?;
        if indices.shape.len() != data.shape.len() {
            return Err(OpError::shape(
                op,
                format!(
                    "indices have rank {} but data has rank {}",
                    indices.shape.len(),
                    data.shape.len()
                ),
            ));
        }
        for (d, (i, x)) in indices.shape.iter().zip(&data.shape).enumerate() {
            let too_big = match (i.as_int(), x.as_int()) {
                (Some(i), Some(x)) => i > x,
                _ => i != x,
            };
            if d != axis && too_big {
                return Err(OpError::shape(
                    op,
                    format!("indices dimension {d} ({i}) exceeds the data's ({x})"),
                ));
            }
        }
        Ok(vec![TensorType::new(data.dtype, indices.shape.clone())])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = "GatherElements";
        let data = arg(op, inputs, 0)?;
        let indices = arg(op, inputs, 1)?;
        let axis = axis_attr(op, node, data.shape.len())?;
        self.infer(
            node,
            &[
                Some(TensorType::new(data.dtype(), sym_shape(&data.shape))),
                Some(TensorType::new(indices.dtype(), sym_shape(&indices.shape))),
            ],
            &[],
        )?;
        let ind = indices.to_i64_vec();
        let strides = data.strides();
        let mut y = Tensor::zeros(data.dtype(), indices.shape.clone());
        for (e, &i) in ind.iter().enumerate() {
            let mut p = unravel(e, &indices.shape);
            p[axis] = wrap_index(op, i, data.shape[axis])?;
            let off: usize = p.iter().zip(&strides).map(|(a, s)| a * s).sum();
            y.set_f64(e, data.get_f64(off));
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (data, data_desc) = ctx.input(0)?.clone();
        let (indices, _) = ctx.input(1)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let rank = data_desc.shape.len();
        let axis = axis_attr("GatherElements", ctx.node, rank)?;
        let (params, idx) = params_over("i", &y_desc.shape);
        let window = axis_window(&data_desc.shape, &idx, axis);
        let along = wrapped(TExpr::input("i"), &data_desc.shape[axis]);
        let value = TExpr::element("t", window_indices(rank, axis, along));
        let inputs = vec![
            In("i", &indices, Subset::element(idx.clone())),
            In("t", &data, window),
        ];
        lookup_map(ctx.b, &ctx.label, &params, inputs, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
