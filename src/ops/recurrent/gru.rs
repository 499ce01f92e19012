//! GRU: gates `z, r, h` (in that order in W, R and B), activations `f, g` (default Sigmoid,
//! Tanh):
//!
//! ```text
//! z = f(Xt·Wzᵀ + Ht₋₁·Rzᵀ + Wbz + Rbz)      r = f(Xt·Wrᵀ + Ht₋₁·Rrᵀ + Wbr + Rbr)
//! h̃ = g(Xt·Whᵀ + (r ⊙ Ht₋₁)·Rhᵀ + Rbh + Wbh)          (linear_before_reset = 0)
//! h̃ = g(Xt·Whᵀ + r ⊙ (Ht₋₁·Rhᵀ + Rbh) + Wbh)          (linear_before_reset ≠ 0)
//! Ht = (1 − z) ⊙ h̃ + z ⊙ Ht₋₁
//! ```
//!
//! Without `linear_before_reset` the candidate's hidden projection reads `r ⊙ Ht₋₁`, so the
//! expansion computes `r` into a `[batch, hidden]` transient first and projects it with Rh.

use super::super::OpError;
use super::step::{add, mul, one_minus, Load, Step, Update};
use super::{Cell, Recurrent, State, Weights};
use crate::ir::{LibraryNode, TExpr};

pub static GRU: Recurrent<Gru> = Recurrent(Gru);

const UPDATE: usize = 0;
const RESET: usize = 1;
const CANDIDATE: usize = 2;

pub struct Gru;

fn linear_before_reset(node: &LibraryNode) -> bool {
    node.int("linear_before_reset").unwrap_or(0) != 0
}

impl Cell for Gru {
    fn name(&self) -> &'static str {
        "GRU"
    }

    fn gates(&self) -> usize {
        3
    }

    fn default_activations(&self) -> &'static [&'static str] {
        &["Sigmoid", "Tanh"]
    }

    fn step(&self, node: &LibraryNode, w: &Weights, x: &[f64], s: &mut State) {
        let pre = |g: usize, j: usize| w.input_gate(g, j, x) + w.hidden_gate(g, j, &s.h);
        let r: Vec<f64> = (0..w.hidden).map(|j| w.gate(0, pre(RESET, j))).collect();
        let reset_h: Vec<f64> = r.iter().zip(&s.h).map(|(r, h)| r * h).collect();
        let h = (0..w.hidden)
            .map(|j| {
                let z = w.gate(0, pre(UPDATE, j));
                let recurrent = if linear_before_reset(node) {
                    r[j] * w.hidden_gate(CANDIDATE, j, &s.h)
                } else {
                    w.hidden_gate(CANDIDATE, j, &reset_h)
                };
                let candidate = w.gate(1, w.input_gate(CANDIDATE, j, x) + recurrent);
                (1.0 - z) * candidate + z * s.h[j]
            })
            .collect();
        s.h = h;
    }

    fn expand_step(&self, node: &LibraryNode, s: &mut Step) -> Result<(), OpError> {
        let h = s.h.clone();
        s.project_input(0..3);
        let mut loads: Vec<Load> = [UPDATE, CANDIDATE]
            .into_iter()
            .flat_map(|g| s.projections(g))
            .collect();
        loads.push(s.at_unit("hp", &h));
        let z = s.gate(0, s.pre_activation(UPDATE));
        let candidate_in = TExpr::input("x2");
        let recurrent = if linear_before_reset(node) {
            s.project_hidden(0..3, &h);
            let (reads, r) = reset(s);
            loads.extend(reads);
            mul(r, TExpr::input("h2"))
        } else {
            s.project_hidden(0..2, &h);
            let (mut reads, r) = reset(s);
            reads.push(s.at_unit("hp", &h));
            let unit = vec![s.batch.clone(), s.hidden.clone()];
            let reset_h =
                s.b.transient(&format!("{}_reset_h", s.label), s.dtype, unit);
            s.pointwise("reset", reads, &reset_h, mul(r, TExpr::input("hp")));
            s.project_hidden(2..3, &reset_h);
            TExpr::input("h2")
        };
        let candidate = s.gate(1, add(candidate_in, recurrent));
        let value = add(
            mul(one_minus(z.clone()), candidate),
            mul(z, TExpr::input("hp")),
        );
        s.update(
            "hidden",
            Update {
                target: h,
                reads: loads,
                value,
                to_y: true,
            },
        );
        Ok(())
    }
}

/// The loads and value of the reset gate `r`.
fn reset(s: &Step) -> (Vec<Load>, TExpr) {
    (
        s.projections(RESET).into(),
        s.gate(0, s.pre_activation(RESET)),
    )
}
