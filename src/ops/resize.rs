//! Resize: nearest-neighbour, (multi)linear and cubic resampling with static output sizes.
//!
//! Forms: opset 10 (`X, scales`; asymmetric coordinates, nearest rounds down, as ONNX's version
//! converter states) and opset 11+ (`X, roi, scales, sizes` with `coordinate_transformation_mode`
//! `half_pixel`, `half_pixel_symmetric`, `pytorch_half_pixel`, `asymmetric` or `align_corners`,
//! and `nearest_mode`), with the opset-18 `axes` and `keep_aspect_ratio_policy` attributes.
//! `scales` and `sizes` must be constants. Not supported (a clear error): `tf_crop_and_resize`.
//!
//! Expansion, one module per mode: one map over the output. [`nearest`] reads `X` at an index
//! computed from the output index by floor divisions of the exact coordinate fraction (see
//! [`axis`]); the index is checked against the reference's `f64` rounding at every output
//! position, and where float rounding makes them differ the index becomes an exact sum of steps
//! `min(1, max(0, o − t + 1))`. [`linear`] reads the `2ᵏ` corners around the coordinate
//! (k = resized axes) at clamped floor / floor + 1 and blends them with weights
//! `((p·o + q) mod d) / d` computed in the tasklet. [`kernel`] (cubic, antialiased linear and
//! cubic) blends `tapsᵏ` corners with weights from per-axis tables.

mod axis;
mod kernel;
mod linear;
mod nearest;

use super::expand::elementwise_index;
use super::movement::{concrete, gather, resolve_axes, to_usize, type_of, Param};
use super::support::{arg, element_map, input_type, offset, Read};
use super::window::multi_indices;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, SymExpr, TExpr, Tensor};
use axis::{Axis, CoordMode, Rounding, Scale};
use kernel::Kernel;
pub(super) use kernel::Shape;
use linear::linear_corners;
use nearest::nearest_index;

pub static OPS: &[&dyn Operator] = &[&Resize];

const OP: &str = "Resize";

/// What the output samples.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    Nearest(Rounding),
    Linear,
    /// Cubic, or linear with antialiasing.
    Kernel(Kernel),
}

/// The resolved operator: method and, per dimension, its geometry (`None`: left unchanged).
struct Plan {
    method: Method,
    axes: Vec<Option<Axis>>,
}

fn unsupported(what: &str) -> OpError {
    OpError::unsupported(OP, format!("{what} is not supported"))
}

/// A string attribute of operator `op` mapped through `options`, with `default` when absent: a
/// value mapped to `None` is known but unsupported, one not listed is unknown (both errors name
/// the attribute and the value).
pub(super) fn choice<T: Copy>(
    op: &str,
    node: &LibraryNode,
    attr: &str,
    default: &str,
    options: &[(&str, Option<T>)],
) -> Result<T, OpError> {
    let v = node.str(attr).unwrap_or(default);
    match options.iter().find(|(name, _)| *name == v) {
        Some((_, Some(t))) => Ok(*t),
        Some((_, None)) => Err(OpError::unsupported(
            op,
            format!("{attr} `{v}` is not supported"),
        )),
        None => Err(OpError::attr(op, attr, format!("unknown value `{v}`"))),
    }
}

