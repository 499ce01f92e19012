//! Pooling: MaxPool, AveragePool, LpPool, GlobalMaxPool, GlobalAveragePool and GlobalLpPool.
//!
//! All six are one operator shape — reduce a sliding window over the spatial axes of an NC…
//! tensor — and differ only in where the window comes from (attributes, or the whole spatial
//! extent) and in what they reduce, so one [`Pool`] value describes each.
//!
//! NhwcMaxPool and NhwcAveragePool are MaxPool and AveragePool (without MaxPool's `Indices`)
//! over channels-last tensors (`N, spatial…, C`): what the ChannelsLast transformation turns a
//! pooling inside a channels-last region into, so a ResNet stem or a detector's SPPF needs no
//! transposes around its pools. Their expansion puts the channel loop innermost, where it walks
//! X and Y with unit stride.

mod indices;

use super::conv::Channels;
use super::expand::elementwise_index;
use super::window::{
    float_input, multi_indices, offset, sym_shape, tap, tensor_input, Tap, Window,
};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, Out};
use crate::ir::{
    BinOp, DType, LibraryNode, Range, Schedule, Subset, SymExpr, TExpr, Tensor, UnOp, Wcr,
};

pub static OPS: &[&dyn Operator] = &[
    &Pool::first("MaxPool", Reduce::Max, false),
    &Pool::first("AveragePool", Reduce::Average, false),
    &Pool::first("LpPool", Reduce::Lp, false),
    &Pool::first("GlobalMaxPool", Reduce::Max, true),
    &Pool::first("GlobalAveragePool", Reduce::Average, true),
    &Pool::first("GlobalLpPool", Reduce::Lp, true),
    &Pool {
        layout: Channels::Last,
        ..Pool::first("NhwcMaxPool", Reduce::Max, false)
    },
    &Pool {
        layout: Channels::Last,
        ..Pool::first("NhwcAveragePool", Reduce::Average, false)
    },
];

/// What a pooling operator computes over a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reduce {
    /// The largest element; padding is ignored (it reads as −∞).
    Max,
    /// The mean: the sum of the elements inside the input divided by the number of elements
    /// inside the input, or with `count_include_pad = 1` inside the padded input.
    Average,
    /// The `p`-norm `(Σ |x|^p)^(1/p)` of the elements inside the input (attribute `p`, default
    /// 2); padding contributes 0.
    Lp,
}

/// A pooling operator.
#[derive(Clone, Copy)]
pub struct Pool {
    name: &'static str,
    reduce: Reduce,
    /// The window is each whole spatial axis and the operator takes no window attributes
    /// (GlobalLpPool still reads `p`).
    global: bool,
    /// Where X and Y keep their channels.
    layout: Channels,
}

/// Reads a 0/1 attribute (0 when absent).
fn flag(op: &str, node: &LibraryNode, name: &str) -> Result<bool, OpError> {
    super::support::flag(op, node, name, false)
}

/// Input X of a max pooling: a float tensor, or since opset 12 an 8-bit integer one (padding and
/// the reduction then start from the type's minimum, see `Pool::identity`).
fn max_pool_input<'a>(
    op: &str,
    inputs: &'a [Option<TensorType>],
) -> Result<&'a TensorType, OpError> {
    match inputs.first().and_then(Option::as_ref) {
        Some(t) if matches!(t.dtype, DType::I8 | DType::U8) => Ok(t),
        _ => float_input(op, inputs, 0, "input X"),
    }
}

impl Pool {
    /// The ONNX pooling `name`, channels-first.
    const fn first(name: &'static str, reduce: Reduce, global: bool) -> Pool {
        Pool {
            name,
            reduce,
            global,
            layout: Channels::First,
        }
    }

