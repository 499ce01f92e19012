//! MaxPool's optional `Indices` output: for every pooled value, the flat position in X of the
//! element it came from (the first maximum in window order), counted over the whole tensor
//! (`(n·C + c)·S + spatial offset`, S the spatial volume), with the spatial offset row-major
//! (`storage_order = 0`) or column-major (`storage_order = 1`), as ONNX defines it.
//!
//! The expansion finds the first maximum as a `min` reduction over the window of the row-major
//! key of every element equal to the pooled value (row-major keys grow in window order, so the
//! smallest is the first). Column-major output then takes a second `min` pass that emits the
//! column-major key of the element whose row-major key was chosen: taking the smallest
//! column-major key directly would break ties differently.

use super::super::support::{dim_product, element_map, Read};
use super::super::window::Window;
use super::super::{ExpandCtx, OpError};
use crate::ir::{BinOp, DType, Range, SymExpr, TExpr, Wcr};

/// Flat position of spatial coordinates `at` in the slab of channel `nc = n·C + c`, where
/// `weights[d]` is the step of spatial axis `d`.
pub fn flat<T>(nc: T, volume: T, at: &[T], weights: &[T]) -> T
where
    T: Clone + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    at.iter()
        .zip(weights)
        .fold(nc * volume, |acc, (p, w)| acc + p.clone() * w.clone())
}

/// Steps of the spatial axes of extents `dims`: row-major, or column-major with `column`.
pub fn weights<T>(dims: &[T], one: T, column: bool) -> Vec<T>
where
    T: Clone + std::ops::Mul<Output = T>,
{
    let mut w = vec![one.clone(); dims.len()];
    let mut step = one;
    let order: Vec<usize> = if column {
        (0..dims.len()).collect()
    } else {
        (0..dims.len()).rev().collect()
    };
    for d in order {
        w[d] = step.clone();
        step = step * dims[d].clone();
    }
    w
}

/// The maps writing `Indices` (`ctx` output 1) once `y` holds the pooled maxima. `reduce`
/// ranges over `(n, c, o…, k…)`; `column` is `storage_order = 1`.
pub fn append(
    ctx: &mut ExpandCtx,
    window: &Window,
    reduce: &[(String, Range)],
    column: bool,
) -> Result<(), OpError> {
    let Some((indices, desc)) = ctx.outputs.get(1).cloned().flatten() else {
        return Ok(());
    };
    let (x, xd) = ctx.input(0)?.clone();
    let (y, _) = ctx.output(0)?.clone();
    let label = ctx.label.clone();
    let rank = window.axes.len();
    let sym = |p: &str, d: usize| SymExpr::sym(format!("{p}{d}"));
    let outs: Vec<SymExpr> = (0..rank).map(|d| sym("o", d)).collect();
    let ks: Vec<SymExpr> = (0..rank).map(|d| sym("k", d)).collect();
    let (x_spatial, inside) = window.read_index(&outs, &ks);
    let positions: Vec<SymExpr> = window
        .axes
        .iter()
        .zip(outs.iter().zip(&ks))
        .map(|(a, (o, k))| a.position(o, k))
        .collect();
    let spatial = &xd.shape[2..];
    let volume = dim_product(spatial);
    let nc = SymExpr::sym("n") * &xd.shape[1] + SymExpr::sym("c");
    let key = |column: bool| {
        let w = weights(spatial, SymExpr::Int(1), column);
        TExpr::Index(flat(nc.clone(), volume.clone(), &positions, &w))
    };
    // Larger than every key: the `min` identity.
    let sentinel = TExpr::Index(dim_product(&xd.shape));
    let when = |cond: TExpr, value: TExpr| {
        let cond = match &inside {
            Some(inside) => TExpr::binary(BinOp::And, inside.clone(), cond),
            None => cond,
        };
        TExpr::select(cond, value, sentinel.clone())
    };
    let at_x: Vec<SymExpr> = [SymExpr::sym("n"), SymExpr::sym("c")]
        .into_iter()
        .chain(x_spatial)
        .collect();
    let at_y: Vec<SymExpr> = [SymExpr::sym("n"), SymExpr::sym("c")]
        .into_iter()
        .chain(outs)
        .collect();
    let (params, idx) = super::super::support::params_over("i", &desc.shape);

    let first = if column {
        ctx.b
            .transient(&format!("{label}_first"), DType::I64, desc.shape.clone())
    } else {
        indices.clone()
    };
    let init = |ctx: &mut ExpandCtx, data: &str, what: &str| {
        let label = format!("{label}_{what}_init");
        let dst = (data, idx.clone());
        element_map(ctx.b, &label, &params, vec![], dst, None, sentinel.clone());
    };
    init(ctx, &first, "first");
    let reads = vec![Read::new("x", &x, at_x), Read::new("m", &y, at_y.clone())];
    let is_max = TExpr::binary(BinOp::Eq, TExpr::input("x"), TExpr::input("m"));
    let value = when(is_max, key(false));
    let dst = (first.as_str(), at_y.clone());
    let first_label = format!("{label}_first");
    element_map(
        ctx.b,
        &first_label,
        reduce,
        reads,
        dst,
        Some(Wcr::Min),
        value,
    );
    if column {
        init(ctx, &indices, "indices");
        let reads = vec![Read::new("r", &first, at_y.clone())];
        let chosen = TExpr::binary(BinOp::Eq, key(false), TExpr::input("r"));
        let value = when(chosen, key(true));
        let dst = (indices.as_str(), at_y);
        let label = format!("{label}_indices");
        element_map(ctx.b, &label, reduce, reads, dst, Some(Wcr::Min), value);
    }
    Ok(())
}
