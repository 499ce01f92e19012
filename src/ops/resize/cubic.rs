//! Resize mode `cubic`: cubic convolution over the four input positions around the coordinate
//! (Keys' kernel with coefficient `cubic_coeff_a`, edge positions repeated), optionally with the
//! weights of positions outside the input dropped and the rest renormalised
//! (`exclude_outside`).
//!
//! Like ONNX's reference, the neighbourhood of coordinate `x` is `base − 1 … base + 2` with
//! `base = ceil(x) − 1` and ratio `r = x − base` in `(0, 1]`; position `base − 1 + t` lies at
//! distance `r + 1`, `r`, `1 − r`, `2 − r` for `t = 0‥3`, so each tap's kernel piece is known
//! in advance. The expansion writes those four weights per output position of every resized
//! axis into a small table (one map per axis, from the exact coordinate fraction), and the
//! output map blends the `4ᵏ` corners with products of table entries.

use super::super::support::{element_map, params_over, Read};
use super::super::OpError;
use super::axis::Axis;
use super::{clamped, unsupported};
use crate::ir::build::{Out, ScopeBuilder};
use crate::ir::{BinOp, DType, LibraryNode, Schedule, Subset, SymExpr, TExpr};

/// The kernel's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cubic {
    /// `cubic_coeff_a` (−0.75 by default, as in TensorFlow; PyTorch uses −0.5).
    pub a: f64,
    pub exclude_outside: bool,
}

impl Cubic {
    pub fn of(node: &LibraryNode) -> Result<Cubic, OpError> {
        let exclude_outside = match node.int("exclude_outside").unwrap_or(0) {
            0 => false,
            1 => true,
            v => {
                return Err(OpError::attr(
                    super::OP,
                    "exclude_outside",
                    format!("{v} is neither 0 nor 1"),
                ))
            }
        };
        Ok(Cubic {
            a: node.float("cubic_coeff_a").unwrap_or(-0.75),
            exclude_outside,
        })
    }

    /// The kernel at distance `s` (reference side).
    fn kernel(&self, s: f64) -> f64 {
        let (a, s) = (self.a, s.abs());
        if s <= 1.0 {
            ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0
        } else if s < 2.0 {
            ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a
        } else {
            0.0
        }
    }

    /// The kernel at distance `s` for tap `t`, as a tasklet expression: taps 1 and 2 lie within
    /// distance 1, taps 0 and 3 between 1 and 2.
    fn kernel_expr(&self, t: usize, s: TExpr) -> TExpr {
        let a = self.a;
        let (mul, add) = (
            |x: TExpr, y: TExpr| TExpr::binary(BinOp::Mul, x, y),
            |x: TExpr, c: f64| TExpr::binary(BinOp::Add, x, TExpr::Const(c)),
        );
        let k = TExpr::Const;
        if t == 1 || t == 2 {
            let inner = add(mul(k(a + 2.0), s.clone()), -(a + 3.0));
            add(mul(mul(inner, s.clone()), s), 1.0)
        } else {
            let inner = add(mul(k(a), s.clone()), -5.0 * a);
            add(mul(add(mul(inner, s.clone()), 8.0 * a), s), -4.0 * a)
        }
    }

    /// The four (edge-clamped) input positions and weights cubic blends for output `o` of
    /// `axis`, straight from the `f64` coordinate (the reference implementation).
    pub fn taps(&self, axis: &Axis, o: i64) -> Vec<(i64, f64)> {
        let x = axis.coordinate(o);
        let base = x.ceil() - 1.0;
        let r = x - base;
        let mut taps: Vec<(i64, f64)> = (0..4)
            .map(|t| {
                let at = base as i64 - 1 + t;
                let w = self.kernel(t as f64 - 1.0 - r);
                let outside = at < 0 || at >= axis.input;
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
        if self.exclude_outside {
            let sum: f64 = taps.iter().map(|t| t.1).sum();
            taps.iter_mut().for_each(|t| t.1 /= sum);
        }
        taps.into_iter()
            .map(|(at, w)| (axis.clamp(at), w))
            .collect()
    }

    /// Appends the weight table `[output, 4]` of `axis` (dimension `d`) and returns its name
    /// and the axis' base position as a function of the output index `o`.
    fn table(
        &self,
        b: &mut ScopeBuilder,
        label: &str,
        dtype: DType,
        d: usize,
        axis: &Axis,
    ) -> Result<(String, super::axis::Affine), OpError> {
        let affine = axis.exact().ok_or_else(|| {
            unsupported(&format!(
                "the scale {} of dimension {d} (too fine a fraction)",
                axis.scale.value
            ))
        })?;
        let table = b.transient(
            &format!("{label}_w{d}"),
            dtype,
            vec![SymExpr::Int(axis.output), SymExpr::Int(4)],
        );
        let o = SymExpr::sym("o");
        let (base, num) = affine.split_above(&o);
        let r = || {
            TExpr::binary(
                BinOp::Div,
                TExpr::Index(num.clone()),
                TExpr::Const(affine.d as f64),
            )
        };
        let sub = |x: TExpr, y: TExpr| TExpr::binary(BinOp::Sub, x, y);
        let weights: Vec<TExpr> = (0..4)
            .map(|t| {
                // Distance of position base − 1 + t: r + 1, r, 1 − r, 2 − r.
                let s = match t {
                    0 => TExpr::binary(BinOp::Add, r(), TExpr::Const(1.0)),
                    1 => r(),
                    _ => sub(TExpr::Const(t as f64 - 1.0), r()),
                };
                let w = self.kernel_expr(t, s);
                if !self.exclude_outside {
                    return w;
                }
                let at = TExpr::Index(&base - 1 + t as i64);
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
        let outs: Vec<Out> = weights
            .into_iter()
            .enumerate()
            .map(|(t, w)| {
                let w = match self.exclude_outside {
                    true => TExpr::binary(BinOp::Div, w, total.clone()),
                    false => w,
                };
                let at = Subset::element([o.clone(), SymExpr::Int(t as i64)]);
                Out(["w0", "w1", "w2", "w3"][t], &table, at, None, w)
            })
            .collect();
        let params = vec![("o", crate::ir::Range::upto(axis.output))];
        let name = format!("{label}_w{d}");
        b.map(&name, params, Schedule::Sequential, |b| {
            b.tasklet(&name, vec![], outs);
        });
        Ok((table, affine))
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
        // Per blended axis: its dimension, table and base position.
        let mut blended = Vec::new();
        for (d, a) in axes.iter().enumerate() {
            if let Some(a) = a {
                let (table, affine) = self.table(b, label, dtype, d, a)?;
                let (base, _) = affine.split_above(&idx[d]);
                blended.push((d, table, base, a.input));
            }
        }
        // (connector, container, element)
        let mut reads: Vec<(String, String, Vec<SymExpr>)> = Vec::new();
        let mut value: Option<TExpr> = None;
        for corner in 0..1usize << (2 * blended.len()) {
            let conn = format!("x{corner}");
            let mut src = idx.clone();
            let mut term = TExpr::input(&conn);
            for (k, (d, table, base, n)) in blended.iter().enumerate() {
                let t = corner >> (2 * k) & 3;
                src[*d] = clamped(base - 1 + t as i64, *n);
                let w = format!("w{k}_{t}");
                if !reads.iter().any(|r| r.0 == w) {
                    let at = vec![idx[*d].clone(), SymExpr::Int(t as i64)];
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
