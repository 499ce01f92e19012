//! Conv as im2col + GEMM: copy every input window into a column buffer, then multiply.
//!
//! ```text
//! col[n, g, c, k…, o…] = X[n, g·C/group + c, o·s − pad + k·d…]   (0 where that is padding)
//! Y[n, g·M/group + m, o…] = B[…] + Σ_{c, k…} W[g·M/group + m, c, k…] · col[n, g, c, k…, o…]
//! ```
//! Laid out row-major, `col` is a stack of `N·group` matrices of `(C/group)·∏K` rows by `∏O`
//! columns, and `W` viewed per group is an `(M/group) × (C/group)·∏K` matrix: the second map is
//! a plain batched GEMM, so every GEMM transformation (tiling, register accumulation,
//! vectorisation of the unit-stride `o` axis) applies to a convolution. The padding logic lives
//! in the copy map only; the GEMM reads every element unconditionally. The price is the buffer,
//! `∏K` times the input. The `g` axis is omitted when `group = 1`, as in the direct expansion.
//!
//! Padding never reads out of range: the copy reads a clamped in-bounds element and a select on
//! the index (from [`Window::read_index`](super::super::window::Window::read_index)) stores 0
//! where the window position is padding.

use super::ConvShape;
use crate::ir::Range;
use crate::ir::{BinOp, SymExpr, TExpr, Wcr};
use crate::ops::support::{element_map, Read};
use crate::ops::{ExpandCtx, OpError};

/// The index names of one expansion and their ranges.
struct Axes {
    /// `n`, and `g` when grouped.
    lead: Vec<(String, Range)>,
    channel: (String, Range),
    kernel: Vec<(String, Range)>,
    output: Vec<(String, Range)>,
}

fn syms(axes: &[(String, Range)]) -> Vec<SymExpr> {
    axes.iter().map(|(n, _)| SymExpr::sym(n.as_str())).collect()
}

/// Appends the bias/zero initialisation, the im2col copy and the GEMM accumulation.
pub(super) fn expand(ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let (x, xd) = ctx.input(0)?.clone();
    let (w, wd) = ctx.input(1)?.clone();
    let bias = ctx.inputs.get(2).cloned().flatten();
    let (y, yd) = ctx.output(0)?.clone();
    let shape = ConvShape::new(
        super::NAME,
        ctx.node,
        &xd.shape,
        &wd.shape,
        bias.as_ref().map(|(_, d)| d.shape.as_slice()),
    )?;
    let label = ctx.label.clone();
    let grouped = shape.group > 1;
    let rank = shape.window.axes.len();
    let axes = Axes {
        lead: std::iter::once(("n".to_string(), Range::upto(shape.batch.clone())))
            .chain(grouped.then(|| ("g".to_string(), Range::upto(shape.group))))
            .collect(),
        channel: ("c".to_string(), Range::upto(shape.in_per_group)),
        kernel: (0..rank)
            .map(|d| {
                (
                    format!("k{d}"),
                    Range::upto(shape.window.axes[d].kernel.clone()),
                )
            })
            .collect(),
        output: (0..rank)
            .map(|d| {
                (
                    format!("o{d}"),
                    Range::upto(shape.window.axes[d].output.clone()),
                )
            })
            .collect(),
    };
    let (n, g) = (
        SymExpr::sym("n"),
        if grouped {
            SymExpr::sym("g")
        } else {
            SymExpr::Int(0)
        },
    );
    let (c, ks, os) = (SymExpr::sym("c"), syms(&axes.kernel), syms(&axes.output));

    // Y = bias (broadcast over n and o…) or 0.
    let bias_name = bias.as_ref().map(|(b, _)| b.as_str());
    crate::ops::window::bias_init(ctx.b, &label, &y, &yd.shape, bias_name);

    // col[n, g, c, k…, o…] = X[…] or 0 in the padding.
    let col_idx: Vec<SymExpr> = syms(&axes.lead)
        .into_iter()
        .chain([c.clone()])
        .chain(ks.iter().cloned())
        .chain(os.iter().cloned())
        .collect();
    let col_shape: Vec<SymExpr> = axes
        .lead
        .iter()
        .chain([&axes.channel])
        .chain(&axes.kernel)
        .chain(&axes.output)
        .map(|(_, r)| r.end.clone())
        .collect();
    let col = ctx
        .b
        .transient(&format!("{label}_col"), xd.dtype, col_shape);
    let (x_spatial, inside) = shape.window.read_index(&os, &ks);
    let x_idx = [n.clone(), &g * shape.in_per_group + c.clone()]
        .into_iter()
        .chain(x_spatial)
        .collect();
    let value = match inside {
        Some(cond) => TExpr::select(cond, TExpr::input("x"), TExpr::Const(0.0)),
        None => TExpr::input("x"),
    };
    let copy_params: Vec<(String, Range)> = axes
        .lead
        .iter()
        .chain([&axes.channel])
        .chain(&axes.kernel)
        .chain(&axes.output)
        .cloned()
        .collect();
    element_map(
        ctx.b,
        &format!("{label}_im2col"),
        &copy_params,
        vec![Read::new("x", &x, x_idx)],
        (&col, col_idx.clone()),
        None,
        value,
    );

    // Y[n, g·M/group + m, o…] += W[g·M/group + m, c, k…] · col[n, g, c, k…, o…]: the GEMM over
    // rows m, columns o… and the reduction (c, k…).
    let m_full = &g * shape.out_per_group() + SymExpr::sym("m");
    let gemm_params: Vec<(String, Range)> = axes
        .lead
        .iter()
        .cloned()
        .chain([("m".to_string(), Range::upto(shape.out_per_group()))])
        .chain(axes.output.iter().cloned())
        .chain([axes.channel.clone()])
        .chain(axes.kernel.iter().cloned())
        .collect();
    let w_idx = [m_full.clone(), c].into_iter().chain(ks).collect();
    let y_idx = [n, m_full].into_iter().chain(os).collect();
    let reads = vec![Read::new("w", &w, w_idx), Read::new("col", &col, col_idx)];
    let product = TExpr::binary(BinOp::Mul, TExpr::input("w"), TExpr::input("col"));
    element_map(
        ctx.b,
        &format!("{label}_gemm"),
        &gemm_params,
        reads,
        (&y, y_idx),
        Some(Wcr::Sum),
        product,
    );
    Ok(())
}
