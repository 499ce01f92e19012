//! Softmax and LogSoftmax.
//!
//! From opset 13 the operator normalises along one `axis` (default −1). Before opset 13 the input
//! was coerced to 2-D `[prod(dims[:axis]), prod(dims[axis:])]` (default axis 1) and normalised
//! over the whole second factor, i.e. over all dimensions from `axis` on. The importer passes the
//! model's opset as attribute `opset`; without it the current semantics apply. Both cases are one
//! rule here: normalise over a contiguous block of axes `[first, end)`.
//!
//! The expansion is the numerically stable three-pass form: a max reduction, a reduction of
//! `exp(x − max)`, then the normalisation (`exp(x − max) / sum` or `x − max − ln(sum)`).

use super::support::{
    arg, element_map, fill_map, input_type, params_over, require_float, resolve_axis, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::ScopeBuilder;
use crate::ir::{BinOp, DataDesc, LibraryNode, SymExpr, TExpr, Tensor, UnOp, Wcr};

pub static OPS: &[&dyn Operator] = &[&SOFTMAX, &LOG_SOFTMAX];

static SOFTMAX: Softmax = Softmax {
    name: "Softmax",
    log: false,
};
static LOG_SOFTMAX: Softmax = Softmax {
    name: "LogSoftmax",
    log: true,
};

/// Softmax, or its logarithm when `log`.
pub struct Softmax {
    name: &'static str,
    log: bool,
}

/// First opset with single-axis semantics.
const SINGLE_AXIS_OPSET: i64 = 13;

/// The block of axes `[first, end)` one normalisation group of `op` spans (Softmax,
/// LogSoftmax, Hardmax: one axis from opset 13, all axes from `axis` before).
pub(super) fn group_axes(
    op: &str,
    node: &LibraryNode,
    rank: usize,
) -> Result<(usize, usize), OpError> {
    if rank == 0 {
        return Err(OpError::shape(op, "input must have rank at least 1"));
    }
    let legacy = node.int("opset").is_some_and(|v| v < SINGLE_AXIS_OPSET);
    let default = if legacy { 1 } else { -1 };
    let axis = resolve_axis(op, "axis", node.int("axis").unwrap_or(default), rank, false)?;
    Ok((axis, if legacy { rank } else { axis + 1 }))
}

/// The shape of per-group statistics (the group's axes kept with extent 1) and, for the element
/// at `idx`, its group's statistics index (0 on those axes).
pub(super) fn group_stats(
    shape: &[SymExpr],
    idx: &[SymExpr],
    (first, end): (usize, usize),
) -> (Vec<SymExpr>, Vec<SymExpr>) {
    let in_group = |d: usize| (first..end).contains(&d);
    let stat = |v: &[SymExpr], on_group: i64| -> Vec<SymExpr> {
        (0..v.len())
            .map(|d| match in_group(d) {
                true => SymExpr::Int(on_group),
                false => v[d].clone(),
            })
            .collect()
    };
    (stat(shape, 1), stat(idx, 0))
}

impl Softmax {
    fn axes(&self, node: &LibraryNode, rank: usize) -> Result<(usize, usize), OpError> {
        group_axes(self.name, node, rank)
    }
}

impl Operator for Softmax {
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
        require_float(self.name, x)?;
        self.axes(node, x.shape.len())?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name, inputs, 0)?;
        let axes = self.axes(node, x.shape.len())?;
        let out = softmax_values(x, axes, self.log);
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &out)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let axes = self.axes(ctx.node, desc.shape.len())?;
        append_softmax(ctx.b, &ctx.label, (&x, &desc), &y, axes, self.log);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        // Per element: max (1), exp(x − m) accumulated (3), normalisation (3).
        outputs
            .iter()
            .filter_map(|t| t.static_shape())
            .map(|s| 7 * s.iter().product::<usize>() as u64)
            .sum()
    }
}

/// The reference (log-)softmax of `x`, in `f64`, over the block of axes `[first, end)`.
pub(super) fn softmax_values(x: &Tensor, (first, end): (usize, usize), log: bool) -> Vec<f64> {
    let outer: usize = x.shape[..first].iter().product();
    let group: usize = x.shape[first..end].iter().product();
    let inner: usize = x.shape[end..].iter().product();
    let mut out = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |r: usize| (o * group + r) * inner + i;
            let max = (0..group)
                .map(|r| x.get_f64(at(r)))
                .fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..group).map(|r| (x.get_f64(at(r)) - max).exp()).sum();
            for r in 0..group {
                let shifted = x.get_f64(at(r)) - max;
                out[at(r)] = if log {
                    shifted - sum.ln()
                } else {
                    shifted.exp() / sum
                };
            }
        }
    }
    out
}

/// Appends the three passes writing the (log-)softmax of `x` over the axes `[first, end)` to
/// `y` (of `x`'s shape); the per-group max and sum are transients of `x`'s type.
pub(super) fn append_softmax(
    b: &mut ScopeBuilder,
    label: &str,
    (x, desc): (&str, &DataDesc),
    y: &str,
    (first, end): (usize, usize),
    log: bool,
) {
    let (params, idx) = params_over("i", &desc.shape);
    let (stat_shape, stat_idx) = group_stats(&desc.shape, &idx, (first, end));
    let max = b.transient(&format!("{label}_max"), desc.dtype, stat_shape.clone());
    let sum = b.transient(&format!("{label}_sum"), desc.dtype, stat_shape.clone());
    let xi = || Read::new("x", x, idx.clone());
    let mi = || Read::new("m", &max, stat_idx.clone());
    let shifted = || TExpr::binary(BinOp::Sub, TExpr::input("x"), TExpr::input("m"));

    fill_map(
        b,
        &format!("{label}_max_init"),
        &max,
        &stat_shape,
        f64::from(Wcr::Max.identity()),
    );
    element_map(
        b,
        &format!("{label}_max"),
        &params,
        vec![xi()],
        (&max, stat_idx.clone()),
        Some(Wcr::Max),
        TExpr::input("x"),
    );
    fill_map(b, &format!("{label}_sum_init"), &sum, &stat_shape, 0.0);
    element_map(
        b,
        &format!("{label}_sum"),
        &params,
        vec![xi(), mi()],
        (&sum, stat_idx.clone()),
        Some(Wcr::Sum),
        TExpr::unary(UnOp::Exp, shifted()),
    );
    let value = if log {
        let log_sum = TExpr::unary(UnOp::Log, TExpr::input("s"));
        TExpr::binary(BinOp::Sub, shifted(), log_sum)
    } else {
        let e = TExpr::unary(UnOp::Exp, shifted());
        TExpr::binary(BinOp::Div, e, TExpr::input("s"))
    };
    let reads = vec![xi(), mi(), Read::new("s", &sum, stat_idx)];
    element_map(
        b,
        &format!("{label}_norm"),
        &params,
        reads,
        (y, idx),
        None,
        value,
    );
}
