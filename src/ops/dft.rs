//! DFT: the discrete Fourier transform along one axis of a real (last dimension 1) or complex
//! (last dimension 2: real, imaginary) signal, forward or inverse, with `onesided` and
//! `dft_length`; and the line-transform machinery STFT (`stft.rs`) shares.
//!
//! `Y[k] = Σ_t X[t]·e^{∓2πi·k·t/L}` over the first `min(n, L)` inputs (`L = dft_length`: shorter
//! signals are zero-padded, longer ones truncated, as numpy's `fft(x, n=L)` does), scaled by
//! `1/L` when inverse. `onesided` keeps the `L/2 + 1` non-redundant frequencies of a forward
//! transform; with `inverse` it is the real inverse of such a half spectrum (numpy's `irfft`,
//! ONNX's reference since 1.18): `y[k] = (1/L)·Σ_t w_t·Re(X[t]·e^{2πi·k·t/L})` over the first
//! `L/2 + 1` inputs, `w_t = 1` for `t = 0` and `t = L/2`, else 2, with a real output.
//!
//! The expansion is the direct `O(n²)` sum: one wcr-sum map over every output element and
//! summation index whose tasklet computes the twiddle factor with `cos`/`sin` of an angle reduced
//! to one period first (`fmod(k·t, L)`), so the compute type's precision holds for long lines.

use super::movement::Param;
use super::support::{element_map, fill_map, flag, input_type, require_float, resolve_axis, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, Range, SymExpr, TExpr, Tensor, UnOp, Wcr};
use std::f64::consts::PI;

pub static OPS: &[&dyn Operator] = &[&Dft];

/// What one line transform computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Transform {
    /// The transform length `L`.
    pub length: usize,
    pub inverse: bool,
    pub onesided: bool,
}

impl Transform {
    /// The real inverse of a half spectrum (`inverse` and `onesided`).
    fn half_inverse(&self) -> bool {
        self.inverse && self.onesided
    }

    /// Output elements along the transformed axis.
    pub(super) fn out_len(&self) -> usize {
        if self.onesided && !self.inverse {
            self.length / 2 + 1
        } else {
            self.length
        }
    }

    /// Components of each output element: 1 (real) for the real inverse, else 2.
    pub(super) fn out_components(&self) -> usize {
        if self.half_inverse() {
            1
        } else {
            2
        }
    }

    /// How many of `n` input elements take part in the sum.
    pub(super) fn terms(&self, n: usize) -> usize {
        let used = if self.half_inverse() {
            self.length / 2 + 1
        } else {
            self.length
        };
        n.min(used)
    }

    /// The reference transform of one line of complex values, in f64 directly from the
    /// definition; each output as `(re, im)` (`im` is 0 for the real inverse).
    pub(super) fn line(&self, x: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let l = self.length as f64;
        let sign = if self.inverse { 1.0 } else { -1.0 };
        let scale = if self.inverse { 1.0 / l } else { 1.0 };
        let terms = self.terms(x.len());
        (0..self.out_len())
            .map(|k| {
                let (mut re, mut im) = (0.0, 0.0);
                for (t, &(xr, xi)) in x[..terms].iter().enumerate() {
                    let angle = sign * 2.0 * PI * ((k * t) % self.length) as f64 / l;
                    let (s, c) = angle.sin_cos();
                    if self.half_inverse() {
                        let w = if t == 0 || 2 * t == self.length {
                            1.0
                        } else {
                            2.0
                        };
                        re += w * (xr * c - xi * s);
                    } else {
                        re += xr * c - xi * s;
                        im += xr * s + xi * c;
                    }
                }
                (re * scale, im * scale)
            })
            .collect()
    }

    /// Reads a transform length given as a constant input (`what` names it in errors).
    pub(super) fn length_input(op: &str, what: &str, p: Param) -> Result<Option<usize>, OpError> {
        let Some(v) = p.ints(op, what)? else {
            return Ok(None);
        };
        match v.as_slice() {
            [l] if *l >= 1 => Ok(Some(*l as usize)),
            _ => Err(OpError::shape(
                op,
                format!("`{what}` must be one positive integer, got {v:?}"),
            )),
        }
    }
}

