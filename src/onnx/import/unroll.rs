//! `Loop` and `Scan` unrolled at import: the body is inlined once per iteration (under
//! `<label>/iter<i>`, every name fresh), loop-carried values threaded from each iteration's
//! outputs into the next one's inputs, and the per-iteration scan outputs stacked along a new
//! axis at the end. The iteration count must be known at import: `Loop`'s trip count and
//! condition are constants (or fold to constants, iteration by iteration), `Scan`'s sequence
//! length is a static extent of its scanned inputs.

use super::control::{input_names, ints_or_zeros, refusal, MALFORMED};
use super::subgraph::synthetic;
use super::Importer;
use crate::ir::build::ScopeBuilder;
use crate::ir::{Attr, Buffer, SymExpr, Tensor};
use crate::onnx::error::OnnxError;
use crate::onnx::graphs::read_names;
use crate::onnx::proto::{GraphProto, NodeProto};
use crate::onnx::writer::{attribute, AttrValue};
use std::collections::{BTreeMap, BTreeSet};

/// The results of unrolling: the final loop-carried values and each scan output's value per
/// iteration, in iteration order.
struct Unrolled {
    carried: Vec<String>,
    scanned: Vec<Vec<String>>,
}

impl Importer<'_> {
    /// `Loop(M, cond, v_initial…)` with body `(iteration_num, cond_in, v…) → (cond_out, v…,
    /// scan…)`: runs while `iteration < M` and `cond`, each `cond_out` deciding whether another
    /// iteration follows.
    pub(super) fn loop_node(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        body: &GraphProto,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let op = "Loop";
        let carried_count = node.input.len().saturating_sub(2);
        let body_inputs = input_names(body, label, op)?;
        if node.input.len() < 2
            || body_inputs.len() != carried_count + 2
            || body.output.len() < carried_count + 1
            || node.output.len() > body.output.len() - 1
        {
            let reason = format!(
                "the node has {} input(s) and {} output(s), its body {} input(s) and {} \
                 output(s); Loop takes M, cond and N loop-carried values, its body the \
                 iteration number, the condition and the N values, and returns the condition, \
                 the N values and the scan outputs",
                node.input.len(),
                node.output.len(),
                body_inputs.len(),
                body.output.len()
            );
            return Err(refusal(label, op, reason, MALFORMED));
        }
        let given = |k: usize| Some(&node.input[k]).filter(|t| !t.is_empty());
        let trip = match given(0) {
            Some(m) => Some(
                self.known(index, label, op, "the trip count M", m)?
                    .to_i64_vec()[0],
            ),
            None => None,
        };
        let mut cond = match given(1) {
            Some(c) => self.known(index, label, op, "the condition", c)?.get_f64(0) != 0.0,
            None if trip.is_none() => {
                let reason = "it has neither a trip count nor a condition: it never ends";
                return Err(refusal(label, op, reason, MALFORMED));
            }
            None => true,
        };
        if let Some(m) = trip {
            self.charge_unrolled(label, op, u64::try_from(m).unwrap_or(0), body.node.len())?;
        }
        let read = read_names(body);
        let consts = self.inline_initializers(label, body, b)?;
        let mut state = Unrolled {
            carried: self.containers(index, label, op, &node.input[2..])?,
            scanned: vec![Vec::new(); body.output.len() - 1 - carried_count],
        };
        let mut i: i64 = 0;
        while cond && trip.is_none_or(|m| i < m) {
            if trip.is_none() {
                self.charge_unrolled(label, op, 1, body.node.len())?;
            }
            let scope = format!("{label}/iter{i}");
            let mut bindings = consts.clone();
            let counters = [
                (&body_inputs[0], Tensor::i64(vec![], vec![i])),
                (&body_inputs[1], bool_scalar(cond)),
            ];
            for (name, value) in counters.into_iter().filter(|(n, _)| read.contains(*n)) {
                let container =
                    self.fresh_constant(b, &scope, &format!("{scope}/{name}"), value)?;
                bindings.insert(name.clone(), container);
            }
            bindings.extend(body_inputs[2..].iter().cloned().zip(state.carried.clone()));
            let results = self.inline(index, &scope, body, &bindings, b)?;
            i += 1;
            if trip.is_none_or(|m| i < m) {
                let what = format!("the condition computed by iteration {}", i - 1);
                cond = self.known(index, label, op, &what, &results[0])?.get_f64(0) != 0.0;
            }
            self.advance(&mut state, &results[1..], carried_count);
        }
        let axes = vec![0; state.scanned.len()];
        self.finish(index, node, label, op, state, &axes, b)
    }

    /// `Scan(initial_state…, scan_input…)` (opset 9 semantics): the body maps the state and
    /// one element of each scanned input (sliced along its `scan_input_axes`, forward or
    /// backward by `scan_input_directions`) to the new state and one element of each scan
    /// output (stacked along `scan_output_axes`, in order or reversed).
    pub(super) fn scan_node(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        attrs: &BTreeMap<String, Attr>,
        body: &GraphProto,
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let op = "Scan";
        let scanned_count = match attrs.get("num_scan_inputs") {
            Some(Attr::Int(m)) => usize::try_from(*m).ok(),
            _ => None,
        }
        .filter(|m| (1..=node.input.len()).contains(m))
        .ok_or_else(|| {
            let reason = format!(
                "`num_scan_inputs` must be between 1 and the node's {} input(s)",
                node.input.len()
            );
            refusal(label, op, reason, MALFORMED)
        })?;
        let state_count = node.input.len() - scanned_count;
        let body_inputs = input_names(body, label, op)?;
        if body_inputs.len() != node.input.len()
            || body.output.len() < state_count
            || node.output.len() > body.output.len()
        {
            let reason = format!(
                "the node has {} input(s) and {} output(s), its body {} input(s) and {} output(s); \
                 the body takes the state and one element of each scanned input, and returns \
                 the state and the scan outputs",
                node.input.len(),
                node.output.len(),
                body_inputs.len(),
                body.output.len()
            );
            return Err(refusal(label, op, reason, MALFORMED));
        }
        let output_count = body.output.len() - state_count;
        let in_axes = ints_or_zeros(attrs, "scan_input_axes", scanned_count, label)?;
        let in_dirs = ints_or_zeros(attrs, "scan_input_directions", scanned_count, label)?;
        let out_axes = ints_or_zeros(attrs, "scan_output_axes", output_count, label)?;
        let out_dirs = ints_or_zeros(attrs, "scan_output_directions", output_count, label)?;
        let inputs = self.containers(index, label, op, &node.input)?;
        let (states, sequences) = inputs.split_at(state_count);
        let mut slicing = Vec::with_capacity(scanned_count);
        for ((name, &axis), tensor) in sequences
            .iter()
            .zip(&in_axes)
            .zip(&node.input[state_count..])
        {
            let shape = self.resolve_input(index, label, tensor)?.shape;
            let axis = normalize(axis, shape.len(), label, "scan_input_axes")?;
            slicing.push((
                name.clone(),
                axis,
                sequence_length(&shape[axis], tensor, label)?,
            ));
        }
        let length = slicing[0].2;
        if let Some((_, _, other)) = slicing.iter().find(|s| s.2 != length) {
            let reason =
                format!("its scanned inputs have different lengths ({length} and {other})");
            return Err(refusal(label, op, reason, MALFORMED));
        }
        self.charge_unrolled(
            label,
            op,
            u64::try_from(length).unwrap_or(u64::MAX),
            body.node.len(),
        )?;
        let consts = self.inline_initializers(label, body, b)?;
        let mut state = Unrolled {
            carried: states.to_vec(),
            scanned: vec![Vec::new(); output_count],
        };
        let mut positions: BTreeMap<i64, String> = BTreeMap::new();
        for t in 0..length {
            let scope = format!("{label}/iter{t}");
            let mut bindings = consts.clone();
            bindings.extend(body_inputs.iter().cloned().zip(state.carried.clone()));
            for (k, (sequence, axis, _)) in slicing.iter().enumerate() {
                let at = if in_dirs[k] == 1 { length - 1 - t } else { t };
                let position = match positions.get(&at) {
                    Some(name) => name.clone(),
                    None => {
                        let value = Tensor::i64(vec![], vec![at]);
                        let name =
                            self.fresh_constant(b, label, &format!("{label}/at{at}"), value)?;
                        positions.insert(at, name.clone());
                        name
                    }
                };
                let element_name = &body_inputs[state_count + k];
                let element = self.reserve(b, &format!("{scope}/{element_name}"));
                let gather = format!("{scope}/slice_{element_name}");
                let axis_attr = vec![attribute("axis", AttrValue::Int(*axis as i64))];
                let node = synthetic(
                    &gather,
                    "Gather",
                    &[sequence, &position],
                    &element,
                    axis_attr,
                );
                self.synthesized(index, b, node)?;
                bindings.insert(element_name.clone(), element);
            }
            let results = self.inline(index, &scope, body, &bindings, b)?;
            self.advance(&mut state, &results, state_count);
        }
        for (k, values) in state.scanned.iter_mut().enumerate() {
            if out_dirs[k] == 1 {
                values.reverse();
            }
        }
        self.finish(index, node, label, op, state, &out_axes, b)
    }

    /// Threads one iteration's `results` (the carried values, then the scan outputs) into the
    /// state.
    fn advance(&self, state: &mut Unrolled, results: &[String], carried_count: usize) {
        state.carried = results[..carried_count].to_vec();
        for (values, result) in state.scanned.iter_mut().zip(&results[carried_count..]) {
            values.push(result.clone());
        }
    }

    /// Fills the node's outputs: the final carried values, then each scan output stacked along
    /// `axes[k]` (negative axes count from the stacked rank).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        index: usize,
        node: &NodeProto,
        label: &str,
        op: &str,
        state: Unrolled,
        axes: &[i64],
        b: &mut ScopeBuilder,
    ) -> Result<(), OnnxError> {
        let carried_count = state.carried.len();
        for (k, dst) in node
            .output
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.is_empty())
        {
            if k < carried_count {
                self.copy_into(index, b, label, &state.carried[k], dst)?;
                continue;
            }
            let values = &state.scanned[k - carried_count];
            let Some(first) = values.first() else {
                let reason = format!(
                    "it runs no iteration, so scan output `{dst}` would be empty with a shape \
                     only the body's run could tell"
                );
                return Err(refusal(
                    label,
                    op,
                    reason,
                    "give the loop at least one iteration",
                ));
            };
            let rank = self
                .types
                .get(self.resolve(first))
                .map_or(0, |t| t.shape.len());
            let axis = normalize(axes[k - carried_count], rank + 1, label, "scan_output_axes")?;
            self.stack_into(index, b, label, values, axis as i64, dst)?;
        }
        Ok(())
    }
}

