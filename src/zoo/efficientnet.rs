//! EfficientNet-B0 as `torch.onnx.export(torchvision.models.efficientnet_b0().eval(), …,
//! opset_version=17)` writes it: the stem (3×3/2 conv, BN, SiLU), torchvision's B0 table of
//! 16 MBConv blocks in 7 stages (1×1 expansion unless the ratio is 1 → k×k depthwise carrying the
//! stride → squeeze-excitation → linear 1×1 projection, the input added back where the stride is
//! 1 and the channels stay), the 1×1 conv to 4 × 320 = 1280 channels, average pooling, flatten and
//! the classifier.
//!
//! The eval-mode export folds every BN into its convolution's bias, drops the classifier's
//! Dropout and the blocks' stochastic depth (identities in eval), and writes SiLU as Sigmoid and
//! Mul (opset 17 has no SiLU operator). Squeeze-excitation is GlobalAveragePool → `fc1` (a 1×1
//! conv with bias) → SiLU → `fc2` → Sigmoid → Mul with the block's features. `width_mult` is
//! torchvision's (`_efficientnet_conf`): it scales every channel count through
//! `_make_divisible(·, 8)`.

use super::net::{int, Exported, Net};
use super::torch_idioms::{folded_conv, linear_into, make_divisible, sequential_scope, Conv2d};
use crate::ir::DType;

pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";

/// One stage of torchvision's `MBConvConfig` table.
#[derive(Clone, Copy, Debug)]
pub struct Stage {
    pub expand_ratio: i64,
    pub kernel: i64,
    /// The first block's stride; the others have 1.
    pub stride: i64,
    pub input_channels: i64,
    pub out_channels: i64,
    pub layers: usize,
}

const fn stage(
    (expand_ratio, kernel, stride): (i64, i64, i64),
    (input_channels, out_channels): (i64, i64),
    layers: usize,
) -> Stage {
    Stage {
        expand_ratio,
        kernel,
        stride,
        input_channels,
        out_channels,
        layers,
    }
}

/// torchvision's EfficientNet-B0 table (width and depth multipliers 1).
pub const B0: [Stage; 7] = [
    stage((1, 3, 1), (32, 16), 1),
    stage((6, 3, 2), (16, 24), 2),
    stage((6, 5, 2), (24, 40), 2),
    stage((6, 3, 2), (40, 80), 3),
    stage((6, 5, 1), (80, 112), 3),
    stage((6, 5, 2), (112, 192), 4),
    stage((6, 3, 1), (192, 320), 1),
];

#[derive(Clone, Copy, Debug)]
pub struct EfficientNetConfig {
    /// torchvision's `width_mult` (1.0 for B0).
    pub width_mult: f64,
    pub classes: i64,
    /// Height and width of the (single) image.
    pub size: i64,
}

impl EfficientNetConfig {
    /// torchvision's `efficientnet_b0()`: 1000 classes, one 224×224 image.
    pub fn full() -> Self {
        EfficientNetConfig {
            width_mult: 1.0,
            classes: 1000,
            size: 224,
        }
    }

    /// Width 0.25 (8 to 80 channels, 320 before the classifier), 10 classes, one 64×64 image, so
    /// the last stages see 2×2 maps.
    pub fn small() -> Self {
        EfficientNetConfig {
            width_mult: 0.25,
            classes: 10,
            size: 64,
        }
    }

    /// A channel count of the table at this width (`MBConvConfig.adjust_channels`).
    pub fn channels(&self, c: i64) -> i64 {
        make_divisible(c as f64 * self.width_mult, 8)
    }
}

/// The squeeze-excitation gates' bias, and how much they close per unit of pooled feature (see
/// `squeeze_excitation`).
const SE_OPEN: f32 = 3.0;
const SE_DAMPING: f32 = 5.0;

/// A weight spread for a convolution followed by SiLU: He-uniform's gain 2 raised to 10/3, since
/// SiLU passes between a quarter (small inputs) and a half (large ones) of the second moment.
fn silu_spread(conv: &Conv2d) -> f32 {
    (10.0 / conv.fan_in() as f32).sqrt()
}

/// SiLU (`nn.SiLU` in the module `module`) as the exporter writes it: Sigmoid, then Mul.
fn silu(net: &mut Net, module: &str, x: &str) -> String {
    let scope = sequential_scope(module);
    let gate = net.op(&scope, "Sigmoid", &[x], vec![]);
    net.op(&scope, "Mul", &[x, &gate], vec![])
}

/// `Conv2dNormActivation(…, activation_layer=nn.SiLU)` as module `module`: the conv (`.0`) with
/// its BN (`.1`) folded in, then SiLU (`.2`).
fn conv_bn_silu(net: &mut Net, module: &str, x: &str, conv: &Conv2d) -> String {
    let h = folded_conv(net, &format!("{module}.0"), x, conv, silu_spread(conv));
    silu(net, &format!("{module}.2"), &h)
}

