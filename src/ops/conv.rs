//! Conv: grouped, strided, dilated, padded convolution over any number of spatial axes (NC…).

use super::support::{element_map, params_over, Read};
use super::window::{
    bias_init_at, conv_operands, float_input, multi_indices, offset, same_dim, sym_shape, tap,
    tensor_input, Tap, Window,
};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::ScopeBuilder;
use crate::ir::DataDesc;
use crate::ir::{Attr, BinOp, LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};
use crate::ops::shape::Transpose;
use std::collections::BTreeMap;

#[path = "conv_im2col.rs"]
mod im2col;
#[path = "conv_nhwc.rs"]
mod nhwc;

pub static OPS: &[&dyn Operator] = &[&Conv, &nhwc::NhwcConv];

const NAME: &str = "Conv";

/// `Y[n, m, o…] = B[m] + Σ_{c, k…} X[n, g·C/group + c, o·s − pad + k·d…] · W[m, c, k…]` with
/// `g = m / (M/group)`, padding reading as zero.
pub struct Conv;

/// The sizes of one convolution, derived from its input shapes and attributes (shared with the
/// quantized convolutions of `conv_integer`).
pub(super) struct ConvShape {
    batch: SymExpr,
    pub(super) out_channels: i64,
    group: i64,
    /// Input channels each group reads (`C / group`, the second dimension of W).
    in_per_group: i64,
    window: Window,
}

impl ConvShape {
    /// The geometry of `op` (named in errors) over X, W and the optional bias shapes.
    pub(super) fn new(
        op: &str,
        node: &LibraryNode,
        x: &[SymExpr],
        w: &[SymExpr],
        bias: Option<&[SymExpr]>,
    ) -> Result<ConvShape, OpError> {
        let (group, [channels, out_channels, in_per_group]) = conv_operands(op, node, x, w)?;
        if channels != in_per_group * group {
            return Err(OpError::shape(
                op,
                format!(
                    "X has {channels} channels but W expects {in_per_group}·group = {}",
                    in_per_group * group
                ),
            ));
        }
        if out_channels % group != 0 {
            return Err(OpError::shape(
                op,
                format!("W has {out_channels} output channels, not divisible by group {group}"),
            ));
        }
        let kernel = &w[2..];
        if let Some(ks) = node.ints("kernel_shape") {
            let agrees = ks.len() == kernel.len()
                && ks
                    .iter()
                    .zip(kernel)
                    .all(|(a, b)| (b - *a).simplify() == SymExpr::Int(0));
            if !agrees {
                return Err(OpError::attr(
                    op,
                    "kernel_shape",
                    format!("{ks:?} disagrees with the spatial shape of W {kernel:?}"),
                ));
            }
        }
        if let Some(b) = bias {
            let bad = || format!("bias B has shape {b:?}, expected [{out_channels}]");
            if b.len() != 1 {
                return Err(OpError::shape(op, bad()));
            }
            same_dim(op, &b[0], &SymExpr::Int(out_channels), bad)?;
        }
        let window = Window::from_attrs(op, node, &x[2..], kernel, false)?;
        Ok(ConvShape {
            batch: x[0].clone(),
            out_channels,
            group,
            in_per_group,
            window,
        })
    }

    pub(super) fn output_shape(&self) -> Vec<SymExpr> {
        let mut s = vec![self.batch.clone(), SymExpr::Int(self.out_channels)];
        s.extend(self.window.output_shape());
        s
    }

    /// Output channels per group.
    fn out_per_group(&self) -> i64 {
        self.out_channels / self.group
    }
}

/// Shapes of the optional bias input.
fn bias_shape(inputs: &[Option<TensorType>]) -> Result<Option<&[SymExpr]>, OpError> {
    match inputs.get(2).and_then(|t| t.as_ref()) {
        None => Ok(None),
        Some(_) => Ok(Some(
            float_input(NAME, inputs, 2, "bias B")?.shape.as_slice(),
        )),
    }
}

