//! GridSample: samples `X [N, C, D₁ … D_r]` at the normalised coordinates of `grid [N, H₁ … H_r,
//! r]`, giving `Y [N, C, H₁ … H_r]` (r = 2 in opset 16, any r ≥ 1 from opset 20).
//!
//! Component `k` of a grid vector addresses spatial axis `r − 1 − k` (x along the innermost, as
//! AffineGrid writes its grids). A coordinate `g` becomes a position on its axis of `d` elements,
//! `(g + 1)/2·(d − 1)` with `align_corners` (the corner centres at ±1) and `((g + 1)·d − 1)/2`
//! without (the corner edges at ±1): the inverses of AffineGrid's mappings, computed in the grid's
//! precision (`f32` below `f64`) like ONNX's reference. `nearest` rounds the position half to
//! even. A position outside `[lo, hi]` (`[0, d − 1]` with `align_corners`, else `[−½, d − ½]`)
//! is then moved by `padding_mode`: `border` clamps it to `[0, d − 1]`, `reflection` reflects it
//! at `lo` and `hi` until it lies between them, `zeros` leaves it.
//!
//! The sample blends taps around `base = floor(x)` with Resize's kernels
//! ([`super::resize::Shape`]): `linear` reads `base` and `base + 1`, `cubic` (Keys, `a = −0.75`)
//! `base − 1 … base + 2`, tap `base + j` weighing `K(j − (x − base))`; `nearest` reads `base`
//! alone. A tap off the axis reads 0 (`zeros`), the clamped position (`border`) or the reflected
//! one (`reflection`); the `r` axes combine as a tensor product. The opset-16 mode names
//! `bilinear` and `bicubic` are accepted. Interpolation needs a floating-point `X` (ONNX's
//! reference would compute integer weights); `nearest` moves elements of any type.
//!
//! The expansion ([`expand`]) computes positions, tap indices and weights per grid position,
//! then blends the corners of `X` read by element at those indices.

mod expand;

use super::movement::{concrete, has_zero_extent, type_of};
use super::resize::{choice, Shape};
use super::support::{arg, flag, input_type, per_output_element};
use super::window::multi_indices;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, Precision, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&GridSample];

const OP: &str = "GridSample";

/// Keys' coefficient of ONNX's cubic sampling.
const CUBIC_A: f64 = -0.75;

/// How a position is sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Nearest,
    /// A blend of the taps around the position.
    Kernel(Shape),
}

/// What positions and taps outside the input become (ONNX `padding_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// The resolved operator.
struct Plan {
    mode: Mode,
    padding: Padding,
    align: bool,
    /// X's spatial extents, outermost first.
    spatial: Vec<SymExpr>,
    y: TensorType,
}

impl Plan {
    fn new(node: &LibraryNode, x: &TensorType, grid: &TensorType) -> Result<Plan, OpError> {
        let linear = Some(Mode::Kernel(Shape::Linear));
        let cubic = Some(Mode::Kernel(Shape::Cubic(CUBIC_A)));
        let modes = [
            ("linear", linear),
            ("bilinear", linear),
            ("cubic", cubic),
            ("bicubic", cubic),
            ("nearest", Some(Mode::Nearest)),
        ];
        let mode = choice(OP, node, "mode", "linear", &modes)?;
        let paddings = [
            ("zeros", Some(Padding::Zeros)),
            ("border", Some(Padding::Border)),
            ("reflection", Some(Padding::Reflection)),
        ];
        let padding = choice(OP, node, "padding_mode", "zeros", &paddings)?;
        let align = flag(OP, node, "align_corners", false)?;
        if !grid.dtype.is_float() {
            let message = format!("grid must be floating-point, got {}", grid.dtype);
            return Err(OpError::shape(OP, message));
        }
        if mode != Mode::Nearest && !x.dtype.is_float() {
            let message = format!(
                "interpolating needs a floating-point X, got {} (mode `nearest` takes any type)",
                x.dtype
            );
            return Err(OpError::unsupported(OP, message));
        }
        let rank = x.shape.len();
        if rank < 3 {
            let message = format!("X must be [N, C, D1, …], got rank {rank}");
            return Err(OpError::shape(OP, message));
        }
        let r = rank - 2;
        let last = grid.shape.last();
        if grid.shape.len() != rank || last.and_then(SymExpr::as_int) != Some(r as i64) {
            let message = format!(
                "grid has shape {:?}; X of rank {rank} needs [N, H1 … H{r}, {r}]",
                grid.shape
            );
            return Err(OpError::shape(OP, message));
        }
        if (&grid.shape[0] - x.shape[0].clone())
            .as_int()
            .is_some_and(|d| d != 0)
        {
            let message = format!("grid has batch {} but X has {}", grid.shape[0], x.shape[0]);
            return Err(OpError::shape(OP, message));
        }
        let mut y = x.shape[..2].to_vec();
        y.extend(grid.shape[1..=r].iter().cloned());
        let spatial = x.shape[2..].to_vec();
        if has_zero_extent(&spatial) && !has_zero_extent(&y) {
            let message = format!("X has no element to sample (spatial extents {spatial:?})");
            return Err(OpError::shape(OP, message));
        }
        Ok(Plan {
            mode,
            padding,
            align,
            spatial,
            y: TensorType::new(x.dtype, y),
        })
    }

    /// The bounds of the positions on an axis of `d` elements as `(lo, hi − d)`.
    fn bounds(&self) -> (f64, f64) {
        match self.align {
            true => (0.0, -1.0),
            false => (-0.5, -0.5),
        }
    }

    /// The taps read around a position: the first offset from its floor and the count.
    fn window(&self) -> (i64, usize) {
        match self.mode {
            Mode::Nearest => (0, 1),
            Mode::Kernel(shape) => shape.window(1.0),
        }
    }

