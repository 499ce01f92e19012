//! Reshape and Flatten: the same row-major data under a new shape.
//!
//! The expansion copies element by element: output index → row-major linear position `L` →
//! input index `(L / strideₖ) mod dimₖ`. Transformations (or a later no-op elimination) can
//! remove the copy when producer and consumer agree on the layout.

use super::super::support::{arg, dim_product, input_type, resolve_axis, sym_shape};
use super::super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use super::{concrete, expand_copy, reshaped, sym_strides};
use crate::ir::{DType, LibraryNode, SymExpr, Tensor};

/// Copies `x` into output 0 by relinearising the index.
fn expand_relinearised(ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let x_shape = ctx.input(0)?.1.shape.clone();
    let y_shape = ctx.output(0)?.1.shape.clone();
    let (in_strides, out_strides) = (sym_strides(&x_shape), sym_strides(&y_shape));
    expand_copy(ctx, |idx| {
        let linear = idx
            .iter()
            .zip(&out_strides)
            .fold(SymExpr::Int(0), |acc, (i, s)| acc + i.clone() * s.clone());
        (0..x_shape.len())
            .map(|d| {
                let q = linear.clone().floor_div(in_strides[d].clone());
                // The leading quotient is already below its extent.
                if d == 0 {
                    q
                } else {
                    q.modulo(x_shape[d].clone())
                }
            })
            .collect()
    })
}

/// Splits a product of dimensions into its literal factor and its symbolic factors.
fn factors(dims: &[SymExpr]) -> (i64, Vec<SymExpr>) {
    let mut literal = 1i64;
    let mut symbolic = Vec::new();
    for d in dims {
        match d.as_int() {
            Some(v) => literal = literal.saturating_mul(v),
            None => symbolic.push(d.clone()),
        }
    }
    (literal, symbolic)
}

/// `prod(total) / prod(known)` when it is exact: literal factors must divide and every
/// symbolic factor of `known` must appear in `total`.
fn quotient(total: &[SymExpr], known: &[SymExpr]) -> Option<SymExpr> {
    let (t_lit, mut t_sym) = factors(total);
    let (k_lit, k_sym) = factors(known);
    for s in k_sym {
        let pos = t_sym.iter().position(|x| *x == s)?;
        t_sym.remove(pos);
    }
    if k_lit == 0 || t_lit % k_lit != 0 {
        return None;
    }
    t_sym.push(SymExpr::Int(t_lit / k_lit));
    Some(dim_product(&t_sym))
}

fn shown(dims: &[SymExpr]) -> String {
    let v: Vec<String> = dims.iter().map(ToString::to_string).collect();
    format!("[{}]", v.join(", "))
}

/// `Y = reshape(X, shape)`: `0` copies the input dimension (unless `allowzero = 1`), one `−1`
/// is inferred from the element count.
pub struct Reshape;

impl Reshape {
    fn out_shape(
        node: &LibraryNode,
        input: &[SymExpr],
        spec: &[i64],
    ) -> Result<Vec<SymExpr>, OpError> {
        let op = "Reshape";
        let allowzero = node.int("allowzero").unwrap_or(0) != 0;
        if spec.iter().filter(|&&v| v == -1).count() > 1 {
            return Err(OpError::shape(
                op,
                format!("shape {spec:?} has more than one -1"),
            ));
        }
        if allowzero && spec.contains(&0) && spec.contains(&-1) {
            return Err(OpError::shape(
                op,
                format!("shape {spec:?} has both 0 and -1 while allowzero = 1"),
            ));
        }
        let mut out = Vec::with_capacity(spec.len());
        for (d, &v) in spec.iter().enumerate() {
            out.push(match v {
                0 if !allowzero => input.get(d).cloned().ok_or_else(|| {
                    OpError::shape(
                        op,
                        format!(
                            "shape entry {d} is 0 but the input has rank {}",
                            input.len()
                        ),
                    )
                })?,
                -1 => SymExpr::Int(-1),
                v if v >= 0 => SymExpr::Int(v),
                v => return Err(OpError::shape(op, format!("shape entry {v} is negative"))),
            });
        }
        if let Some(hole) = out.iter().position(|d| *d == SymExpr::Int(-1)) {
            let known: Vec<SymExpr> = out
                .iter()
                .enumerate()
                .filter(|(d, _)| *d != hole)
                .map(|(_, e)| e.clone())
                .collect();
            out[hole] = quotient(input, &known).ok_or_else(|| {
                OpError::shape(
                    op,
                    format!(
                        "cannot infer -1: {} is not a multiple of {}",
                        shown(input),
                        shown(&known)
                    ),
                )
            })?;
        }
        if dim_product(input) != dim_product(&out) {
            return Err(OpError::shape(
                op,
                format!(
                    "cannot reshape {} to {}: element counts differ",
                    shown(input),
                    shown(&out)
                ),
            ));
        }
        Ok(out)
    }