impl Operator for Conv {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        let x = float_input(NAME, inputs, 0, "input X")?;
        let w = float_input(NAME, inputs, 1, "weights W")?;
        if w.dtype != x.dtype {
            return Err(OpError::shape(
                NAME,
                format!("W has element type {} but X has {}", w.dtype, x.dtype),
            ));
        }
        let shape = ConvShape::new(NAME, node, &x.shape, &w.shape, bias_shape(inputs)?)?;
        Ok(vec![TensorType::new(x.dtype, shape.output_shape())])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = tensor_input(NAME, inputs, 0, "input X")?;
        let w = tensor_input(NAME, inputs, 1, "weights W")?;
        let bias = inputs.get(2).copied().flatten();
        let (y, shape) = reference(NAME, node, [x, w], bias, Offsets::default())?;
        Ok(vec![Tensor::from_f64(x.dtype(), shape, &y)])
    }

    fn default_attr(&self, name: &str) -> Option<Attr> {
        match name {
            "group" => Some(Attr::Int(1)),
            "auto_pad" => Some(Attr::Str("NOTSET".into())),
            _ => None,
        }
    }

    fn expansions(&self) -> &'static [&'static str] {
        &["pure", "im2col", "padded"]
    }

    /// `pure`: see [`direct`]. `im2col`: see [`im2col`]. `padded`: [`direct`] over a padded
    /// copy of X ([`pad_copy`]), so the accumulation reads every window element without a test
    /// and its innermost output axis vectorizes (depthwise convolutions).
    fn expand(&self, implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        match implementation {
            "im2col" => im2col::expand(ctx),
            "padded" => direct(ctx, Channels::First, true),
            _ => direct(ctx, Channels::First, false),
        }
    }

    /// `2·N·M·∏O·(C/group)·∏K`: one multiply and one add per weight per output element.
    fn flops(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let (Some(Some(w)), Some(y)) = (inputs.get(1), outputs.first()) else {
            return 0;
        };
        let (Some(ws), Some(ys)) = (w.static_shape(), y.static_shape()) else {
            return 0;
        };
        let per_output: usize = ws[1..].iter().product();
        2 * (ys.iter().product::<usize>() * per_output) as u64
    }
}

/// Zero points the reference subtracts from X (one value) and W (one value, or one per output
/// channel) before they multiply; padding reads zero after the subtraction, as in ONNX's
/// ConvInteger and QLinearConv. Conv subtracts nothing.
#[derive(Default)]
pub(super) struct Offsets {
    pub(super) x: f64,
    pub(super) w: Vec<f64>,
}

impl Offsets {
    fn w_at(&self, m: usize) -> f64 {
        match self.w.as_slice() {
            [] => 0.0,
            [one] => *one,
            per_channel => per_channel[m],
        }
    }
}

/// The reference convolution of `op`: `Y = B + Σ (X − x₀)·(W − w₀)` in f64, directly from the
/// definition, with Y's values and shape.
pub(super) fn reference(
    op: &str,
    node: &LibraryNode,
    [x, w]: [&Tensor; 2],
    bias: Option<&Tensor>,
    zero: Offsets,
) -> Result<(Vec<f64>, Vec<usize>), OpError> {
    let b_shape = bias.map(|b| sym_shape(&b.shape));
    let shape = ConvShape::new(
        op,
        node,
        &sym_shape(&x.shape),
        &sym_shape(&w.shape),
        b_shape.as_deref(),
    )?;
    let axes = shape.window.concrete(op)?;
    let out_spatial: Vec<usize> = axes.iter().map(|a| a.output as usize).collect();
    let kernel: Vec<usize> = axes.iter().map(|a| a.kernel as usize).collect();
    let (cg, mg) = (shape.in_per_group as usize, shape.out_per_group() as usize);
    let (xs, ws) = (x.strides(), w.strides());
    let xv: Vec<f64> = x.to_f64_vec().into_iter().map(|v| v - zero.x).collect();
    let outs: Vec<Vec<usize>> = multi_indices(&out_spatial).collect();
    let ks: Vec<Vec<usize>> = multi_indices(&kernel).collect();
    // taps[k][o]: the spatial offset in X that window element k of output o reads, or None in
    // the padding — classified once instead of once per channel pair.
    let taps: Vec<Vec<Option<usize>>> = (ks.iter())
        .map(|k| {
            (outs.iter())
                .map(|o| match tap(&axes, o, k) {
                    Tap::Input(at) => Some(offset(&xs[2..], &at)),
                    Tap::Pad | Tap::Outside => None,
                })
                .collect()
        })
        .collect();
    let mut y = vec![0.0; x.shape[0] * shape.out_channels as usize * outs.len()];
    // Each output sums the bias, then over c, then over k: the order of a textbook loop nest,
    // with the output positions innermost so the taps are walked contiguously.
    for (nm, y_row) in y.chunks_mut(outs.len().max(1)).enumerate() {
        let (n, m) = (
            nm / shape.out_channels as usize,
            nm % shape.out_channels as usize,
        );
        let g = m / mg;
        let w0 = zero.w_at(m);
        y_row.fill(bias.map_or(0.0, |b| b.get_f64(m)));
        for c in 0..cg {
            let x_base = n * xs[0] + (g * cg + c) * xs[1];
            for (k, row_taps) in ks.iter().zip(&taps) {
                let wv = w.get_f64(m * ws[0] + c * ws[1] + offset(&ws[2..], k)) - w0;
                for (acc, at) in y_row.iter_mut().zip(row_taps) {
                    if let Some(at) = at {
                        *acc += xv[x_base + at] * wv;
                    }
                }
            }
        }
    }
    let mut out_shape = vec![x.shape[0], shape.out_channels as usize];
    out_shape.extend(&out_spatial);
    Ok((y, out_shape))
}

