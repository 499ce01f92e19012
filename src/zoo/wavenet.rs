//! WaveNet's residual stack (van den Oord et al., 2016) as `torch.onnx.export(model.eval(), x,
//! opset_version=17)` writes the most used PyTorch implementation of it, r9y9's
//! `wavenet_vocoder` (unconditioned, weight norm removed as its `make_generation_fast_` does):
//! one-hot μ-law input `[1, classes, samples]`; a causal kernel-2 input convolution (the paper's;
//! r9y9 uses a 1×1 there); per layer a dilated kernel-2 convolution (dilations 1, 2, …, 2^(n-1)
//! in each stack) to twice the gate width, made causal the r9y9 way — padded by
//! `(k - 1)·d` on both sides and cut back to the input length (`x[:, :, :T]`, a `Slice`, not an
//! `F.pad` `Pad`); the gate `tanh(a) ⊙ sigmoid(b)` of the two halves from `x.split(c, dim=1)`
//! (a `Split` with a `split` input); 1×1 skip and residual convolutions,
//! `(x + residual) · √0.5`; the skips summed from Python's `skips = 0` (so the first `Add` adds a
//! constant 0) and scaled by `√(1/layers)`; then ReLU → 1×1 → ReLU → 1×1 to the class logits.
//! The last layer's residual branch feeds nothing, so the exporter drops it with its weights.

use super::net::{int, Exported, Net};
use super::torch_idioms::{conv_attrs, scope, slice};
use crate::ir::DType;

pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";
/// Every causal convolution's kernel width, as in the paper.
pub const KERNEL: i64 = 2;

#[derive(Clone, Copy, Debug)]
pub struct WaveNetConfig {
    /// Quantisation levels: channels of the one-hot input and of the logits (256 for 8-bit μ-law).
    pub classes: i64,
    /// Channels of the residual stream.
    pub residual: i64,
    /// Channels of each gate half ("dilation channels"); the dilated convolution writes twice as
    /// many.
    pub gate: i64,
    /// Channels of the skip connections and of the first output convolution.
    pub skip: i64,
    /// Stacks of dilated layers (at least one).
    pub stacks: usize,
    /// Layers per stack (at least one); layer `l` of a stack has dilation `2^l`.
    pub layers_per_stack: usize,
    /// Samples in the (static) input.
    pub samples: i64,
}

impl WaveNetConfig {
    /// The original configuration: 2 stacks of dilations 1 … 512, one second at 16 kHz.
    pub fn full() -> Self {
        WaveNetConfig {
            classes: 256,
            residual: 64,
            gate: 64,
            skip: 256,
            stacks: 2,
            layers_per_stack: 10,
            samples: 16_000,
        }
    }

    /// The same structure at tiny widths: 2 stacks of dilations 1 … 8 over 64 samples.
    pub fn small() -> Self {
        WaveNetConfig {
            classes: 16,
            residual: 8,
            gate: 8,
            skip: 16,
            stacks: 2,
            layers_per_stack: 4,
            samples: 64,
        }
    }

    /// Residual layers over all stacks.
    pub fn layers(&self) -> usize {
        self.stacks * self.layers_per_stack
    }
}

/// A 1-D convolution: channels in and out, kernel width, dilation, and the spread of its
/// uniform weights.
#[derive(Clone, Copy)]
struct Conv1d {
    cin: i64,
    cout: i64,
    kernel: i64,
    dilation: i64,
    spread: f32,
}

impl Conv1d {
    /// Weights in ± 3/√fan_in (variance 3/fan_in): enough gain that the gated units, which
    /// halve their input's scale, and the √0.5-scaled residual sums keep the residual stream and
    /// the logits at unit scale through 20 layers (PyTorch's default ± 1/√fan_in leaves the
    /// logits near 0.04).
    fn new(cin: i64, cout: i64, kernel: i64, dilation: i64) -> Self {
        let spread = 3.0 / ((cin * kernel) as f32).sqrt();
        Conv1d {
            cin,
            cout,
            kernel,
            dilation,
            spread,
        }
    }

    fn pointwise(cin: i64, cout: i64) -> Self {
        Conv1d::new(cin, cout, 1, 1)
    }
}

