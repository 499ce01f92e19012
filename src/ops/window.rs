//! Sliding-window geometry shared by Conv and the pooling operators: reading the ONNX window
//! attributes (strides, dilations, pads, auto_pad), the output extent of every spatial axis, and
//! the index arithmetic that both the reference loops and the expansions need.
//!
//! The geometry is computed on [`SymExpr`], so symbolic spatial extents get symbolic output
//! shapes. The reference implementations build the same geometry from concrete shapes (where it
//! folds to integers, see [`Window::concrete`]) and then loop on their own, independently of the
//! expansions; only the output-size and padding rules are shared, because they are the operator's
//! definition rather than an implementation choice.

use super::{OpError, TensorType};
use crate::ir::{BinOp, LibraryNode, SymExpr, TExpr, Tensor};

/// The `auto_pad` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AutoPad {
    NotSet,
    Valid,
    SameUpper,
    SameLower,
}

impl AutoPad {
    pub(super) fn parse(op: &str, node: &LibraryNode) -> Result<AutoPad, OpError> {
        Ok(match node.str("auto_pad").unwrap_or("NOTSET") {
            "NOTSET" => AutoPad::NotSet,
            "VALID" => AutoPad::Valid,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            other => {
                return Err(OpError::attr(
                    op,
                    "auto_pad",
                    format!("`{other}` is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER"),
                ))
            }
        })
    }
}

/// One spatial axis of a sliding window. Window element `k` of output position `o` reads input
/// position `o·stride − pad_begin + k·dilation`; positions outside `0..input` are padding.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub input: SymExpr,
    pub kernel: SymExpr,
    pub stride: i64,
    pub dilation: i64,
    pub pad_begin: SymExpr,
    pub pad_end: SymExpr,
    pub output: SymExpr,
}

/// The window over every spatial axis, outermost first.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub axes: Vec<Axis>,
}

/// An [`Axis`] with every quantity known, for the reference implementations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConcreteAxis {
    pub input: i64,
    pub kernel: i64,
    pub stride: i64,
    pub dilation: i64,
    pub pad_begin: i64,
    pub pad_end: i64,
    pub output: i64,
}

/// Where one window element of one output position lands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tap {
    /// Inside the input, at these spatial coordinates.
    Input(Vec<usize>),
    /// In the explicit (or auto) padding.
    Pad,
    /// Beyond the padding: only windows extended by `ceil_mode` reach here.
    Outside,
}

/// Reads an integer-list attribute of length `len` whose elements are at least `min`, or
/// returns `default` repeated when it is absent.
pub(super) fn int_list(
    op: &str,
    node: &LibraryNode,
    name: &str,
    len: usize,
    default: i64,
    min: i64,
) -> Result<Vec<i64>, OpError> {
    let Some(v) = node.ints(name) else {
        return Ok(vec![default; len]);
    };
    if v.len() != len {
        return Err(OpError::attr(
            op,
            name,
            format!(
                "has {} values, expected {len} (one per spatial axis)",
                v.len()
            ),
        ));
    }
    if let Some(bad) = v.iter().find(|x| **x < min) {
        return Err(OpError::attr(
            op,
            name,
            format!("value {bad} is below the minimum {min}"),
        ));
    }
    Ok(v.to_vec())
}

/// `ceil(a / b)` for a positive literal `b`.
fn ceil_div(a: SymExpr, b: i64) -> SymExpr {
    (a + (b - 1)).floor_div(b.into())
}

/// True when `e` simplifies to a non-negative literal.
fn provably_nonneg(e: SymExpr) -> bool {
    e.simplify().as_int().is_some_and(|v| v >= 0)
}

