//! Resize modes that convolve with a kernel over a neighbourhood of the coordinate: `cubic`
//! (Keys' kernel with coefficient `cubic_coeff_a`) and, with `antialias = 1`, `linear` and
//! `cubic` whose kernel is stretched by `1 / scale` when downsampling (so every input element
//! contributes). Edge positions repeat; `exclude_outside` drops the weights of positions outside
//! the input instead and renormalises the rest.
//!
//! Like ONNX's reference, the neighbourhood of coordinate `x` is `base + start … base + 1 −
//! start` with `base = ceil(x) − 1`, ratio `r = x − base` in `(0, 1]`, and `start =
//! floor(−support / s) + 1` (support 1 for linear, 2 for cubic; `s = min(scale, 1)` with
//! antialias, else 1); the position `base + start + j` weighs `K(s·(start + j − r))`, normalised
//! to sum 1 with antialias or `exclude_outside`. The expansion writes those weights per output position of every resized axis into
//! a small table (one map per axis, from the exact coordinate fraction), and the output map
//! blends the `tapsᵏ` corners with products of table entries.

use super::super::support::{element_map, params_over, Read};
use super::super::OpError;
use super::axis::{Affine, Axis};
use super::{clamped, unsupported};
use crate::ir::build::{Out, ScopeBuilder};
use crate::ir::{BinOp, DType, LibraryNode, Range, Schedule, Subset, SymExpr, TExpr, UnOp};

/// The kernel's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// The triangle `max(0, 1 − |t|)` (support 1).
    Linear,
    /// Keys' cubic with coefficient `a` (−0.75 by default, as in TensorFlow; PyTorch uses
    /// −0.5), support 2.
    Cubic(f64),
}

impl Shape {
    /// The taps of the kernel stretched by `1 / s` around a coordinate between `base` and
    /// `base + 1`: the first offset from `base` and the count (at `s = 1`: linear `base`,
    /// `base + 1`; cubic `base − 1 … base + 2`).
    pub fn window(self, s: f64) -> (i64, usize) {
        let support = match self {
            Shape::Linear => 1.0,
            Shape::Cubic(_) => 2.0,
        };
        let start = (-support / s).floor() as i64 + 1;
        (start, (2 - 2 * start) as usize)
    }

    /// The kernel at `t` (reference side).
    pub fn at(self, t: f64) -> f64 {
        let t = t.abs();
        match self {
            Shape::Linear => (1.0 - t).max(0.0),
            Shape::Cubic(a) if t <= 1.0 => ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0,
            Shape::Cubic(a) if t < 2.0 => ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a,
            Shape::Cubic(_) => 0.0,
        }
    }

    /// The kernel at `t` as a tasklet expression.
    pub fn at_expr(self, t: TExpr) -> TExpr {
        let mul = |x: TExpr, y: TExpr| TExpr::binary(BinOp::Mul, x, y);
        let add = |x: TExpr, c: f64| TExpr::binary(BinOp::Add, x, TExpr::Const(c));
        let k = TExpr::Const;
        let t = TExpr::unary(UnOp::Abs, t);
        match self {
            Shape::Linear => {
                TExpr::binary(BinOp::Max, k(0.0), TExpr::binary(BinOp::Sub, k(1.0), t))
            }
            Shape::Cubic(a) => {
                let near = add(mul(k(a + 2.0), t.clone()), -(a + 3.0));
                let near = add(mul(mul(near, t.clone()), t.clone()), 1.0);
                let far = add(mul(k(a), t.clone()), -5.0 * a);
                let far = add(mul(add(mul(far, t.clone()), 8.0 * a), t.clone()), -4.0 * a);
                let within = |c: f64, op| TExpr::binary(op, t.clone(), k(c));
                let outer = TExpr::select(within(2.0, BinOp::Lt), far, k(0.0));
                TExpr::select(within(1.0, BinOp::Le), near, outer)
            }
        }
    }
}

/// A convolution-kernel resize.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kernel {
    pub shape: Shape,
    pub antialias: bool,
    pub exclude_outside: bool,
}

/// A 0/1 attribute of Resize.
fn flag(node: &LibraryNode, name: &str) -> Result<bool, OpError> {
    match node.int(name).unwrap_or(0) {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(OpError::attr(
            super::OP,
            name,
            format!("{v} is neither 0 nor 1"),
        )),
    }
}

impl Kernel {
    pub fn of(node: &LibraryNode, shape: Shape) -> Result<Kernel, OpError> {
        Ok(Kernel {
            shape,
            antialias: flag(node, "antialias")?,
            exclude_outside: flag(node, "exclude_outside")?,
        })
    }

    /// Keys' cubic from `cubic_coeff_a`.
    pub fn cubic_shape(node: &LibraryNode) -> Shape {
        Shape::Cubic(node.float("cubic_coeff_a").unwrap_or(-0.75))
    }

    /// The kernel's stretch `s` on `axis` and its taps: the first offset from `base` and the
    /// count.
    fn extent(&self, axis: &Axis) -> (f64, i64, usize) {
        let s = match self.antialias {
            true => axis.scale.value.min(1.0),
            false => 1.0,
        };
        let (start, count) = self.shape.window(s);
        (s, start, count)
    }

    /// Whether the weights are divided by their sum.
    fn normalised(&self) -> bool {
        self.antialias || self.exclude_outside
    }