fn bool_scalar(value: bool) -> Tensor {
    Tensor {
        shape: vec![],
        data: Buffer::Bool(vec![value]),
    }
}

/// `axis` (negative counting from the end) as an index into `rank` dimensions.
fn normalize(axis: i64, rank: usize, label: &str, attr: &str) -> Result<usize, OnnxError> {
    let signed_rank = i64::try_from(rank).unwrap_or(i64::MAX);
    let resolved = if axis < 0 { axis + signed_rank } else { axis };
    usize::try_from(resolved)
        .ok()
        .filter(|a| *a < rank)
        .ok_or_else(|| {
            let reason = format!("`{attr}` has axis {axis}, outside rank {rank}");
            refusal(label, "Scan", reason, MALFORMED)
        })
}

/// The static length of the scanned axis `extent` of `tensor`.
fn sequence_length(extent: &SymExpr, tensor: &str, label: &str) -> Result<i64, OnnxError> {
    if let Some(n) = extent.as_int() {
        return Ok(n);
    }
    let symbols: BTreeSet<String> = extent.free_symbols().into_iter().collect();
    let flags: Vec<String> = symbols.iter().map(|s| format!("--dim {s}=VALUE")).collect();
    Err(refusal(
        label,
        "Scan",
        format!("the sequence length of `{tensor}` is the symbolic extent {extent}"),
        format!(
            "bind it with `{}` (or give the input's shape with `--shape`), so the scan unrolls",
            flags.join(" ")
        ),
    ))
}
