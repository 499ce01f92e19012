//! BatchNormIntoConv: fold an inference-mode BatchNormalization into the weights and bias of the
//! convolution that feeds it.
//!
//! ```text
//! before:  T = Conv(X, W, B)     Y = BatchNormalization(T, scale, beta, mean, var)
//! after:   Y = Conv(X, W', B')   with, per output channel m,
//!          f[m] = scale[m] / sqrt(var[m] + ε)
//!          W'[m, …] = W[m, …] · f[m]        B'[m] = (B[m] − mean[m]) · f[m] + beta[m]
//! ```
//! Normalisation with fixed statistics is an affine map per channel, and a convolution is linear
//! in its weights, so the two compose into one convolution: a full pass over the activations is
//! saved. W' and B' are new constants (computed in f64, stored in the weights' type); the
//! originals are dropped when nothing else reads them.

use super::opgraph::{
    add_access, constant, containers, declare_constant, feeds, op_in, op_node, pair, pairs, prune,
    set_inputs, set_output, OpNode, Port,
};
use super::{refuse, Level, NotApplicable, Params, Transformation};
use crate::ir::{NodeId, Program, Tensor};

pub struct BatchNormIntoConv;

/// A checked site with every value the folding needs.
struct Plan {
    conv: OpNode,
    bn: OpNode,
    x: Port,
    result: Port,
    weights: Tensor,
    bias: Option<Tensor>,
    /// scale, beta, mean, var.
    stats: [Tensor; 4],
    epsilon: f64,
}

/// BatchNormalization's per-channel inputs after X, in ONNX order.
const STATS: [&str; 4] = ["scale", "bias", "mean", "var"];

impl BatchNormIntoConv {
    fn plan(&self, p: &Program, site: &[NodeId]) -> Result<Plan, NotApplicable> {
        let (a, b) = pair(self, site)?;
        let (g, conv) = op_node(self, p, a, &["Conv"])?;
        let bn = op_in(self, g, b, &["BatchNormalization"])?;
        let (_, pos) = feeds(self, p, &conv, &bn)?;
        if pos != 0 {
            return Err(refuse(
                self,
                b,
                format!("reads the convolution as its {}, not as X", STATS[pos - 1]),
            ));
        }
        if bn.lib.int("training_mode").unwrap_or(0) != 0 {
            return Err(refuse(
                self,
                b,
                "training_mode = 1 normalises with batch statistics, which are not constants",
            ));
        }
        if bn.lib.int("spatial") == Some(0) {
            return Err(refuse(
                self,
                b,
                "spatial = 0 normalises per activation, not per channel",
            ));
        }
        let value = |node: &OpNode, i: usize, what: &str| -> Result<Tensor, NotApplicable> {
            let (_, name) = node
                .input(i)
                .ok_or_else(|| refuse(self, node.id, format!("the {what} is not wired")))?;
            constant(p, name, what)
                .cloned()
                .map_err(|r| refuse(self, node.id, r))
        };
        let weights = value(&conv, 1, "weights")?;
        let bias = match conv.input(2) {
            Some(_) => Some(value(&conv, 2, "bias")?),
            None => None,
        };
        let stats = [
            value(&bn, 1, STATS[0])?,
            value(&bn, 2, STATS[1])?,
            value(&bn, 3, STATS[2])?,
            value(&bn, 4, STATS[3])?,
        ];
        let channels = weights.shape.first().copied().unwrap_or(0);
        if let Some((what, t)) = STATS
            .iter()
            .zip(&stats)
            .find(|(_, t)| t.shape != [channels])
        {
            return Err(refuse(
                self,
                b,
                format!(
                    "the {what} has shape {:?} but the convolution has {channels} output channels",
                    t.shape
                ),
            ));
        }
        let x = conv
            .input(0)
            .cloned()
            .ok_or_else(|| refuse(self, a, "the input X is not wired"))?;
        let result = super::opgraph::only_output(self, &bn)?.clone();
        Ok(Plan {
            x,
            result,
            weights,
            bias,
            stats,
            epsilon: bn.lib.float("epsilon").unwrap_or(1e-5),
            conv,
            bn,
        })
    }
}

/// The folded weights and bias.
fn fold(plan: &Plan) -> (Tensor, Tensor) {
    let [scale, beta, mean, var] = &plan.stats;
    let w = &plan.weights;
    let channels = w.shape[0];
    let factor: Vec<f64> = (0..channels)
        .map(|m| scale.get_f64(m) / (var.get_f64(m) + plan.epsilon).sqrt())
        .collect();
    let per_channel = w.len() / channels.max(1);
    let weights: Vec<f64> = (0..w.len())
        .map(|i| w.get_f64(i) * factor[i / per_channel])
        .collect();
    let bias: Vec<f64> = (0..channels)
        .map(|m| {
            let b = plan.bias.as_ref().map_or(0.0, |b| b.get_f64(m));
            (b - mean.get_f64(m)) * factor[m] + beta.get_f64(m)
        })
        .collect();
    (
        Tensor::from_f64(w.dtype(), w.shape.clone(), &weights),
        Tensor::from_f64(w.dtype(), vec![channels], &bias),
    )
}

impl Transformation for BatchNormIntoConv {
    fn name(&self) -> &'static str {
        "BatchNormIntoConv"
    }

    fn level(&self) -> Level {
        Level::Operator
    }

    fn doc(&self) -> &'static str {
        "fold an inference BatchNormalization into the weights and bias of the Conv feeding it"
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        pairs(p, &["Conv"], &["BatchNormalization"])
    }

    fn check(&self, p: &Program, site: &[NodeId], _params: &Params) -> Result<(), NotApplicable> {
        self.plan(p, site).map(|_| ())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        _params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let plan = self.plan(p, site)?;
        let (weights, bias) = fold(&plan);
        let base = plan.conv.input(1).map_or("w", |(_, n)| n.as_str());
        let w_name = declare_constant(p, &format!("{base}_bn"), weights);
        let b_name = declare_constant(p, &format!("{base}_bn_bias"), bias);
        let id = plan.conv.id;
        let mut edit = p.edit(id).ok_or_else(|| refuse(self, id, "gone"))?;
        let w_port = add_access(&mut edit, &w_name);
        let b_port = add_access(&mut edit, &b_name);
        let (g, data) = (&mut *edit.graph, &*edit.data);
        g.g.remove_node(plan.bn.idx);
        set_inputs(
            g,
            data,
            plan.conv.idx,
            &[Some(plan.x.clone()), Some(w_port), Some(b_port)],
        );
        set_output(g, data, plan.conv.idx, &plan.result);
        prune(p, &containers(&[&plan.conv, &plan.bn]));
        Ok(site.to_vec())
    }
}