    /// The window over input shape `x`, stored in the operator's layout (validated).
    fn window(&self, node: &LibraryNode, x: &[SymExpr]) -> Result<Window, OpError> {
        if x.len() < 3 {
            let axes = match self.layout {
                Channels::First => "N, C, spatial…",
                Channels::Last => "N, spatial…, C",
            };
            return Err(OpError::shape(
                self.name,
                format!(
                    "input X must have rank at least 3 ({axes}), got rank {}",
                    x.len()
                ),
            ));
        }
        let x = self.layout.to_first(x.to_vec());
        let spatial = &x[2..];
        if self.global {
            return Ok(Window::global(spatial));
        }
        let kernel = node
            .ints("kernel_shape")
            .ok_or_else(|| OpError::attr(self.name, "kernel_shape", "is required"))?;
        if kernel.len() != spatial.len() {
            return Err(OpError::attr(
                self.name,
                "kernel_shape",
                format!(
                    "has {} values but X has {} spatial axes",
                    kernel.len(),
                    spatial.len()
                ),
            ));
        }
        if let Some(bad) = kernel.iter().find(|k| **k < 1) {
            return Err(OpError::attr(
                self.name,
                "kernel_shape",
                format!("extent {bad} is not positive"),
            ));
        }
        let kernel: Vec<SymExpr> = kernel.iter().map(|k| SymExpr::Int(*k)).collect();
        let ceil_mode = flag(self.name, node, "ceil_mode")?;
        Window::from_attrs(self.name, node, spatial, &kernel, ceil_mode)
    }

    /// Whether an average counts padded positions in its divisor.
    fn include_pad(&self, node: &LibraryNode) -> Result<bool, OpError> {
        if self.global {
            return Ok(false);
        }
        flag(self.name, node, "count_include_pad")
    }

    /// MaxPool has the optional `Indices` output; returns its `storage_order` (true: column-major
    /// spatial offsets), `None` for the other pools.
    fn indices_order(&self, node: &LibraryNode) -> Result<Option<bool>, OpError> {
        if !self.has_indices() {
            return Ok(None);
        }
        flag(self.name, node, "storage_order").map(Some)
    }

    fn has_indices(&self) -> bool {
        !self.global && self.reduce == Reduce::Max && self.layout == Channels::First
    }

    /// LpPool's exponent `p` (a positive integer, default 2); 1 for the other pools.
    fn power(&self, node: &LibraryNode) -> Result<i64, OpError> {
        if self.reduce != Reduce::Lp {
            return Ok(1);
        }
        match node.int("p").unwrap_or(2) {
            p if p >= 1 => Ok(p),
            p => Err(OpError::attr(
                self.name,
                "p",
                format!("must be positive, got {p}"),
            )),
        }
    }

    /// The value a padded position contributes, which is also the reduction's identity: for an
    /// integer max the type's minimum (integer stores wrap, so `-inf` would not survive them).
    fn identity(&self, dtype: DType) -> f64 {
        match self.reduce {
            Reduce::Max => dtype.int_range().map_or(f64::NEG_INFINITY, |(lo, _)| lo),
            Reduce::Average | Reduce::Lp => 0.0,
        }
    }

    /// The output shape of input shape `x` (`(n, c, o…)` in the operator's layout).
    fn output_shape(&self, x: &[SymExpr], window: &Window) -> Vec<SymExpr> {
        let mut s = self.layout.to_first(x.to_vec());
        s.truncate(2);
        s.extend(window.output_shape());
        self.layout.order(s)
    }
}

