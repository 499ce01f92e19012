//! Conv as im2col + GEMM: copy every input window into a column matrix, then multiply.
//!
//! ```text
//! wmat[m, c·K + k]     = W[m, c, k…]                             (K = ∏ kernel, k linearised)
//! col[n, g, c·K + k, o] = X[n, g·C/group + c, o·s − pad + k·d…]   (0 where that is padding)
//! ymat[n, m, o]         = B[m] + Σ_r wmat[m, r] · col[n, g, r, o]  (g = m / (M/group))
//! Y[n, m, o…]           = ymat[n, m, o]                            (o linearised over O = ∏ out)
//! ```
//! Every operand of the product is a plain row-major matrix — `wmat` is `M × (C/group)·K`, `col`
//! a stack of `N·group` matrices of `(C/group)·K` rows by `O` columns, `ymat` `M × O` per image —
//! so the product map `[n, g, m, o, r]` is the GEMM that MatMul expands to, and every GEMM
//! transformation applies (std::gemm's register-tiled kernel once the unit `n` is squeezed).
//! The padding logic lives in the copy map only; the GEMM reads every element unconditionally.
//! The price is the column buffer, `K` times the input, and two copies of the weights' and
//! outputs' size. The `g` axis is omitted when `group = 1`, as in the direct expansion.
//!
//! Padding never reads out of range: the copy reads a clamped in-bounds element and a select on
//! the index (from [`Window::read_index`](super::super::window::Window::read_index)) stores 0
//! where the window position is padding.

use super::ConvShape;
use crate::ir::{BinOp, Range, SymExpr, TExpr, Wcr};
use crate::ops::support::{element_map, params_over, Read};
use crate::ops::{ExpandCtx, OpError};

/// Index names with their ranges.
type Axes = Vec<(String, Range)>;

fn syms(axes: &[(String, Range)]) -> Vec<SymExpr> {
    axes.iter().map(|(n, _)| SymExpr::sym(n.as_str())).collect()
}

/// The row-major offset of `axes`' point within their box, and the box's volume.
fn linear(axes: &[(String, Range)]) -> (SymExpr, SymExpr) {
    axes.iter().fold(
        (SymExpr::Int(0), SymExpr::Int(1)),
        |(at, volume), (n, r)| {
            let at = (at * &r.end + SymExpr::sym(n.as_str())).simplify();
            (at, (volume * &r.end).simplify())
        },
    )
}

