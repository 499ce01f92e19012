//! The recurrent operators LSTM, GRU and RNN: one generic [`Recurrent`] operator over a
//! [`Cell`] that states what one time step computes (`lstm.rs`, `gru.rs`, `rnn.rs`).
//!
//! Shared here: the inputs and shapes (`X, W, R, B?, sequence_lens?, initial_h?` and LSTM's
//! `initial_c?, P?`; outputs `Y?, Y_h?` and LSTM's `Y_c?`), the directions, the layouts and the
//! reference's loop over directions, batch entries and time steps (f64 throughout).
//!
//! The expansion walks time with one sequential map per direction over the step counter `t`:
//! the state lives in a `[batch, hidden]` container that each iteration reads (through the gate
//! contractions) and then overwrites, so iteration `t + 1` sees what `t` wrote. A sequential
//! map is what the IR offers for such a carried dependency (its iterations run in order in the
//! interpreter and in C, and the race analysis treats them as ordered); unrolling into one map
//! per step would grow the program with the sequence and need a static length, which symbolic
//! sequence lengths do not have. Inside each iteration, the gates are contractions into
//! `[batch, gates · hidden]` projections (input and hidden side apart, as GRU's
//! `linear_before_reset` needs them apart) followed by element-wise update maps.
//!
//! `sequence_lens` must be a constant in an expansion (it decides which steps run); when every
//! entry is the full length it changes nothing, and shorter entries are masked in the forward
//! direction (the state keeps its value, Y is 0). A reverse walk of a shorter entry starts at
//! its own last step, which needs a time index per batch entry: that is refused with an error.

mod config;
mod gru;
mod lstm;
mod rnn;
mod step;

use super::support::{
    arg, expect_shape, input_type, opt_arg, require_float, require_rank, same_dtype,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, LibraryNode, Range, Schedule, SymExpr, Tensor};
use config::{Activation, Config};
use step::{load_state, store_state, Layout, Step};

pub static OPS: &[&dyn Operator] = &[&lstm::LSTM, &gru::GRU, &rnn::RNN];

/// Input positions shared by the three operators.
const X: usize = 0;
const W: usize = 1;
const R: usize = 2;
const B: usize = 3;
const SEQUENCE_LENS: usize = 4;
const INITIAL_H: usize = 5;

/// What distinguishes LSTM, GRU and RNN: their gates and one time step.
pub trait Cell: Sync {
    fn name(&self) -> &'static str;

    /// Gates stacked in W and R (LSTM 4, GRU 3, RNN 1).
    fn gates(&self) -> usize;

    /// Default activations of one direction (ONNX's `f, g, h`).
    fn default_activations(&self) -> &'static [&'static str];

    /// Inputs accepted, optional ones included.
    fn max_inputs(&self) -> usize {
        6
    }

    /// Whether the cell carries a second state (LSTM's C, output `Y_c`, input `initial_c`).
    fn cell_state(&self) -> bool {
        false
    }

    /// Checks the cell's own inputs (`initial_c`, `P`) and attributes.
    fn check(
        &self,
        _node: &LibraryNode,
        _inputs: &[Option<TensorType>],
        _dims: &Dims,
    ) -> Result<(), OpError> {
        Ok(())
    }

    /// One reference step for one batch entry: updates `s` from the input row `x`.
    fn step(&self, node: &LibraryNode, w: &Weights, x: &[f64], s: &mut State);

    /// Appends one expansion step (the body of the time map).
    fn expand_step(&self, node: &LibraryNode, s: &mut Step) -> Result<(), OpError>;
}

/// The extents of one application: sequence, batch, input features, hidden units, directions.
pub struct Dims {
    pub seq: SymExpr,
    pub batch: SymExpr,
    pub input: SymExpr,
    pub hidden: SymExpr,
    pub directions: usize,
    /// The shape of the initial and final states (by layout).
    pub state: Vec<SymExpr>,
}

/// A batch entry's states in the reference.
pub struct State {
    pub h: Vec<f64>,
    pub c: Vec<f64>,
}

/// One direction's parameters in the reference, with the gate projections.
pub struct Weights<'a> {
    pub hidden: usize,
    input: usize,
    w: &'a [f64],
    r: &'a [f64],
    /// `Wb` then `Rb`, `2 · gates · hidden` values (zeros without B).
    bias: Vec<f64>,
    gates: usize,
    /// LSTM's peepholes `[P_i, P_o, P_f]` (zeros without P).
    pub peephole: Vec<f64>,
    pub cfg: &'a Config,
    pub acts: &'a [Activation],
}

