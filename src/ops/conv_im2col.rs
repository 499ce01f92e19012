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
//! NhwcConv (channels-last X and Y) has its own orientation, [`expand_last`]: the product is
//! `[spatial × channels]`, so the micro-kernel's SIMD lanes run over output channels (a
//! multiple of the vector width in the networks people build) instead of over the spatial
//! positions, which shrink to 7×7 in a network's last stages and leave most lanes idle.
//!
//! Padding never reads out of range: the copy reads a clamped in-bounds element and a select on
//! the index (from [`Window::read_index`](super::super::window::Window::read_index)) stores 0
//! where the window position is padding.

use super::{Channels, Parts};
use crate::ir::build::ScopeBuilder;
use crate::ir::{BinOp, Range, SymExpr, TExpr, Wcr};
use crate::ops::support::{element_map, params_over, Read};
use crate::ops::window::bias_init_at;
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

/// The window axes of a convolution: kernel and output positions with their linear offsets
/// and volumes.
struct WindowAxes {
    kernel: Axes,
    ks: Vec<SymExpr>,
    k_at: SymExpr,
    k_volume: SymExpr,
    output: Axes,
    os: Vec<SymExpr>,
    o_at: SymExpr,
    o_volume: SymExpr,
}

impl WindowAxes {
    fn new(p: &Parts) -> WindowAxes {
        let (kernel, ks) = params_over("k", &p.shape.window.kernel_shape());
        let (output, os) = params_over("o", &p.shape.window.output_shape());
        let (k_at, k_volume) = linear(&kernel);
        let (o_at, o_volume) = linear(&output);
        WindowAxes {
            kernel,
            ks,
            k_at,
            k_volume,
            output,
            os,
            o_at,
            o_volume,
        }
    }

    /// The tensor the im2col copy reads and the spatial positions of window element `k` of
    /// output `o` in it: a padded copy of X ([`super::pad_copy`]) when X is padded at all, so
    /// the copy needs no test per element, else X itself.
    fn source(&self, ctx: &mut ExpandCtx, p: &Parts, layout: Channels) -> (String, Vec<SymExpr>) {
        let window = &p.shape.window;
        if !window.is_padded() {
            return (p.x.clone(), window.read_index(&self.os, &self.ks).0);
        }
        let positions = (window.axes.iter().zip(&self.os).zip(&self.ks))
            .map(|((a, o), k)| (o * a.stride + k * a.dilation).simplify());
        let xp = super::pad_copy(ctx, window, &p.x, &p.xd, &p.label, layout);
        (xp, positions.collect())
    }
}

/// Appends the GEMM accumulation `out[out_idx] += a[a_idx] · b[b_idx]` over `params`.
fn product(
    b: &mut ScopeBuilder,
    label: &str,
    params: &Axes,
    a: (&str, Vec<SymExpr>),
    w: (&str, Vec<SymExpr>),
    out: (&str, Vec<SymExpr>),
) {
    let reads = vec![Read::new("a", a.0, a.1), Read::new("b", w.0, w.1)];
    let value = TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::input("b"));
    element_map(
        b,
        &format!("{label}_gemm"),
        params,
        reads,
        out,
        Some(Wcr::Sum),
        value,
    );
}

