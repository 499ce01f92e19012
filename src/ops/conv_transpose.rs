//! ConvTranspose: the gradient of a convolution with respect to its input, used for learned
//! upsampling, over any number of spatial axes (N, C, D…).
//!
//! Every input element scatters a weighted copy of the kernel into the output:
//! `Y[n, g·M/G + m, i·s + k·d − pad_begin] += X[n, g·C/G + c, i] · W[g·C/G + c, m, k]`, plus
//! `B[g·M/G + m]`, where contributions landing outside the output are dropped. The output extent
//! per axis is `s·(in − 1) + output_padding + (K − 1)·d + 1 − pad_begin − pad_end`, or
//! `output_shape` when given; with `auto_pad = SAME_UPPER / SAME_LOWER` the output is `in·s` (or
//! `output_shape`) and the padding is derived from it (the larger half at the end for
//! SAME_UPPER), as ONNX specifies.
//!
//! The expansion is a scatter, like the definition: an init map writes the bias (or zero) into
//! Y, then one accumulation map over `(n, [g,] m, c, i…, k…)` adds `X·W` into Y with a sum
//! write-conflict resolution. It visits each multiply-accumulate exactly once; a gather over the
//! output would visit `strideᵈ` times as many (output, kernel) pairs, most of them failing the
//! divisibility test. Where a contribution can fall outside the output (padding, or an
//! `output_shape` smaller than the full extent), the write index is clamped into the output and
//! the tasklet writes zero instead, which the sum leaves unchanged: no access is ever out of
//! range and no write needs a condition. Axes where every position is provably inside keep
//! their plain affine index.

use super::support::{element_map, Read};
use super::window::{
    bias_init, clamp_into, conv_operands, float_input, int_list, multi_indices, offset, same_dim,
    sym_shape, tensor_input, AutoPad,
};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&ConvTranspose];

const NAME: &str = "ConvTranspose";

/// `ConvTranspose(X, W, B?)`.
pub struct ConvTranspose;

/// One spatial axis: input position `i` and kernel element `k` land on output position
/// `i·stride + k·dilation − pad_begin`. Col2Im scatters the same way (its block positions are
/// the input positions), so it shares this and [`scatter_target`].
#[derive(Clone, Debug)]
pub(super) struct Axis {
    pub(super) input: SymExpr,
    pub(super) kernel: SymExpr,
    pub(super) stride: i64,
    pub(super) dilation: i64,
    pub(super) pad_begin: SymExpr,
    pub(super) output: SymExpr,
}

impl Axis {
    fn position(&self, i: &SymExpr, k: &SymExpr) -> SymExpr {
        (i * self.stride + k * self.dilation - &self.pad_begin).simplify()
    }

    /// True when every contribution provably lands inside the output.
    fn always_inside(&self) -> bool {
        let nonneg = |e: SymExpr| e.simplify().as_int().is_some_and(|v| v >= 0);
        let first = self.position(&SymExpr::Int(0), &SymExpr::Int(0));
        let last = self.position(&(&self.input - 1), &(&self.kernel - 1));
        nonneg(first) && nonneg(&self.output - 1 - last)
    }
}

/// The output index where input positions `ins` and kernel elements `ks` land, one per axis,
/// clamped into the output where a contribution can fall outside it, and the condition that
/// every contribution lands inside (`None` when all provably do). A scatter writes
/// [`masked`] values there: zero where the condition fails, which a sum leaves unchanged, so
/// no access leaves its container and no write needs a condition.
pub(super) fn scatter_target(
    axes: &[Axis],
    ins: &[SymExpr],
    ks: &[SymExpr],
) -> (Vec<SymExpr>, Option<TExpr>) {
    let mut target = Vec::with_capacity(axes.len());
    let mut inside: Option<TExpr> = None;
    for ((a, i), k) in axes.iter().zip(ins).zip(ks) {
        let p = a.position(i, k);
        if a.always_inside() {
            target.push(p);
            continue;
        }
        clamp_into(p, &a.output, &mut target, &mut inside);
    }
    (target, inside)
}