impl Window {
    /// The window that `node`'s attributes describe over spatial extents `input` with the given
    /// kernel extents. `ceil_mode` rounds the output extent up (pooling only); as in ONNX
    /// Runtime and PyTorch, a window that would start in the end padding is dropped.
    pub fn from_attrs(
        op: &str,
        node: &LibraryNode,
        input: &[SymExpr],
        kernel: &[SymExpr],
        ceil_mode: bool,
    ) -> Result<Window, OpError> {
        let rank = input.len();
        if kernel.len() != rank {
            return Err(OpError::shape(
                op,
                format!(
                    "the kernel has {} spatial axes but the input has {rank}",
                    kernel.len()
                ),
            ));
        }
        let strides = int_list(op, node, "strides", rank, 1, 1)?;
        let dilations = int_list(op, node, "dilations", rank, 1, 1)?;
        let pads = int_list(op, node, "pads", 2 * rank, 0, 0)?;
        let auto_pad = AutoPad::parse(op, node)?;
        if auto_pad != AutoPad::NotSet && pads.iter().any(|p| *p != 0) {
            return Err(OpError::attr(
                op,
                "pads",
                "explicit pads cannot be combined with auto_pad",
            ));
        }
        let mut axes = Vec::with_capacity(rank);
        for d in 0..rank {
            let (n, k, s, dil) = (&input[d], &kernel[d], strides[d], dilations[d]);
            let extent = (k - 1) * dil + 1;
            let (pad_begin, pad_end, output) = match auto_pad {
                AutoPad::NotSet | AutoPad::Valid => {
                    let (pb, pe) = (SymExpr::Int(pads[d]), SymExpr::Int(pads[d + rank]));
                    let span = n + &pb + &pe - &extent;
                    if span.as_int().is_some_and(|v| v < 0) {
                        return Err(OpError::shape(
                            op,
                            format!(
                                "spatial axis {d}: the window spans {extent} elements but the \
                                 padded input has only {}",
                                (n + &pb + &pe).simplify()
                            ),
                        ));
                    }
                    let output = if ceil_mode {
                        let last_start_inside = (n + &pb - 1).floor_div(s.into()) + 1;
                        (ceil_div(span, s) + 1).min(last_start_inside)
                    } else {
                        span.floor_div(s.into()) + 1
                    };
                    (pb, pe, output)
                }
                AutoPad::SameUpper | AutoPad::SameLower => {
                    let output = ceil_div(n.clone(), s);
                    let total = ((&output - 1) * s + &extent - n).max(SymExpr::Int(0));
                    let half = total.clone().floor_div(2.into());
                    let (pb, pe) = if auto_pad == AutoPad::SameUpper {
                        (half.clone(), &total - &half)
                    } else {
                        (&total - &half, half)
                    };
                    (pb, pe, output)
                }
            };
            axes.push(Axis {
                input: n.clone(),
                kernel: k.clone(),
                stride: s,
                dilation: dil,
                pad_begin,
                pad_end,
                output,
            });
        }
        Ok(Window { axes })
    }

    /// One window covering each spatial axis whole (global pooling): one output per axis.
    pub fn global(input: &[SymExpr]) -> Window {
        let axes = input
            .iter()
            .map(|n| Axis {
                input: n.clone(),
                kernel: n.clone(),
                stride: 1,
                dilation: 1,
                pad_begin: SymExpr::Int(0),
                pad_end: SymExpr::Int(0),
                output: SymExpr::Int(1),
            })
            .collect();
        Window { axes }
    }

    pub fn output_shape(&self) -> Vec<SymExpr> {
        self.axes.iter().map(|a| a.output.clone()).collect()
    }

    pub fn kernel_shape(&self) -> Vec<SymExpr> {
        self.axes.iter().map(|a| a.kernel.clone()).collect()
    }

    /// The geometry as integers; fails when an extent is symbolic.
    pub fn concrete(&self, op: &str) -> Result<Vec<ConcreteAxis>, OpError> {
        let int = |e: &SymExpr| {
            e.simplify().as_int().ok_or_else(|| {
                OpError::unsupported(op, format!("window quantity `{e}` is not a constant"))
            })
        };
        self.axes
            .iter()
            .map(|a| {
                Ok(ConcreteAxis {
                    input: int(&a.input)?,
                    kernel: int(&a.kernel)?,
                    stride: a.stride,
                    dilation: a.dilation,
                    pad_begin: int(&a.pad_begin)?,
                    pad_end: int(&a.pad_end)?,
                    output: int(&a.output)?,
                })
            })
            .collect()
    }

    /// The input element read by window element `ks` of output position `outs`, for an
    /// expansion: per axis the position clamped into the input, and a 0/1 condition that holds
    /// where every position really is inside (`None` when that is provable for all windows, in
    /// which case the indices are not clamped). Clamping keeps every access in bounds; the
    /// condition lets the tasklet substitute the padding value.
    pub fn read_index(&self, outs: &[SymExpr], ks: &[SymExpr]) -> (Vec<SymExpr>, Option<TExpr>) {
        let mut idx = Vec::with_capacity(self.axes.len());
        let mut inside: Option<TExpr> = None;
        for ((a, o), k) in self.axes.iter().zip(outs).zip(ks) {
            let p = a.position(o, k);
            if a.stays_within(&SymExpr::Int(0), &a.input) {
                idx.push(p);
                continue;
            }
            clamp_into(p, &a.input, &mut idx, &mut inside);
        }
        (idx, inside)
    }

