//! Execution of map scopes and tasklets through compiled plans (see [`super::plan`]), each
//! tasklet in its compute type (see [`super::texec`]).

use super::plan::{flat_offset, walk, CAccess, Compiler, Step, TaskletStep, MAX_SLOTS};
use super::texec::{store, Eval};
use super::{run_library, InterpError};
use crate::ir::{Graph, NodeId, NodeKind, Program, SymEnv, Tensor};
use std::collections::BTreeMap;

/// The interpreter state: every container's current value.
pub(super) struct Frame<'p> {
    p: &'p Program,
    env: &'p SymEnv,
    store: BTreeMap<String, Tensor>,
}

impl<'p> Frame<'p> {
    pub(super) fn new(p: &'p Program, env: &'p SymEnv, store: BTreeMap<String, Tensor>) -> Self {
        Frame { p, env, store }
    }

    pub(super) fn into_store(self) -> BTreeMap<String, Tensor> {
        self.store
    }

    /// Runs a top-level graph: library nodes directly, maps and tasklets through compiled plans.
    pub(super) fn run_graph(&mut self, g: &Graph) -> Result<(), InterpError> {
        for idx in g.ordered() {
            let node = g.node(idx);
            match &node.kind {
                NodeKind::Access(_) => {}
                NodeKind::Library(_) => run_library(g, idx, &mut self.store)?,
                NodeKind::Map(_) | NodeKind::Tasklet(_) => {
                    let mut c = Compiler::new(self.env, &self.p.data);
                    let step = c.node(g, idx)?;
                    self.execute(c.data(), &step)?;
                }
            }
        }
        Ok(())
    }

    fn execute(&mut self, names: &[String], step: &Step) -> Result<(), InterpError> {
        let mut bufs: Vec<Tensor> = names
            .iter()
            .map(|n| {
                self.store
                    .remove(n)
                    .unwrap_or_else(|| Tensor::f32(vec![0], vec![]))
            })
            .collect();
        let mut slots = vec![0i64; MAX_SLOTS];
        let result = walk(step, &mut slots, &mut |t, s| {
            run_tasklet(t, s, &mut bufs, names)
        });
        for (n, t) in names.iter().zip(bufs) {
            self.store.insert(n.clone(), t);
        }
        result
    }
}

/// Runs one tasklet execution: loads every plain input (rounded to the compute type), evaluates
/// (element reads happen here), then writes, converting like a C assignment and combining on wcr.
fn run_tasklet(
    t: &TaskletStep,
    s: &[i64],
    bufs: &mut [Tensor],
    names: &[String],
) -> Result<(), InterpError> {
    let TaskletStep {
        node,
        precision,
        inputs,
        windows,
        outputs,
    } = t;
    let mut vals = [0f64; 16];
    let mut heap;
    let vals: &mut [f64] = if inputs.len() <= 16 {
        &mut vals[..inputs.len()]
    } else {
        heap = vec![0f64; inputs.len()];
        &mut heap
    };
    for (v, a) in vals.iter_mut().zip(inputs) {
        let off = offset(*node, a, s, bufs, names)?;
        *v = precision.round(bufs[a.data].get_f64(off));
    }
    let cx = Eval {
        node: *node,
        precision: *precision,
        inputs: vals,
        windows,
        slots: s,
        bufs,
    };
    let results = outputs
        .iter()
        .map(|(_, _, e)| e.eval(&cx))
        .collect::<Result<Vec<f64>, _>>()?;
    for ((a, wcr, _), x) in outputs.iter().zip(results) {
        let off = offset(*node, a, s, bufs, names)?;
        store(&mut bufs[a.data], off, *wcr, x);
    }
    Ok(())
}

/// Row-major flat offset of an access, bounds-checked per dimension.
fn offset(
    node: NodeId,
    a: &CAccess,
    s: &[i64],
    bufs: &[Tensor],
    names: &[String],
) -> Result<usize, InterpError> {
    let shape = &bufs[a.data].shape;
    flat_offset(a.dims.iter(), s, shape).map_err(|index| InterpError::OutOfBounds {
        node,
        data: names[a.data].clone(),
        index,
        shape: shape.clone(),
    })
}