/// Appends the weight matrix, the im2col copy, the bias/zero initialisation, the GEMM
/// accumulation and the copy of the product matrix into Y (Conv, channels-first).
pub(super) fn expand(ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let p = Parts::new(ctx, Channels::First)?;
    let shape = &p.shape;
    let label = p.label.as_str();
    let ax = WindowAxes::new(&p);
    let channel = ("c".to_string(), Range::upto(shape.in_per_group));
    let c = SymExpr::sym("c");
    let row = (c.clone() * &ax.k_volume + ax.k_at.clone()).simplify();
    let rows = (&ax.k_volume * shape.in_per_group).simplify();
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
    let dtype = p.xd.dtype;

    // wmat[m, c·K + k] = W[m, c, k…].
    let out_channel = ("m".to_string(), Range::upto(shape.out_channels));
    let m = SymExpr::sym("m");
    let weight_params: Axes = [out_channel.clone(), channel.clone()]
        .into_iter()
        .chain(ax.kernel.iter().cloned())
        .collect();
    let matrix = (
        vec![SymExpr::Int(shape.out_channels), rows.clone()],
        vec![m.clone(), row.clone()],
    );
    let wmat = p.reordered_weights(ctx.b, "wmat", &ax.ks, &weight_params, matrix);

    // col[n, g, c·K + k, o] = X[…] or 0 in the padding.
    let col_shape = [shape.batch.clone()]
        .into_iter()
        .chain(grouped.then_some(SymExpr::Int(shape.group)))
        .chain([rows.clone(), ax.o_volume.clone()])
        .collect();
    let col = ctx.b.transient(&format!("{label}_col"), dtype, col_shape);
    let (x_source, x_spatial) = ax.source(ctx, &p, Channels::First);
    let x_idx = [n.clone(), (&g * shape.in_per_group + c.clone()).simplify()]
        .into_iter()
        .chain(x_spatial)
        .collect();
    let copy_params: Axes = lead
        .iter()
        .chain([&channel])
        .chain(&ax.kernel)
        .chain(&ax.output)
        .cloned()
        .collect();
    let col_at = |r: SymExpr| -> Vec<SymExpr> {
        syms(&lead)
            .into_iter()
            .chain([r, ax.o_at.clone()])
            .collect()
    };
    element_map(
        ctx.b,
        &format!("{label}_im2col"),
        &copy_params,
        vec![Read::new("x", &x_source, x_idx)],
        (&col, col_at(row)),
        None,
        TExpr::input("x"),
    );

    // ymat[n, m, o] = bias or 0, then += wmat[g·M/group + m, r] · col[n, g, r, o]: the GEMM
    // over rows m, columns o and the reduction r.
    let ymat_shape = vec![
        shape.batch.clone(),
        SymExpr::Int(shape.out_channels),
        ax.o_volume.clone(),
    ];
    let ymat = ctx
        .b
        .transient(&format!("{label}_ymat"), dtype, ymat_shape.clone());
    bias_init_at(ctx.b, label, &ymat, &ymat_shape, p.bias.as_deref(), 1);
    let m_full = (&g * shape.out_per_group() + m.clone()).simplify();
    let (o, r) = (SymExpr::sym("o"), SymExpr::sym("r"));
    let gemm_params: Axes = lead
        .iter()
        .cloned()
        .chain([
            ("m".to_string(), Range::upto(shape.out_per_group())),
            ("o".to_string(), Range::upto(ax.o_volume.clone())),
            ("r".to_string(), Range::upto(rows)),
        ])
        .collect();
    let col_idx = syms(&lead).into_iter().chain([r.clone(), o.clone()]);
    product(
        ctx.b,
        label,
        &gemm_params,
        (&wmat, vec![m_full.clone(), r]),
        (&col, col_idx.collect()),
        (&ymat, vec![n.clone(), m_full, o]),
    );

    // Y[n, m, o…] = ymat[n, m, o].
    let out_params: Axes = [batch, out_channel]
        .into_iter()
        .chain(ax.output.iter().cloned())
        .collect();
    let y_idx = [n.clone(), m.clone()]
        .into_iter()
        .chain(ax.os.clone())
        .collect();
    element_map(
        ctx.b,
        &format!("{label}_output"),
        &out_params,
        vec![Read::new("y", &ymat, vec![n, m, ax.o_at.clone()])],
        (&p.y, y_idx),
        None,
        TExpr::input("y"),
    );
    Ok(())
}