    /// Whether some window reaches into the padding (then [`Window::read_index`] tests for it).
    pub fn is_padded(&self) -> bool {
        (self.axes.iter()).any(|a| !a.stays_within(&SymExpr::Int(0), &a.input))
    }

    /// The extents of a zero-padded copy of the input from which every window reads without
    /// clamping: per axis `(output − 1)·stride + (kernel − 1)·dilation + 1`, the begin padding
    /// included and end padding that no window reaches left out. Window element `k` of output
    /// `o` sits at `o·stride + k·dilation` in it.
    pub fn padded_extents(&self) -> Vec<SymExpr> {
        (self.axes.iter())
            .map(|a| ((&a.output - 1) * a.stride + (&a.kernel - 1) * a.dilation + 1).simplify())
            .collect()
    }

    /// How many window elements of output position `outs` an average divides by: those inside
    /// the input, or with `include_pad` every element of the window — ONNX pads the ceil-mode
    /// overhang with the same zeros as the explicit padding, so every window counts whole.
    /// Folds to the kernel volume when every window is whole.
    pub fn divisor(&self, outs: &[SymExpr], include_pad: bool) -> SymExpr {
        self.axes
            .iter()
            .zip(outs)
            .fold(SymExpr::Int(1), |acc, (a, o)| {
                if include_pad {
                    acc * &a.kernel
                } else {
                    acc * a.count_within(o, &SymExpr::Int(0), &a.input)
                }
            })
    }
}

impl Axis {
    /// Input position of window element `k` of output `o`.
    pub fn position(&self, o: &SymExpr, k: &SymExpr) -> SymExpr {
        o * self.stride - &self.pad_begin + k * self.dilation
    }

    /// True when every position of every window provably lies in `lo..hi`.
    fn stays_within(&self, lo: &SymExpr, hi: &SymExpr) -> bool {
        let first = self.position(&SymExpr::Int(0), &SymExpr::Int(0));
        let last = self.position(&(&self.output - 1), &(&self.kernel - 1));
        provably_nonneg(first - lo) && provably_nonneg(hi - 1 - last)
    }

    /// Number of window elements of output `o` whose position lies in `lo..hi`:
    /// `k` ranges over `ceil((lo − a) / d) .. ceil((hi − a) / d)` clipped to `0..kernel`, where
    /// `a` is the window's first position and `d` the dilation.
    fn count_within(&self, o: &SymExpr, lo: &SymExpr, hi: &SymExpr) -> SymExpr {
        if self.stays_within(lo, hi) {
            return self.kernel.clone();
        }
        let a = self.position(o, &SymExpr::Int(0));
        let first = ceil_div(lo - &a, self.dilation).max(SymExpr::Int(0));
        let end = ceil_div(hi - &a, self.dilation).min(self.kernel.clone());
        (end - first).max(SymExpr::Int(0))
    }
}

impl ConcreteAxis {
    /// Integer form of [`Axis::position`].
    fn position(&self, o: usize, k: usize) -> i64 {
        o as i64 * self.stride - self.pad_begin + k as i64 * self.dilation
    }
}

/// Classifies window element `ks` of output position `outs`.
pub fn tap(axes: &[ConcreteAxis], outs: &[usize], ks: &[usize]) -> Tap {
    let mut at = Vec::with_capacity(axes.len());
    let mut padded = false;
    for ((a, &o), &k) in axes.iter().zip(outs).zip(ks) {
        let p = a.position(o, k);
        if p < -a.pad_begin || p >= a.input + a.pad_end {
            return Tap::Outside;
        }
        if p < 0 || p >= a.input {
            padded = true;
        } else {
            at.push(p as usize);
        }
    }
    if padded {
        Tap::Pad
    } else {
        Tap::Input(at)
    }
}

/// Every multi-index of `shape` in row-major order (one empty index for rank 0, none when an
/// extent is zero).
pub fn multi_indices(shape: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    let total: usize = shape.iter().product();
    let strides = crate::ir::tensor::row_major_strides(shape);
    (0..total).map(move |flat| {
        strides
            .iter()
            .zip(shape)
            .map(|(s, n)| (flat / s) % n)
            .collect()
    })
}

/// Row-major offset of `idx` with `strides`.
pub fn offset(strides: &[usize], idx: &[usize]) -> usize {
    strides.iter().zip(idx).map(|(s, i)| s * i).sum()
}