/// Appends the weight matrix, the im2col copy, the bias/zero initialisation, the GEMM
/// accumulation and the copy of the product matrix into Y.
pub(super) fn expand(ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let (x, xd) = ctx.input(0)?.clone();
    let (w, wd) = ctx.input(1)?.clone();
    let bias = ctx.inputs.get(2).cloned().flatten();
    let (y, _) = ctx.output(0)?.clone();
    let shape = ConvShape::new(
        super::NAME,
        ctx.node,
        &xd.shape,
        &wd.shape,
        bias.as_ref().map(|(_, d)| d.shape.as_slice()),
    )?;
    let label = ctx.label.clone();
    let window = &shape.window;
    let (kernel, ks) = params_over("k", &window.kernel_shape());
    let (output, os) = params_over("o", &window.output_shape());
    let (k_at, k_volume) = linear(&kernel);
    let (o_at, o_volume) = linear(&output);
    let channel = ("c".to_string(), Range::upto(shape.in_per_group));
    let c = SymExpr::sym("c");
    let row = (c.clone() * &k_volume + k_at).simplify();
    let rows = (&k_volume * shape.in_per_group).simplify();
    let batch = ("n".to_string(), Range::upto(shape.batch.clone()));
    let n = SymExpr::sym("n");
    let grouped = shape.group > 1;
    let lead: Axes = std::iter::once(batch.clone())
        .chain(grouped.then(|| ("g".to_string(), Range::upto(shape.group))))
        .collect();
    let g = if grouped {
        SymExpr::sym("g")
    } else {
        SymExpr::Int(0)
    };
    let dtype = xd.dtype;

    // wmat[m, c·K + k] = W[m, c, k…].
    let wmat = ctx.b.transient(
        &format!("{label}_wmat"),
        dtype,
        vec![SymExpr::Int(shape.out_channels), rows.clone()],
    );
    let out_channel = ("m".to_string(), Range::upto(shape.out_channels));
    let m = SymExpr::sym("m");
    let weight_params: Axes = [out_channel.clone(), channel.clone()]
        .into_iter()
        .chain(kernel.iter().cloned())
        .collect();
    let w_idx = [m.clone(), c.clone()].into_iter().chain(ks.iter().cloned());
    element_map(
        ctx.b,
        &format!("{label}_weights"),
        &weight_params,
        vec![Read::new("w", &w, w_idx.collect())],
        (&wmat, vec![m.clone(), row.clone()]),
        None,
        TExpr::input("w"),
    );

    // col[n, g, c·K + k, o] = X[…] or 0 in the padding.
    let col_shape = [shape.batch.clone()]
        .into_iter()
        .chain(grouped.then_some(SymExpr::Int(shape.group)))
        .chain([rows.clone(), o_volume.clone()])
        .collect();
    let col = ctx.b.transient(&format!("{label}_col"), dtype, col_shape);
    let (x_spatial, padded) = if window.is_padded() {
        let positions = (window.axes.iter().zip(&os).zip(&ks))
            .map(|((a, o), k)| (o * a.stride + k * a.dilation).simplify());
        let xp = super::pad_copy(ctx, window, &x, &xd, &label);
        (positions.collect(), Some(xp))
    } else {
        (window.read_index(&os, &ks).0, None)
    };
    let x_source = padded.as_deref().unwrap_or(&x);
    let x_idx = [n.clone(), (&g * shape.in_per_group + c.clone()).simplify()]
        .into_iter()
        .chain(x_spatial)
        .collect();
    let copy_params: Axes = lead
        .iter()
        .chain([&channel])
        .chain(&kernel)
        .chain(&output)
        .cloned()
        .collect();
    let col_at =
        |r: SymExpr| -> Vec<SymExpr> { syms(&lead).into_iter().chain([r, o_at.clone()]).collect() };
    element_map(
        ctx.b,
        &format!("{label}_im2col"),
        &copy_params,
        vec![Read::new("x", x_source, x_idx)],
        (&col, col_at(row)),
        None,
        TExpr::input("x"),
    );

    // ymat[n, m, o] = bias or 0, then += wmat[g·M/group + m, r] · col[n, g, r, o]: the GEMM
    // over rows m, columns o and the reduction r.
    let ymat_shape = vec![
        shape.batch.clone(),
        SymExpr::Int(shape.out_channels),
        o_volume.clone(),
    ];
    let ymat = ctx
        .b
        .transient(&format!("{label}_ymat"), dtype, ymat_shape.clone());
    let bias_name = bias.as_ref().map(|(b, _)| b.as_str());
    crate::ops::window::bias_init(ctx.b, &label, &ymat, &ymat_shape, bias_name);
    let m_full = (&g * shape.out_per_group() + m.clone()).simplify();
    let (o, r) = (SymExpr::sym("o"), SymExpr::sym("r"));
    let gemm_params: Axes = lead
        .iter()
        .cloned()
        .chain([
            ("m".to_string(), Range::upto(shape.out_per_group())),
            ("o".to_string(), Range::upto(o_volume.clone())),
            ("r".to_string(), Range::upto(rows)),
        ])
        .collect();
    let col_idx = syms(&lead).into_iter().chain([r.clone(), o.clone()]);
    let reads = vec![
        Read::new("w", &wmat, vec![m_full.clone(), r]),
        Read::new("col", &col, col_idx.collect()),
    ];
    let product = TExpr::binary(BinOp::Mul, TExpr::input("w"), TExpr::input("col"));
    element_map(
        ctx.b,
        &format!("{label}_gemm"),
        &gemm_params,
        reads,
        (&ymat, vec![n.clone(), m_full, o]),
        Some(Wcr::Sum),
        product,
    );

    // Y[n, m, o…] = ymat[n, m, o].
    let out_params: Axes = [batch, out_channel]
        .into_iter()
        .chain(output.iter().cloned())
        .collect();
    let y_idx = [n.clone(), m.clone()].into_iter().chain(os).collect();
    element_map(
        ctx.b,
        &format!("{label}_output"),
        &out_params,
        vec![Read::new("y", &ymat, vec![n, m, o_at])],
        (&y, y_idx),
        None,
        TExpr::input("y"),
    );
    Ok(())
}
