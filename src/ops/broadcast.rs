//! Numpy / ONNX broadcasting.
//!
//! Multidirectional broadcasting (Add, MatMul batch dimensions, …) aligns shapes at their last
//! dimension; each output dimension is the common value of the inputs' dimensions, where a
//! dimension of 1 stretches to any size. Unidirectional broadcasting (Gemm's C, LayerNorm's
//! Scale) is the same rule with the target shape fixed.
//!
//! Symbolic dimensions broadcast only when they are equal or one side is the literal 1: that
//! covers `[B, S, 768] + [768]` and `[B, S, D] * [B, S, 1]`, and anything else cannot be proven
//! correct at compile time, so it is an error rather than a guess.

use super::OpError;
use crate::ir::tensor::row_major_strides;
use crate::ir::SymExpr;

/// The broadcast of one pair of dimensions.
fn broadcast_dim(op: &str, a: &SymExpr, b: &SymExpr) -> Result<SymExpr, OpError> {
    let one = SymExpr::Int(1);
    if a == b || *b == one {
        Ok(a.clone())
    } else if *a == one {
        Ok(b.clone())
    } else if a.as_int().is_some() && b.as_int().is_some() {
        Err(OpError::shape(
            op,
            format!("dimensions {a} and {b} cannot be broadcast together"),
        ))
    } else {
        Err(OpError::shape(
            op,
            format!(
                "dimensions {a} and {b} cannot be broadcast together \
                 (symbolic dimensions must be equal, or one of them 1)"
            ),
        ))
    }
}

/// The multidirectional broadcast of `shapes`.
pub fn broadcast_shapes(op: &str, shapes: &[&[SymExpr]]) -> Result<Vec<SymExpr>, OpError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![SymExpr::Int(1); rank];
    for shape in shapes {
        let lead = rank - shape.len();
        for (d, dim) in shape.iter().enumerate() {
            out[lead + d] = broadcast_dim(op, &out[lead + d], dim)?;
        }
    }
    Ok(out)
}

/// The multidirectional broadcast of concrete shapes (the reference implementations' view).
pub fn broadcast_concrete(op: &str, shapes: &[&[usize]]) -> Result<Vec<usize>, OpError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for shape in shapes {
        let lead = rank - shape.len();
        for (d, &dim) in shape.iter().enumerate() {
            let o = &mut out[lead + d];
            if *o == 1 {
                *o = dim;
            } else if dim != 1 && dim != *o {
                return Err(OpError::shape(
                    op,
                    format!("dimensions {o} and {dim} cannot be broadcast together"),
                ));
            }
        }
    }
    Ok(out)
}

/// Checks that `from` broadcasts unidirectionally to `to` (its dimensions are equal or 1) and
/// names the offending operand `what` otherwise.
pub fn check_unidirectional(
    op: &str,
    what: &str,
    from: &[SymExpr],
    to: &[SymExpr],
) -> Result<(), OpError> {
    let shown = |s: &[SymExpr]| {
        let dims: Vec<String> = s.iter().map(ToString::to_string).collect();
        format!("[{}]", dims.join(", "))
    };
    let fail = || {
        OpError::shape(
            op,
            format!(
                "{what} of shape {} does not broadcast to {}",
                shown(from),
                shown(to)
            ),
        )
    };
    if from.len() > to.len() {
        return Err(fail());
    }
    let lead = to.len() - from.len();
    for (d, dim) in from.iter().enumerate() {
        if *dim != SymExpr::Int(1) && *dim != to[lead + d] {
            return Err(fail());
        }
    }
    Ok(())
}

/// For every element of `out_shape` in row-major order, the row-major offset of the element of
/// an `in_shape` operand it reads after broadcasting (the reference implementations' view).
pub fn source_offsets(in_shape: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let lead = out_shape.len().saturating_sub(in_shape.len());
    let in_strides = row_major_strides(in_shape);
    // Stride of each output dimension in the input: 0 where the input is absent or stretched.
    let strides: Vec<usize> = (0..out_shape.len())
        .map(|d| match d.checked_sub(lead) {
            Some(k) if in_shape[k] != 1 => in_strides[k],
            _ => 0,
        })
        .collect();
    let total: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; out_shape.len()];
    for _ in 0..total {
        out.push(idx.iter().zip(&strides).map(|(i, s)| i * s).sum());
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// The element of an `in_shape` operand read at output index `out_idx` (the expansions' view):
/// trailing dimensions align, and a dimension of literal size 1 is always read at 0.
pub fn source_index(in_shape: &[SymExpr], out_idx: &[SymExpr]) -> Vec<SymExpr> {
    let lead = out_idx.len().saturating_sub(in_shape.len());
    in_shape
        .iter()
        .zip(&out_idx[lead..])
        .map(|(dim, i)| {
            if *dim == SymExpr::Int(1) {
                SymExpr::Int(0)
            } else {
                i.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(v: &[i64]) -> Vec<SymExpr> {
        v.iter().map(|&d| SymExpr::Int(d)).collect()
    }

    #[test]
    fn broadcasts_static_and_symbolic_shapes() {
        let a = dims(&[2, 1, 5]);
        let b = dims(&[3, 1]);
        assert_eq!(broadcast_shapes("Add", &[&a, &b]), Ok(dims(&[2, 3, 5])));
        let s = vec![SymExpr::sym("B"), SymExpr::Int(1), SymExpr::Int(4)];
        let t = vec![SymExpr::Int(7), SymExpr::Int(4)];
        assert_eq!(
            broadcast_shapes("Add", &[&s, &t]),
            Ok(vec![SymExpr::sym("B"), SymExpr::Int(7), SymExpr::Int(4)])
        );
        assert!(broadcast_shapes("Add", &[&dims(&[3]), &dims(&[4])]).is_err());
        let n = vec![SymExpr::sym("N")];
        let m = vec![SymExpr::sym("M")];
        assert!(broadcast_shapes("Add", &[&n, &m]).is_err());
    }

    #[test]
    fn maps_output_elements_to_sources() {
        // [2, 3] output reading a [3] row and a [2, 1] column.
        assert_eq!(source_offsets(&[3], &[2, 3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(source_offsets(&[2, 1], &[2, 3]), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(source_offsets(&[], &[2]), vec![0, 0]);
        let idx = vec![SymExpr::sym("i0"), SymExpr::sym("i1")];
        assert_eq!(
            source_index(&dims(&[2, 1]), &idx),
            vec![SymExpr::sym("i0"), SymExpr::Int(0)]
        );
        assert_eq!(source_index(&dims(&[3]), &idx), vec![SymExpr::sym("i1")]);
    }

    #[test]
    fn unidirectional_requires_target_dims() {
        let to = dims(&[4, 5]);
        assert!(check_unidirectional("Gemm", "C", &dims(&[5]), &to).is_ok());
        assert!(check_unidirectional("Gemm", "C", &dims(&[4, 1]), &to).is_ok());
        assert!(check_unidirectional("Gemm", "C", &dims(&[3, 5]), &to).is_err());
        assert!(check_unidirectional("Gemm", "C", &dims(&[1, 4, 5]), &to).is_err());
    }
}