/// Concrete shape as symbolic literals, for running shape rules on tensors.
pub fn sym_shape(shape: &[usize]) -> Vec<SymExpr> {
    shape.iter().map(|&d| SymExpr::from(d)).collect()
}

/// Concrete integers from a static shape; `what` names the dimensions in the error.
/// Checks the operands Conv and ConvTranspose share — X as (N, C, spatial…) and W of the same
/// rank, a positive `group` — and returns `group` with the static channel counts
/// `[X's C, W's dim 0, W's dim 1]`.
pub(super) fn conv_operands(
    op: &str,
    node: &LibraryNode,
    x: &[SymExpr],
    w: &[SymExpr],
) -> Result<(i64, [i64; 3]), OpError> {
    if x.len() < 3 {
        return Err(OpError::shape(
            op,
            format!(
                "input X must have rank at least 3 (N, C, spatial…), got rank {}",
                x.len()
            ),
        ));
    }
    if w.len() != x.len() {
        return Err(OpError::shape(
            op,
            format!("weights W have rank {} but X has rank {}", w.len(), x.len()),
        ));
    }
    let group = node.int("group").unwrap_or(1);
    if group < 1 {
        return Err(OpError::attr(
            op,
            "group",
            format!("{group} is not positive"),
        ));
    }
    let dims = static_dims(
        op,
        "channel counts",
        &[x[1].clone(), w[0].clone(), w[1].clone()],
    )?;
    Ok((group, [dims[0], dims[1], dims[2]]))
}

pub fn static_dims(op: &str, what: &str, dims: &[SymExpr]) -> Result<Vec<i64>, OpError> {
    dims.iter()
        .map(|d| d.as_int().ok_or_else(|| OpError::symbolic(op, what, d)))
        .collect()
}

/// The type of required input `i` (named `what` in errors), which must be a float tensor.
pub fn float_input<'a>(
    op: &str,
    inputs: &'a [Option<TensorType>],
    i: usize,
    what: &str,
) -> Result<&'a TensorType, OpError> {
    let t = inputs
        .get(i)
        .and_then(|x| x.as_ref())
        .ok_or_else(|| OpError::shape(op, format!("missing input {i} ({what})")))?;
    if !t.dtype.is_float() {
        return Err(OpError::shape(
            op,
            format!("{what} has element type {}, expected a float type", t.dtype),
        ));
    }
    Ok(t)
}

/// The value of required input `i` (named `what` in errors).
pub fn tensor_input<'a>(
    op: &str,
    inputs: &[Option<&'a Tensor>],
    i: usize,
    what: &str,
) -> Result<&'a Tensor, OpError> {
    inputs
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| OpError::shape(op, format!("missing input {i} ({what})")))
}

/// Checks that two dimensions are provably equal; `message` explains a mismatch.
pub fn same_dim(
    op: &str,
    a: &SymExpr,
    b: &SymExpr,
    message: impl FnOnce() -> String,
) -> Result<(), OpError> {
    if (a - b).simplify() == SymExpr::Int(0) {
        Ok(())
    } else {
        Err(OpError::shape(op, message()))
    }
}

/// Appends the map that starts a convolution's accumulation: `Y[n, m, o…] = B[m]` when there is a
/// bias, else 0 (Conv, ConvTranspose and the im2col expansion share it).
pub(super) fn bias_init(
    b: &mut crate::ir::build::ScopeBuilder,
    label: &str,
    y: &str,
    y_shape: &[SymExpr],
    bias: Option<&str>,
) {
    bias_init_at(b, label, y, y_shape, bias, 1);
}

/// [`bias_init`] with the channels of Y on axis `channel_axis` (the last one for a
/// channels-last output).
pub(super) fn bias_init_at(
    b: &mut crate::ir::build::ScopeBuilder,
    label: &str,
    y: &str,
    y_shape: &[SymExpr],
    bias: Option<&str>,
    channel_axis: usize,
) {
    let init = format!("{label}_init");
    match bias {
        Some(bias) => {
            let (params, idx) = super::support::params_over("i", y_shape);
            let reads = vec![super::support::Read::new(
                "b",
                bias,
                vec![idx[channel_axis].clone()],
            )];
            let dst = (y, idx);
            super::support::element_map(b, &init, &params, reads, dst, None, TExpr::input("b"));
        }
        None => super::support::fill_map(b, &init, y, y_shape, 0.0),
    }
}

