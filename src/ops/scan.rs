//! Scans and index reductions along one axis: CumSum, CumProd, ArgMax, ArgMin.
//!
//! The running sums' and products' expansion is an accumulation (a sum or product write
//! conflict onto the identity) whose reduction range is triangular (`k` runs from 0 to the
//! output position, or from it to the end when reversed). ArgMax / ArgMin reduce twice: the
//! extreme value first (seeded with the first element, so integer inputs never meet an infinite
//! identity), then the first (or last) position holding it, as a `min` (or `max`) reduction of
//! `select(x == extreme, k, sentinel)`. Indices are `i64` outputs, so those tasklets compute in
//! `f64` and stay exact.

use super::index::lookup_map;
use super::support::{arg, fill_map, input_type, params_over, resolve_axis, unravel};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::In;
use crate::ir::{BinOp, DType, LibraryNode, Range, Subset, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&CUM_SUM, &CUM_PROD, &ARG_MAX, &ARG_MIN];

/// `idx` with dimension `axis` replaced by `at`.
fn with_axis(idx: &[SymExpr], axis: usize, at: SymExpr) -> Vec<SymExpr> {
    let mut v = idx.to_vec();
    v[axis] = at;
    v
}

/// Offsets of the elements of the line through `base` along `axis`, in order.
fn line(base: &[usize], shape: &[usize], axis: usize) -> Vec<usize> {
    let strides = crate::ir::tensor::row_major_strides(shape);
    let start: usize = base
        .iter()
        .zip(&strides)
        .enumerate()
        .map(|(d, (i, s))| if d == axis { 0 } else { i * s })
        .sum();
    (0..shape[axis])
        .map(|k| start + k * strides[axis])
        .collect()
}

/// Requires a numeric (non-boolean) input.
fn require_numeric(op: &str, t: &TensorType) -> Result<(), OpError> {
    if t.dtype == DType::Bool {
        Err(OpError::shape(op, "expects a numeric input, got bool"))
    } else {
        Ok(())
    }
}

/// `CumSum(x, axis)` / `CumProd(x, axis)`: running sums or products along `axis`;
/// `exclusive` leaves the current element out, `reverse` accumulates from the end.
pub struct Cumulative {
    name: &'static str,
    /// Products (identity 1) rather than sums (identity 0).
    product: bool,
}

static CUM_SUM: Cumulative = Cumulative {
    name: "CumSum",
    product: false,
};
static CUM_PROD: Cumulative = Cumulative {
    name: "CumProd",
    product: true,
};

impl Cumulative {
    fn axis(&self, axis: Option<&Tensor>, rank: usize) -> Result<usize, OpError> {
        let t = axis.ok_or_else(|| {
            OpError::unsupported(self.name, "the axis (input 1) must be a constant")
        })?;
        let v = t.to_i64_vec();
        match v.as_slice() {
            [a] if t.shape.len() <= 1 => resolve_axis(self.name, "axis", *a, rank, false),
            _ => Err(OpError::shape(
                self.name,
                format!("axis must be a scalar, got shape {:?}", t.shape),
            )),
        }
    }

    fn identity(&self) -> f64 {
        f64::from(u8::from(self.product))
    }

    fn combine(&self, acc: f64, x: f64) -> f64 {
        if self.product {
            acc * x
        } else {
            acc + x
        }
    }

    fn flags(node: &LibraryNode) -> (bool, bool) {
        (
            node.int("exclusive").unwrap_or(0) != 0,
            node.int("reverse").unwrap_or(0) != 0,
        )
    }
}