/// The map parameter of output dimension `d` in [`Lines`] (`i{d}`).
pub(super) fn out_param(d: usize) -> SymExpr {
    SymExpr::sym(format!("i{d}"))
}

/// The summation index of [`Lines`].
pub(super) fn term_param() -> SymExpr {
    SymExpr::sym("t")
}

/// One transform expansion: `y` (of `y_shape`, last dimension the components) gets, along axis
/// `k_axis`, the transform of the lines of `x`. `x_index` addresses x (without its component)
/// in terms of [`out_param`]s and [`term_param`]; a window, if any, multiplies x at `[t]`.
pub(super) struct Lines<'a> {
    pub x: &'a str,
    pub x_index: Vec<SymExpr>,
    pub x_complex: bool,
    pub window: Option<&'a str>,
    pub y: &'a str,
    pub y_shape: &'a [SymExpr],
    pub k_axis: usize,
    pub transform: Transform,
    /// Summation length ([`Transform::terms`] of the line length).
    pub terms: usize,
}

impl Lines<'_> {
    /// A zero fill of Y, then one wcr-sum map over `(i…, c, t)`.
    pub(super) fn append(&self, b: &mut crate::ir::build::ScopeBuilder, label: &str) {
        fill_map(b, &format!("{label}_init"), self.y, self.y_shape, 0.0);
        let rank = self.y_shape.len();
        let mut params: Vec<(String, Range)> = (0..rank - 1)
            .map(|d| (format!("i{d}"), Range::upto(self.y_shape[d].clone())))
            .collect();
        let two = self.transform.out_components() == 2;
        let c = if two {
            params.push(("c".into(), Range::upto(2)));
            SymExpr::sym("c")
        } else {
            SymExpr::Int(0)
        };
        params.push(("t".into(), Range::upto(self.terms as i64)));
        let component = |c: i64| {
            let mut idx = self.x_index.clone();
            idx.push(SymExpr::Int(c));
            idx
        };
        let mut reads = vec![Read::new("xr", self.x, component(0))];
        if self.x_complex {
            reads.push(Read::new("xi", self.x, component(1)));
        }
        let windowed = |v: TExpr| match self.window {
            Some(_) => TExpr::binary(BinOp::Mul, v, TExpr::input("w")),
            None => v,
        };
        if let Some(w) = self.window {
            reads.push(Read::new("w", w, vec![term_param()]));
        }
        let xr = windowed(TExpr::input("xr"));
        let xi = self.x_complex.then(|| windowed(TExpr::input("xi")));
        let value = self.term(xr, xi, c);
        let mut y_idx: Vec<SymExpr> = (0..rank - 1).map(out_param).collect();
        y_idx.push(if two {
            SymExpr::sym("c")
        } else {
            SymExpr::Int(0)
        });
        let acc = format!("{label}_sum");
        element_map(
            b,
            &acc,
            &params,
            reads,
            (self.y, y_idx),
            Some(Wcr::Sum),
            value,
        );
    }

    /// The contribution of input `t` to output component `c`.
    fn term(&self, xr: TExpr, xi: Option<TExpr>, c: SymExpr) -> TExpr {
        let tr = &self.transform;
        let l = tr.length as f64;
        let (k, t) = (
            TExpr::Index(out_param(self.k_axis)),
            TExpr::Index(term_param()),
        );
        let kt = TExpr::binary(BinOp::Mul, k, t.clone());
        let turns = TExpr::binary(BinOp::Fmod, kt, TExpr::Const(l));
        let sign = if tr.inverse { 1.0 } else { -1.0 };
        let angle = TExpr::binary(BinOp::Mul, turns, TExpr::Const(sign * 2.0 * PI / l));
        let (cos, sin) = (
            TExpr::unary(UnOp::Cos, angle.clone()),
            TExpr::unary(UnOp::Sin, angle),
        );
        let mul = |a: TExpr, b: TExpr| TExpr::binary(BinOp::Mul, a, b);
        let (mut re, mut im) = (mul(xr.clone(), cos.clone()), mul(xr, sin.clone()));
        if let Some(xi) = xi {
            re = TExpr::binary(BinOp::Sub, re, mul(xi.clone(), sin));
            im = TExpr::binary(BinOp::Add, im, mul(xi, cos));
        }
        let value = if tr.half_inverse() {
            // w_t = 2 − [t = 0] − [2t = L].
            let is = |e: TExpr, v: f64| TExpr::binary(BinOp::Eq, e, TExpr::Const(v));
            let twice = mul(t.clone(), TExpr::Const(2.0));
            let w = TExpr::binary(
                BinOp::Sub,
                TExpr::binary(BinOp::Sub, TExpr::Const(2.0), is(t, 0.0)),
                is(twice, l),
            );
            mul(w, re)
        } else {
            let first = TExpr::binary(BinOp::Eq, TExpr::Index(c), TExpr::Const(0.0));
            TExpr::select(first, re, im)
        };
        if tr.inverse {
            mul(value, TExpr::Const(1.0 / l))
        } else {
            value
        }
    }
}

