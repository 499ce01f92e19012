//! The training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//!
//! NegativeLogLikelihoodLoss reads `input` `[N, C, d…]` (log-probabilities), `target` `[N, d…]`
//! (class indices) and an optional per-class `weight` `[C]`. Each target position contributes
//! `−input[n, target[n, d…], d…] · w` with `w = weight[target]` (1 without weights); a position
//! whose target equals `ignore_index` contributes 0 and has weight 0. `reduction` is `none`
//! (the contributions, of the target's shape), `sum`, or `mean` (default): the sum divided by
//! the sum of the weights — the count of positions not ignored when there are no weights, as
//! ONNX's reference computes it.
//!
//! SoftmaxCrossEntropyLoss is the same loss of `log_softmax(scores)` along axis 1; its optional
//! second output is that log-probability tensor.
//!
//! The expansion reads the input at the target's class by element (`t[…]`, as Gather does),
//! with an ignored target replaced by class 0 so that an `ignore_index` outside `[0, C)` is
//! never read. `mean` accumulates the weighted sum and the weights in two scalars and divides.

use super::index::{axis_window, lookup_map, require_indices, window_indices};
use super::softmax::{append_softmax, softmax_values};
use super::support::{
    arg, fill_map, input_type, opt_arg, params_over, require_float, same_dtype, types_of,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, ScopeBuilder};
use crate::ir::{
    BinOp, DataDesc, Dim, LibraryNode, Range, Subset, SymExpr, TExpr, Tensor, UnOp, Wcr,
};

pub static OPS: &[&dyn Operator] = &[&NLL, &SCE];

static NLL: Loss = Loss {
    name: "NegativeLogLikelihoodLoss",
    softmax: false,
};
static SCE: Loss = Loss {
    name: "SoftmaxCrossEntropyLoss",
    softmax: true,
};

/// The class axis of the input (ONNX fixes it at 1).
const CLASS_AXIS: usize = 1;

/// A loss over class scores; `softmax` makes it SoftmaxCrossEntropyLoss.
pub struct Loss {
    name: &'static str,
    softmax: bool,
}

/// How the per-position losses are combined.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reduction {
    None,
    Sum,
    Mean,
}

/// Validated attributes.
struct Attrs {
    reduction: Reduction,
    ignore_index: Option<i64>,
}

impl Attrs {
    fn read(op: &str, node: &LibraryNode) -> Result<Attrs, OpError> {
        let reduction = match node.str("reduction").unwrap_or("mean") {
            "none" => Reduction::None,
            "sum" => Reduction::Sum,
            "mean" => Reduction::Mean,
            other => {
                return Err(OpError::attr(
                    op,
                    "reduction",
                    format!("must be none, sum or mean, got {other:?}"),
                ))
            }
        };
        Ok(Attrs {
            reduction,
            ignore_index: node.int("ignore_index"),
        })
    }
}

impl Loss {
    /// Checks the types of input, target and weight; returns the loss's type.
    fn check(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
    ) -> Result<TensorType, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name;
        let x = input_type(op, inputs, 0)?;
        require_float(op, x)?;
        let target = input_type(op, inputs, 1)?;
        require_indices(op, target)?;
        let at = Attrs::read(op, node)?;
        if x.shape.len() < 2 {
            return Err(OpError::shape(
                op,
                "the input must have rank at least 2 ([N, C, …])",
            ));
        }
        let mut expected = x.shape.clone();
        expected.remove(CLASS_AXIS);
        if target.shape.len() != expected.len() {
            return Err(OpError::shape(
                op,
                format!(
                    "the target has rank {} but the input of rank {} needs {}",
                    target.shape.len(),
                    x.shape.len(),
                    expected.len()
                ),
            ));
        }
        for (d, (t, e)) in target.shape.iter().zip(&expected).enumerate() {
            if let (Some(t), Some(e)) = (t.as_int(), e.as_int()) {
                if t != e {
                    return Err(OpError::shape(
                        op,
                        format!("target dimension {d} is {t} but the input's is {e}"),
                    ));
                }
            }
        }
        if let Some(Some(w)) = inputs.get(2) {
            same_dtype(op, x, w, 2)?;
            let classes = &x.shape[CLASS_AXIS];
            let matches = w.shape.len() == 1
                && match (w.shape[0].as_int(), classes.as_int()) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                };
            if !matches {
                return Err(OpError::shape(
                    op,
                    format!("the weight must have shape [{classes}], got {:?}", w.shape),
                ));
            }
        }
        let shape = match at.reduction {
            Reduction::None => target.shape.clone(),
            Reduction::Sum | Reduction::Mean => Vec::new(),
        };
        Ok(TensorType::new(x.dtype, shape))
    }
}

