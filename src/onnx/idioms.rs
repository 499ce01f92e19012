//! Exporter idioms the importer resolves itself instead of keeping them as library nodes:
//! `Shape`/`Size` of a statically shaped tensor (the head of every PyTorch shape subgraph),
//! `Identity` and inference-mode `Dropout` (pure renamings), and the check that every input
//! dimension has a value before code generation.

use super::error::OnnxError;
use crate::ir::{Attr, Buffer, Program, SymExpr, Tensor};
use crate::ops::TensorType;
use std::collections::BTreeMap;

/// Operators the importer handles without the operator library: `Constant` always, `Dropout`
/// as a renaming, `Shape`/`Size` when their input's shape is static (otherwise the library
/// must provide them), and the control flow it inlines (`If`, `Loop`, `Scan`; see
/// `import::control`).
pub const IMPORTER_HANDLED: [&str; 7] =
    ["Constant", "Dropout", "Shape", "Size", "If", "Loop", "Scan"];

/// The value of `Shape` or `Size` computed from the input's type alone, or `None` when the
/// operator is another one or the shape is not static. `Shape`'s `start`/`end` (opset 15) are
/// clamped to the rank after adding it to negative values, as the specification says.
pub fn shape_from_type(
    op: &str,
    attrs: &BTreeMap<String, Attr>,
    input: &TensorType,
) -> Option<Tensor> {
    let dims: Vec<i64> = input
        .static_shape()?
        .into_iter()
        .map(|d| i64::try_from(d).ok())
        .collect::<Option<_>>()?;
    let rank = dims.len() as i64;
    let bound = |name: &str, default: i64| {
        let v = match attrs.get(name) {
            Some(Attr::Int(v)) => *v,
            _ => default,
        };
        let v = if v < 0 { v.saturating_add(rank) } else { v };
        // Clamped to 0..=rank, so the cast to usize is exact.
        v.clamp(0, rank) as usize
    };
    match op {
        "Shape" => {
            let (start, end) = (bound("start", 0), bound("end", rank));
            let kept = dims[start..end.max(start)].to_vec();
            Some(Tensor::i64(vec![kept.len()], kept))
        }
        "Size" => Some(Tensor::i64(vec![], vec![dims.iter().product()])),
        _ => None,
    }
}

/// Why a `Dropout` node cannot be treated as the identity, or `None` when it can: it runs in
/// inference mode (no `training_mode` input, or a constant false one) or drops nothing
/// (a constant `ratio` of 0). `consts` holds the values of constant inputs by position.
pub fn dropout_refusal(consts: &[Option<&Tensor>], present: &[bool]) -> Option<String> {
    let scalar = |i: usize| consts.get(i).copied().flatten().map(|t| t.get_f64(0));
    let training = match (present.get(2).copied().unwrap_or(false), scalar(2)) {
        (false, _) => false,
        (true, Some(v)) => v != 0.0,
        (true, None) => {
            return Some(
                "its `training_mode` input is not a constant; only inference is supported".into(),
            )
        }
    };
    // The default ratio is 0.5; only a constant 0 makes training mode the identity.
    let ratio_zero = present.get(1).copied().unwrap_or(false) && scalar(1) == Some(0.0);
    (training && !ratio_zero).then(|| {
        "it runs in training mode with a nonzero ratio (random masks are not supported)".into()
    })
}

/// `Dropout`'s mask output at inference: every element kept.
pub fn all_kept(shape: &[usize]) -> Tensor {
    Tensor {
        shape: shape.to_vec(),
        data: Buffer::Bool(vec![true; shape.iter().product()]),
    }
}

/// Checks that every dimension of every input has a value, naming the first input and
/// dimension that does not; code generation needs concrete sizes.
pub fn require_bound_inputs(p: &Program) -> Result<(), OnnxError> {
    let env = p.symbol_values();
    for input in &p.inputs {
        let Some(desc) = p.data.get(input) else {
            continue;
        };
        for (dim, expr) in desc.shape.iter().enumerate() {
            if let Some(symbol) = expr
                .free_symbols()
                .into_iter()
                .find(|s| !env.contains_key(s))
            {
                return Err(OnnxError::UnboundDimension {
                    input: input.clone(),
                    dim,
                    symbol,
                    shape: render_shape(&desc.shape),
                });
            }
        }
    }
    Ok(())
}

fn render_shape(shape: &[SymExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;

    fn ty(dims: &[i64]) -> TensorType {
        TensorType::new(DType::F32, dims.iter().map(|d| SymExpr::Int(*d)).collect())
    }

    #[test]
    fn shape_and_size_follow_the_specification() {
        let t = ty(&[2, 3, 5]);
        let none = BTreeMap::new();
        assert_eq!(
            shape_from_type("Shape", &none, &t),
            Some(Tensor::i64(vec![3], vec![2, 3, 5]))
        );
        let sliced = BTreeMap::from([("start".to_string(), Attr::Int(-2))]);
        assert_eq!(
            shape_from_type("Shape", &sliced, &t),
            Some(Tensor::i64(vec![2], vec![3, 5]))
        );
        let empty = BTreeMap::from([
            ("start".to_string(), Attr::Int(2)),
            ("end".to_string(), Attr::Int(1)),
        ]);
        assert_eq!(
            shape_from_type("Shape", &empty, &t),
            Some(Tensor::i64(vec![0], vec![]))
        );
        assert_eq!(
            shape_from_type("Size", &none, &t),
            Some(Tensor::i64(vec![], vec![30]))
        );
        let symbolic = TensorType::new(DType::F32, vec![SymExpr::sym("N")]);
        assert_eq!(shape_from_type("Shape", &none, &symbolic), None);
        assert_eq!(shape_from_type("Relu", &none, &t), None);
    }

    #[test]
    fn dropout_is_the_identity_only_at_inference_or_ratio_zero() {
        let f = Tensor::f32(vec![], vec![0.0]);
        let half = Tensor::f32(vec![], vec![0.5]);
        let yes = Tensor {
            shape: vec![],
            data: Buffer::Bool(vec![true]),
        };
        assert_eq!(dropout_refusal(&[None], &[true]), None);
        assert_eq!(dropout_refusal(&[None, Some(&half)], &[true, true]), None);
        assert!(dropout_refusal(&[None, None, Some(&yes)], &[true, false, true]).is_some());
        assert!(dropout_refusal(&[None, Some(&half), Some(&yes)], &[true, true, true]).is_some());
        assert_eq!(
            dropout_refusal(&[None, Some(&f), Some(&yes)], &[true, true, true]),
            None
        );
        assert!(dropout_refusal(&[None, None, None], &[true, false, true]).is_some());
    }
}
