//! `dmove import MODEL --summary`: what a model contains and costs, before any optimisation —
//! the operators it uses, its parameters and their bytes, and its floating-point work.

use super::proto::ModelProto;
use crate::ir::{DType, NodeKind, Program};
use crate::ops::flops::program_flops;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// The summary of one imported model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModelSummary {
    pub name: String,
    /// ONNX operator type → node count in the model (the program's library nodes for models
    /// given as IR text).
    pub operators: BTreeMap<String, usize>,
    /// Library nodes left after import (constant folding and renamings remove the rest).
    pub library_nodes: usize,
    /// Elements of floating-point constants (weights, biases, folded float values).
    pub parameters: u64,
    /// Bytes of every constant, the size of the weights the generated code loads.
    pub weight_bytes: u64,
    /// Floating-point operations of one inference, summed over the library nodes.
    pub flops: u64,
    /// Symbols without a value: operators whose shapes depend on them count no FLOPs.
    pub unbound_symbols: Vec<String>,
}

/// Summarises `p`, imported from `model` when given.
pub fn summarize(p: &Program, model: Option<&ModelProto>) -> ModelSummary {
    let mut library = BTreeMap::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Library(lib) = &n.kind {
            *library.entry(lib.op.clone()).or_insert(0usize) += 1;
        }
    });
    let library_nodes = library.values().sum();
    let operators = match model.and_then(|m| m.graph.as_ref()) {
        Some(g) => {
            let mut ops = BTreeMap::new();
            for n in &g.node {
                *ops.entry(n.op_type.clone().unwrap_or_default())
                    .or_insert(0usize) += 1;
            }
            ops
        }
        None => library,
    };
    let floats = DType::is_float;
    let parameters = p
        .constants
        .values()
        .filter(|t| floats(t.dtype()))
        .map(|t| t.len() as u64)
        .sum();
    let weight_bytes = p
        .constants
        .values()
        .map(|t| (t.len() * t.dtype().size_bytes()) as u64)
        .sum();
    ModelSummary {
        name: p.name.clone(),
        operators,
        library_nodes,
        parameters,
        weight_bytes,
        flops: program_flops(p),
        unbound_symbols: p
            .symbols
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.clone())
            .collect(),
    }
}

/// `12.3 M` style, so large counts stay readable next to the exact number.
fn scaled(v: u64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    UNITS
        .iter()
        .find(|(scale, _)| v as f64 >= *scale)
        .map_or_else(
            || v.to_string(),
            |(scale, unit)| format!("{:.2} {unit}", v as f64 / scale),
        )
}

impl fmt::Display for ModelSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model {}", self.name)?;
        let nodes: usize = self.operators.values().sum();
        writeln!(
            f,
            "operators: {nodes} node(s) of {} type(s); {} library node(s) after import",
            self.operators.len(),
            self.library_nodes
        )?;
        let mut by_count: Vec<(&String, &usize)> = self.operators.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (op, count) in by_count {
            writeln!(f, "  {op:<24} {count:>6}")?;
        }
        writeln!(
            f,
            "parameters: {} ({})",
            self.parameters,
            scaled(self.parameters)
        )?;
        writeln!(
            f,
            "weights: {} bytes ({}B)",
            self.weight_bytes,
            scaled(self.weight_bytes)
        )?;
        write!(f, "FLOPs: {} ({})", self.flops, scaled(self.flops))?;
        if !self.unbound_symbols.is_empty() {
            write!(
                f,
                " — operators shaped by unbound {} count none; bind them with --dim/--shape",
                self.unbound_symbols.join(", ")
            )?;
        }
        writeln!(f)
    }
}

#[cfg(test)]
mod tests {
    use super::scaled;

    #[test]
    fn scaled_units() {
        assert_eq!(scaled(999), "999");
        assert_eq!(scaled(25_557_032), "25.56 M");
        assert_eq!(scaled(4_100_000_000), "4.10 G");
    }
}