/// `value` where `inside` holds (always when `None`), else zero.
pub(super) fn masked(value: TExpr, inside: Option<TExpr>) -> TExpr {
    match inside {
        Some(cond) => TExpr::select(cond, value, TExpr::Const(0.0)),
        None => value,
    }
}

/// The sizes of one application, derived from its input shapes and attributes.
struct Geometry {
    batch: SymExpr,
    group: i64,
    /// Input channels per group (`C / group`).
    in_per_group: i64,
    /// Output channels per group (the second dimension of W).
    out_per_group: i64,
    axes: Vec<Axis>,
}

impl Geometry {
    fn new(
        node: &LibraryNode,
        x: &[SymExpr],
        w: &[SymExpr],
        bias: Option<&[SymExpr]>,
    ) -> Result<Geometry, OpError> {
        let (group, [channels, w_channels, out_per_group]) = conv_operands(NAME, node, x, w)?;
        if w_channels != channels {
            return Err(OpError::shape(
                NAME,
                format!("W has {w_channels} input channels but X has {channels}"),
            ));
        }
        if channels % group != 0 {
            return Err(OpError::shape(
                NAME,
                format!("X has {channels} channels, not divisible by group {group}"),
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
                    NAME,
                    "kernel_shape",
                    format!("{ks:?} disagrees with the spatial shape of W {kernel:?}"),
                ));
            }
        }
        let out_channels = out_per_group * group;
        if let Some(b) = bias {
            let bad = || format!("bias B has shape {b:?}, expected [{out_channels}]");
            if b.len() != 1 {
                return Err(OpError::shape(NAME, bad()));
            }
            same_dim(NAME, &b[0], &SymExpr::Int(out_channels), bad)?;
        }
        let axes = spatial_axes(node, &x[2..], kernel)?;
        Ok(Geometry {
            batch: x[0].clone(),
            group,
            in_per_group: channels / group,
            out_per_group,
            axes,
        })
    }

    fn output_shape(&self) -> Vec<SymExpr> {
        let mut s = vec![
            self.batch.clone(),
            SymExpr::Int(self.out_per_group * self.group),
        ];
        s.extend(self.axes.iter().map(|a| a.output.clone()));
        s
    }
}

/// The geometry of every spatial axis from the window attributes.
fn spatial_axes(
    node: &LibraryNode,
    input: &[SymExpr],
    kernel: &[SymExpr],
) -> Result<Vec<Axis>, OpError> {
    let rank = input.len();
    let strides = int_list(NAME, node, "strides", rank, 1, 1)?;
    let dilations = int_list(NAME, node, "dilations", rank, 1, 1)?;
    let pads = int_list(NAME, node, "pads", 2 * rank, 0, 0)?;
    let output_padding = int_list(NAME, node, "output_padding", rank, 0, 0)?;
    let auto_pad = AutoPad::parse(NAME, node)?;
    if auto_pad != AutoPad::NotSet && pads.iter().any(|p| *p != 0) {
        return Err(OpError::attr(
            NAME,
            "pads",
            "explicit pads cannot be combined with auto_pad",
        ));
    }
    // `output_shape` lists the spatial extents; some exporters write the full N, C, D… shape.
    let output_shape = match node.ints("output_shape") {
        None => None,
        Some(v) if v.len() == rank || v.len() == rank + 2 => Some(v[v.len() - rank..].to_vec()),
        Some(v) => {
            return Err(OpError::attr(
                NAME,
                "output_shape",
                format!(
                    "has {} values, expected {rank} (one per spatial axis)",
                    v.len()
                ),
            ))
        }
    };
    let mut axes = Vec::with_capacity(rank);
    for d in 0..rank {
        let (s, dil, op) = (strides[d], dilations[d], output_padding[d]);
        if op >= s.max(dil) {
            return Err(OpError::attr(
                NAME,
                "output_padding",
                format!("{op} on spatial axis {d} must be smaller than the stride or dilation"),
            ));
        }
        let n = &input[d];
        let full = (n - 1) * s + op + (&kernel[d] - 1) * dil + 1;
        let given = output_shape.as_ref().map(|v| SymExpr::Int(v[d]));
        let (pad_begin, output) = match auto_pad {
            AutoPad::NotSet | AutoPad::Valid => {
                let pb = SymExpr::Int(pads[d]);
                let out = given.unwrap_or_else(|| &full - pads[d] - pads[d + rank]);
                (pb, out)
            }
            AutoPad::SameUpper | AutoPad::SameLower => {
                let out = given.unwrap_or_else(|| n * s);
                let total = &full - &out;
                let half = total.clone().floor_div(2.into());
                let pb = if auto_pad == AutoPad::SameUpper {
                    half
                } else {
                    total - half
                };
                (pb.simplify(), out)
            }
        };
        let output = output.simplify();
        if output.as_int().is_some_and(|v| v < 1) {
            return Err(OpError::shape(
                NAME,
                format!("spatial axis {d}: the output extent {output} is not positive"),
            ));
        }
        axes.push(Axis {
            input: n.clone(),
            kernel: kernel[d].clone(),
            stride: s,
            dilation: dil,
            pad_begin,
            output,
        });
    }
    Ok(axes)
}