    /// The (edge-clamped) input positions and weights blended for output `o` of `axis`,
    /// straight from the `f64` coordinate (the reference implementation).
    pub fn taps(&self, axis: &Axis, o: i64) -> Vec<(i64, f64)> {
        let (s, start, count) = self.extent(axis);
        let x = axis.coordinate(o);
        let base = x.ceil() - 1.0;
        let r = x - base;
        let mut taps: Vec<(i64, f64)> = (0..count as i64)
            .map(|j| {
                let at = base as i64 + start + j;
                let outside = at < 0 || at >= axis.input;
                let w = self.shape.at(s * ((start + j) as f64 - r));
                (
                    at,
                    if self.exclude_outside && outside {
                        0.0
                    } else {
                        w
                    },
                )
            })
            .collect();
        if self.normalised() {
            let sum: f64 = taps.iter().map(|t| t.1).sum();
            taps.iter_mut().for_each(|t| t.1 /= sum);
        }
        taps.into_iter()
            .map(|(at, w)| (axis.clamp(at), w))
            .collect()
    }

    /// Appends the weight table `[output, taps]` of `axis` (dimension `d`) and returns its name,
    /// the coordinate fraction and the first offset and count of the taps.
    fn table(
        &self,
        b: &mut ScopeBuilder,
        label: &str,
        dtype: DType,
        d: usize,
        axis: &Axis,
    ) -> Result<(String, Affine, i64, usize), OpError> {
        let affine = axis.exact().ok_or_else(|| {
            unsupported(&format!(
                "the scale {} of dimension {d} (too fine a fraction)",
                axis.scale.value
            ))
        })?;
        let (s, start, count) = self.extent(axis);
        let table = b.transient(
            &format!("{label}_w{d}"),
            dtype,
            vec![SymExpr::Int(axis.output), SymExpr::from(count)],
        );
        let o = SymExpr::sym("o");
        let (base, num) = affine.split_above(&o);
        let r = TExpr::binary(BinOp::Div, TExpr::Index(num), TExpr::Const(affine.d as f64));
        let weights: Vec<TExpr> = (0..count as i64)
            .map(|j| {
                let t = TExpr::binary(BinOp::Sub, TExpr::Const((start + j) as f64), r.clone());
                let w = self
                    .shape
                    .at_expr(TExpr::binary(BinOp::Mul, TExpr::Const(s), t));
                if !self.exclude_outside {
                    return w;
                }
                let at = TExpr::Index(&base + (start + j));
                let inside = TExpr::binary(
                    BinOp::And,
                    TExpr::binary(BinOp::Ge, at.clone(), TExpr::Const(0.0)),
                    TExpr::binary(BinOp::Lt, at, TExpr::Const(axis.input as f64)),
                );
                TExpr::select(inside, w, TExpr::Const(0.0))
            })
            .collect();
        let total = weights
            .iter()
            .cloned()
            .reduce(|x, y| TExpr::binary(BinOp::Add, x, y))
            .unwrap_or(TExpr::Const(1.0));
        let conns: Vec<String> = (0..count).map(|j| format!("w{j}")).collect();
        let outs: Vec<Out> = weights
            .into_iter()
            .zip(&conns)
            .enumerate()
            .map(|(j, (w, conn))| {
                let w = match self.normalised() {
                    true => TExpr::binary(BinOp::Div, w, total.clone()),
                    false => w,
                };
                let at = Subset::element([o.clone(), SymExpr::from(j)]);
                Out(conn, &table, at, None, w)
            })
            .collect();
        let params = vec![("o", Range::upto(axis.output))];
        let name = format!("{label}_w{d}");
        b.map(&name, params, Schedule::Sequential, |b| {
            b.tasklet(&name, vec![], outs);
        });
        Ok((table, affine, start, count))
    }

    /// Appends the weight tables and the output map writing `y` from `x`.
    pub fn append(
        &self,
        b: &mut ScopeBuilder,
        label: &str,
        (x, y): (&str, &str),
        dtype: DType,
        axes: &[Option<Axis>],
        shape: &[SymExpr],
    ) -> Result<(), OpError> {
        let (params, idx) = params_over("i", shape);
        // Per blended axis: its dimension, table, first tap position, tap count and extent.
        let mut blended = Vec::new();
        for (d, a) in axes.iter().enumerate() {
            if let Some(a) = a {
                let (table, affine, start, count) = self.table(b, label, dtype, d, a)?;
                let (base, _) = affine.split_above(&idx[d]);
                blended.push((d, table, base + start, count, a.input));
            }
        }
        // (connector, container, element)
        let mut reads: Vec<(String, String, Vec<SymExpr>)> = Vec::new();
        let mut value: Option<TExpr> = None;
        let corners: usize = blended.iter().map(|b| b.3).product();
        for corner in 0..corners {
            let conn = format!("x{corner}");
            let mut src = idx.clone();
            let mut term = TExpr::input(&conn);
            let mut rest = corner;
            for (k, (d, table, first, count, n)) in blended.iter().enumerate() {
                let j = rest % count;
                rest /= count;
                src[*d] = clamped(first + j as i64, *n);
                let w = format!("w{k}_{j}");
                if !reads.iter().any(|r| r.0 == w) {
                    let at = vec![idx[*d].clone(), SymExpr::from(j)];
                    reads.push((w.clone(), table.clone(), at));
                }
                term = TExpr::binary(BinOp::Mul, TExpr::input(&w), term);
            }
            value = Some(match value {
                None => term,
                Some(acc) => TExpr::binary(BinOp::Add, acc, term),
            });
            reads.push((conn, x.to_string(), src));
        }
        let reads = reads
            .iter()
            .map(|(conn, data, at)| Read::new(conn, data, at.clone()))
            .collect();
        let value = value.unwrap_or_else(|| TExpr::input("x0"));
        element_map(b, label, &params, reads, (y, idx), None, value);
        Ok(())
    }
}
