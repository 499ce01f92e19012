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

use crate::ir::{NodeId, Program, Tensor};
use crate::transform::support::opgraph::{
    add_access, constant, containers, declare_constant, feeds, only_output, op_in, op_node, prune,
    set_inputs, set_output, OpNode, Port,
};
use crate::transform::{
    builtin_sites, refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema,
    Transformation,
};

pub struct BatchNormIntoConv;

const SCHEMA: Schema = Schema {
    name: "BatchNormIntoConv",
    level: Level::Operator,
    doc: "fold an inference BatchNormalization into the weights and bias of the Conv feeding it",
    site: &[
        Role::new(
            "conv",
            NodeClass::Library { ops: &["Conv"] },
            "the convolution whose weights and bias absorb the normalisation",
        ),
        Role::new(
            "batchnorm",
            NodeClass::Library {
                ops: &["BatchNormalization"],
            },
            "the inference-mode normalisation reading the convolution's output as X",
        ),
    ],
    params: &[],
};

/// A checked site with every value the folding needs.
struct Folding {
    conv: OpNode,
    bn: OpNode,
    x: Port,
    result: Port,
    weights: Tensor,
    bias: Option<Tensor>,
    /// scale, beta, mean, var.
    stats: [Tensor; 4],
    epsilon: f64,
    /// The convolution's output channels: the weights' first axis and every statistic's length.
    channels: usize,
}

/// BatchNormalization's per-channel inputs after X, in ONNX order.
const STATS: [&str; 4] = ["scale", "bias", "mean", "var"];

impl BatchNormIntoConv {
    /// Every precondition, and the constants the folding reads.
    fn folding(
        &self,
        p: &Program,
        site: &[NodeId],
        legality: &mut Legality,
    ) -> Result<Folding, NotApplicable> {
        let (a, b) = (site[0], site[1]);
        let (g, conv) = op_node(self, p, a, &["Conv"])?;
        let bn = op_in(self, g, b, &["BatchNormalization"])?;
        let (_, pos) = feeds(self, p, &conv, &bn, legality)?;
        if pos != 0 {
            let what = STATS
                .get(pos - 1)
                .map_or_else(|| format!("input {pos}"), |s| s.to_string());
            return Err(refuse(
                self,
                b,
                format!("reads the convolution as its {what}, not as X"),
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
        let channels = *weights.shape.first().ok_or_else(|| {
            refuse(
                self,
                a,
                "the weights are a scalar; a convolution's have an output-channel axis",
            )
        })?;
        self.per_channel(b, channels, &stats, bias.as_ref())?;
        let x = conv
            .input(0)
            .cloned()
            .ok_or_else(|| refuse(self, a, "the input X is not wired"))?;
        let result = only_output(self, &bn)?.clone();
        Ok(Folding {
            x,
            result,
            weights,
            bias,
            stats,
            epsilon: bn.lib.float("epsilon").unwrap_or(1e-5),
            channels,
            conv,
            bn,
        })
    }

    /// Every statistic (and the convolution's bias) holds one value per output channel.
    fn per_channel(
        &self,
        b: NodeId,
        channels: usize,
        stats: &[Tensor; 4],
        bias: Option<&Tensor>,
    ) -> Result<(), NotApplicable> {
        let mut all = (STATS.iter().copied().zip(stats.iter()))
            .chain(bias.map(|t| ("convolution's bias", t)));
        match all.find(|(_, t)| t.shape != [channels]) {
            Some((what, t)) => Err(refuse(
                self,
                b,
                format!(
                    "the {what} has shape {:?} but the convolution has {channels} output channels",
                    t.shape
                ),
            )),
            None => Ok(()),
        }
    }
}

/// The folded weights and bias.
fn fold(f: &Folding) -> (Tensor, Tensor) {
    let [scale, beta, mean, var] = &f.stats;
    let (w, channels) = (&f.weights, f.channels);
    let factor: Vec<f64> = (0..channels)
        .map(|m| scale.get_f64(m) / (var.get_f64(m) + f.epsilon).sqrt())
        .collect();
    let per_channel = (w.len() / channels.max(1)).max(1);
    let weights: Vec<f64> = (0..w.len())
        .map(|i| w.get_f64(i) * factor.get(i / per_channel).copied().unwrap_or(0.0))
        .collect();
    let bias: Vec<f64> = (0..channels)
        .map(|m| {
            let b = f.bias.as_ref().map_or(0.0, |b| b.get_f64(m));
            (b - mean.get_f64(m)) * factor[m] + beta.get_f64(m)
        })
        .collect();
    (
        Tensor::from_f64(w.dtype(), w.shape.clone(), &weights),
        Tensor::from_f64(w.dtype(), vec![channels], &bias),
    )
}

impl Transformation for BatchNormIntoConv {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        builtin_sites(self, "conv_bn", p, &[("batchnorm", "bn")])
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let f = self.folding(p, site, legality)?;
        let base = f.conv.input(1).map_or("w", |(_, n)| n.as_str()).to_string();
        let touched = site.to_vec();
        Ok(Plan::new(move |p| {
            let (weights, bias) = fold(&f);
            let w_name = declare_constant(p, &format!("{base}_bn"), weights);
            let b_name = declare_constant(p, &format!("{base}_bn_bias"), bias);
            let id = f.conv.id;
            let mut edit = p
                .edit(id)
                .ok_or_else(|| refuse(&BatchNormIntoConv, id, "gone"))?;
            let w_port = add_access(&mut edit, &w_name);
            let b_port = add_access(&mut edit, &b_name);
            let (g, data) = (&mut *edit.graph, &*edit.data);
            g.remove_node(f.bn.idx);
            set_inputs(
                g,
                data,
                f.conv.idx,
                &[Some(f.x.clone()), Some(w_port), Some(b_port)],
            );
            set_output(g, data, f.conv.idx, &f.result);
            prune(p, &containers(&[&f.conv, &f.bn]));
            Ok(touched)
        }))
    }
}
