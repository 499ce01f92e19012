//! The reference interpreter: the oracle for every correctness check.
//!
//! Library nodes run through their operator's independent reference implementation; maps and
//! tasklets run element by element in their compute type (`ir::Precision`), with the same
//! arithmetic as the generated C.
//! Every memlet access is bounds-checked, so an out-of-bounds rewrite is reported, not UB.
//!
//! Architecture invariant: the interpreter never looks at expansions or C; it depends only on
//! `ir` and the operators' `eval`.

mod compiled;
pub(crate) mod plan;
mod texec;

use crate::ir::{DataKind, NodeId, NodeKind, Program, SymEnv, Tensor};
use crate::ops::{lookup, OpError};
use compiled::Frame;
use std::collections::BTreeMap;

/// Why a program could not be interpreted.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum InterpError {
    #[error("input `{0}` was not supplied")]
    MissingInput(String),
    #[error("input `{name}` has shape {got:?} and type {got_type}, but the program expects {expected:?} of {expected_type}")]
    BadInput {
        name: String,
        got: Vec<usize>,
        got_type: String,
        expected: Vec<usize>,
        expected_type: String,
    },
    #[error("symbol `{0}` has no value: bind it (e.g. `--dim {0}=…`) or supply an input whose shape determines it")]
    UnboundSymbol(String),
    #[error("container `{0}` has a negative or non-integer dimension")]
    BadShape(String),
    #[error("node {node} (`{label}`): operator failed: {source}")]
    Op {
        node: NodeId,
        label: String,
        #[source]
        source: OpError,
    },
    #[error("node {node}: operator `{op}` is unknown")]
    UnknownOp { node: NodeId, op: String },
    #[error("node {node}: access {data}{index:?} is outside the container's shape {shape:?}")]
    OutOfBounds {
        node: NodeId,
        data: String,
        index: Vec<i64>,
        shape: Vec<usize>,
    },
    #[error("node {node}: {message}")]
    Unsupported { node: NodeId, message: String },
    #[error("node {node}: {message}")]
    Index { node: NodeId, message: String },
}

