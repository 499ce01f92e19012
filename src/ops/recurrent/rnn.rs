//! RNN: one gate, `Ht = f(Xt·Wᵀ + Ht₋₁·Rᵀ + Wb + Rb)` with `f` defaulting to Tanh.

use super::super::OpError;
use super::step::{Step, Update};
use super::{Cell, Recurrent, State, Weights};
use crate::ir::LibraryNode;

pub static RNN: Recurrent<Rnn> = Recurrent(Rnn);

pub struct Rnn;

impl Cell for Rnn {
    fn name(&self) -> &'static str {
        "RNN"
    }

    fn gates(&self) -> usize {
        1
    }

    fn default_activations(&self) -> &'static [&'static str] {
        &["Tanh"]
    }

    fn step(&self, _node: &LibraryNode, w: &Weights, x: &[f64], s: &mut State) {
        s.h = (0..w.hidden)
            .map(|j| w.gate(0, w.input_gate(0, j, x) + w.hidden_gate(0, j, &s.h)))
            .collect();
    }

    fn expand_step(&self, _node: &LibraryNode, s: &mut Step) -> Result<(), OpError> {
        let h = s.h.clone();
        s.project_input(0..1);
        s.project_hidden(0..1, &h);
        let value = s.gate(0, s.pre_activation(0));
        let reads = s.projections(0).into_iter().collect();
        s.update(
            "hidden",
            Update {
                target: h,
                reads,
                value,
                to_y: true,
            },
        );
        Ok(())
    }
}