/// `nn.Conv1d(cin, cout, kernel, padding=(kernel - 1) * dilation, dilation=dilation)` at
/// `module`, biases in PyTorch's default ± 1/√fan_in; its output is `into` when given (a graph
/// output), else the exporter's name.
fn conv1d(net: &mut Net, module: &str, x: &str, c: Conv1d, into: Option<&str>) -> String {
    let fan_in = c.cin * c.kernel;
    let w = net.weight(
        &format!("{module}.weight"),
        &[c.cout, c.cin, c.kernel],
        0.0,
        c.spread,
    );
    let b = net.kaiming(&format!("{module}.bias"), &[c.cout], fan_in);
    let pad = (c.kernel - 1) * c.dilation;
    let attrs = conv_attrs(&[c.kernel], &[1], &[pad, pad], &[c.dilation], 1);
    match into {
        Some(out) => {
            net.op_into(&scope(module), "Conv", &[x, &w, &b], out, attrs);
            out.to_string()
        }
        None => net.op(&scope(module), "Conv", &[x, &w, &b], attrs),
    }
}

/// `conv_layers.<l>` (`ResidualConv1dGLU`): returns the residual output (absent for the last
/// layer, whose residual branch the exporter drops) and the skip output.
fn residual_layer(
    net: &mut Net,
    cfg: &WaveNetConfig,
    l: usize,
    x: &str,
) -> (Option<String>, String) {
    let module = format!("conv_layers.{l}");
    let s = scope(&module);
    let dilation = 1 << (l % cfg.layers_per_stack);
    let (res, gate) = (cfg.residual, cfg.gate);
    let dilated = Conv1d::new(res, 2 * gate, KERNEL, dilation);
    let h = conv1d(net, &format!("{module}.conv"), x, dilated, None);
    let h = slice(net, &s, &h, 2, (0, cfg.samples));
    let sizes = net.const_i64(&s, &[2], vec![gate, gate]);
    let halves = net.op_outputs(&s, "Split", &[&h, &sizes], 2, vec![("axis", int(1))]);
    let a = net.op(&s, "Tanh", &[&halves[0]], vec![]);
    let b = net.op(&s, "Sigmoid", &[&halves[1]], vec![]);
    let g = net.op(&s, "Mul", &[&a, &b], vec![]);
    let to_skip = Conv1d::pointwise(gate, cfg.skip);
    let skip = conv1d(net, &format!("{module}.conv1x1_skip"), &g, to_skip, None);
    if l + 1 == cfg.layers() {
        return (None, skip);
    }
    let to_out = Conv1d::pointwise(gate, res);
    let out = conv1d(net, &format!("{module}.conv1x1_out"), &g, to_out, None);
    let sum = net.op(&s, "Add", &[&out, x], vec![]);
    let half = net.const_f32(&s, std::f32::consts::FRAC_1_SQRT_2);
    (Some(net.op(&s, "Mul", &[&sum, &half], vec![])), skip)
}

/// Writes the model: one-hot `[1, classes, samples]` in, logits `[1, classes, samples]` out.
pub fn wavenet(cfg: &WaveNetConfig, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", 17, seed);
    let (classes, samples) = (cfg.classes.to_string(), cfg.samples.to_string());
    net.input(INPUT, DType::F32, &["1", &classes, &samples]);
    // A one-hot input has `KERNEL` nonzero values under each output, not `classes · KERNEL`:
    // the weights are spread like an embedding's, so the residual stream starts at unit scale.
    let causal = Conv1d {
        spread: (3.0 / KERNEL as f32).sqrt(),
        ..Conv1d::new(cfg.classes, cfg.residual, KERNEL, 1)
    };
    let first = conv1d(&mut net, "first_conv", INPUT, causal, None);
    let mut x = slice(&mut net, "", &first, 2, (0, cfg.samples));
    let mut skips: Option<String> = None;
    for l in 0..cfg.layers() {
        let (next, skip) = residual_layer(&mut net, cfg, l, &x);
        // `skips = 0; skips += h`: the first sum adds the constant zero.
        skips = Some(match skips {
            None => {
                let zero = net.const_f32("", 0.0);
                net.op("", "Add", &[&skip, &zero], vec![])
            }
            Some(sum) => net.op("", "Add", &[&sum, &skip], vec![]),
        });
        x = next.unwrap_or(x);
    }
    let skips = skips.expect("a WaveNet has at least one layer");
    let scale = net.const_f32("", (1.0 / cfg.layers() as f32).sqrt());
    let mut h = net.op("", "Mul", &[&skips, &scale], vec![]);
    h = net.op("/last_conv_layers.0", "Relu", &[&h], vec![]);
    let hidden = Conv1d::pointwise(cfg.skip, cfg.skip);
    h = conv1d(&mut net, "last_conv_layers.1", &h, hidden, None);
    h = net.op("/last_conv_layers.2", "Relu", &[&h], vec![]);
    let logits = Conv1d::pointwise(cfg.skip, cfg.classes);
    conv1d(&mut net, "last_conv_layers.3", &h, logits, Some(OUTPUT));
    net.output(OUTPUT, &["1", &classes, &samples]);
    net.finish()
}