/// Where a tensor keeps its channels: right after the batch (`N, C, spatial…`, ONNX's Conv) or
/// last (`N, spatial…, C`, [`nhwc::NhwcConv`]). Only X and Y have a layout; W stays `M, C, k…`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Channels {
    First,
    Last,
}

impl Channels {
    /// Items given channels-first (`[n, c, spatial…]`) put in this layout's order.
    pub(super) fn order<T>(self, mut v: Vec<T>) -> Vec<T> {
        if self == Channels::Last && v.len() > 1 {
            let c = v.remove(1);
            v.push(c);
        }
        v
    }

    /// The axis holding the channels in a tensor of rank `rank`.
    fn channel_axis(self, rank: usize) -> usize {
        match self {
            Channels::First => 1,
            Channels::Last => rank.saturating_sub(1),
        }
    }

    /// The spatial axis (0-based, in the window's order) stored at position `d` of a tensor of
    /// rank `rank`, or `None` for the batch and channel positions.
    fn spatial_axis(self, d: usize, rank: usize) -> Option<usize> {
        match self {
            Channels::First => d.checked_sub(2),
            Channels::Last => (d >= 1 && d + 1 < rank).then(|| d - 1),
        }
    }

    /// Items given in this layout's order put channels-first (the inverse of [`Self::order`]).
    pub(super) fn to_first<T>(self, mut v: Vec<T>) -> Vec<T> {
        if self == Channels::Last && v.len() > 1 {
            if let Some(c) = v.pop() {
                v.insert(1, c);
            }
        }
        v
    }

    /// A tensor stored in layout `self` put in the other layout.
    pub(super) fn relayout(self, t: &Tensor) -> Result<Tensor, OpError> {
        let axes: Vec<i64> = (0..t.shape.len() as i64).collect();
        // Output axis `d` is input axis `perm[d]`: a channels-last tensor lists its axes back
        // in channels-first order, and conversely.
        let perm = match self {
            Channels::Last => Channels::Last.to_first(axes),
            Channels::First => Channels::Last.order(axes),
        };
        let node = LibraryNode {
            op: "Transpose".into(),
            attrs: BTreeMap::from([("perm".to_string(), Attr::Ints(perm))]),
        };
        let mut out = Transpose.eval(&node, &[Some(t)])?;
        Ok(out.remove(0))
    }
}

/// What every expansion of a convolution starts from: the names of X, W, the optional bias and
/// Y with the descriptors of X and Y, the geometry (X read in `layout`), and the label the
/// expansion's maps are named after.
pub(super) struct Parts {
    x: String,
    xd: DataDesc,
    w: String,
    bias: Option<String>,
    y: String,
    yd: DataDesc,
    shape: ConvShape,
    label: String,
}

