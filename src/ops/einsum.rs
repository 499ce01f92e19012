//! Einsum: a sum of products over labelled axes, written as an equation such as `ij,jk->ik`.
//!
//! Supported: the explicit form (`->` then the output labels) and the implicit form (output =
//! the ellipsis dimensions, then the labels that occur exactly once, in alphabetical order); a
//! label repeated within one operand takes a diagonal (`ii->i`); `...` stands for the leading
//! dimensions an operand has beyond its labels, broadcast across operands like numpy (aligned at
//! the right, extent 1 stretching). A letter must have the same extent wherever it occurs.
//!
//! The equation becomes a list of distinct labels (letters and ellipsis dimensions) with their
//! extents; each operand dimension and each output dimension refers to one label. The
//! expansion is then one init map zeroing the output and one map over every label whose tasklet
//! multiplies one element of each operand and adds it into the output element with a sum
//! write-conflict resolution: labels absent from the output are the reduced ones.

use super::broadcast::broadcast_shapes;
use super::support::{arg, element_map, fill_map, input_type, same_dtype, Read};
use super::window::{multi_indices, sym_shape};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::tensor::row_major_strides;
use crate::ir::{BinOp, DType, LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};
use std::collections::BTreeMap;

pub static OPS: &[&dyn Operator] = &[&Einsum];

const NAME: &str = "Einsum";

/// `Einsum(Inputs…)` with attribute `equation`.
pub struct Einsum;

/// One token of an operand's subscripts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Token {
    Letter(char),
    Ellipsis,
}

/// A label of the iteration space: a letter or one of the ellipsis dimensions (numbered from
/// the outermost of the broadcast ellipsis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    Ellipsis(usize),
    Letter(char),
}

impl Label {
    /// The map parameter iterating over this label.
    fn param(self) -> String {
        match self {
            Label::Ellipsis(d) => format!("e{d}"),
            Label::Letter(c) => format!("l{c}"),
        }
    }
}

fn bad_equation(message: impl Into<String>) -> OpError {
    OpError::attr(NAME, "equation", message)
}

/// The subscripts of one term: letters and at most one `...`.
fn tokens(term: &str) -> Result<Vec<Token>, OpError> {
    let mut out = Vec::new();
    let mut rest = term;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if out.contains(&Token::Ellipsis) {
                return Err(bad_equation(format!("`{term}` has more than one `...`")));
            }
            out.push(Token::Ellipsis);
            rest = after;
        } else if c.is_ascii_alphabetic() {
            out.push(Token::Letter(c));
            rest = &rest[1..];
        } else {
            return Err(bad_equation(format!(
                "`{c}` in `{term}` is neither a letter nor part of `...`"
            )));
        }
    }
    Ok(out)
}

/// An equation resolved against the operand shapes.
struct Plan {
    labels: Vec<Label>,
    extents: Vec<SymExpr>,
    /// For each operand, the label index of each dimension.
    operands: Vec<Vec<usize>>,
    /// The label index of each output dimension.
    output: Vec<usize>,
}

impl Plan {
    fn new(equation: &str, shapes: &[&[SymExpr]]) -> Result<Plan, OpError> {
        let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match equation.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (equation.as_str(), None),
        };
        let terms = lhs.split(',').map(tokens).collect::<Result<Vec<_>, _>>()?;
        if terms.len() != shapes.len() {
            return Err(bad_equation(format!(
                "`{equation}` has {} operand terms but the node has {} inputs",
                terms.len(),
                shapes.len()
            )));
        }
        // Ellipsis width of each operand, and the broadcast ellipsis shape.
        let mut widths = Vec::with_capacity(terms.len());
        for (i, (term, shape)) in terms.iter().zip(shapes).enumerate() {
            let letters = term.iter().filter(|t| **t != Token::Ellipsis).count();
            let has_ellipsis = term.contains(&Token::Ellipsis);
            match shape.len().checked_sub(letters) {
                Some(w) if has_ellipsis || w == 0 => widths.push(w),
                _ => {
                    return Err(OpError::shape(
                        NAME,
                        format!(
                            "input {i} has rank {} but its subscripts name {letters} dimensions{}",
                            shape.len(),
                            if has_ellipsis { " besides `...`" } else { "" }
                        ),
                    ))
                }
            }
        }
        let ellipsis_parts: Vec<&[SymExpr]> = terms
            .iter()
            .zip(shapes)
            .zip(&widths)
            .map(|((term, shape), &w)| {
                let at = term.iter().position(|t| *t == Token::Ellipsis).unwrap_or(0);
                &shape[at..at + w]
            })
            .collect();
        let ellipsis = broadcast_shapes(NAME, &ellipsis_parts)?;