    /// The padded position of grid coordinate `g` on an axis of `d` elements, computed in the
    /// precision `p` of the grid (the reference side).
    fn position(&self, g: f64, d: usize, p: Precision) -> f64 {
        let q = |v: f64| p.round(v);
        let d = d as f64;
        let mut x = match self.align {
            true => q(q(q(g + 1.0) / 2.0) * (d - 1.0)),
            false => q(q(q(q(g + 1.0) * d) - 1.0) / 2.0),
        };
        if self.mode == Mode::Nearest {
            x = x.round_ties_even();
        }
        let (lo, hi) = self.bounds();
        let hi = d + hi;
        if x < lo || x > hi {
            x = match self.padding {
                Padding::Zeros => x,
                Padding::Border => x.max(0.0).min(d - 1.0),
                Padding::Reflection => reflect(x, lo, hi),
            };
        }
        q(x)
    }

    /// The element tap position `i` (a whole number) reads on an axis of `d` elements, `None`
    /// where it reads 0.
    fn source(&self, i: f64, d: usize) -> Option<usize> {
        let last = d as f64 - 1.0;
        let i = match self.padding {
            Padding::Zeros => return (0.0..=last).contains(&i).then_some(i as usize),
            Padding::Border => i,
            Padding::Reflection => {
                let (lo, hi) = self.bounds();
                reflect(i, lo, d as f64 + hi).trunc()
            }
        };
        Some(i.max(0.0).min(last) as usize)
    }

    /// The taps blended at position `x` on an axis of `d` elements: element (`None`: 0) and
    /// weight.
    fn taps(&self, x: f64, d: usize) -> Vec<(Option<usize>, f64)> {
        let base = x.floor();
        let (start, count) = self.window();
        (start..start + count as i64)
            .map(|j| {
                let w = match self.mode {
                    Mode::Nearest => 1.0,
                    Mode::Kernel(shape) => shape.at(j as f64 - (x - base)),
                };
                (self.source(base + j as f64, d), w)
            })
            .collect()
    }
}

/// Reflects `x` at `lo` and `hi` until it lies between them, as ONNX's reference does; with `lo
/// = hi` (one element and `align_corners`) every position outside is `lo`.
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let below = x < lo;
    if !(below || x > hi) {
        return x;
    }
    let span = hi - lo;
    if span <= 0.0 {
        return lo;
    }
    let dx = if below { lo - x } else { x - hi };
    let n = (dx / span).floor();
    let r = dx - n * span;
    // An even number of whole spans from `lo` (or odd from `hi`) lands at `lo + r`.
    if below == (n % 2.0 == 0.0) {
        lo + r
    } else {
        hi - r
    }
}

/// `GridSample(X, grid)`.
pub struct GridSample;

impl Operator for GridSample {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        let grid = input_type(OP, inputs, 1)?;
        Ok(vec![Plan::new(node, x, grid)?.y])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let grid = arg(OP, inputs, 1)?;
        let plan = Plan::new(node, &type_of(x), &type_of(grid))?;
        let shape = concrete(OP, &plan.y)?;
        let mut y = Tensor::zeros(x.dtype(), shape.clone());
        let (batch, channels, r) = (shape[0], shape[1], shape.len() - 2);
        let positions: usize = shape[2..].iter().product();
        let dims = &x.shape[2..];
        let strides = x.strides();
        let precision = Precision::of([grid.dtype()]);
        for n in 0..batch {
            for h in 0..positions {
                // Per spatial axis, outermost first: the taps of its grid component.
                let taps: Vec<Vec<(Option<usize>, f64)>> = (0..r)
                    .map(|k| {
                        let g = grid.get_f64((n * positions + h) * r + (r - 1 - k));
                        plan.taps(plan.position(g, dims[k], precision), dims[k])
                    })
                    .collect();
                let counts: Vec<usize> = taps.iter().map(Vec::len).collect();
                for c in 0..channels {
                    let mut sum = 0.0;
                    for corner in multi_indices(&counts) {
                        let mut at = Some(n * strides[0] + c * strides[1]);
                        let mut weight = 1.0;
                        for (k, &j) in corner.iter().enumerate() {
                            let (src, w) = taps[k][j];
                            weight *= w;
                            at = at.zip(src).map(|(a, i)| a + i * strides[k + 2]);
                        }
                        sum += weight * at.map_or(0.0, |a| x.get_f64(a));
                    }
                    y.set_f64((n * channels + c) * positions + h, sum);
                }
            }
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (grid, grid_desc) = ctx.input(1)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let x_type = TensorType::new(x_desc.dtype, x_desc.shape);
        let grid_type = TensorType::new(grid_desc.dtype, grid_desc.shape);
        let plan = Plan::new(ctx.node, &x_type, &grid_type)?;
        if !has_zero_extent(&plan.y.shape) {
            let types = expand::Types {
                x: x_type.dtype,
                grid: grid_type.dtype,
            };
            expand::append(&plan, ctx.b, &ctx.label, [&x, &grid, &y], types);
        }
        Ok(())
    }

    /// `nearest` only moves data; the kernels weigh and add `tapsʳ` corners per output element.
    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let (Some(Some(x)), Some(Some(grid))) = (inputs.first(), inputs.get(1)) else {
            return 0;
        };
        let Ok(plan) = Plan::new(node, x, grid) else {
            return 0;
        };
        if plan.mode == Mode::Nearest {
            return 0;
        }
        let r = plan.spatial.len();
        let corners = (plan.window().1 as u64).saturating_pow(u32::try_from(r).unwrap_or(u32::MAX));
        per_output_element(outputs, corners.saturating_mul(r as u64 + 1))
    }
}