    fn spec(t: &Tensor) -> Result<Vec<i64>, OpError> {
        match (t.dtype(), t.shape.len()) {
            (DType::I64 | DType::I32, 1) => Ok(t.to_i64_vec()),
            _ => Err(OpError::shape(
                "Reshape",
                format!(
                    "the shape (input 1) must be a 1-D integer tensor, got {} of shape {:?}",
                    t.dtype(),
                    t.shape
                ),
            )),
        }
    }
}

impl Operator for Reshape {
    fn name(&self) -> &'static str {
        "Reshape"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Reshape", inputs, 0)?;
        input_type("Reshape", inputs, 1)?;
        let spec = consts.get(1).copied().flatten().ok_or_else(|| {
            OpError::unsupported("Reshape", "the shape (input 1) must be a constant")
        })?;
        let shape = Self::out_shape(node, &x.shape, &Self::spec(spec)?)?;
        Ok(vec![TensorType::new(x.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Reshape", inputs, 0)?;
        let spec = Self::spec(arg("Reshape", inputs, 1)?)?;
        let shape = Self::out_shape(node, &sym_shape(&x.shape), &spec)?;
        let out = TensorType::new(x.dtype(), shape);
        Ok(vec![reshaped(x, concrete("Reshape", &out)?)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        expand_relinearised(ctx)
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

/// `Y = X` viewed as `[prod(dims[:axis]), prod(dims[axis:])]`; `axis` defaults to 1.
pub struct Flatten;

impl Flatten {
    fn out_shape(node: &LibraryNode, input: &[SymExpr]) -> Result<Vec<SymExpr>, OpError> {
        let axis = node.int("axis").unwrap_or(1);
        let axis = resolve_axis("Flatten", "axis", axis, input.len(), true)?;
        Ok(vec![
            dim_product(&input[..axis]),
            dim_product(&input[axis..]),
        ])
    }
}

impl Operator for Flatten {
    fn name(&self) -> &'static str {
        "Flatten"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("Flatten", inputs, 0)?;
        Ok(vec![TensorType::new(
            x.dtype,
            Self::out_shape(node, &x.shape)?,
        )])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("Flatten", inputs, 0)?;
        let out = TensorType::new(x.dtype(), Self::out_shape(node, &sym_shape(&x.shape))?);
        Ok(vec![reshaped(x, concrete("Flatten", &out)?)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        expand_relinearised(ctx)
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_minus_one_from_symbolic_factors() {
        let s = SymExpr::sym;
        let input = [s("B"), s("S"), SymExpr::Int(768)];
        let known = [SymExpr::Int(12), SymExpr::Int(64)];
        assert_eq!(quotient(&input, &known), Some(&s("B") * s("S")));
        assert_eq!(quotient(&input, &[s("S"), SymExpr::Int(5)]), None);
        assert_eq!(quotient(&input, &[s("T")]), None);
    }
}