/// The complex values of `x` (last dimension 1 or 2) at element offsets `at` (of component 0).
pub(super) fn complex_at(x: &Tensor, at: impl Iterator<Item = usize>) -> Vec<(f64, f64)> {
    let complex = x.shape.last() == Some(&2);
    at.map(|o| {
        let im = if complex { x.get_f64(o + 1) } else { 0.0 };
        (x.get_f64(o), im)
    })
    .collect()
}

/// Checks a signal's last dimension (1: real, 2: complex); true when complex.
pub(super) fn signal_components(op: &str, x: &TensorType) -> Result<bool, OpError> {
    require_float(op, x)?;
    match x.shape.last().and_then(SymExpr::as_int) {
        Some(1) => Ok(false),
        Some(2) => Ok(true),
        _ => Err(OpError::shape(
            op,
            format!(
                "the last dimension of the signal must be 1 (real) or 2 (complex), got shape {:?}",
                x.shape
            ),
        )),
    }
}

/// `DFT(input, dft_length?, axis?)`.
pub struct Dft;

const NAME: &str = "DFT";

/// DFT's geometry: the transformed axis, the transform, the line length, Y's shape.
struct Plan {
    axis: usize,
    transform: Transform,
    n: usize,
    complex: bool,
    y_shape: Vec<SymExpr>,
}

impl Dft {
    fn plan(
        node: &LibraryNode,
        x: &TensorType,
        [length, axis]: [Param; 2],
    ) -> Result<Plan, OpError> {
        let complex = signal_components(NAME, x)?;
        let rank = x.shape.len();
        if rank < 2 {
            return Err(OpError::shape(NAME, "the signal must have rank at least 2"));
        }
        // Opset 17 has the attribute (the importer writes its default, 1); opset 20 the input.
        let axis = match (node.int("axis"), axis.ints(NAME, "axis")?) {
            (Some(_), Some(_)) => {
                return Err(OpError::attr(
                    NAME,
                    "axis",
                    "given both as attribute and input",
                ))
            }
            (Some(a), None) => a,
            (None, Some(v)) if v.len() == 1 => v[0],
            (None, Some(v)) => {
                return Err(OpError::shape(
                    NAME,
                    format!("`axis` must be one integer, got {v:?}"),
                ))
            }
            (None, None) => -2,
        };
        let axis = resolve_axis(NAME, "axis", axis, rank, false)?;
        if axis == rank - 1 {
            return Err(OpError::attr(
                NAME,
                "axis",
                "the last dimension holds the components and cannot be transformed",
            ));
        }
        let inverse = flag(NAME, node, "inverse", false)?;
        let onesided = flag(NAME, node, "onesided", false)?;
        let n = x.shape[axis]
            .as_int()
            .ok_or_else(|| OpError::symbolic(NAME, "the transformed axis", &x.shape[axis]))?
            as usize;
        let length = match Transform::length_input(NAME, "dft_length", length)? {
            Some(l) => l,
            None if inverse && onesided => 2 * n.saturating_sub(1),
            None => n,
        };
        if length == 0 {
            return Err(OpError::shape(NAME, "the transform length is 0"));
        }
        let transform = Transform {
            length,
            inverse,
            onesided,
        };
        let mut y_shape = x.shape.clone();
        y_shape[axis] = SymExpr::from(transform.out_len());
        y_shape[rank - 1] = SymExpr::from(transform.out_components());
        Ok(Plan {
            axis,
            transform,
            n,
            complex,
            y_shape,
        })
    }
}