/// The reference loss of the log-probabilities `logp` (values of a tensor of `shape`).
fn reference_loss(
    op: &str,
    logp: &[f64],
    shape: &[usize],
    target: &Tensor,
    weight: Option<&Tensor>,
    at: &Attrs,
) -> Result<Vec<f64>, OpError> {
    let classes = shape[CLASS_AXIS];
    let inner: usize = shape[CLASS_AXIS + 1..].iter().product();
    let targets = target.to_i64_vec();
    let (mut losses, mut total, mut weights) = (Vec::with_capacity(targets.len()), 0.0, 0.0);
    for (p, &t) in targets.iter().enumerate() {
        if Some(t) == at.ignore_index {
            losses.push(0.0);
            continue;
        }
        let class = usize::try_from(t)
            .ok()
            .filter(|&c| c < classes)
            .ok_or_else(|| OpError::shape(op, format!("target {t} is outside [0, {classes})")))?;
        let (n, d) = (p / inner, p % inner);
        let w = weight.map_or(1.0, |w| w.get_f64(class));
        let loss = -logp[(n * classes + class) * inner + d] * w;
        losses.push(loss);
        total += loss;
        weights += w;
    }
    Ok(match at.reduction {
        Reduction::None => losses,
        Reduction::Sum => vec![total],
        Reduction::Mean => vec![total / weights],
    })
}

impl Operator for Loss {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 3)
    }

    fn output_count(&self) -> usize {
        if self.softmax {
            2
        } else {
            1
        }
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        let loss = self.check(node, inputs)?;
        let x = input_type(self.name, inputs, 0)?;
        Ok(match self.softmax {
            true => vec![loss, x.clone()],
            false => vec![loss],
        })
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name;
        let x = arg(op, inputs, 0)?;
        let target = arg(op, inputs, 1)?;
        let weight = opt_arg(inputs, 2);
        let loss_type = self.check(node, &types_of(inputs))?;
        let at = Attrs::read(op, node)?;
        let logp = match self.softmax {
            true => softmax_values(x, (CLASS_AXIS, CLASS_AXIS + 1), true),
            false => x.to_f64_vec(),
        };
        let values = reference_loss(op, &logp, &x.shape, target, weight, &at)?;
        let shape = loss_type.static_shape().unwrap_or_default();
        let mut out = vec![Tensor::from_f64(x.dtype(), shape, &values)];
        if self.softmax {
            out.push(Tensor::from_f64(x.dtype(), x.shape.clone(), &logp));
        }
        Ok(out)
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (target, target_desc) = ctx.input(1)?.clone();
        let weight = ctx.inputs.get(2).cloned().flatten();
        let (y, _) = ctx.output(0)?.clone();
        let at = Attrs::read(self.name, ctx.node)?;
        let label = ctx.label.clone();
        let logp = if self.softmax {
            let logp = match ctx.outputs.get(1).and_then(|o| o.as_ref()) {
                Some((name, _)) => name.clone(),
                None => ctx
                    .b
                    .transient(&format!("{label}_logp"), desc.dtype, desc.shape.clone()),
            };
            let axes = (CLASS_AXIS, CLASS_AXIS + 1);
            append_softmax(ctx.b, &label, (&x, &desc), &logp, axes, true);
            logp
        } else {
            x
        };
        let picks = Picks {
            logp: (&logp, &desc),
            target: (&target, &target_desc),
            weight: weight.as_ref().map(|(n, _)| n.as_str()),
            ignore_index: at.ignore_index,
        };
        picks.append(ctx.b, &label, at.reduction, &y);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        // Softmax: about 7 per score; the loss: a few per target position.
        let count = |i: usize| {
            inputs
                .get(i)
                .and_then(Option::as_ref)
                .and_then(TensorType::static_shape)
                .map_or(0, |s| s.iter().product::<usize>() as u64)
        };
        let softmax = if self.softmax { 7 * count(0) } else { 0 };
        softmax + 3 * count(1)
    }
}