impl Operator for Cumulative {
    fn name(&self) -> &'static str {
        self.name
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
        let x = input_type(self.name, inputs, 0)?;
        let axis = input_type(self.name, inputs, 1)?;
        require_numeric(self.name, x)?;
        if !matches!(axis.dtype, DType::I64 | DType::I32) || axis.shape.len() > 1 {
            return Err(OpError::shape(
                self.name,
                "axis must be an int32 or int64 scalar",
            ));
        }
        if x.shape.is_empty() {
            return Err(OpError::shape(self.name, "input must have rank at least 1"));
        }
        if let Some(a) = consts.get(1).copied().flatten() {
            self.axis(Some(a), x.shape.len())?;
        }
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name, inputs, 0)?;
        let axis = self.axis(Some(arg(self.name, inputs, 1)?), x.shape.len())?;
        let (exclusive, reverse) = Self::flags(node);
        let mut y = Tensor::zeros(x.dtype(), x.shape.clone());
        for e in 0..x.len() {
            let base = unravel(e, &x.shape);
            if base[axis] != 0 {
                continue;
            }
            let mut offs = line(&base, &x.shape, axis);
            if reverse {
                offs.reverse();
            }
            let mut acc = self.identity();
            for off in offs {
                if exclusive {
                    y.set_f64(off, acc);
                    acc = self.combine(acc, x.get_f64(off));
                } else {
                    acc = self.combine(acc, x.get_f64(off));
                    y.set_f64(off, acc);
                }
            }
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let axis = self.axis(ctx.constant_input(1), x_desc.shape.len())?;
        let (exclusive, reverse) = Self::flags(ctx.node);
        fill_map(
            ctx.b,
            &format!("{}_init", ctx.label),
            &y,
            &x_desc.shape,
            self.identity(),
        );
        let (mut params, idx) = params_over("i", &x_desc.shape);
        let at = idx[axis].clone();
        let n = x_desc.shape[axis].clone();
        let k = match (reverse, exclusive) {
            (false, false) => Range::new(0, &at + 1),
            (false, true) => Range::new(0, at),
            (true, false) => Range::new(at, n),
            (true, true) => Range::new(&at + 1, n),
        };
        params.push(("k".to_string(), k));
        let src = with_axis(&idx, axis, SymExpr::sym("k"));
        let inputs = vec![In("x", &x, Subset::element(src))];
        lookup_map(
            ctx.b,
            &ctx.label,
            &params,
            inputs,
            (&y, idx),
            Some(if self.product { Wcr::Prod } else { Wcr::Sum }),
            TExpr::input("x"),
        );
        Ok(())
    }
}

static ARG_MAX: ArgExtreme = ArgExtreme {
    name: "ArgMax",
    max: true,
};
static ARG_MIN: ArgExtreme = ArgExtreme {
    name: "ArgMin",
    max: false,
};

/// ArgMax / ArgMin: the position of the extreme element along `axis` (default 0), with the
/// reduced dimension kept as 1 when `keepdims` (default 1), and the last occurrence among ties
/// when `select_last_index` (default 0).
pub struct ArgExtreme {
    name: &'static str,
    max: bool,
}

impl ArgExtreme {
    fn config(&self, node: &LibraryNode, rank: usize) -> Result<(usize, bool, bool), OpError> {
        if rank == 0 {
            return Err(OpError::shape(self.name, "input must have rank at least 1"));
        }
        let axis = resolve_axis(
            self.name,
            "axis",
            node.int("axis").unwrap_or(0),
            rank,
            false,
        )?;
        let keep = node.int("keepdims").unwrap_or(1) != 0;
        let last = node.int("select_last_index").unwrap_or(0) != 0;
        Ok((axis, keep, last))
    }

    fn out_shape<T: Clone>(shape: &[T], axis: usize, keep: bool, one: T) -> Vec<T> {
        let mut s = shape.to_vec();
        if keep {
            s[axis] = one;
        } else {
            s.remove(axis);
        }
        s
    }

    /// Whether `a` (at a later position) replaces the current extreme `b`.
    fn better(&self, a: f64, b: f64, last: bool) -> bool {
        let strictly = if self.max { a > b } else { a < b };
        strictly || (last && a == b)
    }
}