impl Operator for Dft {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(NAME, inputs, 0)?;
        let params = [1, 2].map(|i| Param::of_infer(inputs, consts, i));
        let plan = Self::plan(node, x, params)?;
        Ok(vec![TensorType::new(x.dtype, plan.y_shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = super::support::arg(NAME, inputs, 0)?;
        let x_type = super::movement::type_of(x);
        let params = [1, 2].map(|i| Param::of_eval(inputs, i));
        let plan = Self::plan(node, &x_type, params)?;
        let y_shape: Vec<usize> = plan
            .y_shape
            .iter()
            .map(|d| d.as_int().unwrap_or(0) as usize)
            .collect();
        let xs = x.strides();
        let ys = crate::ir::tensor::row_major_strides(&y_shape);
        let (outer, inner) = (
            y_shape[..plan.axis].iter().product::<usize>(),
            y_shape[plan.axis + 1..y_shape.len() - 1]
                .iter()
                .product::<usize>(),
        );
        let comps = plan.transform.out_components();
        let mut y = vec![0.0; y_shape.iter().product()];
        for o in 0..outer {
            for i in 0..inner {
                // The element offsets of this line's start in x and y (of component 0).
                let x0 = o * xs[plan.axis] * x.shape[plan.axis] + i * xs[x.shape.len() - 2];
                let y0 = o * ys[plan.axis] * y_shape[plan.axis] + i * comps;
                let line = complex_at(x, (0..plan.n).map(|t| x0 + t * xs[plan.axis]));
                for (k, (re, im)) in plan.transform.line(&line).into_iter().enumerate() {
                    let at = y0 + k * ys[plan.axis];
                    y[at] = re;
                    if comps == 2 {
                        y[at + 1] = im;
                    }
                }
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), y_shape, &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let x_type = TensorType::new(xd.dtype, xd.shape.clone());
        let params = [1, 2].map(|i| Param::of_expand(ctx, i));
        let plan = Self::plan(ctx.node, &x_type, params)?;
        let (y, _) = ctx.output(0)?.clone();
        let rank = xd.shape.len();
        let x_index = (0..rank - 1)
            .map(|d| {
                if d == plan.axis {
                    term_param()
                } else {
                    out_param(d)
                }
            })
            .collect();
        let lines = Lines {
            x: &x,
            x_index,
            x_complex: plan.complex,
            window: None,
            y: &y,
            y_shape: &plan.y_shape,
            k_axis: plan.axis,
            transform: plan.transform,
            terms: plan.transform.terms(plan.n),
        };
        let label = ctx.label.clone();
        lines.append(ctx.b, &label);
        Ok(())
    }

    /// About eight operations (a complex multiply-add and the twiddle) per output component per
    /// summed input.
    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let Some(Some(x)) = inputs.first() else {
            return 0;
        };
        let params = [Param::Absent, Param::Absent];
        let terms = Self::plan(node, x, params).map_or(0, |p| p.transform.terms(p.n));
        super::support::per_output_element(outputs, 8 * terms as u64)
    }
}