impl Parts {
    pub(super) fn new(ctx: &ExpandCtx, layout: Channels) -> Result<Parts, OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (w, wd) = ctx.input(1)?;
        let bias = ctx.inputs.get(2).cloned().flatten();
        let (y, yd) = ctx.output(0)?.clone();
        // Errors name the operator expanded (Conv or NhwcConv).
        let shape = ConvShape::new(
            &ctx.node.op,
            ctx.node,
            &layout.to_first(xd.shape.clone()),
            &wd.shape,
            bias.as_ref().map(|(_, d)| d.shape.as_slice()),
        )?;
        Ok(Parts {
            x,
            xd,
            w: w.clone(),
            bias: bias.map(|(b, _)| b),
            y,
            yd,
            shape,
            label: ctx.label.clone(),
        })
    }

    /// Declares `{label}_{suffix}`, the weights in another order (`shape`, with `W[m, c, k…]`
    /// stored at `at`, both over `params`, which name `m`, `c` and the kernel axes `ks`), and
    /// appends the copy into it; returns its name. The copy reads only W, so `ConstantMapFolding`
    /// runs it at build time when W is a constant.
    fn reordered_weights(
        &self,
        b: &mut ScopeBuilder,
        suffix: &str,
        ks: &[SymExpr],
        params: &[(String, Range)],
        (shape, at): (Vec<SymExpr>, Vec<SymExpr>),
    ) -> String {
        let label = &self.label;
        let reordered = b.transient(&format!("{label}_{suffix}"), self.xd.dtype, shape);
        let w_idx = [SymExpr::sym("m"), SymExpr::sym("c")]
            .into_iter()
            .chain(ks.iter().cloned());
        element_map(
            b,
            &format!("{label}_weights"),
            params,
            vec![Read::new("w", &self.w, w_idx.collect())],
            (&reordered, at),
            None,
            TExpr::input("w"),
        );
        reordered
    }
}

/// The direct expansion in either layout: an init map writing the bias (or zero) into Y, then
/// [`accumulate`] — over a padded copy of X when `padded` and X is padded at all.
fn direct(ctx: &mut ExpandCtx, layout: Channels, padded: bool) -> Result<(), OpError> {
    let p = Parts::new(ctx, layout)?;
    bias_init_at(
        ctx.b,
        &p.label,
        &p.y,
        &p.yd.shape,
        p.bias.as_deref(),
        layout.channel_axis(p.yd.shape.len()),
    );
    let xp = (padded && p.shape.window.is_padded())
        .then(|| pad_copy(ctx, &p.shape.window, &p.x, &p.xd, &p.label, layout));
    let w = match layout {
        Channels::First => p.w.clone(),
        Channels::Last => last_weights(ctx.b, &p),
    };
    let operands = Operands {
        x: xp.as_deref().unwrap_or(&p.x),
        w: &w,
        x_zero: None,
        w_zero: None,
        x_padded: xp.is_some(),
    };
    accumulate(ctx.b, &p.label, &p.shape, layout, operands, &p.y);
    Ok(())
}

/// The weights channels-last, `W[m, c, k…]` stored at `[k…, c, m]`: what [`accumulate`] reads
/// channels-last, where the output channel `m` is the innermost loop (it is Y's unit-stride
/// dimension), so the weights it reads step by one element too instead of by `C/group · K`
/// (depthwise 3×3: by 9, a gather per SIMD vector).
fn last_weights(b: &mut ScopeBuilder, p: &Parts) -> String {
    let (kernel, ks) = params_over("k", &p.shape.window.kernel_shape());
    let channels = ("c".to_string(), Range::upto(p.shape.in_per_group));
    let outputs = ("m".to_string(), Range::upto(p.shape.out_channels));
    let params: Vec<_> = kernel.into_iter().chain([channels, outputs]).collect();
    // Stored in the order of its parameters: each at its own index, over its whole range.
    let shape = params.iter().map(|(_, r)| r.end.clone()).collect();
    let at = params
        .iter()
        .map(|(n, _)| SymExpr::sym(n.as_str()))
        .collect();
    p.reordered_weights(b, "wlast", &ks, &params, (shape, at))
}