impl Operator for ArgExtreme {
    fn name(&self) -> &'static str {
        self.name
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
        let x = input_type(self.name, inputs, 0)?;
        require_numeric(self.name, x)?;
        let (axis, keep, _) = self.config(node, x.shape.len())?;
        if x.shape[axis] == SymExpr::Int(0) {
            return Err(OpError::shape(
                self.name,
                format!("cannot reduce the empty axis {axis}"),
            ));
        }
        let shape = Self::out_shape(&x.shape, axis, keep, SymExpr::Int(1));
        Ok(vec![TensorType::new(DType::I64, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name, inputs, 0)?;
        let (axis, keep, last) = self.config(node, x.shape.len())?;
        if x.shape[axis] == 0 {
            return Err(OpError::shape(self.name, "cannot reduce an empty axis"));
        }
        let mut out = Vec::new();
        for e in 0..x.len() {
            let base = unravel(e, &x.shape);
            if base[axis] != 0 {
                continue;
            }
            let offs = line(&base, &x.shape, axis);
            let mut best = 0usize;
            for (k, &off) in offs.iter().enumerate().skip(1) {
                if self.better(x.get_f64(off), x.get_f64(offs[best]), last) {
                    best = k;
                }
            }
            out.push(best as i64);
        }
        let shape = Self::out_shape(&x.shape, axis, keep, 1);
        Ok(vec![Tensor::i64(shape, out)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let (axis, keep, last) = self.config(ctx.node, x_desc.shape.len())?;
        let n = x_desc.shape[axis].clone();
        let reduced = Self::out_shape(&x_desc.shape, axis, true, SymExpr::Int(1));
        let extreme = ctx.b.transient(
            &format!("{}_extreme", ctx.label),
            x_desc.dtype,
            reduced.clone(),
        );
        let (params, idx) = params_over("i", &reduced);
        let first = vec![In("x", &x, Subset::element(idx.clone()))];
        let seed_label = format!("{}_seed", ctx.label);
        lookup_map(
            ctx.b,
            &seed_label,
            &params,
            first,
            (&extreme, idx.clone()),
            None,
            TExpr::input("x"),
        );
        let mut scan = params.clone();
        scan.push(("k".to_string(), Range::upto(n.clone())));
        let at_k = || Subset::element(with_axis(&idx, axis, SymExpr::sym("k")));
        let wcr = if self.max { Wcr::Max } else { Wcr::Min };
        lookup_map(
            ctx.b,
            &format!("{}_reduce", ctx.label),
            &scan,
            vec![In("x", &x, at_k())],
            (&extreme, idx.clone()),
            Some(wcr),
            TExpr::input("x"),
        );
        // The first position holding the extreme is a min over positions (sentinel n); the last
        // a max (sentinel -1).
        let (pick, sentinel) = if last {
            (Wcr::Max, TExpr::Const(-1.0))
        } else {
            (Wcr::Min, TExpr::Index(n.clone()))
        };
        let y_idx = Self::out_shape(&idx, axis, keep, SymExpr::Int(0));
        let y_shape = Self::out_shape(&reduced, axis, keep, SymExpr::Int(1));
        let (init_params, init_idx) = params_over("i", &y_shape);
        lookup_map(
            ctx.b,
            &format!("{}_init", ctx.label),
            &init_params,
            vec![],
            (&y, init_idx),
            None,
            sentinel.clone(),
        );
        let value = TExpr::select(
            TExpr::binary(BinOp::Eq, TExpr::input("x"), TExpr::input("m")),
            TExpr::Index(SymExpr::sym("k")),
            sentinel,
        );
        lookup_map(
            ctx.b,
            &ctx.label,
            &scan,
            vec![
                In("x", &x, at_k()),
                In("m", &extreme, Subset::element(idx.clone())),
            ],
            (&y, y_idx),
            Some(pick),
            value,
        );
        Ok(())
    }
}