        // Labels of every operand dimension, with the extents each label is given.
        let mut seen: BTreeMap<Label, SymExpr> = BTreeMap::new();
        let mut letter_count: BTreeMap<char, usize> = BTreeMap::new();
        let mut operand_labels = Vec::with_capacity(terms.len());
        for (i, ((term, shape), &w)) in terms.iter().zip(shapes).zip(&widths).enumerate() {
            let mut dims = Vec::with_capacity(shape.len());
            for t in term {
                match *t {
                    Token::Letter(c) => {
                        *letter_count.entry(c).or_default() += 1;
                        dims.push(Label::Letter(c));
                    }
                    Token::Ellipsis => {
                        dims.extend((ellipsis.len() - w..ellipsis.len()).map(Label::Ellipsis))
                    }
                }
            }
            for (label, extent) in dims.iter().zip(shape.iter()) {
                match label {
                    Label::Ellipsis(d) => {
                        seen.insert(*label, ellipsis[*d].clone());
                    }
                    Label::Letter(c) => match seen.get(label) {
                        Some(prev) if prev != extent => {
                            return Err(OpError::shape(
                                NAME,
                                format!(
                                    "label `{c}` has extent {prev} elsewhere but {extent} in \
                                     input {i}"
                                ),
                            ))
                        }
                        _ => {
                            seen.insert(*label, extent.clone());
                        }
                    },
                }
            }
            operand_labels.push(dims);
        }

        let output: Vec<Label> = match rhs {
            Some(r) => {
                let mut out = Vec::new();
                for t in tokens(r)? {
                    match t {
                        Token::Ellipsis => out.extend((0..ellipsis.len()).map(Label::Ellipsis)),
                        Token::Letter(c) => {
                            if !letter_count.contains_key(&c) {
                                return Err(bad_equation(format!(
                                    "output label `{c}` occurs in no input"
                                )));
                            }
                            if out.contains(&Label::Letter(c)) {
                                return Err(bad_equation(format!(
                                    "output label `{c}` occurs twice"
                                )));
                            }
                            out.push(Label::Letter(c));
                        }
                    }
                }
                out
            }
            None => (0..ellipsis.len())
                .map(Label::Ellipsis)
                .chain(
                    letter_count
                        .iter()
                        .filter(|(_, n)| **n == 1)
                        .map(|(c, _)| Label::Letter(*c)),
                )
                .collect(),
        };

        let labels: Vec<Label> = seen.keys().copied().collect();
        let extents = seen.values().cloned().collect();
        let position = |l: &Label| labels.iter().position(|x| x == l).unwrap_or(0);
        Ok(Plan {
            operands: operand_labels
                .iter()
                .map(|dims| dims.iter().map(position).collect())
                .collect(),
            output: output.iter().map(position).collect(),
            extents,
            labels,
        })
    }

    fn output_shape(&self) -> Vec<SymExpr> {
        self.output
            .iter()
            .map(|&l| self.extents[l].clone())
            .collect()
    }
}

/// The equation attribute.
fn equation(node: &LibraryNode) -> Result<&str, OpError> {
    node.str("equation")
        .ok_or_else(|| OpError::attr(NAME, "equation", "is required"))
}

