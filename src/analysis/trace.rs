//! Access traces of IR programs, streamed in the reference interpreter's order.
//!
//! The trace is defined by the interpreter so that "what the program touches" has one meaning:
//! top-level nodes in `Graph::ordered()`, map parameters nested in order, and per tasklet
//! execution its plain reads in in-edge order, then its element reads, then its writes in out-edge
//! order; a write with write-conflict resolution is a read and a write of the element. Both walk
//! the same compiled plans (`interp::plan`); [`super::walk`] streams them. Programs with library nodes are analyzed after
//! lowering a copy.
//!
//! An element read (`conn[i, j]`) reads one element at an index computed from data, which a trace
//! without values cannot know: it is counted as one read of the first element of the connector's
//! subset (none when the subset is empty, since no such read can succeed). See the module docs of
//! `analysis` for what this approximation means for the figures.

use super::walk::Walker;
use super::{AccessSource, AnalysisError, ArrayInfo, NodeInfo, Sink};
use crate::interp::plan::{Compiler, Step, MAX_SLOTS};
use crate::ir::{Graph, NodeId, NodeKind, Program, SymEnv, TExpr};
use crate::ops::expand::expand_all;
use std::collections::BTreeMap;

/// A program compiled for tracing.
pub struct IrTrace {
    name: String,
    arrays: Vec<ArrayInfo>,
    shapes: Vec<Vec<usize>>,
    nodes: Vec<NodeInfo>,
    steps: Vec<Step>,
    /// FLOPs of one execution of each tasklet.
    tasklet_flops: BTreeMap<NodeId, u64>,
}

impl IrTrace {
    /// Compiles `p` (a lowered copy when it has library nodes); every symbol must be bound.
    pub fn new(p: &Program) -> Result<IrTrace, AnalysisError> {
        let mut has_library = false;
        p.graph
            .each(&mut |n| has_library |= matches!(n.kind, NodeKind::Library(_)));
        let lowered;
        let p = if has_library {
            let mut q = p.clone();
            expand_all(&mut q)?;
            lowered = q;
            &lowered
        } else {
            p
        };
        let env = p.symbol_values();
        let mut arrays = Vec::new();
        let mut shapes = Vec::new();
        for (name, desc) in &p.data {
            let shape = desc
                .shape
                .iter()
                .map(|d| {
                    let bad = |reason: String| AnalysisError::Shape {
                        name: name.clone(),
                        dim: d.to_string(),
                        reason,
                    };
                    let v = d.eval(&env).map_err(|e| bad(e.to_string()))?;
                    usize::try_from(v).map_err(|_| bad(format!("{v} is negative")))
                })
                .collect::<Result<Vec<usize>, _>>()?;
            arrays.push(ArrayInfo {
                name: name.clone(),
                elements: shape.iter().product::<usize>() as u64,
                elem_bytes: desc.dtype.size_bytes() as u64,
            });
            shapes.push(shape);
        }
        let mut nodes = Vec::new();
        let mut steps = Vec::new();
        let g = &p.graph;
        for idx in g.ordered() {
            let node = g.node(idx);
            match &node.kind {
                NodeKind::Access(_) => continue,
                NodeKind::Library(_) => return Err(AnalysisError::Library(node.id)),
                NodeKind::Map(_) | NodeKind::Tasklet(_) => {}
            }
            let mut c = Compiler::new(&env, &p.data);
            steps.push(c.node(g, idx)?);
            nodes.push(NodeInfo {
                id: Some(node.id),
                label: node.label.clone(),
                bytes_moved: memlet_bytes(p, g, idx, &env),
            });
        }
        let mut tasklet_flops = BTreeMap::new();
        p.graph.walk(&mut |n| {
            if let NodeKind::Tasklet(t) = &n.kind {
                tasklet_flops.insert(n.id, t.outputs.iter().map(|(_, e)| ops(e)).sum());
            }
        });
        add_wcr_flops(&p.graph, &mut tasklet_flops);
        Ok(IrTrace {
            name: p.name.clone(),
            arrays,
            shapes,
            nodes,
            steps,
            tasklet_flops,
        })
    }

    /// Bytes moved by the program: the sum over its top-level nodes of their outer memlets'
    /// volume times element size (the `bytes_moved` total of `dmove analyze`'s report), known
    /// without streaming the trace; the error names a node whose volume is not a constant.
    pub fn bytes_moved(&self) -> Result<u64, String> {
        let mut total: u64 = 0;
        for n in &self.nodes {
            let b = n.bytes_moved.ok_or_else(|| {
                format!(
                    "the bytes moved by `{}` are not known (a memlet volume is not a constant)",
                    n.label
                )
            })?;
            total = total.saturating_add(b);
        }
        Ok(total)
    }
}

impl AccessSource for IrTrace {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn arrays(&self) -> &[ArrayInfo] {
        &self.arrays
    }

    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    fn stream(&self, sink: &mut dyn Sink) -> Result<(), AnalysisError> {
        let mut slots = vec![0i64; MAX_SLOTS];
        for (k, step) in self.steps.iter().enumerate() {
            let mut w = Walker::new(&self.arrays, &self.shapes, &self.tasklet_flops, k, sink);
            w.step(step, &mut slots)?;
        }
        Ok(())
    }
}

/// Arithmetic operations in a tasklet expression (each unary, binary or select counts one; an
/// element read costs what its index expressions do).
fn ops(e: &TExpr) -> u64 {
    match e {
        TExpr::Const(_) | TExpr::Input(_) | TExpr::Index(_) => 0,
        TExpr::Element(_, idx) => idx.iter().map(ops).sum(),
        TExpr::Unary(_, x) => 1 + ops(x),
        TExpr::Binary(_, a, b) => 1 + ops(a) + ops(b),
        TExpr::Select(c, a, b) => 1 + ops(c) + ops(a) + ops(b),
    }
}

/// A write with conflict resolution also combines: one more operation per such out-edge.
fn add_wcr_flops(g: &Graph, flops: &mut BTreeMap<NodeId, u64>) {
    for idx in g.ordered() {
        let node = g.node(idx);
        match &node.kind {
            NodeKind::Tasklet(_) => {
                let wcr = g
                    .out_edges(idx)
                    .iter()
                    .filter(|e| e.memlet.wcr.is_some())
                    .count();
                *flops.entry(node.id).or_default() += wcr as u64;
            }
            NodeKind::Map(m) => add_wcr_flops(&m.body, flops),
            NodeKind::Access(_) | NodeKind::Library(_) => {}
        }
    }
}

/// Bytes moved by a top-level node's memlets: Σ volume × element size over its edges.
fn memlet_bytes(
    p: &Program,
    g: &Graph,
    idx: petgraph::stable_graph::NodeIndex,
    env: &SymEnv,
) -> Option<u64> {
    g.in_edges(idx)
        .iter()
        .chain(g.out_edges(idx).iter())
        .map(|e| {
            let m = e.memlet;
            let volume = u64::try_from(m.subset.volume().eval(env).ok()?).ok()?;
            let size = p.data.get(&m.data)?.dtype.size_bytes() as u64;
            Some(volume * size)
        })
        .sum()
}