/// Appends the copy of X (laid out as `layout` says) with its padding written out as zeros,
/// `xp[n, c, p…]` over [`Window::padded_extents`] (`xp[n, p…, c]` channels-last), and returns
/// its name: zeros written to the border only (see [`zero_border`]), then X copied into the
/// interior (`xp[n, c, pad + i…] = X[n, c, i…]` over the input positions some window reads),
/// maps that vectorize. The maps reading `xp` then read every element unconditionally and
/// contiguously, with no test for padding per window element.
pub(super) fn pad_copy(
    ctx: &mut ExpandCtx,
    window: &Window,
    x: &str,
    xd: &DataDesc,
    label: &str,
    layout: Channels,
) -> String {
    let first = layout.to_first(xd.shape.clone());
    let lead = &first[..2];
    let extents = window.padded_extents();
    let xp_first: Vec<SymExpr> = lead.iter().cloned().chain(extents.clone()).collect();
    let xp = ctx.b.transient(
        &format!("{label}_padded"),
        xd.dtype,
        layout.order(xp_first.clone()),
    );
    let read: Vec<SymExpr> = (window.axes.iter().zip(&extents))
        .map(|(a, p)| a.input.clone().min(p - &a.pad_begin).simplify())
        .collect();
    let interior: Vec<Range> = (window.axes.iter().zip(&read))
        .map(|(a, r)| Range::new(a.pad_begin.clone(), (&a.pad_begin + r).simplify()))
        .collect();
    let border = format!("{label}_pad_zero");
    zero_border(ctx.b, &border, &xp, &xp_first, &interior, layout);
    let copied = layout.order(lead.iter().cloned().chain(read).collect());
    let (params, idx) = params_over("i", &copied);
    let rank = idx.len();
    let xp_idx = (idx.iter().enumerate())
        .map(|(d, i)| match layout.spatial_axis(d, rank) {
            Some(axis) => (i + &window.axes[axis].pad_begin).simplify(),
            None => i.clone(),
        })
        .collect();
    let reads = vec![Read::new("x", x, idx)];
    let pad = format!("{label}_pad");
    element_map(
        ctx.b,
        &pad,
        &params,
        reads,
        (&xp, xp_idx),
        None,
        TExpr::input("x"),
    );
    xp
}

/// Zeros in every element of `xp` (shape `[n, c, spatial…]` in channels-first order, stored as
/// `layout` says) outside the box `interior` of its spatial axes, which the copy of X
/// overwrites on every run anyway (zeroing all of `xp` first wrote each feature map twice). The
/// border is cut into slabs, two per spatial axis: on axis `k` the part before and the part
/// after the interior, over the interior of the axes before `k` and the whole of the axes after
/// it — disjoint, and together exactly the complement. A slab that is empty for constant
/// extents is left out.
fn zero_border(
    b: &mut ScopeBuilder,
    label: &str,
    xp: &str,
    first: &[SymExpr],
    interior: &[Range],
    layout: Channels,
) {
    for (k, inside) in interior.iter().enumerate() {
        let axis = k + 2;
        let sides = [
            ("lo", Range::new(0, inside.start.clone())),
            ("hi", Range::new(inside.end.clone(), first[axis].clone())),
        ];
        for (side, slab) in sides {
            if slab.len().as_int().is_some_and(|n| n <= 0) {
                continue;
            }
            let ranges = (0..first.len()).map(|d| match d {
                d if d == axis => slab.clone(),
                d if d >= 2 && d < axis => interior[d - 2].clone(),
                d => Range::upto(first[d].clone()),
            });
            let params: Vec<(String, Range)> = layout.order(
                ranges
                    .enumerate()
                    .map(|(d, r)| (format!("i{d}"), r))
                    .collect(),
            );
            let idx = params.iter().map(|(n, _)| SymExpr::sym(n.as_str()));
            let name = format!("{label}_{k}_{side}");
            element_map(
                b,
                &name,
                &params,
                Vec::new(),
                (xp, idx.collect()),
                None,
                TExpr::Const(0.0),
            );
        }
    }
}

/// A zero point container of an expansion: one value (of any rank), or one per output channel.
pub(super) struct ZeroPoint<'a> {
    pub(super) name: &'a str,
    pub(super) rank: usize,
    pub(super) per_channel: bool,
}

impl ZeroPoint<'_> {
    fn index(&self, channel: &SymExpr) -> Vec<SymExpr> {
        if self.per_channel {
            vec![channel.clone()]
        } else {
            vec![SymExpr::Int(0); self.rank]
        }
    }
}

/// The containers one accumulation multiplies.
pub(super) struct Operands<'a> {
    pub(super) x: &'a str,
    pub(super) w: &'a str,
    pub(super) x_zero: Option<ZeroPoint<'a>>,
    pub(super) w_zero: Option<ZeroPoint<'a>>,
    /// X is [`pad_copy`]'s padded copy: windows read it at `o·s + k·d` without a test.
    pub(super) x_padded: bool,
}

