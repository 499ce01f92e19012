//! BatchNormalization in inference mode (running statistics as inputs) and in training mode
//! (`training_mode = 1`: statistics of the batch, and the updated running statistics as outputs
//! 1 and 2).

use super::expand::elementwise_index;
use super::support::{dim_product, element_map, Moments, Read};
use super::window::{float_input, same_dim, tensor_input};
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, Out};
use crate::ir::{BinOp, LibraryNode, Range, Schedule, Subset, SymExpr, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&BatchNormalization];

const NAME: &str = "BatchNormalization";

/// The per-channel inputs after X, in ONNX order.
const CHANNEL_INPUTS: [&str; 4] = ["scale", "bias B", "mean", "var"];

/// `Y = (X − mean[c]) / sqrt(var[c] + epsilon) · scale[c] + B[c]` over channel axis 1. In
/// inference mode `mean` and `var` are the inputs and Y is the only output. In training mode
/// they are the batch's own (population) mean and variance over every axis but 1, and outputs 1
/// and 2 are the running statistics `input · momentum + batch · (1 − momentum)`.
pub struct BatchNormalization;

/// The attributes that decide what the operator computes.
struct Mode {
    epsilon: f64,
    /// `Some(momentum)` in training mode.
    training: Option<f64>,
}

/// Reads the mode, rejecting what dmove does not implement.
fn mode(node: &LibraryNode) -> Result<Mode, OpError> {
    if node.int("spatial") == Some(0) {
        return Err(OpError::unsupported(
            NAME,
            "spatial = 0 (per-activation statistics, opset < 9) is not supported",
        ));
    }
    let training = match node.int("training_mode").unwrap_or(0) {
        0 => None,
        1 => Some(node.float("momentum").unwrap_or(0.9)),
        v => {
            return Err(OpError::attr(
                NAME,
                "training_mode",
                format!("{v} is neither 0 nor 1"),
            ))
        }
    };
    Ok(Mode {
        epsilon: node.float("epsilon").unwrap_or(1e-5),
        training,
    })
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

/// The shift that normalisation reduces to per channel given its factor (a tasklet expression
/// over connectors `b` and `mean`): `shift = B − mean · factor`.
fn shift_of(factor: &TExpr) -> TExpr {
    TExpr::binary(
        BinOp::Sub,
        TExpr::input("b"),
        TExpr::binary(BinOp::Mul, TExpr::input("mean"), factor.clone()),
    )
}

/// Population mean and variance of every channel of `x` (over all axes but 1).
fn batch_moments(x: &Tensor, channels: usize, inner: usize) -> (Vec<f64>, Vec<f64>) {
    let count = (x.len() / channels.max(1)) as f64;
    let channel_of = |i: usize| (i / inner) % channels;
    let mut mean = vec![0.0; channels];
    for i in 0..x.len() {
        mean[channel_of(i)] += x.get_f64(i);
    }
    mean.iter_mut().for_each(|m| *m /= count);
    let mut var = vec![0.0; channels];
    for i in 0..x.len() {
        let c = channel_of(i);
        var[c] += (x.get_f64(i) - mean[c]).powi(2);
    }
    var.iter_mut().for_each(|v| *v /= count);
    (mean, var)
}

impl BatchNormalization {
    /// Training mode's outputs 1 and 2 (those the node has): `running · momentum + batch ·
    /// (1 − momentum)` per channel, from input statistics 3 and 4 and the batch statistics.
    fn running_statistics(
        &self,
        ctx: &mut ExpandCtx,
        momentum: f64,
        batch: [&str; 2],
    ) -> Result<(), OpError> {
        let (params, idx) = elementwise_index(std::slice::from_ref(&ctx.input(0)?.1.shape[1]));
        for (k, stat) in batch.into_iter().enumerate() {
            let Some((out, _)) = ctx.outputs.get(k + 1).cloned().flatten() else {
                continue;
            };
            let (running, _) = ctx.input(k + 3)?.clone();
            let reads = vec![
                Read::new("r", &running, idx.clone()),
                Read::new("s", stat, idx.clone()),
            ];
            let value = TExpr::binary(
                BinOp::Add,
                TExpr::binary(BinOp::Mul, TExpr::input("r"), TExpr::Const(momentum)),
                TExpr::binary(BinOp::Mul, TExpr::input("s"), TExpr::Const(1.0 - momentum)),
            );
            let label = format!("{}_running{k}", ctx.label);
            element_map(
                ctx.b,
                &label,
                &params,
                reads,
                (&out, idx.clone()),
                None,
                value,
            );
        }
        Ok(())
    }
}

impl Operator for BatchNormalization {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (5, 5)
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
        let mode = mode(node)?;
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
        let mut out = vec![x.clone()];
        if mode.training.is_some() {
            // The running statistics have the type of the input statistics.
            for i in [3, 4] {
                out.push(float_input(NAME, inputs, i, CHANNEL_INPUTS[i - 1])?.clone());
            }
        }
        Ok(out)
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let mode = mode(node)?;
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
        let (stat_mean, stat_var) = match mode.training {
            Some(_) => batch_moments(x, channels, inner),
            None => (mean.to_f64_vec(), var.to_f64_vec()),
        };
        let y: Vec<f64> = (0..x.len())
            .map(|i| {
                let c = (i / inner) % channels;
                (x.get_f64(i) - stat_mean[c]) / (stat_var[c] + mode.epsilon).sqrt()
                    * scale.get_f64(c)
                    + b.get_f64(c)
            })
            .collect();
        let mut out = vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)];
        if let Some(momentum) = mode.training {
            for (running, batch) in [(mean, &stat_mean), (var, &stat_var)] {
                let updated: Vec<f64> = (0..channels)
                    .map(|c| running.get_f64(c) * momentum + batch[c] * (1.0 - momentum))
                    .collect();
                out.push(Tensor::from_f64(running.dtype(), vec![channels], &updated));
            }
        }
        Ok(out)
    }

    /// In training mode first the batch statistics (the shared normalization statistics
    /// pass). Then a per-channel map folding the statistics into a factor and a shift
    /// (transients), and an elementwise map `Y = X · factor[c] + shift[c]`; in training mode a
    /// per-channel map for each running statistic the node outputs.
    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let mode = mode(ctx.node)?;
        let (x, xd) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let names = (1..=4)
            .map(|i| ctx.input(i).map(|(n, _)| n.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        check_rank(xd.shape.len())?;
        let channels = xd.shape[1].clone();
        let label = ctx.label.clone();
        let (params, idx) = elementwise_index(&xd.shape);
        let per_channel = |b: &mut crate::ir::build::ScopeBuilder, what: &str| {
            b.transient(&format!("{label}_{what}"), xd.dtype, vec![channels.clone()])
        };
        // The statistics the fold reads as (connector, container), and its factor.
        let (stats, factor_expr) = match mode.training {
            None => {
                let sd = TExpr::unary(
                    UnOp::Sqrt,
                    TExpr::binary(BinOp::Add, TExpr::input("var"), TExpr::Const(mode.epsilon)),
                );
                let factor = TExpr::binary(BinOp::Div, TExpr::input("scale"), sd);
                (
                    [("mean", names[2].clone()), ("var", names[3].clone())],
                    factor,
                )
            }
            Some(momentum) => {
                let [mean, var, inv] = ["mean", "var", "invstd"].map(|w| per_channel(ctx.b, w));
                let mut others: Vec<SymExpr> = xd.shape.clone();
                others.remove(1);
                Moments {
                    x: &x,
                    x_idx: &idx,
                    params: &params,
                    stat_shape: std::slice::from_ref(&channels),
                    stat_idx: std::slice::from_ref(&idx[1]),
                    count: &dim_product(&others),
                    epsilon: mode.epsilon,
                }
                .append(ctx.b, &format!("{label}_batch"), [&mean, &var, &inv]);
                let factor = TExpr::binary(BinOp::Mul, TExpr::input("scale"), TExpr::input("inv"));
                self.running_statistics(ctx, momentum, [&mean, &var])?;
                ([("mean", mean), ("inv", inv)], factor)
            }
        };
        let factor = per_channel(ctx.b, "factor");
        let shift = per_channel(ctx.b, "shift");
        let shift_expr = shift_of(&factor_expr);
        let at_c = || Subset::element([SymExpr::sym("c")]);
        ctx.b.map(
            &format!("{label}_fold"),
            vec![("c", Range::upto(channels))],
            Schedule::Sequential,
            |b| {
                let mut ins = vec![In("scale", &names[0], at_c()), In("b", &names[1], at_c())];
                ins.extend(stats.iter().map(|(conn, data)| In(conn, data, at_c())));
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