impl Operator for Pool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn output_count(&self) -> usize {
        1 + usize::from(self.has_indices())
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        let x = match self.reduce {
            Reduce::Max => max_pool_input(self.name, inputs)?,
            Reduce::Average | Reduce::Lp => float_input(self.name, inputs, 0, "input X")?,
        };
        let window = self.window(node, &x.shape)?;
        self.include_pad(node)?;
        self.power(node)?;
        let y = TensorType::new(x.dtype, self.output_shape(&x.shape, &window));
        let mut out = vec![y.clone()];
        if self.indices_order(node)?.is_some() {
            out.push(TensorType::new(DType::I64, y.shape));
        }
        Ok(out)
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = tensor_input(self.name, inputs, 0, "input X")?;
        if self.layout == Channels::Last {
            // The reference is the channels-first pooling between two transposes: it shares
            // no index arithmetic with the channels-last expansion.
            let first = Pool {
                layout: Channels::First,
                ..*self
            };
            let x = Channels::Last.relayout(x)?;
            return (first.eval(node, &[Some(&x)])?.iter())
                .map(|y| Channels::First.relayout(y))
                .collect();
        }
        let window = self.window(node, &sym_shape(&x.shape))?;
        let include_pad = self.include_pad(node)?;
        let order = self.indices_order(node)?;
        let p = self.power(node)?;
        let axes = window.concrete(self.name)?;
        let out_spatial: Vec<usize> = axes.iter().map(|a| a.output as usize).collect();
        let kernel: Vec<usize> = axes.iter().map(|a| a.kernel as usize).collect();
        let xs = x.strides();
        let spatial = &x.shape[2..];
        let volume = spatial.iter().product::<usize>();
        let steps = indices::weights(spatial, 1, order == Some(true));
        let mut y = Vec::new();
        let mut argmax = Vec::new();
        for n in 0..x.shape[0] {
            for c in 0..x.shape[1] {
                for o in multi_indices(&out_spatial) {
                    let mut acc = self.identity(x.dtype());
                    let mut count = 0usize;
                    let mut first_max = None;
                    for k in multi_indices(&kernel) {
                        match tap(&axes, &o, &k) {
                            Tap::Input(at) => {
                                let v = x.get_f64(n * xs[0] + c * xs[1] + offset(&xs[2..], &at));
                                if order.is_some() && (first_max.is_none() || v > acc) {
                                    let nc = n * x.shape[1] + c;
                                    first_max = Some(indices::flat(nc, volume, &at, &steps));
                                }
                                acc = match self.reduce {
                                    Reduce::Max => acc.max(v),
                                    Reduce::Average => acc + v,
                                    Reduce::Lp => acc + v.abs().powi(p as i32),
                                };
                                count += 1;
                            }
                            // ONNX pads the ceil-mode overhang like the explicit padding.
                            Tap::Pad | Tap::Outside => count += usize::from(include_pad),
                        }
                    }
                    y.push(match self.reduce {
                        Reduce::Max => acc,
                        Reduce::Average => acc / count as f64,
                        Reduce::Lp => acc.powf(1.0 / p as f64),
                    });
                    // A window wholly in the padding has no source: ONNX's reference says -1.
                    argmax.push(first_max.map_or(-1.0, |i| i as f64));
                }
            }
        }
        let out_shape: Vec<usize> = [x.shape[0], x.shape[1]]
            .into_iter()
            .chain(out_spatial)
            .collect();
        let mut out = vec![Tensor::from_f64(x.dtype(), out_shape.clone(), &y)];
        if order.is_some() {
            out.push(Tensor::from_f64(DType::I64, out_shape, &argmax));
        }
        Ok(out)
    }

    /// An init map writing the identity, a reduction map over `(n, c, o…, k…)` with a max or sum
    /// write-conflict (padded positions read a clamped element and contribute the identity
    /// through a select), and for averages a map dividing the sums by the window's divisor,
    /// which is an index expression when windows differ in size; LpPool sums `|x|^p` and takes
    /// the `p`-th root in that last map.
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let order = self.indices_order(ctx.node)?;
        let (x, xd) = ctx.input(0)?.clone();
        let (y, yd) = ctx.output(0)?.clone();
        let window = self.window(ctx.node, &xd.shape)?;
        let include_pad = self.include_pad(ctx.node)?;
        let p = self.power(ctx.node)?;
        let label = ctx.label.clone();
        let (wcr, target) = match self.reduce {
            Reduce::Max => (Wcr::Max, y.clone()),
            Reduce::Average | Reduce::Lp => (
                Wcr::Sum,
                ctx.b
                    .transient(&format!("{label}_sum"), xd.dtype, yd.shape.clone()),
            ),
        };

        let (params, idx) = elementwise_index(&yd.shape);
        let params_ref = params
            .iter()
            .map(|(n, r)| (n.as_str(), r.clone()))
            .collect();
        ctx.b.map(
            &format!("{label}_init"),
            params_ref,
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "init",
                    vec![],
                    vec![Out(
                        "y",
                        &target,
                        Subset::element(idx.clone()),
                        None,
                        TExpr::Const(self.identity(xd.dtype)),
                    )],
                );
            },
        );

        let rank = window.axes.len();
        let outs: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("o{d}"))).collect();
        let ks: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("k{d}"))).collect();
        let x_first = self.layout.to_first(xd.shape.clone());
        let batch = ("n".to_string(), Range::upto(x_first[0].clone()));
        let channels = ("c".to_string(), Range::upto(x_first[1].clone()));
        // The channel loop is the outer one channels-first and the innermost channels-last:
        // either way the innermost loop walks the unit-stride axis.
        let mut red_params: Vec<(String, Range)> = vec![batch];
        if self.layout == Channels::First {
            red_params.push(channels.clone());
        }
        for (d, a) in window.axes.iter().enumerate() {
            red_params.push((format!("o{d}"), Range::upto(a.output.clone())));
        }
        for (d, a) in window.axes.iter().enumerate() {
            red_params.push((format!("k{d}"), Range::upto(a.kernel.clone())));
        }
        if self.layout == Channels::Last {
            red_params.push(channels);
        }
        let (x_spatial, inside) = window.read_index(&outs, &ks);
        let nc = vec![SymExpr::sym("n"), SymExpr::sym("c")];
        let x_idx = self.layout.order([nc.clone(), x_spatial].concat());
        let t_idx = self.layout.order([nc, outs].concat());
        let xv = TExpr::input("x");
        let term = match (self.reduce, p) {
            (Reduce::Lp, 1) => TExpr::unary(UnOp::Abs, xv),
            (Reduce::Lp, 2) => TExpr::binary(BinOp::Mul, xv.clone(), xv),
            (Reduce::Lp, p) => TExpr::binary(
                BinOp::Pow,
                TExpr::unary(UnOp::Abs, xv),
                TExpr::Const(p as f64),
            ),
            _ => xv,
        };
        let value = match inside {
            Some(cond) => TExpr::select(cond, term, TExpr::Const(self.identity(xd.dtype))),
            None => term,
        };
        let params_ref = red_params
            .iter()
            .map(|(n, r)| (n.as_str(), r.clone()))
            .collect();
        ctx.b.map(
            &format!("{label}_reduce"),
            params_ref,
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "combine",
                    vec![In("x", &x, Subset::element(x_idx))],
                    vec![Out("y", &target, Subset::element(t_idx), Some(wcr), value)],
                );
            },
        );

        if let Some(column) = order {
            indices::append(ctx, &window, &red_params, column)?;
        }
        if self.reduce != Reduce::Max {
            let divisor = window.divisor(&self.layout.to_first(idx.clone())[2..], include_pad);
            let divisor = match divisor.as_int() {
                Some(v) => TExpr::Const(v as f64),
                None => TExpr::Index(divisor),
            };
            let sum = TExpr::input("s");
            let value = match (self.reduce, p) {
                (Reduce::Average, _) => TExpr::binary(BinOp::Div, sum, divisor),
                (_, 1) => sum,
                (_, 2) => TExpr::unary(UnOp::Sqrt, sum),
                (_, p) => TExpr::binary(BinOp::Pow, sum, TExpr::Const(1.0 / p as f64)),
            };
            let params_ref = params
                .iter()
                .map(|(n, r)| (n.as_str(), r.clone()))
                .collect();
            ctx.b.map(
                &format!("{label}_scale"),
                params_ref,
                Schedule::Sequential,
                |b| {
                    b.tasklet(
                        "finish",
                        vec![In("s", &target, Subset::element(idx.clone()))],
                        vec![Out("y", &y, Subset::element(idx.clone()), None, value)],
                    );
                },
            );
        }
        Ok(())
    }

    /// One operation per window element per output (plus a division per output for averages).
    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let (Some(Some(x)), Some(y)) = (inputs.first(), outputs.first()) else {
            return 0;
        };
        let Some(outs) = y.static_shape() else {
            return 0;
        };
        let Ok(window) = self.window(node, &x.shape) else {
            return 0;
        };
        let Some(kernel) = window
            .kernel_shape()
            .iter()
            .map(|k| k.as_int().and_then(|v| usize::try_from(v).ok()))
            .collect::<Option<Vec<usize>>>()
        else {
            return 0;
        };
        let per_output = kernel.iter().product::<usize>() + usize::from(self.reduce != Reduce::Max);
        (outs.iter().product::<usize>() * per_output) as u64
    }
}