/// The channels-last im2col of NhwcConv without groups, every matrix row-major:
///
/// ```text
/// wmat[k·C + c, m]      = W[m, c, k…]                 (a constant: folded when W is one)
/// col[n, o, k·C + c]    = X[n, o·s − pad + k·d…, c]    (C contiguous channels per window element)
/// ymat[n, o, m]         = B[m] + Σ_r col[n, o, r] · wmat[r, m]
/// Y[n, o…, m]           = ymat[n, o, m]                (the same order: a contiguous copy)
/// ```
/// The product `[n, o, m, r]` has MatMul's shape (A = col, B = wmat), with output channels as
/// its columns. Grouped convolutions are refused: their windows are not contiguous in C.
pub(super) fn expand_last(ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let p = Parts::new(ctx, Channels::Last)?;
    let shape = &p.shape;
    if shape.group != 1 {
        return Err(OpError::unsupported(
            super::nhwc::NAME,
            format!(
                "the im2col expansion needs group = 1, got {}; grouped convolutions expand as `padded`",
                shape.group
            ),
        ));
    }
    let label = p.label.as_str();
    let ax = WindowAxes::new(&p);
    let channels = shape.in_per_group;
    let channel = ("c".to_string(), Range::upto(channels));
    let (n, c, m) = (SymExpr::sym("n"), SymExpr::sym("c"), SymExpr::sym("m"));
    let row = (ax.k_at.clone() * channels + c.clone()).simplify();
    let rows = (&ax.k_volume * channels).simplify();
    let batch = ("n".to_string(), Range::upto(shape.batch.clone()));
    let out_channel = ("m".to_string(), Range::upto(shape.out_channels));
    let dtype = p.xd.dtype;
    let m_extent = SymExpr::Int(shape.out_channels);

    let weight_params: Axes = (ax.kernel.iter().cloned())
        .chain([channel.clone(), out_channel.clone()])
        .collect();
    let matrix = (
        vec![rows.clone(), m_extent.clone()],
        vec![row.clone(), m.clone()],
    );
    let wmat = p.reordered_weights(ctx.b, "wmat", &ax.ks, &weight_params, matrix);

    let col = ctx.b.transient(
        &format!("{label}_col"),
        dtype,
        vec![shape.batch.clone(), ax.o_volume.clone(), rows.clone()],
    );
    let (x_source, x_spatial) = ax.source(ctx, &p, Channels::Last);
    let x_idx = std::iter::once(n.clone())
        .chain(x_spatial)
        .chain([c.clone()])
        .collect();
    let copy_params: Axes = std::iter::once(batch.clone())
        .chain(ax.output.iter().cloned())
        .chain(ax.kernel.iter().cloned())
        .chain([channel])
        .collect();
    element_map(
        ctx.b,
        &format!("{label}_im2col"),
        &copy_params,
        vec![Read::new("x", &x_source, x_idx)],
        (&col, vec![n.clone(), ax.o_at.clone(), row]),
        None,
        TExpr::input("x"),
    );

    let ymat_shape = vec![shape.batch.clone(), ax.o_volume.clone(), m_extent];
    let ymat = ctx
        .b
        .transient(&format!("{label}_ymat"), dtype, ymat_shape.clone());
    bias_init_at(ctx.b, label, &ymat, &ymat_shape, p.bias.as_deref(), 2);
    let (o, r) = (SymExpr::sym("o"), SymExpr::sym("r"));
    let gemm_params: Axes = vec![
        batch.clone(),
        ("o".to_string(), Range::upto(ax.o_volume.clone())),
        out_channel.clone(),
        ("r".to_string(), Range::upto(rows)),
    ];
    product(
        ctx.b,
        label,
        &gemm_params,
        (&col, vec![n.clone(), o.clone(), r.clone()]),
        (&wmat, vec![r, m.clone()]),
        (&ymat, vec![n.clone(), o, m.clone()]),
    );

    let out_params: Axes = std::iter::once(batch)
        .chain(ax.output.iter().cloned())
        .chain([out_channel])
        .collect();
    let y_idx = std::iter::once(n.clone())
        .chain(ax.os.iter().cloned())
        .chain([m.clone()])
        .collect();
    element_map(
        ctx.b,
        &format!("{label}_output"),
        &out_params,
        vec![Read::new("y", &ymat, vec![n, ax.o_at.clone(), m])],
        (&p.y, y_idx),
        None,
        TExpr::input("y"),
    );
    Ok(())
}
