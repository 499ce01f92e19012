//! BatchNormalization in inference mode.

use super::expand::elementwise_index;
use super::window::{float_input, same_dim, tensor_input};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, Out};
use crate::ir::{BinOp, LibraryNode, Range, Schedule, Subset, SymExpr, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&BatchNormalization];

const NAME: &str = "BatchNormalization";

/// The per-channel inputs after X, in ONNX order.
const CHANNEL_INPUTS: [&str; 4] = ["scale", "bias B", "mean", "var"];

/// `Y = (X − mean[c]) / sqrt(var[c] + epsilon) · scale[c] + B[c]` over channel axis 1, with the
/// running statistics as inputs (inference mode). Only output 0 exists in that mode.
pub struct BatchNormalization;

/// Rejects the modes dmove does not implement and returns `epsilon`.
fn epsilon(node: &LibraryNode) -> Result<f64, OpError> {
    if node.int("training_mode").unwrap_or(0) != 0 {
        return Err(OpError::unsupported(
            NAME,
            "training_mode = 1 (batch statistics) is not supported; only inference",
        ));
    }
    if node.int("spatial") == Some(0) {
        return Err(OpError::unsupported(
            NAME,
            "spatial = 0 (per-activation statistics, opset < 9) is not supported",
        ));
    }
    Ok(node.float("epsilon").unwrap_or(1e-5))
}

/// X must have a channel axis.
fn check_rank(rank: usize) -> Result<(), OpError> {
    if rank < 2 {
        return Err(OpError::shape(
            NAME,
            format!("input X must have rank at least 2 (N, C, …), got rank {rank}"),
        ));
    }
    Ok(())
}

/// The factor and shift that normalisation reduces to per channel, as tasklet expressions:
/// `factor = scale / sqrt(var + ε)`, `shift = B − mean · factor`.
fn factor_and_shift(eps: f64) -> (TExpr, TExpr) {
    let factor = TExpr::binary(
        BinOp::Div,
        TExpr::input("scale"),
        TExpr::unary(
            UnOp::Sqrt,
            TExpr::binary(BinOp::Add, TExpr::input("var"), TExpr::Const(eps)),
        ),
    );
    let shift = TExpr::binary(
        BinOp::Sub,
        TExpr::input("b"),
        TExpr::binary(BinOp::Mul, TExpr::input("mean"), factor.clone()),
    );
    (factor, shift)
}

impl Operator for BatchNormalization {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (5, 5)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        epsilon(node)?;
        let x = float_input(NAME, inputs, 0, "input X")?;
        check_rank(x.shape.len())?;
        let channels = &x.shape[1];
        for (i, what) in CHANNEL_INPUTS.iter().enumerate() {
            let t = float_input(NAME, inputs, i + 1, what)?;
            let bad = || format!("{what} has shape {:?}, expected [{channels}]", t.shape);
            if t.shape.len() != 1 {
                return Err(OpError::shape(NAME, bad()));
            }
            same_dim(NAME, &t.shape[0], channels, bad)?;
        }
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let eps = epsilon(node)?;
        let x = tensor_input(NAME, inputs, 0, "input X")?;
        check_rank(x.shape.len())?;
        let per_channel = CHANNEL_INPUTS
            .iter()
            .enumerate()
            .map(|(i, what)| tensor_input(NAME, inputs, i + 1, what))
            .collect::<Result<Vec<_>, _>>()?;
        let [scale, b, mean, var] = per_channel[..] else {
            return Err(OpError::shape(NAME, "expected four per-channel inputs"));
        };
        let channels = x.shape[1];
        if per_channel.iter().any(|t| t.shape != [channels]) {
            return Err(OpError::shape(
                NAME,
                format!("per-channel inputs must all have shape [{channels}]"),
            ));
        }
        let inner: usize = x.shape[2..].iter().product();
        let y: Vec<f64> = (0..x.len())
            .map(|i| {
                let c = (i / inner) % channels;
                (x.get_f64(i) - mean.get_f64(c)) / (var.get_f64(c) + eps).sqrt() * scale.get_f64(c)
                    + b.get_f64(c)
            })
            .collect();
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    /// A per-channel map folding the statistics into a factor and a shift (transients), then an
    /// elementwise map `Y = X · factor[c] + shift[c]`.
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let eps = epsilon(ctx.node)?;
        let (x, xd) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let names = (1..=4)
            .map(|i| ctx.input(i).map(|(n, _)| n.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        check_rank(xd.shape.len())?;
        let channels = xd.shape[1].clone();
        let label = ctx.label.clone();
        let factor = ctx
            .b
            .transient(&format!("{label}_factor"), xd.dtype, vec![channels.clone()]);
        let shift = ctx
            .b
            .transient(&format!("{label}_shift"), xd.dtype, vec![channels.clone()]);
        let (factor_expr, shift_expr) = factor_and_shift(eps);
        let at_c = || Subset::element([SymExpr::sym("c")]);
        ctx.b.map(
            &format!("{label}_fold"),
            vec![("c", Range::upto(channels))],
            Schedule::Sequential,
            |b| {
                let ins = ["scale", "b", "mean", "var"]
                    .iter()
                    .zip(&names)
                    .map(|(conn, data)| In(conn, data, at_c()))
                    .collect();
                b.tasklet(
                    "fold",
                    ins,
                    vec![
                        Out("f", &factor, at_c(), None, factor_expr),
                        Out("s", &shift, at_c(), None, shift_expr),
                    ],
                );
            },
        );

        let (params, idx) = elementwise_index(&xd.shape);
        let c = Subset::element([idx[1].clone()]);
        let params_ref = params
            .iter()
            .map(|(n, r)| (n.as_str(), r.clone()))
            .collect();
        ctx.b.map(
            &format!("{label}_apply"),
            params_ref,
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "affine",
                    vec![
                        In("x", &x, Subset::element(idx.clone())),
                        In("f", &factor, c.clone()),
                        In("s", &shift, c),
                    ],
                    vec![Out(
                        "y",
                        &y,
                        Subset::element(idx.clone()),
                        None,
                        TExpr::binary(
                            BinOp::Add,
                            TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::input("f")),
                            TExpr::input("s"),
                        ),
                    )],
                );
            },
        );
        Ok(())
    }

    /// Two operations per element (multiply-add) plus five per channel to fold the statistics.
    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        let Some(Some(shape)) = inputs
            .first()
            .map(|t| t.as_ref().and_then(|t| t.static_shape()))
        else {
            return 0;
        };
        let channels = shape.get(1).copied().unwrap_or(0);
        (2 * shape.iter().product::<usize>() + 5 * channels) as u64
    }
}