/// One accumulation map over `(n, [g,] m, o…, c, k…)` (channels-last `(n, [g,] m, o…, k…, c)`)
/// adding `(X − x₀)·(W − w₀)` into the initialised `y` with a sum write-conflict. Padded
/// positions read a clamped in-bounds element and contribute zero through a select on the index.
/// The layout changes where the channel index sits in X's and Y's subscripts, the order of the
/// sum, and which order W is read in: channels-last it is [`last_weights`]' copy.
pub(super) fn accumulate<'a>(
    b: &mut crate::ir::build::ScopeBuilder,
    label: &str,
    shape: &ConvShape,
    layout: Channels,
    ops: Operands<'a>,
    y: &'a str,
) {
    let rank = shape.window.axes.len();
    let mut params: Vec<(String, Range)> = vec![("n".into(), Range::upto(shape.batch.clone()))];
    let g = if shape.group > 1 {
        params.push(("g".into(), Range::upto(shape.group)));
        SymExpr::sym("g")
    } else {
        SymExpr::Int(0)
    };
    params.push(("m".into(), Range::upto(shape.out_per_group())));
    let outs: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("o{d}"))).collect();
    for (d, a) in shape.window.axes.iter().enumerate() {
        params.push((format!("o{d}"), Range::upto(a.output.clone())));
    }
    // Channels-first sums over c then the window (the reference's order); channels-last over
    // the window then c, the order of the im2col row `k·C + c` and of a direct kernel whose
    // innermost reduction walks the contiguous channels — so scheduling it as one reorders no
    // sum (a reordered 4608-term f32 sum can differ by more than the numerics check accepts).
    let channel = ("c".to_string(), Range::upto(shape.in_per_group));
    if layout == Channels::First {
        params.push(channel.clone());
    }
    let ks: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("k{d}"))).collect();
    for (d, a) in shape.window.axes.iter().enumerate() {
        params.push((format!("k{d}"), Range::upto(a.kernel.clone())));
    }
    if layout == Channels::Last {
        params.push(channel);
    }
    let m_full = &g * shape.out_per_group() + SymExpr::sym("m");
    let c_full = &g * shape.in_per_group + SymExpr::sym("c");
    let (x_spatial, inside) = if ops.x_padded {
        let at = (shape.window.axes.iter().zip(&outs).zip(&ks))
            .map(|((a, o), k)| (o * a.stride + k * a.dilation).simplify());
        (at.collect(), None)
    } else {
        shape.window.read_index(&outs, &ks)
    };
    let x_idx = [SymExpr::sym("n"), c_full]
        .into_iter()
        .chain(x_spatial)
        .collect();
    // Channels-last weights are [`last_weights`]' `[k…, c, m]`.
    let w_idx: Vec<SymExpr> = match layout {
        Channels::First => [m_full.clone(), SymExpr::sym("c")]
            .into_iter()
            .chain(ks)
            .collect(),
        Channels::Last => ks
            .into_iter()
            .chain([SymExpr::sym("c"), m_full.clone()])
            .collect(),
    };
    let y_idx = [SymExpr::sym("n"), m_full.clone()]
        .into_iter()
        .chain(outs)
        .collect();
    let mut reads = vec![
        Read::new("x", ops.x, layout.order(x_idx)),
        Read::new("w", ops.w, w_idx),
    ];
    let mut operand = |conn: &'static str, zero: &'static str, zp: Option<ZeroPoint<'a>>| match zp {
        None => TExpr::input(conn),
        Some(zp) => {
            reads.push(Read::new(zero, zp.name, zp.index(&m_full)));
            TExpr::binary(BinOp::Sub, TExpr::input(conn), TExpr::input(zero))
        }
    };
    let xv = operand("x", "x0", ops.x_zero);
    let wv = operand("w", "w0", ops.w_zero);
    let product = TExpr::binary(BinOp::Mul, xv, wv);
    let value = match inside {
        Some(cond) => TExpr::select(cond, product, TExpr::Const(0.0)),
        None => product,
    };
    let dst = (y, layout.order(y_idx));
    let acc = format!("{label}_acc");
    element_map(b, &acc, &params, reads, dst, Some(Wcr::Sum), value);
}
