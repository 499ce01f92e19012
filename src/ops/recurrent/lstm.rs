//! LSTM: gates `i, o, f, c` (in that order in W, R and B), activations `f, g, h` (default
//! Sigmoid, Tanh, Tanh), optional peepholes `P = [P_i, P_o, P_f]`, and `input_forget`, which
//! couples the forget gate to the input gate (`f = 1 − i`):
//!
//! ```text
//! i = f(Xt·Wiᵀ + Ht₋₁·Riᵀ + Pi ⊙ Ct₋₁ + Wbi + Rbi)     c̃ = g(Xt·Wcᵀ + Ht₋₁·Rcᵀ + Wbc + Rbc)
//! f = f(Xt·Wfᵀ + Ht₋₁·Rfᵀ + Pf ⊙ Ct₋₁ + Wbf + Rbf)     Ct = f ⊙ Ct₋₁ + i ⊙ c̃
//! o = f(Xt·Woᵀ + Ht₋₁·Roᵀ + Po ⊙ Ct + Wbo + Rbo)       Ht = o ⊙ h(Ct)
//! ```
//!
//! `clip` bounds every gate's pre-activation, not `Ct` before `h` (as ONNX Runtime does).

use super::super::support::{input_type, same_dtype};
use super::super::{OpError, TensorType};
use super::step::{add, mul, one_minus, Load, Step, Update};
use super::{expect_shape, Cell, Dims, Recurrent, State, Weights};
use crate::ir::{LibraryNode, SymExpr, TExpr};

pub static LSTM: Recurrent<Lstm> = Recurrent(Lstm);

pub const INITIAL_C: usize = 6;
pub const P: usize = 7;

/// Gate positions in W, R and B.
const IN: usize = 0;
const OUT: usize = 1;
const FORGET: usize = 2;
const CELL: usize = 3;

/// Peephole positions in P.
const P_IN: usize = 0;
const P_OUT: usize = 1;
const P_FORGET: usize = 2;

pub struct Lstm;

fn input_forget(node: &LibraryNode) -> bool {
    node.int("input_forget").unwrap_or(0) != 0
}

impl Cell for Lstm {
    fn name(&self) -> &'static str {
        "LSTM"
    }

    fn gates(&self) -> usize {
        4
    }

    fn default_activations(&self) -> &'static [&'static str] {
        &["Sigmoid", "Tanh", "Tanh"]
    }

    fn max_inputs(&self) -> usize {
        8
    }

    fn cell_state(&self) -> bool {
        true
    }

    fn check(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        dims: &Dims,
    ) -> Result<(), OpError> {
        let op = self.name();
        if !matches!(node.int("input_forget").unwrap_or(0), 0 | 1) {
            return Err(OpError::attr(op, "input_forget", "must be 0 or 1"));
        }
        let x = input_type(op, inputs, 0)?;
        if let Some(Some(c0)) = inputs.get(INITIAL_C) {
            same_dtype(op, x, c0, INITIAL_C)?;
            expect_shape(op, "initial_c", &c0.shape, &dims.state)?;
        }
        if let Some(Some(p)) = inputs.get(P) {
            same_dtype(op, x, p, P)?;
            let rows = dims.hidden.clone() * SymExpr::Int(3);
            expect_shape(op, "P", &p.shape, &[SymExpr::from(dims.directions), rows])?;
        }
        Ok(())
    }

    fn step(&self, node: &LibraryNode, w: &Weights, x: &[f64], s: &mut State) {
        let coupled = input_forget(node);
        let pre = |g: usize, j: usize| w.input_gate(g, j, x) + w.hidden_gate(g, j, &s.h);
        let peep = |p: usize, j: usize| w.peephole[p * w.hidden + j];
        let mut h = vec![0.0; w.hidden];
        let mut c = vec![0.0; w.hidden];
        for j in 0..w.hidden {
            let i = w.gate(0, pre(IN, j) + peep(P_IN, j) * s.c[j]);
            let f = if coupled {
                1.0 - i
            } else {
                w.gate(0, pre(FORGET, j) + peep(P_FORGET, j) * s.c[j])
            };
            let candidate = w.gate(1, pre(CELL, j));
            c[j] = f * s.c[j] + i * candidate;
            let o = w.gate(0, pre(OUT, j) + peep(P_OUT, j) * c[j]);
            h[j] = o * w.acts[2].apply(c[j]);
        }
        s.h = h;
        s.c = c;
    }

    fn expand_step(&self, node: &LibraryNode, s: &mut Step) -> Result<(), OpError> {
        s.project_input(0..4);
        let h = s.h.clone();
        s.project_hidden(0..4, &h);
        let c = (s.c.clone()).ok_or_else(|| OpError::shape(self.name(), "missing cell state"))?;
        let peephole_at = |which: usize| vec![s.d.clone(), s.row(which)];
        // `pre + P ⊙ state` with the peephole loaded through `conn`, when P is given.
        let with_peephole = |loads: &mut Vec<Load>,
                             pre: TExpr,
                             conn: &'static str,
                             which: usize,
                             state: &'static str| match &s.p {
            Some(p) => {
                loads.push(Load::new(conn, p, peephole_at(which)));
                add(pre, mul(TExpr::input(conn), TExpr::input(state)))
            }
            None => pre,
        };

        // Ct = f ⊙ Ct₋₁ + i ⊙ c̃, in place.
        let mut loads: Vec<Load> = [IN, FORGET, CELL]
            .into_iter()
            .flat_map(|g| s.projections(g))
            .collect();
        loads.push(s.at_unit("cp", &c));
        let i_pre = with_peephole(&mut loads, s.pre_activation(IN), "pi", P_IN, "cp");
        let i = s.gate(0, i_pre);
        let f = if input_forget(node) {
            one_minus(i.clone())
        } else {
            let f_pre = with_peephole(&mut loads, s.pre_activation(FORGET), "pf", P_FORGET, "cp");
            s.gate(0, f_pre)
        };
        let candidate = s.gate(1, s.pre_activation(CELL));
        let value = add(mul(f, TExpr::input("cp")), mul(i, candidate));
        let cell = Update {
            target: c.clone(),
            reads: loads,
            value,
            to_y: false,
        };

        // Ht = o ⊙ h(Ct), from the updated cell state.
        let mut loads: Vec<Load> = s.projections(OUT).into_iter().collect();
        loads.push(s.at_unit("c", &c));
        let o_pre = with_peephole(&mut loads, s.pre_activation(OUT), "po", P_OUT, "c");
        let value = mul(s.gate(0, o_pre), s.activate(2, TExpr::input("c")));
        let hidden = Update {
            target: h,
            reads: loads,
            value,
            to_y: true,
        };
        s.update("cell", cell);
        s.update("hidden", hidden);
        Ok(())
    }
}
