//! Operators defined by the diagonals of the last two dimensions: Trilu (keep the elements on
//! one side of diagonal `k`) and EyeLike (ones on diagonal `k`).
//!
//! Element `[…, i, j]` lies on diagonal `j − i`, so each expansion is one pointwise map whose
//! tasklet compares the map parameters' difference (an index used as a value) with `k`: Trilu
//! selects between the input and zero, EyeLike writes the comparison itself. Trilu's `k` is an
//! optional run-time input: a constant is folded into the tasklet, any other is read from its
//! one-element array by the generated code.

use super::logic::dtype_of_onnx;
use super::support::{arg, element_map, input_type, opt_arg, params_over, unravel, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Trilu, &EyeLike];

/// The rank-2-or-more check both operators make.
fn require_matrix(op: &str, rank: usize, exact: bool) -> Result<(), OpError> {
    let ok = if exact { rank == 2 } else { rank >= 2 };
    if ok {
        Ok(())
    } else {
        let want = if exact { "2" } else { "at least 2" };
        Err(OpError::shape(
            op,
            format!("input must have rank {want}, got {rank}"),
        ))
    }
}

/// `j − i` of the last two indices, as a tasklet value.
fn diagonal_of(idx: &[SymExpr]) -> TExpr {
    let n = idx.len();
    TExpr::Index((idx[n - 1].clone() - idx[n - 2].clone()).simplify())
}

/// `j − i` of element `e` of a row-major tensor of `shape` (rank ≥ 2).
fn diagonal_at(e: usize, shape: &[usize]) -> i64 {
    let idx = unravel(e, shape);
    let n = idx.len();
    idx[n - 1] as i64 - idx[n - 2] as i64
}

/// `Trilu(x, k)`: the upper (`upper` = 1, the default: `j − i ≥ k`) or lower (`j − i ≤ k`)
/// triangle of every matrix in `x`, zero elsewhere; `k` defaults to 0.
pub struct Trilu;

impl Trilu {
    fn upper(node: &LibraryNode) -> bool {
        node.int("upper").unwrap_or(1) != 0
    }

    fn k(t: &Tensor) -> Result<i64, OpError> {
        match t.to_i64_vec().as_slice() {
            [k] => Ok(*k),
            _ => Err(OpError::shape(
                "Trilu",
                format!("k must hold one value, it has shape {:?}", t.shape),
            )),
        }
    }

    /// Whether diagonal `d` is kept.
    fn keeps(upper: bool, d: i64, k: i64) -> bool {
        if upper {
            d >= k
        } else {
            d <= k
        }
    }
}

impl Operator for Trilu {
    fn name(&self) -> &'static str {
        "Trilu"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 2)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Trilu", inputs, 0)?;
        require_matrix("Trilu", x.shape.len(), false)?;
        if let Some(Some(k)) = inputs.get(1) {
            let one = k
                .static_shape()
                .is_some_and(|s| s.iter().product::<usize>() == 1);
            if !matches!(k.dtype, DType::I64) || !one {
                return Err(OpError::shape("Trilu", "k must be an int64 scalar"));
            }
        }
        if let Some(k) = consts.get(1).copied().flatten() {
            Self::k(k)?;
        }
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Trilu", inputs, 0)?;
        require_matrix("Trilu", x.shape.len(), false)?;
        let k = opt_arg(inputs, 1).map(Self::k).transpose()?.unwrap_or(0);
        let upper = Self::upper(node);
        let mut y = Tensor::zeros(x.dtype(), x.shape.clone());
        for e in 0..x.len() {
            if Self::keeps(upper, diagonal_at(e, &x.shape), k) {
                y.set_f64(e, x.get_f64(e));
            }
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &desc.shape);
        let mut reads = vec![Read::new("x", &x, idx.clone())];
        let k_input = ctx.inputs.get(1).cloned().flatten();
        let k = match (ctx.constant_input(1), &k_input) {
            (Some(t), _) => TExpr::Const(Self::k(t)? as f64),
            (None, Some((name, d))) => {
                reads.push(Read::new("k", name, vec![SymExpr::Int(0); d.shape.len()]));
                TExpr::input("k")
            }
            (None, None) => TExpr::Const(0.0),
        };
        let test = if Self::upper(ctx.node) {
            BinOp::Ge
        } else {
            BinOp::Le
        };
        let keep = TExpr::binary(test, diagonal_of(&idx), k);
        let value = TExpr::select(keep, TExpr::input("x"), TExpr::Const(0.0));
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `EyeLike(x)`: a matrix of `x`'s shape with ones on diagonal `k` (default 0) and zeros
/// elsewhere, of type `dtype` (an ONNX type code; default `x`'s type).
pub struct EyeLike;

impl EyeLike {
    fn dtype(node: &LibraryNode, x: DType) -> Result<DType, OpError> {
        match node.int("dtype") {
            None => Ok(x),
            Some(code) => dtype_of_onnx(code).ok_or_else(|| {
                OpError::attr(
                    "EyeLike",
                    "dtype",
                    format!("type code {code} is not supported"),
                )
            }),
        }
    }

    fn k(node: &LibraryNode) -> i64 {
        node.int("k").unwrap_or(0)
    }
}

impl Operator for EyeLike {
    fn name(&self) -> &'static str {
        "EyeLike"
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
        let x = input_type("EyeLike", inputs, 0)?;
        require_matrix("EyeLike", x.shape.len(), true)?;
        let dtype = Self::dtype(node, x.dtype)?;
        Ok(vec![TensorType::new(dtype, x.shape.clone())])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("EyeLike", inputs, 0)?;
        require_matrix("EyeLike", x.shape.len(), true)?;
        let mut y = Tensor::zeros(Self::dtype(node, x.dtype())?, x.shape.clone());
        let k = Self::k(node);
        for e in 0..x.len() {
            if diagonal_at(e, &x.shape) == k {
                y.set_f64(e, 1.0);
            }
        }
        Ok(vec![y])
    }

    /// One map writing the diagonal test; it reads nothing (only `x`'s shape matters).
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (y, desc) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &desc.shape);
        let k = TExpr::Const(Self::k(ctx.node) as f64);
        let value = TExpr::binary(BinOp::Eq, diagonal_of(&idx), k);
        element_map(
            ctx.b,
            &ctx.label,
            &params,
            Vec::new(),
            (&y, idx),
            None,
            value,
        );
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
