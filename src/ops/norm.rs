//! LayerNormalization and RMSNormalization.
//!
//! LayerNormalization normalises over the trailing dimensions from `axis` (default −1):
//! `Y = (X − mean) · invstd · Scale + B` with `invstd = 1 / √(var + ε)` (population variance).
//! The optional outputs Mean and InvStdDev keep the normalised dimensions with extent 1.
//!
//! The expansion reduces twice (mean, then the variance around it, which is more accurate than
//! `E[x²] − E[x]²` in single precision), computes `invstd` per group and normalises in one
//! pointwise map. The statistics live in the node's Mean / InvStdDev outputs when it has them,
//! else in transients.
//!
//! RMSNormalization (opset 23) scales by the root mean square instead, with no centring and no
//! bias: `Y = X / √(mean(X²) + ε) · Scale` over the same trailing dimensions. Its expansion is one
//! wcr-sum pass for `mean(X²)` per group and one pointwise map.

use super::broadcast::{check_unidirectional, source_index, source_offsets};
use super::reduce::divide_by;
use super::support::{
    arg, dim_product, element_map, fill_map, input_type, opt_arg, params_over, per_output_element,
    require_float, resolve_axis, same_dtype, Moments, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, Range, SymExpr, TExpr, Tensor, UnOp, Wcr};

pub static OPS: &[&dyn Operator] = &[&LayerNormalization, &RMSNormalization];

/// ONNX's code for `float`, the only supported `stash_type`.
const STASH_FLOAT: i64 = 1;

/// `LayerNormalization(X, Scale, B?) -> (Y, Mean?, InvStdDev?)`.
pub struct LayerNormalization;

/// Validated attributes.
struct Attrs {
    axis: usize,
    epsilon: f64,
}

/// How a normalization over the dimensions from `axis` groups the elements of X in an
/// expansion: the statistics' shape (normalised dimensions kept with extent 1), the map
/// parameters over X and their symbols, each element's statistics index, elements per group.
struct Groups {
    stat_shape: Vec<SymExpr>,
    params: Vec<(String, Range)>,
    idx: Vec<SymExpr>,
    stat_idx: Vec<SymExpr>,
    count: SymExpr,
}

impl Attrs {
    fn groups(&self, shape: &[SymExpr]) -> Groups {
        let rank = shape.len();
        let mut stat_shape = shape[..self.axis].to_vec();
        stat_shape.resize(rank, SymExpr::Int(1));
        let (params, idx) = params_over("i", shape);
        let mut stat_idx = idx[..self.axis].to_vec();
        stat_idx.resize(rank, SymExpr::Int(0));
        Groups {
            stat_shape,
            params,
            idx,
            stat_idx,
            count: dim_product(&shape[self.axis..]),
        }
    }

    /// The attributes both normalizations share (`axis`, `epsilon`, `stash_type`), checked for
    /// operator `op`. Only `stash_type = 1` is accepted: statistics are computed in at least
    /// single precision, which is what it asks for.
    fn read(op: &str, node: &LibraryNode, rank: usize) -> Result<Attrs, OpError> {
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
        let at = Attrs::read(op, node, x.shape.len())?;
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
        let at = Attrs::read(op, node, x.shape.len())?;
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
        let at = Attrs::read(self.name(), ctx.node, desc.shape.len())?;
        let label = ctx.label.clone();
        let Groups {
            stat_shape,
            params,
            idx,
            stat_idx,
            count: n,
        } = at.groups(&desc.shape);

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
        per_output_element(outputs, 10)
    }
}

/// `RMSNormalization(X, scale) -> Y`.
pub struct RMSNormalization;

impl Operator for RMSNormalization {
    fn name(&self) -> &'static str {
        "RMSNormalization"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
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
        Attrs::read(op, node, x.shape.len())?;
        let scale = input_type(op, inputs, 1)?;
        same_dtype(op, x, scale, 1)?;
        check_unidirectional(op, "scale", &scale.shape, &x.shape)?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name();
        let x = arg(op, inputs, 0)?;
        let scale = arg(op, inputs, 1)?;
        let at = Attrs::read(op, node, x.shape.len())?;
        let n: usize = x.shape[at.axis..].iter().product();
        let scale_src = source_offsets(&scale.shape, &x.shape);
        let mut y = vec![0.0; x.len()];
        for row in (0..x.len()).step_by(n.max(1)).map(|o| o..o + n) {
            let mean_square = row.clone().map(|e| x.get_f64(e).powi(2)).sum::<f64>() / n as f64;
            let rms = (mean_square + at.epsilon).sqrt();
            for e in row {
                y[e] = x.get_f64(e) / rms * scale.get_f64(scale_src[e]);
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (scale, scale_desc) = ctx.input(1)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let at = Attrs::read(self.name(), ctx.node, desc.shape.len())?;
        let label = ctx.label.clone();
        let Groups {
            stat_shape,
            params,
            idx,
            stat_idx,
            count: n,
        } = at.groups(&desc.shape);
        let ms = ctx.b.transient(
            &format!("{label}_mean_square"),
            DType::F32,
            stat_shape.clone(),
        );
        let b = &mut *ctx.b;
        fill_map(b, &format!("{label}_ms_init"), &ms, &stat_shape, 0.0);
        let xi = || Read::new("x", &x, idx.clone());
        let square = TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::input("x"));
        let dst = (ms.as_str(), stat_idx.clone());
        let value = divide_by(square, &n);
        element_map(
            b,
            &format!("{label}_ms"),
            &params,
            vec![xi()],
            dst,
            Some(Wcr::Sum),
            value,
        );
        let reads = vec![
            xi(),
            Read::new("m", &ms, stat_idx),
            Read::new("g", &scale, source_index(&scale_desc.shape, &idx)),
        ];
        let plus_eps = TExpr::binary(BinOp::Add, TExpr::input("m"), TExpr::Const(at.epsilon));
        let inv = TExpr::unary(UnOp::Recip, TExpr::unary(UnOp::Sqrt, plus_eps));
        let scaled = TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::input("g"));
        let value = TExpr::binary(BinOp::Mul, scaled, inv);
        element_map(
            b,
            &format!("{label}_norm"),
            &params,
            reads,
            (&y, idx),
            None,
            value,
        );
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        // Per element: the square accumulated (3) and the scaling (4).
        per_output_element(outputs, 7)
    }
}
