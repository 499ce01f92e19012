//! STFT: the short-time Fourier transform, frames of a signal each multiplied by a window and
//! transformed by DFT's line transform (`dft::Transform`, `dft::Lines`).
//!
//! `STFT(signal [B, S, 1|2], frame_step, window? [L], frame_length?)` gives
//! `Y[b, f, k] = Σ_{t<L} window[t]·signal[b, f·frame_step + t]·e^{−2πi·k·t/L}` for the
//! `1 + (S − L) / frame_step` frames that fit, `k` over `L` frequencies or, with `onesided`, the
//! `L/2 + 1` non-redundant ones; `Y` is `[B, frames, k, 2]`. `L` is `frame_length`, else the
//! window's length, else `S`; no window means ones. `frame_step` and `frame_length` decide the
//! output shape, so they must be constants.

use super::dft::{complex_at, out_param, signal_components, term_param, Lines, Transform};
use super::movement::{type_of, Param};
use super::support::{arg, input_type, opt_arg};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Stft];

/// `STFT(signal, frame_step, window?, frame_length?)`.
pub struct Stft;

const NAME: &str = "STFT";

/// STFT's geometry.
struct Plan {
    step: usize,
    frames: usize,
    transform: Transform,
    complex: bool,
    y_shape: Vec<SymExpr>,
}

impl Stft {
    fn plan(
        node: &LibraryNode,
        x: &TensorType,
        window: Option<&TensorType>,
        [step, frame_length]: [Param; 2],
    ) -> Result<Plan, OpError> {
        let complex = signal_components(NAME, x)?;
        if x.shape.len() != 3 {
            return Err(OpError::shape(
                NAME,
                format!(
                    "the signal must be [batch, length, 1 or 2], got shape {:?}",
                    x.shape
                ),
            ));
        }
        let step = Transform::length_input(NAME, "frame_step", step)?
            .ok_or_else(|| OpError::shape(NAME, "missing input 1 (frame_step)"))?;
        let signal = x.shape[1]
            .as_int()
            .ok_or_else(|| OpError::symbolic(NAME, "the signal length", &x.shape[1]))?
            as usize;
        let window_len = match window {
            None => None,
            Some(w) => {
                if w.dtype != x.dtype || w.shape.len() != 1 {
                    return Err(OpError::shape(
                        NAME,
                        format!(
                            "the window must be 1-D of the signal's type {}, got {} {:?}",
                            x.dtype, w.dtype, w.shape
                        ),
                    ));
                }
                let n = w.shape[0]
                    .as_int()
                    .ok_or_else(|| OpError::symbolic(NAME, "the window length", &w.shape[0]))?;
                Some(n as usize)
            }
        };
        let length = match (
            Transform::length_input(NAME, "frame_length", frame_length)?,
            window_len,
        ) {
            (Some(l), Some(w)) if l != w => {
                return Err(OpError::shape(
                    NAME,
                    format!("frame_length {l} differs from the window's length {w}"),
                ))
            }
            (Some(l), _) | (None, Some(l)) => l,
            (None, None) => signal,
        };
        if length == 0 || length > signal {
            return Err(OpError::shape(
                NAME,
                format!("frames of {length} do not fit a signal of {signal}"),
            ));
        }
        let onesided = super::support::flag(NAME, node, "onesided", true)?;
        let transform = Transform {
            length,
            inverse: false,
            onesided,
        };
        let frames = 1 + (signal - length) / step;
        let y_shape = vec![
            x.shape[0].clone(),
            SymExpr::from(frames),
            SymExpr::from(transform.out_len()),
            SymExpr::Int(2),
        ];
        Ok(Plan {
            step,
            frames,
            transform,
            complex,
            y_shape,
        })
    }
}

impl Operator for Stft {
    fn name(&self) -> &'static str {
        NAME
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
        let x = input_type(NAME, inputs, 0)?;
        let window = inputs.get(2).and_then(|w| w.as_ref());
        let params = [1, 3].map(|i| Param::of_infer(inputs, consts, i));
        let plan = Self::plan(node, x, window, params)?;
        Ok(vec![TensorType::new(x.dtype, plan.y_shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(NAME, inputs, 0)?;
        let window = opt_arg(inputs, 2);
        let window_type = window.map(type_of);
        let params = [1, 3].map(|i| Param::of_eval(inputs, i));
        let plan = Self::plan(node, &type_of(x), window_type.as_ref(), params)?;
        let l = plan.transform.length;
        let c = x.shape[2];
        let mut y = Vec::new();
        for b in 0..x.shape[0] {
            for f in 0..plan.frames {
                let start = (b * x.shape[1] + f * plan.step) * c;
                let mut line = complex_at(x, (0..l).map(|t| start + t * c));
                if let Some(w) = window {
                    for (t, v) in line.iter_mut().enumerate() {
                        let wt = w.get_f64(t);
                        *v = (v.0 * wt, v.1 * wt);
                    }
                }
                for (re, im) in plan.transform.line(&line) {
                    y.extend([re, im]);
                }
            }
        }
        let shape = vec![x.shape[0], plan.frames, plan.transform.out_len(), 2];
        Ok(vec![Tensor::from_f64(x.dtype(), shape, &y)])
    }

    /// DFT's line map with x read at `[b, f·step + t]` and the window at `[t]`.
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let window = ctx.inputs.get(2).cloned().flatten();
        let x_type = TensorType::new(xd.dtype, xd.shape.clone());
        let w_type = window
            .as_ref()
            .map(|(_, d)| TensorType::new(d.dtype, d.shape.clone()));
        let params = [1, 3].map(|i| Param::of_expand(ctx, i));
        let plan = Self::plan(ctx.node, &x_type, w_type.as_ref(), params)?;
        let (y, _) = ctx.output(0)?.clone();
        let x_index = vec![out_param(0), out_param(1) * plan.step as i64 + term_param()];
        let lines = Lines {
            x: &x,
            x_index,
            x_complex: plan.complex,
            window: window.as_ref().map(|(w, _)| w.as_str()),
            y: &y,
            y_shape: &plan.y_shape,
            k_axis: 2,
            transform: plan.transform,
            terms: plan.transform.length,
        };
        let label = ctx.label.clone();
        lines.append(ctx.b, &label);
        Ok(())
    }

    /// About eight operations per output component per frame element.
    fn flops(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let frame = inputs
            .get(2)
            .and_then(|w| w.as_ref())
            .and_then(|w| w.shape.first()?.as_int())
            .unwrap_or(1);
        super::support::per_output_element(outputs, 8 * frame as u64)
    }
}
