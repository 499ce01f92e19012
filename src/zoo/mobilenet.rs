//! MobileNetV2 as `torch.onnx.export(torchvision.models.mobilenet_v2().eval(), …,
//! opset_version=17)` writes it: the stem (3×3/2 conv, BN, ReLU6), torchvision's 17 inverted
//! residual blocks (1×1 expansion → 3×3 depthwise carrying the stride → linear 1×1 projection,
//! the input added back where the stride is 1 and the channels stay), the 1×1 conv to 1280
//! channels, `adaptive_avg_pool2d` (GlobalAveragePool at the top scope), `torch.flatten` and the
//! classifier, whose Dropout the eval-mode export drops.
//!
//! Every BN is folded into its convolution's bias, and every ReLU6 is a `Clip` whose bounds are
//! two `Constant` nodes (0 and 6) in the activation's scope, as the exporter writes `hardtanh`
//! from opset 11 on. `width_mult` is torchvision's: it scales every channel count but the last
//! (1280 at most widths) through `_make_divisible(·, 8)`.

use super::net::{int, Exported, Net};
use super::torch_idioms::{folded_conv, linear_into, make_divisible, sequential_scope, Conv2d};
use crate::ir::DType;

pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";

/// torchvision's `inverted_residual_setting`: per stage the expansion `t`, output channels
/// `c`, blocks `n` and the first block's stride `s`.
pub const INVERTED_RESIDUAL_SETTING: [(i64, i64, usize, i64); 7] = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
];
/// Channels of the stem and of the last convolution before the width multiplier.
pub const FIRST_CHANNELS: i64 = 32;
pub const LAST_CHANNELS: i64 = 1280;

#[derive(Clone, Copy, Debug)]
pub struct MobileNetV2Config {
    /// torchvision's `width_mult`.
    pub width_mult: f64,
    pub classes: i64,
    /// Height and width of the (single) image.
    pub size: i64,
}

impl MobileNetV2Config {
    /// torchvision's `mobilenet_v2()`: width 1.0, 1000 classes, one 224×224 image.
    pub fn full() -> Self {
        MobileNetV2Config {
            width_mult: 1.0,
            classes: 1000,
            size: 224,
        }
    }

    /// Width 0.25 (8 to 80 channels, 1280 before the classifier), 10 classes, one 64×64 image,
    /// so the last stages see 2×2 maps.
    pub fn small() -> Self {
        MobileNetV2Config {
            width_mult: 0.25,
            classes: 10,
            size: 64,
        }
    }

    /// A channel count of the table at this width.
    pub fn channels(&self, c: i64) -> i64 {
        make_divisible(c as f64 * self.width_mult, 8)
    }

    /// Channels of the last convolution: never narrower than 1280.
    pub fn last_channels(&self) -> i64 {
        make_divisible(LAST_CHANNELS as f64 * self.width_mult.max(1.0), 8)
    }
}

/// `Conv2dNormActivation(…, activation_layer=nn.ReLU6)` as module `module`: the conv (`.0`)
/// with its BN (`.1`) folded in, then the ReLU6 (`.2`) as Clip.
fn conv_bn_relu6(net: &mut Net, module: &str, x: &str, conv: &Conv2d) -> String {
    // He-uniform: the ReLU6 keeps about half of the signal.
    let spread = (6.0 / conv.fan_in() as f32).sqrt();
    let h = folded_conv(net, &format!("{module}.0"), x, conv, spread);
    let scope = sequential_scope(&format!("{module}.2"));
    let min = net.const_f32(&scope, 0.0);
    let max = net.const_f32(&scope, 6.0);
    net.op(&scope, "Clip", &[&h, &min, &max], vec![])
}

/// The `InvertedResidual` `features.<index>` from `cin` to `cout` channels.
fn inverted_residual(
    net: &mut Net,
    index: usize,
    (cin, cout, stride, expand): (i64, i64, i64, i64),
    x: &str,
) -> String {
    let module = format!("features.{index}.conv");
    let hidden = cin * expand;
    let mut layer = 0;
    let mut h = x.to_string();
    if expand != 1 {
        h = conv_bn_relu6(
            net,
            &format!("{module}.0"),
            &h,
            &Conv2d::new(cin, hidden, 1, 1),
        );
        layer = 1;
    }
    let depthwise = Conv2d::depthwise(hidden, 3, stride);
    h = conv_bn_relu6(net, &format!("{module}.{layer}"), &h, &depthwise);
    // The linear projection: no activation, so a variance-preserving (not He) scale.
    let project = Conv2d::new(hidden, cout, 1, 1);
    let spread = (3.0 / project.fan_in() as f32).sqrt();
    h = folded_conv(
        net,
        &format!("{module}.{}", layer + 1),
        &h,
        &project,
        spread,
    );
    if stride == 1 && cin == cout {
        let scope = sequential_scope(&format!("features.{index}"));
        h = net.op(&scope, "Add", &[x, &h], vec![]);
    }
    h
}

/// Writes the model; its input is `[1, 3, size, size]`, its output `[1, classes]`.
pub fn mobilenet_v2(cfg: &MobileNetV2Config, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", 17, seed);
    let size = cfg.size.to_string();
    net.input(INPUT, DType::F32, &["1", "3", &size, &size]);
    let mut cin = cfg.channels(FIRST_CHANNELS);
    let mut h = conv_bn_relu6(&mut net, "features.0", INPUT, &Conv2d::new(3, cin, 3, 2));
    let mut index = 1;
    for &(expand, c, blocks, first_stride) in &INVERTED_RESIDUAL_SETTING {
        let cout = cfg.channels(c);
        for b in 0..blocks {
            let stride = if b == 0 { first_stride } else { 1 };
            h = inverted_residual(&mut net, index, (cin, cout, stride, expand), &h);
            cin = cout;
            index += 1;
        }
    }
    let last = cfg.last_channels();
    let head = Conv2d::new(cin, last, 1, 1);
    h = conv_bn_relu6(&mut net, &format!("features.{index}"), &h, &head);
    h = net.op("", "GlobalAveragePool", &[&h], vec![]);
    h = net.op("", "Flatten", &[&h], vec![("axis", int(1))]);
    linear_into(&mut net, "classifier.1", &h, (last, cfg.classes), OUTPUT);
    net.output(OUTPUT, &["1", &cfg.classes.to_string()]);
    net.finish()
}