impl Plan {
    /// `count` is the number of inputs: two means the opset-10 form `X, scales`.
    fn new<'a>(
        node: &LibraryNode,
        shape: &[SymExpr],
        count: usize,
        param: &dyn Fn(usize) -> Param<'a>,
    ) -> Result<Plan, OpError> {
        let legacy = count == 2;
        let rounding = match legacy {
            true => Rounding::Floor,
            false => choice(
                OP,
                node,
                "nearest_mode",
                "round_prefer_floor",
                &[
                    ("round_prefer_floor", Some(Rounding::RoundPreferFloor)),
                    ("round_prefer_ceil", Some(Rounding::RoundPreferCeil)),
                    ("floor", Some(Rounding::Floor)),
                    ("ceil", Some(Rounding::Ceil)),
                ],
            )?,
        };
        // Antialiased linear is a kernel resize; plain linear has its exact corner blend.
        let linear = Kernel::of(node, Shape::Linear)?;
        let linear = match linear.antialias {
            true => Method::Kernel(linear),
            false => Method::Linear,
        };
        let cubic = Method::Kernel(Kernel::of(node, Kernel::cubic_shape(node))?);
        let method = choice(
            OP,
            node,
            "mode",
            "nearest",
            &[
                ("nearest", Some(Method::Nearest(rounding))),
                ("linear", Some(linear)),
                ("cubic", Some(cubic)),
            ],
        )?;
        let mode = match legacy {
            true => CoordMode::Asymmetric,
            false => choice(
                OP,
                node,
                "coordinate_transformation_mode",
                "half_pixel",
                &[
                    ("half_pixel", Some(CoordMode::HalfPixel)),
                    ("pytorch_half_pixel", Some(CoordMode::PytorchHalfPixel)),
                    ("asymmetric", Some(CoordMode::Asymmetric)),
                    ("align_corners", Some(CoordMode::AlignCorners)),
                    ("tf_crop_and_resize", None),
                    ("half_pixel_symmetric", Some(CoordMode::HalfPixelSymmetric)),
                ],
            )?,
        };
        if matches!(method, Method::Nearest(_)) && node.int("antialias").unwrap_or(0) != 0 {
            return Err(OpError::attr(
                OP,
                "antialias",
                "applies to linear and cubic only",
            ));
        }
        let present = |i: usize, what: &str| -> Result<Option<&'a Tensor>, OpError> {
            Ok(param(i).value(OP, what)?.filter(|t| !t.is_empty()))
        };
        let (scales, sizes) = match legacy {
            true => (present(1, "scales")?, None),
            false => (present(2, "scales")?, present(3, "sizes")?),
        };
        let axes = match node.ints("axes") {
            Some(a) => resolve_axes(OP, a, shape.len())?,
            None => (0..shape.len()).collect(),
        };
        let (what, len) = match (scales, sizes) {
            (Some(s), None) => ("scales", s.len()),
            (None, Some(s)) => ("sizes", s.len()),
            (Some(_), Some(_)) => {
                return Err(OpError::shape(OP, "give `scales` or `sizes`, not both"))
            }
            (None, None) => return Err(OpError::shape(OP, "needs `scales` or `sizes`")),
        };
        if len != axes.len() {
            return Err(OpError::shape(
                OP,
                format!("`{what}` has {len} entries for {} axes", axes.len()),
            ));
        }
        let keep_aspect = match sizes {
            Some(sizes) => aspect_scale(node, shape, &axes, &sizes.to_i64_vec())?,
            None => None,
        };
        let mut out = vec![None; shape.len()];
        for (k, &d) in axes.iter().enumerate() {
            let static_extent = || {
                (shape[d].as_int())
                    .ok_or_else(|| OpError::symbolic(OP, format!("dimension {d}"), &shape[d]))
            };
            let (input, output, scale) = if let Some(s) = scales {
                let v = s.get_f64(k);
                if v.is_nan() || v <= 0.0 {
                    return Err(OpError::shape(
                        OP,
                        format!("scale {v} of dimension {d} is not positive"),
                    ));
                }
                if v == 1.0 {
                    continue;
                }
                let n = static_extent()?;
                let scale =
                    Scale::float(v).ok_or_else(|| unsupported(&format!("the scale {v}")))?;
                (n, (n as f64 * v).floor() as i64, scale)
            } else if let Some(scale) = keep_aspect {
                if scale.value == 1.0 {
                    continue;
                }
                let n = static_extent()?;
                // ONNX rounds half up: floor(s·n + ½).
                (n, (scale.value * n as f64 + 0.5).floor() as i64, scale)
            } else {
                let size = sizes.map_or(0, |s| s.to_i64_vec()[k]);
                let n = static_extent()?;
                if size < 0 || n == 0 {
                    return Err(OpError::shape(
                        OP,
                        format!("cannot resize dimension {d} from {n} to {size}"),
                    ));
                }
                if size == n {
                    continue;
                }
                (n, size, Scale::ratio(size, n))
            };
            out[d] = Some(Axis {
                input,
                output,
                scale,
                mode,
            });
        }
        Ok(Plan { method, axes: out })
    }

    fn out_type(&self, x: &TensorType) -> TensorType {
        let shape = x
            .shape
            .iter()
            .zip(&self.axes)
            .map(|(d, a)| a.map_or_else(|| d.clone(), |a| SymExpr::Int(a.output)))
            .collect();
        TensorType::new(x.dtype, shape)
    }
}

/// The one scale of `keep_aspect_ratio_policy` `not_larger` (the smallest `size / extent` over
/// the resized axes) or `not_smaller` (the largest); `None` for `stretch`, where every axis
/// takes its own size.
fn aspect_scale(
    node: &LibraryNode,
    shape: &[SymExpr],
    axes: &[usize],
    sizes: &[i64],
) -> Result<Option<Scale>, OpError> {
    let smallest = choice(
        OP,
        node,
        "keep_aspect_ratio_policy",
        "stretch",
        &[
            ("stretch", Some(None)),
            ("not_larger", Some(Some(true))),
            ("not_smaller", Some(Some(false))),
        ],
    )?;
    let Some(smallest) = smallest else {
        return Ok(None);
    };
    let mut best: Option<Scale> = None;
    for (&d, &size) in axes.iter().zip(sizes) {
        let n = shape[d]
            .as_int()
            .filter(|&n| n > 0 && size >= 0)
            .ok_or_else(|| {
                OpError::shape(
                    OP,
                    format!(
                        "cannot resize dimension {d} of extent {} to {size}",
                        shape[d]
                    ),
                )
            })?;
        let s = Scale::ratio(size, n);
        let better = match best {
            None => true,
            Some(b) if smallest => s.value < b.value,
            Some(b) => s.value > b.value,
        };
        if better {
            best = Some(s);
        }
    }
    Ok(best)
}