impl Weights<'_> {
    /// `Wb[row] + W[row, :] · x` for unit `j` of gate `g`.
    pub fn input_gate(&self, g: usize, j: usize, x: &[f64]) -> f64 {
        let row = g * self.hidden + j;
        let w = &self.w[row * self.input..(row + 1) * self.input];
        self.bias[row] + w.iter().zip(x).map(|(a, b)| a * b).sum::<f64>()
    }

    /// `Rb[row] + R[row, :] · h` for unit `j` of gate `g`.
    pub fn hidden_gate(&self, g: usize, j: usize, h: &[f64]) -> f64 {
        let row = g * self.hidden + j;
        let r = &self.r[row * self.hidden..(row + 1) * self.hidden];
        self.bias[self.gates * self.hidden + row] + r.iter().zip(h).map(|(a, b)| a * b).sum::<f64>()
    }

    /// Activation `which` of the clipped pre-activation `x`.
    pub fn gate(&self, which: usize, x: f64) -> f64 {
        self.acts[which].apply(self.cfg.clip(x))
    }
}

/// An operator made of a recurrent cell.
pub struct Recurrent<C: Cell>(pub C);

impl<C: Cell> Recurrent<C> {
    fn config(&self, node: &LibraryNode) -> Result<Config, OpError> {
        Config::read(self.0.name(), node, self.0.default_activations())
    }

    /// Checks every input against X, W and R and returns the extents.
    fn dims(&self, cfg: &Config, inputs: &[Option<TensorType>]) -> Result<Dims, OpError> {
        let op = self.0.name();
        let x = input_type(op, inputs, X)?;
        require_float(op, x)?;
        let (w, r) = (input_type(op, inputs, W)?, input_type(op, inputs, R)?);
        for (i, t) in [(W, w), (R, r)] {
            same_dtype(op, x, t, i)?;
        }
        require_rank(op, "X", x, 3)?;
        require_rank(op, "W", w, 3)?;
        require_rank(op, "R", r, 3)?;
        let (seq, batch) = if cfg.batch_major {
            (x.shape[1].clone(), x.shape[0].clone())
        } else {
            (x.shape[0].clone(), x.shape[1].clone())
        };
        let hidden = r.shape[2].clone();
        if let (Some(h), Some(attr)) = (hidden.as_int(), cfg.hidden_size) {
            if h != attr {
                return Err(OpError::attr(
                    op,
                    "hidden_size",
                    format!("is {attr} but R has {h} hidden units"),
                ));
            }
        }
        let dirs = SymExpr::from(cfg.direction.count());
        let rows = hidden.clone() * SymExpr::from(self.0.gates());
        let input = x.shape[2].clone();
        expect_shape(
            op,
            "W",
            &w.shape,
            &[dirs.clone(), rows.clone(), input.clone()],
        )?;
        expect_shape(
            op,
            "R",
            &r.shape,
            &[dirs.clone(), rows.clone(), hidden.clone()],
        )?;
        if let Some(Some(b)) = inputs.get(B) {
            same_dtype(op, x, b, B)?;
            expect_shape(op, "B", &b.shape, &[dirs.clone(), rows * SymExpr::Int(2)])?;
        }
        if let Some(Some(lens)) = inputs.get(SEQUENCE_LENS) {
            if !matches!(lens.dtype, DType::I32 | DType::I64) {
                return Err(OpError::shape(
                    op,
                    format!("sequence_lens must be int32, got {}", lens.dtype),
                ));
            }
            expect_shape(
                op,
                "sequence_lens",
                &lens.shape,
                std::slice::from_ref(&batch),
            )?;
        }
        let layout = Layout {
            batch_major: cfg.batch_major,
        };
        let state = layout.state(dirs, batch.clone(), hidden.clone()).to_vec();
        let dims = Dims {
            seq,
            batch,
            input,
            hidden,
            directions: cfg.direction.count(),
            state,
        };
        if let Some(Some(h0)) = inputs.get(INITIAL_H) {
            same_dtype(op, x, h0, INITIAL_H)?;
            expect_shape(op, "initial_h", &h0.shape, &dims.state)?;
        }
        Ok(dims)
    }
}

/// The sequence length of each batch entry, or `None` when all run the full length.
fn partial_lengths(lens: Option<&Tensor>, seq: &SymExpr) -> Option<Vec<i64>> {
    let lens = lens?.to_i64_vec();
    match seq.as_int() {
        Some(s) if lens.iter().all(|&l| l == s) => None,
        _ => Some(lens),
    }
}