/// What the loss maps read: the log-probabilities, the targets, the optional weights and the
/// ignored class.
struct Picks<'a> {
    logp: (&'a str, &'a DataDesc),
    target: (&'a str, &'a DataDesc),
    weight: Option<&'a str>,
    ignore_index: Option<i64>,
}

impl Picks<'_> {
    /// The tasklet inputs at target position `idx` and the expressions of that position's loss
    /// and weight (0 for an ignored target).
    fn at(&self, idx: &[SymExpr]) -> (Vec<In<'_>>, TExpr, TExpr) {
        let (logp, desc) = self.logp;
        let rank = desc.shape.len();
        let ignored = self
            .ignore_index
            .map(|ii| TExpr::binary(BinOp::Eq, TExpr::input("t"), TExpr::Const(ii as f64)));
        // An ignored target reads class 0, which always exists; its value is discarded.
        let class = match &ignored {
            Some(ig) => TExpr::select(ig.clone(), TExpr::Const(0.0), TExpr::input("t")),
            None => TExpr::input("t"),
        };
        let mut src = idx.to_vec();
        src.insert(CLASS_AXIS, SymExpr::Int(0));
        let window = axis_window(&desc.shape, &src, CLASS_AXIS);
        let mut inputs = vec![
            In("t", self.target.0, Subset::element(idx.to_vec())),
            In("p", logp, window),
        ];
        let picked = TExpr::element("p", window_indices(rank, CLASS_AXIS, class.clone()));
        let w = match self.weight {
            Some(w) => {
                let classes = Range::upto(desc.shape[CLASS_AXIS].clone());
                inputs.push(In("w", w, Subset(vec![Dim::Range(classes)])));
                TExpr::element("w", vec![class])
            }
            None => TExpr::Const(1.0),
        };
        let loss = TExpr::binary(BinOp::Mul, TExpr::unary(UnOp::Neg, picked), w.clone());
        let unless_ignored = |v: TExpr| match &ignored {
            Some(ig) => TExpr::select(ig.clone(), TExpr::Const(0.0), v),
            None => v,
        };
        (inputs, unless_ignored(loss), unless_ignored(w))
    }

    /// Appends the maps writing the loss, reduced by `reduction`, to `y`.
    fn append(&self, b: &mut ScopeBuilder, label: &str, reduction: Reduction, y: &str) {
        let (params, idx) = params_over("i", &self.target.1.shape);
        let scalar = || (y, Vec::new());
        match reduction {
            Reduction::None => {
                let (inputs, loss, _) = self.at(&idx);
                lookup_map(b, label, &params, inputs, (y, idx), None, loss);
            }
            Reduction::Sum => {
                fill_map(b, &format!("{label}_init"), y, &[], 0.0);
                let (inputs, loss, _) = self.at(&idx);
                lookup_map(b, label, &params, inputs, scalar(), Some(Wcr::Sum), loss);
            }
            Reduction::Mean => {
                let dtype = self.logp.1.dtype;
                let total = b.transient(&format!("{label}_total"), dtype, Vec::new());
                let weights = b.transient(&format!("{label}_weights"), dtype, Vec::new());
                for (acc, pick_weight) in [(&total, false), (&weights, true)] {
                    fill_map(b, &format!("{acc}_init"), acc, &[], 0.0);
                    let (mut inputs, loss, w) = self.at(&idx);
                    let value = if pick_weight { w } else { loss };
                    // The weights' sum reads no log-probability (nor, unweighted, any weight).
                    let used = value.inputs();
                    inputs.retain(|i| used.iter().any(|u| u == i.0));
                    let dst = (acc.as_str(), Vec::new());
                    lookup_map(b, acc, &params, inputs, dst, Some(Wcr::Sum), value);
                }
                let reads = vec![
                    In("s", &total, Subset::element(Vec::new())),
                    In("w", &weights, Subset::element(Vec::new())),
                ];
                let value = TExpr::binary(BinOp::Div, TExpr::input("s"), TExpr::input("w"));
                lookup_map(
                    b,
                    &format!("{label}_mean"),
                    &[],
                    reads,
                    scalar(),
                    None,
                    value,
                );
            }
        }
    }
}