/// `Y = resize(X)`.
pub struct Resize;

impl Operator for Resize {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 4)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        let plan = Plan::new(node, &x.shape, inputs.len(), &|i| {
            Param::of_infer(inputs, consts, i)
        })?;
        Ok(vec![plan.out_type(x)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let xt = type_of(x);
        let plan = Plan::new(node, &xt.shape, inputs.len(), &|i| {
            Param::of_eval(inputs, i)
        })?;
        let shape = concrete(OP, &plan.out_type(&xt))?;
        let strides = x.strides();
        let y = match plan.method {
            Method::Nearest(rounding) => {
                let tables: Vec<Option<Vec<usize>>> = plan
                    .axes
                    .iter()
                    .map(|a| {
                        a.map(|a| {
                            (0..a.output)
                                .map(|o| to_usize(a.nearest(o, rounding)))
                                .collect()
                        })
                    })
                    .collect();
                gather(x, &shape, 0.0, |idx| {
                    let src: Vec<usize> = idx
                        .iter()
                        .zip(&tables)
                        .map(|(&o, t)| t.as_ref().map_or(o, |t| t[o]))
                        .collect();
                    Some(offset(&src, &strides))
                })
            }
            Method::Linear => blend_eval(x, &plan.axes, &shape, |a, o| {
                let (lo, hi, w) = a.linear(o);
                vec![(lo, 1.0 - w), (hi, w)]
            }),
            Method::Kernel(kernel) => blend_eval(x, &plan.axes, &shape, |a, o| kernel.taps(a, o)),
        };
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let plan = Plan::new(ctx.node, &x_desc.shape, ctx.inputs.len(), &|i| {
            Param::of_expand(ctx, i)
        })?;
        let (params, idx) = elementwise_index(&y_desc.shape);
        let (reads, value) = match plan.method {
            Method::Nearest(rounding) => {
                let src = idx
                    .iter()
                    .zip(&params)
                    .zip(&plan.axes)
                    .map(|((i, (name, _)), a)| match a {
                        Some(a) => nearest_index(a, rounding, name, i),
                        None => i.clone(),
                    })
                    .collect();
                (vec![(String::from("x"), src)], TExpr::input("x"))
            }
            Method::Linear => linear_corners(&plan.axes, &idx)?,
            Method::Kernel(kernel) => {
                let io = (x.as_str(), y.as_str());
                let shape = &y_desc.shape;
                return kernel.append(ctx.b, &ctx.label, io, x_desc.dtype, &plan.axes, shape);
            }
        };
        let reads = reads
            .iter()
            .map(|(conn, src)| Read::new(conn, &x, src.clone()))
            .collect();
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    /// Nearest only moves data; linear weighs and adds `2ᵏ` corners per output element, cubic
    /// `4ᵏ`, `k` being the number of resized dimensions.
    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let (Some(Some(x)), Some(y)) = (inputs.first(), outputs.first()) else {
            return 0;
        };
        let taps: u64 = match node.str("mode") {
            Some("linear") => 2,
            Some("cubic") => 4,
            _ => return 0,
        };
        let resized = x.shape.iter().zip(&y.shape).filter(|(a, b)| a != b).count();
        let elements = y.static_shape().map_or(0, |s| s.iter().product::<usize>()) as u64;
        let corners = taps.saturating_pow(u32::try_from(resized).unwrap_or(u32::MAX));
        elements.saturating_mul(corners.saturating_mul(2))
    }
}

/// Separable interpolation, straight from the input positions and weights `taps` gives every
/// output position of each resized axis: the sum over all combinations of one tap per axis.
fn blend_eval(
    x: &Tensor,
    axes: &[Option<Axis>],
    shape: &[usize],
    taps: impl Fn(&Axis, i64) -> Vec<(i64, f64)>,
) -> Tensor {
    let strides = x.strides();
    let mut y = Tensor::zeros(x.dtype(), shape.to_vec());
    for (e, idx) in multi_indices(shape).enumerate() {
        // Partial sums over the combinations of the axes done so far: (source index, weight).
        let mut partial = vec![(idx.clone(), 1.0)];
        for (d, a) in axes.iter().enumerate() {
            let Some(a) = a else { continue };
            let axis_taps = taps(a, idx[d] as i64);
            partial = partial
                .iter()
                .flat_map(|(src, w)| {
                    axis_taps.iter().map(move |&(at, tw)| {
                        let mut src = src.clone();
                        src[d] = to_usize(at);
                        (src, w * tw)
                    })
                })
                .collect();
        }
        let sum: f64 = partial
            .iter()
            .map(|(src, w)| w * x.get_f64(offset(src, &strides)))
            .sum();
        y.set_f64(e, sum);
    }
    y
}

/// `max(0, min(n − 1, e))`.
fn clamped(e: SymExpr, n: i64) -> SymExpr {
    e.min(SymExpr::Int(n - 1)).max(SymExpr::Int(0))
}