/// Runs `p` on `inputs` and returns its outputs by name.
pub fn run(
    p: &Program,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, InterpError> {
    let env = bind_symbols(p, inputs)?;
    let mut store: BTreeMap<String, Tensor> = BTreeMap::new();
    for (name, desc) in &p.data {
        let shape = concrete_shape(name, &desc.shape, &env)?;
        let value = match desc.kind {
            DataKind::Input => {
                let t = inputs
                    .get(name)
                    .ok_or_else(|| InterpError::MissingInput(name.clone()))?;
                if t.shape != shape || t.dtype() != desc.dtype {
                    return Err(InterpError::BadInput {
                        name: name.clone(),
                        got: t.shape.clone(),
                        got_type: t.dtype().to_string(),
                        expected: shape,
                        expected_type: desc.dtype.to_string(),
                    });
                }
                t.clone()
            }
            DataKind::Constant => match p.constants.get(name) {
                Some(t) => t.tensor().clone(),
                None => Tensor::zeros(desc.dtype, shape),
            },
            DataKind::Output | DataKind::Transient => Tensor::zeros(desc.dtype, shape),
        };
        store.insert(name.clone(), value);
    }
    let mut frame = Frame::new(p, &env, store);
    frame.run_graph(&p.graph)?;
    let mut store = frame.into_store();
    Ok(p.outputs
        .iter()
        .filter_map(|o| store.remove_entry(o))
        .collect())
}

/// Program symbols with values: bound ones, plus those an input's shape determines.
fn bind_symbols(p: &Program, inputs: &BTreeMap<String, Tensor>) -> Result<SymEnv, InterpError> {
    let mut env = p.symbol_values();
    for name in &p.inputs {
        let (Some(desc), Some(t)) = (p.data.get(name), inputs.get(name)) else {
            continue;
        };
        for (dim, &actual) in desc.shape.iter().zip(&t.shape) {
            if let crate::ir::SymExpr::Sym(s) = dim {
                env.entry(s.clone()).or_insert(actual as i64);
            }
        }
    }
    for s in p.symbols.keys() {
        if !env.contains_key(s) {
            return Err(InterpError::UnboundSymbol(s.clone()));
        }
    }
    Ok(env)
}

fn concrete_shape(
    name: &str,
    shape: &[crate::ir::SymExpr],
    env: &SymEnv,
) -> Result<Vec<usize>, InterpError> {
    shape
        .iter()
        .map(|d| match d.eval(env) {
            Ok(v) => usize::try_from(v).map_err(|_| InterpError::BadShape(name.to_string())),
            Err(crate::ir::SymError::Unbound(s)) => Err(InterpError::UnboundSymbol(s)),
            Err(_) => Err(InterpError::BadShape(name.to_string())),
        })
        .collect()
}

/// Runs one library node on the store.
fn run_library(
    g: &crate::ir::Graph,
    idx: petgraph::stable_graph::NodeIndex,
    store: &mut BTreeMap<String, Tensor>,
) -> Result<(), InterpError> {
    let node = g.node(idx);
    let NodeKind::Library(lib) = &node.kind else {
        return Ok(());
    };
    let op = lookup(&lib.op).ok_or_else(|| InterpError::UnknownOp {
        node: node.id,
        op: lib.op.clone(),
    })?;
    let mut args: Vec<Option<&Tensor>> = Vec::new();
    for e in g.in_edges(idx) {
        let pos = e
            .memlet
            .dst_conn
            .as_deref()
            .and_then(|c| crate::ir::LibraryNode::connector_index(c, "in"))
            .ok_or_else(|| InterpError::Unsupported {
                node: node.id,
                message: format!("input edge without an `inN` connector ({})", e.memlet.data),
            })?;
        if args.len() <= pos {
            args.resize(pos + 1, None);
        }
        args[pos] = store.get(&e.memlet.data);
    }
    let results = op.eval(lib, &args).map_err(|source| InterpError::Op {
        node: node.id,
        label: node.label.clone(),
        source,
    })?;
    for e in g.out_edges(idx) {
        let pos = e
            .memlet
            .src_conn
            .as_deref()
            .and_then(|c| crate::ir::LibraryNode::connector_index(c, "out"))
            .unwrap_or(usize::MAX);
        if let Some(t) = results.get(pos) {
            store.insert(e.memlet.data.clone(), t.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Schedule, SymExpr};

    /// C = A·B with A 3×5 and B 5×2 (symbol K = 5), accumulation map parallel.
    fn matmul_program() -> Program {
        let mut p = crate::check::fixtures::matmul(
            3.into(),
            SymExpr::sym("K"),
            2.into(),
            Schedule::Parallel,
        );
        p.symbols.insert("K".into(), Some(5));
        p
    }

    #[test]
    fn runs_matmul_maps() {
        let p = matmul_program();
        crate::ir::validate::validate(&p).expect("valid");
        let a: Vec<f32> = (0..15).map(|x| x as f32).collect();
        let b: Vec<f32> = (0..10).map(|x| (x as f32) * 0.5 - 1.0).collect();
        let inputs = BTreeMap::from([
            ("A".to_string(), Tensor::f32(vec![3, 5], a.clone())),
            ("B".to_string(), Tensor::f32(vec![5, 2], b.clone())),
        ]);
        let out = run(&p, &inputs).expect("runs");
        let mut expected = vec![0f32; 6];
        for i in 0..3 {
            for j in 0..2 {
                expected[i * 2 + j] = (0..5).map(|k| a[i * 5 + k] * b[k * 2 + j]).sum();
            }
        }
        assert_eq!(out["C"], Tensor::f32(vec![3, 2], expected));
    }

    #[test]
    fn reports_bad_inputs_and_out_of_bounds() {
        let p = matmul_program();
        let err = run(&p, &BTreeMap::new()).unwrap_err();
        assert_eq!(err, InterpError::MissingInput("A".into()));
        let inputs = BTreeMap::from([
            ("A".to_string(), Tensor::f32(vec![3, 4], vec![0.0; 12])),
            ("B".to_string(), Tensor::f32(vec![5, 2], vec![0.0; 10])),
        ]);
        assert!(matches!(run(&p, &inputs), Err(InterpError::BadInput { name, .. }) if name == "A"));
        // Shrink B's declared rows below K: the accumulation map reads past its end.
        let mut q = matmul_program();
        q.data.get_mut("B").expect("B").shape[0] = 4.into();
        let inputs = BTreeMap::from([
            ("A".to_string(), Tensor::f32(vec![3, 5], vec![1.0; 15])),
            ("B".to_string(), Tensor::f32(vec![4, 2], vec![1.0; 8])),
        ]);
        match run(&q, &inputs) {
            Err(InterpError::OutOfBounds { data, index, .. }) => {
                assert_eq!(data, "B");
                assert_eq!(index, vec![4, 0]);
            }
            other => panic!("expected out of bounds, got {other:?}"),
        }
    }
}
