//! Checks that a program, or a rewrite of it, computes what it should.
//!
//! The numerics layer runs two programs on the same random inputs through the reference
//! interpreter (or compiled C) and compares their outputs with the tolerances of
//! [`crate::numerics`].

pub mod fixtures;
pub mod race;

use crate::interp;
use crate::ir::{DType, DataDesc, DataKind, LibraryNode, Program, Tensor};
use crate::numerics::{compare, Comparison};
use crate::ops::{lookup, OpError, TensorType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Why two programs could not be compared, or how they differ.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum NumericsError {
    #[error("the original program failed to run: {0}")]
    Original(#[source] interp::InterpError),
    #[error("the rewritten program failed to run: {0}")]
    Rewritten(#[source] interp::InterpError),
    #[error("output `{output}` differs: max abs error {max_abs_error:e}{}{detail}", worst.map_or(String::new(), |k| format!(" (worst at element {k})")))]
    Differs {
        output: String,
        max_abs_error: f64,
        worst: Option<usize>,
        detail: String,
    },
    #[error("input `{0}` has a symbolic or negative shape; bind its symbols first")]
    UnboundShape(String),
}

/// Symbols a program's shapes use without a value: it cannot run on concrete inputs, so no
/// step on it can be checked (nor measured).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what}; {help}")]
pub struct UnboundSymbols {
    /// Each symbol, where the model uses it first.
    pub what: String,
    /// The flags that bind them.
    pub help: String,
}

impl UnboundSymbols {
    /// `None` when every symbol `p`'s shapes use has a value.
    pub fn of(p: &Program) -> Option<UnboundSymbols> {
        let unbound = p.unbound_symbols();
        if unbound.is_empty() {
            return None;
        }
        let names: Vec<String> = (unbound.iter())
            .map(|(symbol, first)| match first {
                Some((input, axis)) => format!("`{symbol}` (input `{input}`, axis {axis})"),
                None => format!("`{symbol}`"),
            })
            .collect();
        let flags: Vec<String> = (unbound.iter())
            .map(|(symbol, _)| format!("--dim {symbol}=N"))
            .collect();
        let (dimensions, have, them) = match unbound.len() {
            1 => ("dimension", "has", "it"),
            _ => ("dimensions", "have", "them"),
        };
        Some(UnboundSymbols {
            what: format!(
                "the model's {dimensions} {} {have} no value, and checks run the program on \
                 concrete inputs",
                names.join(", ")
            ),
            help: format!("bind {them} when loading the model: `{}`", flags.join(" ")),
        })
    }
}

/// A program holding one library node `op` applied to inputs of the given types; constant inputs
/// (`consts[i] = Some(value)`) become constant data. Inputs are `x0, x1, …`, outputs `y0, …`.
pub fn single_op_program(
    op: &str,
    attrs: BTreeMap<String, crate::ir::Attr>,
    inputs: &[Option<TensorType>],
    consts: &[Option<Tensor>],
) -> Result<Program, OpError> {
    let mut p = Program::new(op.to_lowercase());
    add_op(&mut p, "", op, attrs, inputs, consts)?;
    Ok(p)
}

/// Adds one application of `op` to `p` with its own inputs `{prefix}x{i}` and outputs
/// `{prefix}y{j}`, so many independent cases can share one program (and one C compile).
pub fn add_op(
    p: &mut Program,
    prefix: &str,
    op: &str,
    attrs: BTreeMap<String, crate::ir::Attr>,
    inputs: &[Option<TensorType>],
    consts: &[Option<Tensor>],
) -> Result<(), OpError> {
    let operator = lookup(op).ok_or_else(|| OpError::unsupported(op, "unknown operator"))?;
    let node = LibraryNode {
        op: op.to_string(),
        attrs: attrs.clone(),
    };
    let const_refs: Vec<Option<&Tensor>> = (0..inputs.len())
        .map(|i| consts.get(i).and_then(|c| c.as_ref()))
        .collect();
    let out_types = operator.infer(&node, inputs, &const_refs)?;
    let mut names: Vec<Option<String>> = Vec::new();
    for (i, t) in inputs.iter().enumerate() {
        let Some(t) = t else {
            names.push(None);
            continue;
        };
        let name = format!("{prefix}x{i}");
        let kind = if const_refs[i].is_some() {
            DataKind::Constant
        } else {
            DataKind::Input
        };
        p.data
            .insert(name.clone(), DataDesc::new(t.dtype, t.shape.clone(), kind));
        match const_refs[i] {
            Some(c) => {
                p.constants.insert(name.clone(), c.clone().into());
            }
            None => p.inputs.push(name.clone()),
        }
        names.push(Some(name));
    }
    let mut outs = Vec::new();
    for (i, t) in out_types.iter().enumerate() {
        let name = format!("{prefix}y{i}");
        p.data.insert(
            name.clone(),
            DataDesc::new(t.dtype, t.shape.clone(), DataKind::Output),
        );
        p.outputs.push(name.clone());
        outs.push(name);
    }
    let ins: Vec<Option<&str>> = names.iter().map(|n| n.as_deref()).collect();
    let label = format!("{prefix}{op}");
    p.build(|b| {
        let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
        b.library(&label, op, attrs, &ins, &outs);
    });
    Ok(())
}

/// Deterministic random values for every input of `p`: floats uniform in [-2, 2), integers in
/// [0, 4), booleans fair.
pub fn random_inputs(p: &Program, seed: u64) -> Result<BTreeMap<String, Tensor>, NumericsError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = BTreeMap::new();
    for name in &p.inputs {
        let desc = &p.data[name];
        let shape = desc
            .static_shape()
            .or_else(|| {
                let env = p.symbol_values();
                desc.shape
                    .iter()
                    .map(|d| d.eval(&env).ok().and_then(|v| usize::try_from(v).ok()))
                    .collect()
            })
            .ok_or_else(|| NumericsError::UnboundShape(name.clone()))?;
        let n: usize = shape.iter().product();
        let values: Vec<f64> = (0..n)
            .map(|_| match desc.dtype {
                DType::Bool => f64::from(u8::from(rng.gen_bool(0.5))),
                d if d.is_float() => rng.gen_range(-2.0..2.0),
                _ => f64::from(rng.gen_range(0..4)),
            })
            .collect();
        out.insert(name.clone(), Tensor::from_f64(desc.dtype, shape, &values));
    }
    Ok(out)
}

/// Runs both programs through the interpreter on `inputs` and compares every output of
/// `original`; returns the per-output comparisons or the first difference.
pub fn same_outputs(
    original: &Program,
    rewritten: &Program,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Comparison>, NumericsError> {
    let want = interp::run(original, inputs).map_err(NumericsError::Original)?;
    let got = interp::run(rewritten, inputs).map_err(NumericsError::Rewritten)?;
    compare_outputs(&got, &want)
}

/// Compares `got` against `want` output by output.
pub fn compare_outputs(
    got: &BTreeMap<String, Tensor>,
    want: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Comparison>, NumericsError> {
    let mut report = BTreeMap::new();
    for (name, expected) in want {
        let Some(actual) = got.get(name) else {
            return Err(NumericsError::Differs {
                output: name.clone(),
                max_abs_error: f64::INFINITY,
                worst: None,
                detail: ": missing from the rewritten program".into(),
            });
        };
        let c = compare(actual, expected);
        if !c.within_tolerance {
            let detail = match (&c.mismatch, c.worst_index) {
                (Some(m), _) => format!(": {m}"),
                (None, Some(i)) => format!(
                    ": got {} where {} was expected",
                    actual.get_f64(i),
                    expected.get_f64(i)
                ),
                (None, None) => String::new(),
            };
            return Err(NumericsError::Differs {
                output: name.clone(),
                max_abs_error: c.max_abs_error,
                worst: c.worst_index,
                detail,
            });
        }
        report.insert(name.clone(), c);
    }
    Ok(report)
}

/// Expands every library node of a copy of `p` and checks it against `p` on random inputs.
pub fn expansion_matches(p: &Program, seed: u64) -> Result<Program, Box<dyn std::error::Error>> {
    let mut lowered = p.clone();
    crate::ops::expand::expand_all(&mut lowered)?;
    crate::ir::validate::validate(&lowered)?;
    let inputs = random_inputs(p, seed)?;
    same_outputs(p, &lowered, &inputs)?;
    Ok(lowered)
}

/// Random tensor of `shape` for tests and benchmarks: uniform in [-1, 1).
pub fn random_tensor(shape: &[usize], rng: &mut impl Rng) -> Tensor {
    let n = shape.iter().product();
    Tensor::f32(
        shape.to_vec(),
        (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::SymExpr;

    #[test]
    fn identity_expansion_matches_reference() {
        let t = TensorType::new(
            DType::F32,
            vec![SymExpr::Int(3), SymExpr::Int(1), SymExpr::Int(5)],
        );
        let p = single_op_program("Identity", BTreeMap::new(), &[Some(t)], &[]).expect("builds");
        let lowered = expansion_matches(&p, 7).expect("matches");
        let mut libs = 0;
        lowered
            .graph
            .each(&mut |n| libs += usize::from(matches!(n.kind, crate::ir::NodeKind::Library(_))));
        assert_eq!(libs, 0);
    }

    #[test]
    fn a_difference_names_its_worst_element_as_a_number() {
        let differs = |worst| NumericsError::Differs {
            output: "y".into(),
            max_abs_error: 0.5,
            worst,
            detail: String::new(),
        };
        let at = differs(Some(140)).to_string();
        assert!(at.ends_with("5e-1 (worst at element 140)"), "{at}");
        assert!(!differs(None).to_string().contains("worst"));
    }
}
