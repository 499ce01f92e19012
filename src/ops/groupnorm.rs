//! InstanceNormalization and GroupNormalization.
//!
//! Both normalise `X[N, C, D…]` with statistics over a group of channels and every spatial
//! position: `Y = (X − mean) / √(var + ε) · scale + bias` (population variance). Instance
//! normalisation is the case of one channel per group, with per-channel scale and bias.
//! GroupNormalization's scale and bias are per group in opset 18 and per channel from opset 21;
//! the shape of the tensors given decides which (when `C = num_groups` the two agree).
//!
//! The expansion views the channel axis as `(group g, channel within group j)` so that every
//! index stays affine (`c = g·C/G + j`): a mean reduction into `[N, G]`, a variance reduction
//! around that mean (more accurate in single precision than `E[x²] − E[x]²`), the inverse
//! standard deviation per group, and one pointwise normalisation map.

use super::support::{dim_product, element_map, params_over, sym_shape, Moments, Read};
use super::window::{float_input, multi_indices, offset, static_dims, tensor_input};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, Range, SymExpr, TExpr, Tensor};

/// `InstanceNormalization(X, scale[C], B[C])` and `GroupNormalization(X, scale, bias)`.
pub static OPS: &[&dyn Operator] = &[&INSTANCE_NORMALIZATION, &GROUP_NORMALIZATION];

/// ONNX's code for `float`, the only supported `stash_type`.
const STASH_FLOAT: i64 = 1;

/// How the channels of one application are grouped and how scale / bias are indexed.
struct Grouping {
    groups: SymExpr,
    per_group: SymExpr,
    /// Per input 1 (scale) and 2 (bias): indexed by channel (`true`) or by group.
    per_channel: [bool; 2],
    epsilon: f64,
}

/// Checks `X` and returns its channel count.
fn check_x<'a>(op: &str, x: &'a [SymExpr]) -> Result<&'a SymExpr, OpError> {
    x.get(1).filter(|_| x.len() >= 3).ok_or_else(|| {
        OpError::shape(
            op,
            format!(
                "input X must have rank at least 3 (N, C, spatial…), got rank {}",
                x.len()
            ),
        )
    })
}

fn epsilon(op: &str, node: &LibraryNode) -> Result<f64, OpError> {
    let e = node.float("epsilon").unwrap_or(1e-5);
    if e.is_nan() || e < 0.0 {
        return Err(OpError::attr(
            op,
            "epsilon",
            format!("must be non-negative, got {e}"),
        ));
    }
    Ok(e)
}

/// The shape of a scale / bias operand as written in messages.
fn shown(s: &[SymExpr]) -> String {
    let dims: Vec<String> = s.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(", "))
}

impl Grouping {
    /// InstanceNormalization: one channel per group, per-channel scale and bias.
    fn instance(
        node: &LibraryNode,
        x: &[SymExpr],
        params: [&[SymExpr]; 2],
    ) -> Result<Self, OpError> {
        let op = "InstanceNormalization";
        let c = check_x(op, x)?;
        for (what, p) in ["scale", "B"].into_iter().zip(params) {
            if p.len() != 1 || (&p[0] - c).simplify() != SymExpr::Int(0) {
                return Err(OpError::shape(
                    op,
                    format!("{what} has shape {} but X has {c} channels", shown(p)),
                ));
            }
        }
        Ok(Grouping {
            groups: c.clone(),
            per_group: SymExpr::Int(1),
            per_channel: [true, true],
            epsilon: epsilon(op, node)?,
        })
    }

    /// GroupNormalization: `num_groups` groups of `C / num_groups` channels; scale and bias of
    /// either `num_groups` (opset 18) or `C` (opset 21) elements.
    fn group(node: &LibraryNode, x: &[SymExpr], params: [&[SymExpr]; 2]) -> Result<Self, OpError> {
        let op = "GroupNormalization";
        let c = static_dims(op, "the channel count", &[check_x(op, x)?.clone()])?[0];
        let g = node
            .int("num_groups")
            .ok_or_else(|| OpError::attr(op, "num_groups", "is required"))?;
        if g < 1 || c % g != 0 {
            return Err(OpError::attr(
                op,
                "num_groups",
                format!("{g} does not divide the {c} channels of X into equal groups"),
            ));
        }
        let stash = node.int("stash_type").unwrap_or(STASH_FLOAT);
        if stash != STASH_FLOAT {
            return Err(OpError::attr(
                op,
                "stash_type",
                format!("only 1 (float) is supported, got {stash}"),
            ));
        }
        let mut per_channel = [true; 2];
        for ((what, p), slot) in ["scale", "bias"]
            .into_iter()
            .zip(params)
            .zip(&mut per_channel)
        {
            *slot = match p {
                [n] if *n == SymExpr::Int(c) => true,
                [n] if *n == SymExpr::Int(g) => false,
                _ => {
                    return Err(OpError::shape(
                        op,
                        format!(
                            "{what} has shape {} but must have num_groups = {g} or C = {c} \
                             elements",
                            shown(p)
                        ),
                    ))
                }
            };
        }
        Ok(Grouping {
            groups: SymExpr::Int(g),
            per_group: SymExpr::Int(c / g),
            per_channel,
            epsilon: epsilon(op, node)?,
        })
    }
}

/// How an operator groups the channels of X, from its node and the shapes of X, scale, bias.
type GroupingRule = fn(&LibraryNode, &[SymExpr], [&[SymExpr]; 2]) -> Result<Grouping, OpError>;

/// A normalisation over groups of channels; `grouping` is what distinguishes the operators.
pub struct Normalization {
    name: &'static str,
    grouping: GroupingRule,
}

static INSTANCE_NORMALIZATION: Normalization = Normalization {
    name: "InstanceNormalization",
    grouping: Grouping::instance,
};

