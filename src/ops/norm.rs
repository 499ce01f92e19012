//! LayerNormalization.
//!
//! Normalises over the trailing dimensions from `axis` (default −1):
//! `Y = (X − mean) · invstd · Scale + B` with `invstd = 1 / √(var + ε)` (population variance).
//! The optional outputs Mean and InvStdDev keep the normalised dimensions with extent 1.
//!
//! The expansion reduces twice (mean, then the variance around it, which is more accurate than
//! `E[x²] − E[x]²` in single precision), computes `invstd` per group and normalises in one
//! pointwise map. The statistics live in the node's Mean / InvStdDev outputs when it has them,
//! else in transients.

use super::broadcast::{check_unidirectional, source_index, source_offsets};
use super::support::{
    arg, dim_product, element_map, input_type, opt_arg, params_over, require_float, resolve_axis,
    same_dtype, Moments, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&LayerNormalization];

/// ONNX's code for `float`, the only supported `stash_type`.
const STASH_FLOAT: i64 = 1;

/// `LayerNormalization(X, Scale, B?) -> (Y, Mean?, InvStdDev?)`.
pub struct LayerNormalization;

/// Validated attributes.
struct Attrs {
    axis: usize,
    epsilon: f64,
}

impl LayerNormalization {
    fn attrs(node: &LibraryNode, rank: usize) -> Result<Attrs, OpError> {
        let op = "LayerNormalization";
        if rank == 0 {
            return Err(OpError::shape(op, "input X must have rank at least 1"));
        }
        let stash = node.int("stash_type").unwrap_or(STASH_FLOAT);
        if stash != STASH_FLOAT {
            return Err(OpError::attr(
                op,
                "stash_type",
                format!("only 1 (float) is supported, got {stash}"),
            ));
        }
        let axis = resolve_axis(op, "axis", node.int("axis").unwrap_or(-1), rank, false)?;
        let epsilon = node.float("epsilon").unwrap_or(1e-5);
        if epsilon.is_nan() || epsilon < 0.0 {
            return Err(OpError::attr(
                op,
                "epsilon",
                format!("must be non-negative, got {epsilon}"),
            ));
        }
        Ok(Attrs { axis, epsilon })
    }
}

impl Operator for LayerNormalization {
    fn name(&self) -> &'static str {
        "LayerNormalization"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 3)
    }

    fn output_count(&self) -> usize {
        3
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name();
        let x = input_type(op, inputs, 0)?;
        require_float(op, x)?;
        let at = Self::attrs(node, x.shape.len())?;
        let scale = input_type(op, inputs, 1)?;
        same_dtype(op, x, scale, 1)?;
        check_unidirectional(op, "Scale", &scale.shape, &x.shape)?;
        if let Some(Some(b)) = inputs.get(2) {
            same_dtype(op, x, b, 2)?;
            check_unidirectional(op, "B", &b.shape, &x.shape)?;
        }
        let mut stat = x.shape[..at.axis].to_vec();
        stat.resize(x.shape.len(), SymExpr::Int(1));
        let stat = TensorType::new(DType::F32, stat);
        Ok(vec![x.clone(), stat.clone(), stat])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let x = arg(op, inputs, 0)?;
        let scale = arg(op, inputs, 1)?;
        let at = Self::attrs(node, x.shape.len())?;
        let outer: usize = x.shape[..at.axis].iter().product();
        let n: usize = x.shape[at.axis..].iter().product();
        let scale_src = source_offsets(&scale.shape, &x.shape);
        let bias = opt_arg(inputs, 2).map(|b| (b, source_offsets(&b.shape, &x.shape)));
        let mut y = vec![0.0; x.len()];
        let (mut means, mut invs) = (Vec::with_capacity(outer), Vec::with_capacity(outer));
        for o in 0..outer {
            let row = o * n..(o + 1) * n;
            let mean = row.clone().map(|e| x.get_f64(e)).sum::<f64>() / n as f64;
            let var = row
                .clone()
                .map(|e| (x.get_f64(e) - mean).powi(2))
                .sum::<f64>()
                / n as f64;
            let inv = 1.0 / (var + at.epsilon).sqrt();
            for e in row {
                let shift = bias.as_ref().map_or(0.0, |(b, src)| b.get_f64(src[e]));
                y[e] = (x.get_f64(e) - mean) * inv * scale.get_f64(scale_src[e]) + shift;
            }
            means.push(mean);
            invs.push(inv);
        }
        let mut stat_shape = x.shape[..at.axis].to_vec();
        stat_shape.resize(x.shape.len(), 1);
        Ok(vec![
            Tensor::from_f64(x.dtype(), x.shape.clone(), &y),
            Tensor::from_f64(DType::F32, stat_shape.clone(), &means),
            Tensor::from_f64(DType::F32, stat_shape, &invs),
        ])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (scale, scale_desc) = ctx.input(1)?.clone();
        let bias = ctx.inputs.get(2).cloned().flatten();
        let (y, _) = ctx.output(0)?.clone();
        let at = Self::attrs(ctx.node, desc.shape.len())?;
        let label = ctx.label.clone();
        let rank = desc.shape.len();
        let mut stat_shape = desc.shape[..at.axis].to_vec();
        stat_shape.resize(rank, SymExpr::Int(1));
        let (params, idx) = params_over("i", &desc.shape);
        let mut stat_idx = idx[..at.axis].to_vec();
        stat_idx.resize(rank, SymExpr::Int(0));
        let n = dim_product(&desc.shape[at.axis..]);

        let mut stat = |i: usize, suffix: &str| match ctx.outputs.get(i).and_then(|x| x.as_ref()) {
            Some((name, _)) => name.clone(),
            None => ctx
                .b
                .transient(&format!("{label}_{suffix}"), DType::F32, stat_shape.clone()),
        };
        let mean = stat(1, "mean");
        let inv = stat(2, "invstd");
        let var = ctx
            .b
            .transient(&format!("{label}_var"), DType::F32, stat_shape.clone());
        let b = &mut *ctx.b;
        let stats = Moments {
            x: &x,
            x_idx: &idx,
            params: &params,
            stat_shape: &stat_shape,
            stat_idx: &stat_idx,
            count: &n,
            epsilon: at.epsilon,
        };
        stats.append(b, &label, [&mean, &var, &inv]);
        let (mut reads, centred) = stats.centred(&mean);

        reads.extend([
            Read::new("r", &inv, stat_idx.clone()),
            Read::new("g", &scale, source_index(&scale_desc.shape, &idx)),
        ]);
        let normed = TExpr::binary(BinOp::Mul, centred, TExpr::input("r"));
        let mut value = TExpr::binary(BinOp::Mul, normed, TExpr::input("g"));
        if let Some((bname, bdesc)) = &bias {
            reads.push(Read::new("c", bname, source_index(&bdesc.shape, &idx)));
            value = TExpr::binary(BinOp::Add, value, TExpr::input("c"));
        }
        element_map(
            b,
            &format!("{label}_norm"),
            &params,
            reads,
            (&y, idx.clone()),
            None,
            value,
        );
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        // Per element: mean (2), variance (4), normalisation (4); invstd is per group.
        outputs
            .first()
            .and_then(TensorType::static_shape)
            .map_or(0, |s| 10 * s.iter().product::<usize>() as u64)
    }
}