/// Pushes position `p` clamped into `0..extent` onto `idx`, and ANDs into `inside` the 0/1
/// condition that `p` really is in range: the clamped access stays in bounds and the condition
/// says where its value counts (reads of padding, scatters into it).
pub(super) fn clamp_into(
    p: SymExpr,
    extent: &SymExpr,
    idx: &mut Vec<SymExpr>,
    inside: &mut Option<TExpr>,
) {
    let last = extent - 1;
    idx.push(p.clone().min(last.clone()).max(SymExpr::Int(0)));
    let cond = TExpr::binary(
        BinOp::Ge,
        TExpr::Index(p.clone().min(last - p)),
        TExpr::Const(0.0),
    );
    *inside = Some(match inside.take() {
        Some(c) => TExpr::binary(BinOp::And, c, cond),
        None => cond,
    });
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Attr;
    use std::collections::BTreeMap;

    fn node(attrs: &[(&str, Attr)]) -> LibraryNode {
        LibraryNode {
            op: "MaxPool".into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn same_upper_and_lower_split_odd_padding() {
        // in 5, kernel 4, stride 1: output 5, total padding 3.
        let upper = node(&[("auto_pad", Attr::Str("SAME_UPPER".into()))]);
        let w = Window::from_attrs("P", &upper, &[5.into()], &[4.into()], false).expect("ok");
        let a = &w.concrete("P").expect("ints")[0];
        assert_eq!((a.pad_begin, a.pad_end, a.output), (1, 2, 5));
        let lower = node(&[("auto_pad", Attr::Str("SAME_LOWER".into()))]);
        let w = Window::from_attrs("P", &lower, &[5.into()], &[4.into()], false).expect("ok");
        let a = &w.concrete("P").expect("ints")[0];
        assert_eq!((a.pad_begin, a.pad_end, a.output), (2, 1, 5));
    }

    #[test]
    fn ceil_mode_drops_windows_starting_in_end_padding() {
        // in 5, kernel 2, stride 3, pads 1/1: floor gives 2, ceil would give 3, but that
        // window starts at 2·3 − 1 = 5, in the end padding → 2.
        let n = node(&[
            ("strides", Attr::Ints(vec![3])),
            ("pads", Attr::Ints(vec![1, 1])),
        ]);
        let w = Window::from_attrs("P", &n, &[5.into()], &[2.into()], true).expect("ok");
        assert_eq!(w.output_shape(), vec![SymExpr::Int(2)]);
        // in 6, kernel 3, stride 2: floor 2, ceil 3 (start 4 < 6 is kept).
        let n = node(&[("strides", Attr::Ints(vec![2]))]);
        let w = Window::from_attrs("P", &n, &[6.into()], &[3.into()], true).expect("ok");
        assert_eq!(w.output_shape(), vec![SymExpr::Int(3)]);
    }

    #[test]
    fn divisor_counts_positions_inside() {
        // in 4, kernel 3, pads 1/1: window 0 covers -1..2 → 2 inside, 3 with padding.
        let n = node(&[("pads", Attr::Ints(vec![1, 1]))]);
        let w = Window::from_attrs("P", &n, &[4.into()], &[3.into()], false).expect("ok");
        let at = |o: i64, include| {
            w.divisor(&[SymExpr::Int(o)], include)
                .eval(&Default::default())
                .expect("ints")
        };
        assert_eq!((at(0, false), at(1, false), at(3, false)), (2, 3, 2));
        assert_eq!((at(0, true), at(3, true)), (3, 3));
        // in 5, kernel 2, stride 2, ceil mode: window 2 covers 4..6, one element past the input
        // and its (empty) padding, and still divides by 2 when padding counts.
        let n = node(&[("strides", Attr::Ints(vec![2]))]);
        let w = Window::from_attrs("P", &n, &[5.into()], &[2.into()], true).expect("ok");
        let at = |o: i64, include| {
            w.divisor(&[SymExpr::Int(o)], include)
                .eval(&Default::default())
                .expect("ints")
        };
        assert_eq!((at(2, false), at(2, true)), (1, 2));
    }

    #[test]
    fn multi_indices_are_row_major() {
        let all: Vec<Vec<usize>> = multi_indices(&[2, 3]).collect();
        assert_eq!(all.len(), 6);
        assert_eq!(all[4], vec![1, 1]);
        assert_eq!(multi_indices(&[]).count(), 1);
        assert_eq!(multi_indices(&[3, 0]).count(), 0);
    }
}