static GROUP_NORMALIZATION: Normalization = Normalization {
    name: "GroupNormalization",
    grouping: Grouping::group,
};

impl Operator for Normalization {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = float_input(self.name, inputs, 0, "input X")?;
        let scale = float_input(self.name, inputs, 1, "scale")?;
        let bias = float_input(self.name, inputs, 2, "bias")?;
        for t in [scale, bias] {
            if t.dtype != x.dtype {
                return Err(OpError::shape(
                    self.name,
                    format!(
                        "scale and bias must have X's type {}, got {}",
                        x.dtype, t.dtype
                    ),
                ));
            }
        }
        (self.grouping)(node, &x.shape, [&scale.shape, &bias.shape])?;
        Ok(vec![x.clone()])
    }

    /// Straightforward loops: for every (n, group), the mean and variance of its values in `f64`,
    /// then each element normalised with its channel's or group's scale and bias.
    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let x = tensor_input(self.name, inputs, 0, "input X")?;
        let scale = tensor_input(self.name, inputs, 1, "scale")?;
        let bias = tensor_input(self.name, inputs, 2, "bias")?;
        let sym = |t: &Tensor| sym_shape(&t.shape);
        let grouping = (self.grouping)(node, &sym(x), [&sym(scale), &sym(bias)])?;
        let cpg = grouping.per_group.as_int().unwrap_or(1) as usize;
        // Zero channels make zero groups (and no division by zero).
        let groups = x.shape[1] / cpg.max(1);
        let spatial: usize = x.shape[2..].iter().product();
        let strides = x.strides();
        let mut y = vec![0.0; x.len()];
        for n in 0..x.shape[0] {
            for g in 0..groups {
                let members: Vec<(usize, usize)> = multi_indices(&[cpg, spatial])
                    .map(|v| {
                        let c = g * cpg + v[0];
                        (c, offset(&strides[..2], &[n, c]) + v[1])
                    })
                    .collect();
                let count = members.len() as f64;
                let mean = members.iter().map(|&(_, e)| x.get_f64(e)).sum::<f64>() / count;
                let var = members
                    .iter()
                    .map(|&(_, e)| (x.get_f64(e) - mean).powi(2))
                    .sum::<f64>()
                    / count;
                let inv = 1.0 / (var + grouping.epsilon).sqrt();
                let param = |t: &Tensor, k: usize, c: usize| {
                    t.get_f64(if grouping.per_channel[k] { c } else { g })
                };
                for &(c, e) in &members {
                    y[e] = (x.get_f64(e) - mean) * inv * param(scale, 0, c) + param(bias, 1, c);
                }
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (scale, sd) = ctx.input(1)?.clone();
        let (bias, bd) = ctx.input(2)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let grouping = (self.grouping)(ctx.node, &xd.shape, [&sd.shape, &bd.shape])?;
        let label = ctx.label.clone();

        // Parameters (n, g, [j,] d…) with channel c = g·C/G + j; j is omitted for one channel
        // per group.
        let mut params: Vec<(String, Range)> = vec![
            ("n".into(), Range::upto(xd.shape[0].clone())),
            ("g".into(), Range::upto(grouping.groups.clone())),
        ];
        let (n, g) = (SymExpr::sym("n"), SymExpr::sym("g"));
        let c = if grouping.per_group == SymExpr::Int(1) {
            g.clone()
        } else {
            params.push(("j".into(), Range::upto(grouping.per_group.clone())));
            (&g * &grouping.per_group + SymExpr::sym("j")).simplify()
        };
        let (spatial_params, spatial) = params_over("d", &xd.shape[2..]);
        params.extend(spatial_params);
        let x_idx: Vec<SymExpr> = [n.clone(), c.clone()].into_iter().chain(spatial).collect();
        let stat_idx = vec![n, g.clone()];
        let stat_shape = vec![xd.shape[0].clone(), grouping.groups.clone()];
        let count =
            dim_product(&[std::slice::from_ref(&grouping.per_group), &xd.shape[2..]].concat());

        let mut transient = |suffix: &str| {
            ctx.b
                .transient(&format!("{label}_{suffix}"), DType::F32, stat_shape.clone())
        };
        let (mean, var, inv) = (transient("mean"), transient("var"), transient("invstd"));
        let b = &mut *ctx.b;
        let stats = Moments {
            x: &x,
            x_idx: &x_idx,
            params: &params,
            stat_shape: &stat_shape,
            stat_idx: &stat_idx,
            count: &count,
            epsilon: grouping.epsilon,
        };
        stats.append(b, &label, [&mean, &var, &inv]);
        let (mut reads, centred) = stats.centred(&mean);

        let param_idx = |k: usize| {
            vec![if grouping.per_channel[k] {
                c.clone()
            } else {
                g.clone()
            }]
        };
        reads.extend([
            Read::new("r", &inv, stat_idx.clone()),
            Read::new("s", &scale, param_idx(0)),
            Read::new("t", &bias, param_idx(1)),
        ]);
        let normed = TExpr::binary(BinOp::Mul, centred, TExpr::input("r"));
        let value = TExpr::binary(
            BinOp::Add,
            TExpr::binary(BinOp::Mul, normed, TExpr::input("s")),
            TExpr::input("t"),
        );
        element_map(
            b,
            &format!("{label}_norm"),
            &params,
            reads,
            (&y, x_idx.clone()),
            None,
            value,
        );
        Ok(())
    }

    /// Per element: mean (2), variance (4), normalisation (4), as for LayerNormalization.
    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        outputs
            .first()
            .and_then(TensorType::static_shape)
            .map_or(0, |s| 10 * s.iter().product::<usize>() as u64)
    }
}