impl<C: Cell> Operator for Recurrent<C> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn input_count(&self) -> (usize, usize) {
        (3, self.0.max_inputs())
    }

    fn output_count(&self) -> usize {
        if self.0.cell_state() {
            3
        } else {
            2
        }
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let cfg = self.config(node)?;
        let dims = self.dims(&cfg, inputs)?;
        self.0.check(node, inputs, &dims)?;
        if let Some(lens) = consts.get(SEQUENCE_LENS).copied().flatten() {
            check_lengths(self.0.name(), &lens.to_i64_vec(), &dims.seq)?;
        }
        let dtype = input_type(self.0.name(), inputs, X)?.dtype;
        let layout = Layout {
            batch_major: cfg.batch_major,
        };
        let y = layout.y(
            dims.seq.clone(),
            SymExpr::from(dims.directions),
            dims.batch.clone(),
            dims.hidden.clone(),
        );
        let state = TensorType::new(dtype, dims.state.clone());
        let mut out = vec![TensorType::new(dtype, y.to_vec()), state.clone()];
        if self.0.cell_state() {
            out.push(state);
        }
        Ok(out)
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.0.name();
        let cfg = self.config(node)?;
        let types = super::support::types_of(inputs);
        let out_types = self.infer(node, &types, &[])?;
        let x = arg(op, inputs, X)?;
        let (w, r) = (
            arg(op, inputs, W)?.to_f64_vec(),
            arg(op, inputs, R)?.to_f64_vec(),
        );
        let layout = Layout {
            batch_major: cfg.batch_major,
        };
        let [seq, batch, input] = layout.x(x.shape[0], x.shape[1], x.shape[2]);
        let (gates, hidden) = (self.0.gates(), arg(op, inputs, R)?.shape[2]);
        let lens = match opt_arg(inputs, SEQUENCE_LENS) {
            Some(l) => {
                let v = l.to_i64_vec();
                check_lengths(op, &v, &SymExpr::from(seq))?;
                v.into_iter().map(|l| l as usize).collect()
            }
            None => vec![seq; batch],
        };
        let shape = |t: &TensorType| t.static_shape().unwrap_or_default();
        let mut outs: Vec<Tensor> = out_types
            .iter()
            .map(|t| Tensor::zeros(x.dtype(), shape(t)))
            .collect();
        let strides: Vec<Vec<usize>> = outs.iter().map(Tensor::strides).collect();
        let at = |s: &[usize], idx: &[usize]| idx.iter().zip(s).map(|(i, s)| i * s).sum::<usize>();
        let x_strides = x.strides();
        let bias = opt_arg(inputs, B).map(Tensor::to_f64_vec);
        let peep = opt_arg(inputs, lstm::P).map(Tensor::to_f64_vec);
        let initial = [INITIAL_H, lstm::INITIAL_C]
            .map(|i| opt_arg(inputs, i).filter(|_| i == INITIAL_H || self.0.cell_state()));
        let (wlen, rlen) = (gates * hidden * input, gates * hidden * hidden);
        for (d, &reversed) in cfg.direction.reversed().iter().enumerate() {
            let weights = Weights {
                hidden,
                input,
                w: &w[d * wlen..(d + 1) * wlen],
                r: &r[d * rlen..(d + 1) * rlen],
                bias: bias.as_ref().map_or(vec![0.0; 2 * gates * hidden], |b| {
                    b[d * 2 * gates * hidden..(d + 1) * 2 * gates * hidden].to_vec()
                }),
                gates,
                peephole: peep.as_ref().map_or(vec![0.0; 3 * hidden], |p| {
                    p[d * 3 * hidden..(d + 1) * 3 * hidden].to_vec()
                }),
                cfg: &cfg,
                acts: &cfg.activations[d],
            };
            for (n, &len) in lens.iter().enumerate() {
                let init = |t: Option<&Tensor>| -> Vec<f64> {
                    (0..hidden)
                        .map(|j| {
                            t.map_or(0.0, |t| t.get_f64(at(&t.strides(), &layout.state(d, n, j))))
                        })
                        .collect()
                };
                let mut s = State {
                    h: init(initial[0]),
                    c: init(initial[1]),
                };
                for step in 0..len {
                    let t = if reversed { len - 1 - step } else { step };
                    let row: Vec<f64> = (0..input)
                        .map(|k| x.get_f64(at(&x_strides, &layout.x(t, n, k))))
                        .collect();
                    self.0.step(node, &weights, &row, &mut s);
                    for j in 0..hidden {
                        outs[0].set_f64(at(&strides[0], &layout.y(t, d, n, j)), s.h[j]);
                    }
                }
                for j in 0..hidden {
                    let i = at(&strides[1], &layout.state(d, n, j));
                    outs[1].set_f64(i, s.h[j]);
                    if let Some(yc) = outs.get_mut(2) {
                        yc.set_f64(i, s.c[j]);
                    }
                }
            }
        }
        Ok(outs)
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let op = self.0.name();
        let cfg = self.config(ctx.node)?;
        let dims = self.dims(&cfg, &ctx.input_types())?;
        let layout = Layout {
            batch_major: cfg.batch_major,
        };
        let name = |i: usize| ctx.inputs.get(i).cloned().flatten().map(|(n, _)| n);
        let out = |i: usize| ctx.outputs.get(i).cloned().flatten().map(|(n, _)| n);
        let lens = match name(SEQUENCE_LENS) {
            None => None,
            Some(lens) => {
                let value = ctx.constant_input(SEQUENCE_LENS).ok_or_else(|| {
                    OpError::unsupported(op, "input 4 (sequence_lens) must be a constant to be expanded: it decides which time steps run for each batch entry")
                })?;
                partial_lengths(Some(value), &dims.seq).map(|_| lens)
            }
        };
        if lens.is_some() && cfg.direction != config::Direction::Forward {
            return Err(OpError::unsupported(op, "input 4 (sequence_lens) with entries shorter than the sequence is expanded only for direction forward (a reverse walk starts at each entry's own last step)"));
        }
        let dtype = ctx.input(X)?.1.dtype;
        let rows = dims.hidden.clone() * SymExpr::from(self.0.gates());
        let state = vec![dims.batch.clone(), dims.hidden.clone()];
        let hd = (&dims.batch, &dims.hidden);
        for (d, &reversed) in cfg.direction.reversed().iter().enumerate() {
            let label = format!("{}_d{d}", ctx.label);
            let h = ctx.b.transient(&format!("{label}_h"), dtype, state.clone());
            load_state(
                ctx.b,
                &format!("{label}_h0"),
                layout,
                d,
                name(INITIAL_H).as_deref(),
                &h,
                hd,
            );
            let c = self.0.cell_state().then(|| {
                let c = ctx.b.transient(&format!("{label}_c"), dtype, state.clone());
                load_state(
                    ctx.b,
                    &format!("{label}_c0"),
                    layout,
                    d,
                    name(lstm::INITIAL_C).as_deref(),
                    &c,
                    hd,
                );
                c
            });
            let proj = vec![dims.batch.clone(), rows.clone()];
            let xg = ctx.b.transient(&format!("{label}_xg"), dtype, proj.clone());
            let hg = ctx.b.transient(&format!("{label}_hg"), dtype, proj);
            let t = SymExpr::sym("t");
            let time = if reversed {
                &dims.seq - 1 - t.clone()
            } else {
                t.clone()
            };
            let mut result = Ok(());
            let steps = vec![("t", Range::upto(dims.seq.clone()))];
            let (xn, wn, rn) = (
                ctx.input(X)?.0.clone(),
                ctx.input(W)?.0.clone(),
                ctx.input(R)?.0.clone(),
            );
            let (bias, peep, y) = (
                name(B),
                name(lstm::P).filter(|_| self.0.cell_state()),
                out(0),
            );
            ctx.b
                .map(&format!("{label}_time"), steps, Schedule::Sequential, |b| {
                    let mut step = Step {
                        b,
                        label: label.clone(),
                        cfg: &cfg,
                        acts: &cfg.activations[d],
                        layout,
                        d: SymExpr::from(d),
                        t,
                        time,
                        batch: dims.batch.clone(),
                        hidden: dims.hidden.clone(),
                        input: dims.input.clone(),
                        gates: self.0.gates(),
                        dtype,
                        x: xn,
                        w: wn,
                        r: rn,
                        bias,
                        lens: lens.clone(),
                        p: peep,
                        h: h.clone(),
                        c: c.clone(),
                        y,
                        xg,
                        hg,
                    };
                    result = self.0.expand_step(ctx.node, &mut step);
                });
            result?;
            if let Some(yh) = out(1) {
                store_state(ctx.b, &format!("{label}_yh"), layout, d, &h, &yh, hd);
            }
            if let (Some(yc), Some(c)) = (out(2), &c) {
                store_state(ctx.b, &format!("{label}_yc"), layout, d, c, &yc, hd);
            }
        }
        Ok(())
    }

    fn flops(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        // Two multiply-adds per weight per step and direction, plus the outputs' updates.
        let weights: u64 = [W, R]
            .iter()
            .filter_map(|&i| inputs.get(i).cloned().flatten()?.static_shape())
            .map(|s| s.iter().product::<usize>() as u64)
            .sum();
        let steps = outputs
            .first()
            .and_then(TensorType::static_shape)
            .map_or(0, |y| y.iter().product::<usize>() as u64);
        let seq_batch = inputs
            .first()
            .cloned()
            .flatten()
            .and_then(|x| x.static_shape())
            .map_or(0, |x| (x[0] * x[1]) as u64);
        2 * weights * seq_batch + steps
    }
}

/// Every sequence length must lie in `0..=seq`.
fn check_lengths(op: &str, lens: &[i64], seq: &SymExpr) -> Result<(), OpError> {
    let max = seq.as_int();
    match lens.iter().find(|&&l| l < 0 || max.is_some_and(|m| l > m)) {
        Some(bad) => Err(OpError::shape(
            op,
            format!("sequence_lens holds {bad}, outside 0..={}", seq),
        )),
        None => Ok(()),
    }
}