/// The type of the optional bias input.
fn bias_shape(inputs: &[Option<TensorType>]) -> Result<Option<&[SymExpr]>, OpError> {
    match inputs.get(2).and_then(|t| t.as_ref()) {
        None => Ok(None),
        Some(_) => Ok(Some(
            float_input(NAME, inputs, 2, "bias B")?.shape.as_slice(),
        )),
    }
}

/// An integer quantity of a concrete geometry.
fn int(e: &SymExpr) -> Result<i64, OpError> {
    e.simplify()
        .as_int()
        .ok_or_else(|| OpError::unsupported(NAME, format!("`{e}` is not a constant")))
}

impl Operator for ConvTranspose {
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
        super::check_arity(self, inputs.len())?;
        let x = float_input(NAME, inputs, 0, "input X")?;
        let w = float_input(NAME, inputs, 1, "weights W")?;
        if w.dtype != x.dtype {
            return Err(OpError::shape(
                NAME,
                format!("W has element type {} but X has {}", w.dtype, x.dtype),
            ));
        }
        let geometry = Geometry::new(node, &x.shape, &w.shape, bias_shape(inputs)?)?;
        Ok(vec![TensorType::new(x.dtype, geometry.output_shape())])
    }

    /// Scatter loops with explicit range tests, accumulating in `f64`.
    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = tensor_input(NAME, inputs, 0, "input X")?;
        let w = tensor_input(NAME, inputs, 1, "weights W")?;
        let bias = inputs.get(2).copied().flatten();
        let b_shape = bias.map(|b| sym_shape(&b.shape));
        let geo = Geometry::new(
            node,
            &sym_shape(&x.shape),
            &sym_shape(&w.shape),
            b_shape.as_deref(),
        )?;
        let mut out_shape = Vec::new();
        for e in geo.output_shape() {
            out_shape.push(usize::try_from(int(&e)?).unwrap_or(0));
        }
        let pad_begin = geo
            .axes
            .iter()
            .map(|a| int(&a.pad_begin))
            .collect::<Result<Vec<_>, _>>()?;
        let (cg, mg) = (geo.in_per_group as usize, geo.out_per_group as usize);
        let (xs, ws) = (x.strides(), w.strides());
        let ys = crate::ir::tensor::row_major_strides(&out_shape);
        let mut y = vec![0.0; out_shape.iter().product()];
        for (e, v) in y.iter_mut().enumerate() {
            *v = bias.map_or(0.0, |b| b.get_f64((e / ys[1]) % out_shape[1]));
        }
        for n in 0..x.shape[0] {
            for ci in 0..x.shape[1] {
                let g = ci / cg;
                for m in 0..mg {
                    let oc = g * mg + m;
                    for i in multi_indices(&x.shape[2..]) {
                        let xv = x.get_f64(n * xs[0] + ci * xs[1] + offset(&xs[2..], &i));
                        'kernel: for k in multi_indices(&w.shape[2..]) {
                            let mut at = Vec::with_capacity(i.len());
                            for (d, a) in geo.axes.iter().enumerate() {
                                let p = (i[d] as i64) * a.stride + (k[d] as i64) * a.dilation
                                    - pad_begin[d];
                                match usize::try_from(p) {
                                    Ok(p) if p < out_shape[d + 2] => at.push(p),
                                    _ => continue 'kernel,
                                }
                            }
                            let wv = w.get_f64(ci * ws[0] + m * ws[1] + offset(&ws[2..], &k));
                            y[n * ys[0] + oc * ys[1] + offset(&ys[2..], &at)] += xv * wv;
                        }
                    }
                }
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), out_shape, &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (w, wd) = ctx.input(1)?.clone();
        let bias = ctx.inputs.get(2).cloned().flatten();
        let (y, yd) = ctx.output(0)?.clone();
        let geo = Geometry::new(
            ctx.node,
            &xd.shape,
            &wd.shape,
            bias.as_ref().map(|(_, d)| d.shape.as_slice()),
        )?;
        let label = ctx.label.clone();

        let bias_name = bias.as_ref().map(|(b, _)| b.as_str());
        bias_init(ctx.b, &label, &y, &yd.shape, bias_name);

        let mut params: Vec<(String, Range)> = vec![("n".into(), Range::upto(geo.batch.clone()))];
        let g = if geo.group > 1 {
            params.push(("g".into(), Range::upto(geo.group)));
            SymExpr::sym("g")
        } else {
            SymExpr::Int(0)
        };
        params.push(("m".into(), Range::upto(geo.out_per_group)));
        params.push(("c".into(), Range::upto(geo.in_per_group)));
        let rank = geo.axes.len();
        let ins: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("i{d}"))).collect();
        let ks: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("k{d}"))).collect();
        for (d, a) in geo.axes.iter().enumerate() {
            params.push((format!("i{d}"), Range::upto(a.input.clone())));
        }
        for (d, a) in geo.axes.iter().enumerate() {
            params.push((format!("k{d}"), Range::upto(a.kernel.clone())));
        }
        let (y_spatial, inside) = scatter_target(&geo.axes, &ins, &ks);
        let c_full = &g * geo.in_per_group + SymExpr::sym("c");
        let m_full = &g * geo.out_per_group + SymExpr::sym("m");
        let x_idx = [SymExpr::sym("n"), c_full.clone()].into_iter().chain(ins);
        let w_idx = [c_full, SymExpr::sym("m")].into_iter().chain(ks);
        let y_idx = [SymExpr::sym("n"), m_full].into_iter().chain(y_spatial);
        let product = TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::input("w"));
        let value = masked(product, inside);
        let reads = vec![
            Read::new("x", &x, x_idx.collect()),
            Read::new("w", &w, w_idx.collect()),
        ];
        let dst = (y.as_str(), y_idx.collect());
        let acc = format!("{label}_acc");
        element_map(ctx.b, &acc, &params, reads, dst, Some(Wcr::Sum), value);
        Ok(())
    }

    /// `2·|X|·(M/group)·∏K`: every input element meets every weight of its group once.
    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        let (Some(Some(x)), Some(Some(w))) = (inputs.first(), inputs.get(1)) else {
            return 0;
        };
        let (Some(xs), Some(ws)) = (x.static_shape(), w.static_shape()) else {
            return 0;
        };
        2 * (xs.iter().product::<usize>() * ws[1..].iter().product::<usize>()) as u64
    }
}