/// A squeeze-excitation `nn.Conv2d` (1×1, with its own bias, no BN) under its `state_dict`
/// names: weights uniform in `w.0 ± w.1`, the bias in `b.0 ± b.1`.
fn se_conv(
    net: &mut Net,
    module: &str,
    x: &str,
    conv: &Conv2d,
    (w, b): ((f32, f32), (f32, f32)),
) -> String {
    let weight = net.weight(&format!("{module}.weight"), &conv.weight_dims(), w.0, w.1);
    let bias = net.weight(&format!("{module}.bias"), &[conv.cout], b.0, b.1);
    net.op(
        &sequential_scope(module),
        "Conv",
        &[x, &weight, &bias],
        conv.attrs(),
    )
}

/// torchvision's `SqueezeExcitation` `module` on `channels` channels squeezed to `squeeze`.
///
/// Its gates keep the 16 blocks' activations O(1): `fc2`'s weights lean negative (mean
/// `-SE_DAMPING / squeeze`) and its bias sits at `SE_OPEN`, so the gates start near
/// sigmoid(`SE_OPEN`) and close as the pooled features grow, where SiLU would otherwise let the
/// scale run away or die out from block to block.
fn squeeze_excitation(
    net: &mut Net,
    module: &str,
    x: &str,
    (channels, squeeze): (i64, i64),
) -> String {
    let scope = sequential_scope(module);
    let pooled = net.op(
        &format!("{scope}/avgpool"),
        "GlobalAveragePool",
        &[x],
        vec![],
    );
    let fc1 = Conv2d::new(channels, squeeze, 1, 1);
    let spread = (3.0 / fc1.fan_in() as f32).sqrt();
    let fc1_params = ((0.0, spread), (0.0, 0.1));
    let mut s = se_conv(net, &format!("{module}.fc1"), &pooled, &fc1, fc1_params);
    s = silu(net, &format!("{module}.activation"), &s);
    let fc2 = Conv2d::new(squeeze, channels, 1, 1);
    let spread = (3.0 / fc2.fan_in() as f32).sqrt();
    let lean = -SE_DAMPING / fc2.fan_in() as f32;
    let fc2_params = ((lean, spread), (SE_OPEN, 0.1));
    s = se_conv(net, &format!("{module}.fc2"), &s, &fc2, fc2_params);
    s = net.op(
        &format!("{scope}/scale_activation"),
        "Sigmoid",
        &[&s],
        vec![],
    );
    net.op(&scope, "Mul", &[&s, x], vec![])
}

/// The `MBConv` `features.<stage>.<index>` from `cin` channels with `stage`'s kernel and output.
fn mbconv(
    net: &mut Net,
    cfg: &EfficientNetConfig,
    (st, index): (usize, usize),
    (stage, cin, stride): (&Stage, i64, i64),
    x: &str,
) -> String {
    let block = format!("features.{st}.{index}");
    let module = format!("{block}.block");
    let cout = cfg.channels(stage.out_channels);
    let expanded = make_divisible((cin * stage.expand_ratio) as f64, 8);
    let mut layer = 0;
    let mut h = x.to_string();
    if expanded != cin {
        let expand = Conv2d::new(cin, expanded, 1, 1);
        h = conv_bn_silu(net, &format!("{module}.0"), &h, &expand);
        layer = 1;
    }
    let depthwise = Conv2d::depthwise(expanded, stage.kernel, stride);
    h = conv_bn_silu(net, &format!("{module}.{layer}"), &h, &depthwise);
    let squeeze = (cin / 4).max(1);
    h = squeeze_excitation(
        net,
        &format!("{module}.{}", layer + 1),
        &h,
        (expanded, squeeze),
    );
    // The linear projection (`Conv2dNormActivation` without activation): gain 1.5 rather than
    // the variance-preserving 1, as the gates above scale the features down.
    let project = Conv2d::new(expanded, cout, 1, 1);
    let spread = (4.5 / project.fan_in() as f32).sqrt();
    h = folded_conv(
        net,
        &format!("{module}.{}.0", layer + 2),
        &h,
        &project,
        spread,
    );
    if stride == 1 && cin == cout {
        h = net.op(&sequential_scope(&block), "Add", &[&h, x], vec![]);
    }
    h
}

/// Writes the model; its input is `[1, 3, size, size]`, its output `[1, classes]`.
pub fn efficientnet(cfg: &EfficientNetConfig, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", 17, seed);
    let size = cfg.size.to_string();
    net.input(INPUT, DType::F32, &["1", "3", &size, &size]);
    let mut cin = cfg.channels(B0[0].input_channels);
    let mut h = conv_bn_silu(&mut net, "features.0", INPUT, &Conv2d::new(3, cin, 3, 2));
    for (s, stage) in B0.iter().enumerate() {
        for b in 0..stage.layers {
            let stride = if b == 0 { stage.stride } else { 1 };
            h = mbconv(&mut net, cfg, (s + 1, b), (stage, cin, stride), &h);
            cin = cfg.channels(stage.out_channels);
        }
    }
    let last = 4 * cin;
    let head = Conv2d::new(cin, last, 1, 1);
    h = conv_bn_silu(&mut net, &format!("features.{}", B0.len() + 1), &h, &head);
    h = net.op("/avgpool", "GlobalAveragePool", &[&h], vec![]);
    h = net.op("", "Flatten", &[&h], vec![("axis", int(1))]);
    linear_into(&mut net, "classifier.1", &h, (last, cfg.classes), OUTPUT);
    net.output(OUTPUT, &["1", &cfg.classes.to_string()]);
    net.finish()
}