impl Operator for Einsum {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1024)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let types = (0..inputs.len())
            .map(|i| input_type(NAME, inputs, i))
            .collect::<Result<Vec<_>, _>>()?;
        if types[0].dtype == DType::Bool {
            return Err(OpError::shape(NAME, "expects numeric inputs, got bool"));
        }
        for (i, t) in types.iter().enumerate().skip(1) {
            same_dtype(NAME, types[0], t, i)?;
        }
        let shapes: Vec<&[SymExpr]> = types.iter().map(|t| t.shape.as_slice()).collect();
        let plan = Plan::new(equation(node)?, &shapes)?;
        Ok(vec![TensorType::new(types[0].dtype, plan.output_shape())])
    }

    /// Every assignment of values to the labels, in `f64`: the product of the operand elements
    /// it selects is added to the output element it selects.
    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let args = (0..inputs.len())
            .map(|i| arg(NAME, inputs, i))
            .collect::<Result<Vec<_>, _>>()?;
        let shapes: Vec<Vec<SymExpr>> = args.iter().map(|t| sym_shape(&t.shape)).collect();
        let shape_refs: Vec<&[SymExpr]> = shapes.iter().map(Vec::as_slice).collect();
        let plan = Plan::new(equation(node)?, &shape_refs)?;
        let extents: Vec<usize> = plan
            .extents
            .iter()
            .map(|e| {
                e.as_int()
                    .and_then(|v| usize::try_from(v).ok())
                    .unwrap_or(0)
            })
            .collect();
        let out_shape: Vec<usize> = plan.output.iter().map(|&l| extents[l]).collect();
        let out_strides = row_major_strides(&out_shape);
        let mut y = vec![0.0; out_shape.iter().product()];
        for at in multi_indices(&extents) {
            let product: f64 = args
                .iter()
                .zip(&plan.operands)
                .map(|(t, dims)| {
                    let strides = t.strides();
                    let off: usize = dims
                        .iter()
                        .zip(&t.shape)
                        .zip(&strides)
                        .map(|((&l, &n), s)| if n == 1 { 0 } else { at[l] * s })
                        .sum();
                    t.get_f64(off)
                })
                .product();
            let o: usize = plan
                .output
                .iter()
                .zip(&out_strides)
                .map(|(&l, s)| at[l] * s)
                .sum();
            y[o] += product;
        }
        Ok(vec![Tensor::from_f64(args[0].dtype(), out_shape, &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let operands = (0..ctx.inputs.len())
            .map(|i| ctx.input(i).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let (y, yd) = ctx.output(0)?.clone();
        let shapes: Vec<&[SymExpr]> = operands.iter().map(|(_, d)| d.shape.as_slice()).collect();
        let plan = Plan::new(equation(ctx.node)?, &shapes)?;
        let label = ctx.label.clone();
        fill_map(ctx.b, &format!("{label}_init"), &y, &yd.shape, 0.0);

        let params: Vec<(String, Range)> = plan
            .labels
            .iter()
            .zip(&plan.extents)
            .map(|(l, e)| (l.param(), Range::upto(e.clone())))
            .collect();
        let syms: Vec<SymExpr> = params
            .iter()
            .map(|(n, _)| SymExpr::sym(n.as_str()))
            .collect();
        let conns: Vec<String> = (0..operands.len()).map(|i| format!("a{i}")).collect();
        // A dimension of extent 1 under a broadcast ellipsis label is always read at 0.
        let reads = operands
            .iter()
            .zip(&plan.operands)
            .zip(&conns)
            .map(|(((name, desc), dims), conn)| {
                let idx = dims
                    .iter()
                    .zip(&desc.shape)
                    .map(|(&l, n)| {
                        if *n == SymExpr::Int(1) && plan.extents[l] != SymExpr::Int(1) {
                            SymExpr::Int(0)
                        } else {
                            syms[l].clone()
                        }
                    })
                    .collect();
                Read::new(conn, name, idx)
            })
            .collect();
        let value = conns[1..].iter().fold(TExpr::input(&conns[0]), |acc, c| {
            TExpr::binary(BinOp::Mul, acc, TExpr::input(c))
        });
        let out_idx = plan.output.iter().map(|&l| syms[l].clone()).collect();
        element_map(
            ctx.b,
            &format!("{label}_sum"),
            &params,
            reads,
            (&y, out_idx),
            Some(Wcr::Sum),
            value,
        );
        Ok(())
    }

    /// One multiplication per extra operand and one addition per point of the label space.
    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        let shapes: Option<Vec<Vec<SymExpr>>> = inputs
            .iter()
            .map(|t| t.as_ref().map(|t| t.shape.clone()))
            .collect();
        let (Some(shapes), Ok(eq)) = (shapes, equation(node)) else {
            return 0;
        };
        let refs: Vec<&[SymExpr]> = shapes.iter().map(Vec::as_slice).collect();
        let Ok(plan) = Plan::new(eq, &refs) else {
            return 0;
        };
        let points: Option<u64> = plan
            .extents
            .iter()
            .map(|e| e.as_int().and_then(|v| u64::try_from(v).ok()))
            .product();
        points.map_or(0, |p| p * inputs.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn dims(v: &[i64]) -> Vec<SymExpr> {
        v.iter().map(|&d| SymExpr::Int(d)).collect()
    }

    #[test]
    fn implicit_output_is_ellipsis_then_single_letters_sorted() {
        let (a, b) = (dims(&[5, 2, 3]), dims(&[3, 4]));
        let plan = Plan::new("...ij,jk", &[&a, &b]).expect("parses");
        assert_eq!(plan.output_shape(), dims(&[5, 2, 4]));
        let plan = Plan::new("ba", &[&dims(&[2, 3])]).expect("parses");
        assert_eq!(plan.output_shape(), dims(&[3, 2]));
        let set: BTreeSet<Label> = plan.labels.iter().copied().collect();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn rejects_malformed_equations() {
        let a = dims(&[2, 2]);
        assert!(Plan::new("i.j", &[&a]).is_err());
        assert!(Plan::new("ij->k", &[&a]).is_err());
        assert!(Plan::new("ij->ii", &[&a]).is_err());
        assert!(Plan::new("i", &[&a]).is_err());
        assert!(Plan::new("ij,jk", &[&a]).is_err());
    }
}
