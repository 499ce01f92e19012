//! torchvision's ResNets as `torch.onnx.export` writes them in eval mode: the stem (7×7/2 conv,
//! BN, ReLU, 3×3/2 max pool), four stages of residual blocks (ResNet-18's basic blocks of two
//! 3×3 convolutions, or ResNet-50's bottlenecks 1×1 → 3×3 carrying the stride → 1×1 with
//! expansion 4, whose inner width Wide-ResNet-50-2 doubles), a projection shortcut wherever the
//! stride or the channel count changes, global average pooling, flatten and the classifier.
//! `Architecture` is torchvision's `ResNet(block, layers, width_per_group)`; the stem width can
//! shrink (`width` instead of 64), while convolutions, kernels, strides and paddings stay the
//! real network's.
//!
//! Two exporter idioms are chosen by the configuration: BN folded into conv biases (eval mode) or
//! kept, and `torch.flatten(x, 1)` or `x.view(x.size(0), -1)`; the batch axis is static (a plain
//! export, as the suite's networks are written) or the `batch_size` of
//! `dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}}` (the locked
//! ResNet-50). The max pool carries `dilations = [1, 1]` as torch 2's exporter writes it (torch
//! 1.13 omits the default).

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{folded_conv, linear_into, sequential_scope, Conv2d};
use crate::ir::DType;
use crate::onnx::AttrValue;

pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";

/// A residual block type of torchvision's ResNets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// Two 3×3 convolutions (ResNet-18 and -34).
    Basic,
    /// 1×1 → 3×3 → 1×1 with expansion 4 (ResNet-50 and deeper, the wide ResNets).
    Bottleneck,
}

impl Block {
    /// Output channels of a block relative to its `planes`.
    pub fn expansion(self) -> i64 {
        match self {
            Block::Basic => 1,
            Block::Bottleneck => 4,
        }
    }
}

/// Which ResNet: torchvision's `ResNet(block, layers, width_per_group = 64 · width_factor)`.
#[derive(Clone, Copy, Debug)]
pub struct Architecture {
    pub block: Block,
    /// Blocks per stage.
    pub layers: [usize; 4],
    /// A bottleneck's inner width relative to its `planes` (`width_per_group / 64`).
    pub width_factor: i64,
}

pub const RESNET18: Architecture = Architecture {
    block: Block::Basic,
    layers: [2, 2, 2, 2],
    width_factor: 1,
};

pub const RESNET50: Architecture = Architecture {
    block: Block::Bottleneck,
    layers: [3, 4, 6, 3],
    width_factor: 1,
};

pub const WIDE_RESNET50_2: Architecture = Architecture {
    block: Block::Bottleneck,
    layers: [3, 4, 6, 3],
    width_factor: 2,
};

/// How the network is exported.
#[derive(Clone, Copy, Debug)]
pub struct ResNetConfig {
    /// Channels of the stem and the first stage's `planes` (64 in torchvision).
    pub width: i64,
    pub classes: i64,
    pub opset: i64,
    /// Keep `BatchNormalization` nodes (training-mode-preserving export) instead of the
    /// conv-with-bias the exporter writes after fusing BN in eval mode.
    pub batchnorm: bool,
    /// Flatten as `x.view(x.size(0), -1)` (Shape → Gather → Unsqueeze → Concat → Reshape), as
    /// hand-written ResNets do, instead of `torch.flatten(x, 1)` (Flatten).
    pub view_flatten: bool,
}

/// A whole network as the suite builds it: which ResNet, exported how, on which input.
#[derive(Clone, Copy, Debug)]
pub struct ResNetSpec {
    pub arch: Architecture,
    pub cfg: ResNetConfig,
    /// Height and width of the images.
    pub size: i64,
    /// A static batch, or `None` for the dynamic `batch_size` axis.
    pub batch: Option<i64>,
    /// Scales the weights of each residual branch's last convolution. Each block adds its
    /// branch's variance to the sum, so `1 / sqrt(blocks)` keeps a deep network's activations
    /// O(1) (as Fixup-style initialisations do); the locked ResNet-50 has 1 (He-uniform
    /// throughout).
    pub branch_scale: f32,
}

impl ResNetSpec {
    /// torchvision's network (width 64, 1000 classes) exported in eval mode at opset 17, on one
    /// 224×224 image.
    pub fn full(arch: Architecture) -> Self {
        ResNetSpec {
            arch,
            cfg: ResNetConfig {
                width: 64,
                classes: 1000,
                opset: 17,
                batchnorm: false,
                view_flatten: false,
            },
            size: 224,
            batch: Some(1),
            branch_scale: 1.0 / (arch.layers.iter().sum::<usize>() as f32).sqrt(),
        }
    }

    /// The same export at width 8 with 10 classes on one 64×64 image, so the last stage still
    /// sees 2×2 maps.
    pub fn small(arch: Architecture) -> Self {
        let full = ResNetSpec::full(arch);
        ResNetSpec {
            cfg: ResNetConfig {
                width: 8,
                classes: 10,
                ..full.cfg
            },
            size: 64,
            ..full
        }
    }
}

/// Conv (+ BN when kept), the way the exporter writes a `conv` + `bn` module pair.
struct ConvBn<'a> {
    conv: &'a str,
    bn: &'a str,
    shape: Conv2d,
}

/// Weights `scale` × He-uniform, so activations keep their scale through the ReLU layers.
fn conv_bn(net: &mut Net, cfg: &ResNetConfig, c: &ConvBn, x: &str, scale: f32) -> String {
    let spread = (6.0 / c.shape.fan_in() as f32).sqrt() * scale;
    if !cfg.batchnorm {
        return folded_conv(net, c.conv, x, &c.shape, spread);
    }
    let cout = c.shape.cout;
    let w = net.weight(
        &format!("{}.weight", c.conv),
        &c.shape.weight_dims(),
        0.0,
        spread,
    );
    let y = net.op(&sequential_scope(c.conv), "Conv", &[x, &w], c.shape.attrs());
    let scale = net.weight(&format!("{}.weight", c.bn), &[cout], 1.0, 0.2);
    let bias = net.weight(&format!("{}.bias", c.bn), &[cout], 0.0, 0.1);
    let mean = net.weight(&format!("{}.running_mean", c.bn), &[cout], 0.0, 0.1);
    let var = net.weight(&format!("{}.running_var", c.bn), &[cout], 1.0, 0.5);
    net.op(
        &sequential_scope(c.bn),
        "BatchNormalization",
        &[&y, &scale, &bias, &mean, &var],
        vec![
            ("epsilon", AttrValue::Float(1e-5)),
            ("momentum", AttrValue::Float(0.9)),
        ],
    )
}

/// One residual block `layer<s>.<b>` of `planes` reading `cin` channels.
fn block(
    net: &mut Net,
    spec: &ResNetSpec,
    (stage, index): (usize, usize),
    (cin, planes, stride): (i64, i64, i64),
    x: &str,
) -> String {
    let module = format!("layer{stage}.{index}");
    let scope = sequential_scope(&module);
    // One `nn.ReLU` module called after each convolution but the last and after the sum: the
    // exporter numbers its calls `relu`, `relu_1`, …
    let relu = |net: &mut Net, k: usize, x: &str| {
        let name = if k == 0 {
            "relu".to_string()
        } else {
            format!("relu_{k}")
        };
        net.op(&format!("{scope}/{name}"), "Relu", &[x], vec![])
    };
    let cout = planes * spec.arch.block.expansion();
    let convs = match spec.arch.block {
        Block::Basic => vec![
            Conv2d::new(cin, planes, 3, stride),
            Conv2d::new(planes, planes, 3, 1),
        ],
        Block::Bottleneck => {
            let inner = planes * spec.arch.width_factor;
            vec![
                Conv2d::new(cin, inner, 1, 1),
                Conv2d::new(inner, inner, 3, stride),
                Conv2d::new(inner, cout, 1, 1),
            ]
        }
    };
    let last = convs.len() - 1;
    let mut h = x.to_string();
    for (i, shape) in convs.into_iter().enumerate() {
        let conv = format!("{module}.conv{}", i + 1);
        let bn = format!("{module}.bn{}", i + 1);
        let c = ConvBn {
            conv: &conv,
            bn: &bn,
            shape,
        };
        let scale = if i < last { 1.0 } else { spec.branch_scale };
        h = conv_bn(net, &spec.cfg, &c, &h, scale);
        if i < last {
            h = relu(net, i, &h);
        }
    }
    // torchvision projects the shortcut where the block changes the stride or the channels.
    let shortcut = if stride != 1 || cin != cout {
        let c = ConvBn {
            conv: &format!("{module}.downsample.0"),
            bn: &format!("{module}.downsample.1"),
            shape: Conv2d::new(cin, cout, 1, stride),
        };
        conv_bn(net, &spec.cfg, &c, x, 1.0)
    } else {
        x.to_string()
    };
    let sum = net.op(&scope, "Add", &[&h, &shortcut], vec![]);
    relu(net, last, &sum)
}

/// `x.view(x.size(0), -1)` as the exporter writes it.
fn view_flatten(net: &mut Net, x: &str) -> String {
    let shape = net.op("", "Shape", &[x], vec![]);
    let zero = net.const_i64("", &[], vec![0]);
    let batch = net.op("", "Gather", &[&shape, &zero], vec![("axis", int(0))]);
    let axes = net.const_i64("", &[1], vec![0]);
    let batch1 = net.op("", "Unsqueeze", &[&batch, &axes], vec![]);
    let rest = net.const_i64("", &[1], vec![-1]);
    let target = net.op("", "Concat", &[&batch1, &rest], vec![("axis", int(0))]);
    net.op("", "Reshape", &[x, &target], vec![])
}

/// The locked ResNet-50: `cfg`'s export on `size`×`size` images, input `[batch_size, 3, size,
/// size]`.
pub fn resnet50(cfg: &ResNetConfig, size: i64, seed: u64) -> Exported {
    let spec = ResNetSpec {
        arch: RESNET50,
        cfg: *cfg,
        size,
        batch: None,
        branch_scale: 1.0,
    };
    resnet(&spec, seed)
}

/// Writes the model; its input is `[batch, 3, size, size]`.
pub fn resnet(spec: &ResNetSpec, seed: u64) -> Exported {
    let cfg = &spec.cfg;
    let mut net = Net::new("torch_jit", cfg.opset, seed);
    let batch = spec
        .batch
        .map_or_else(|| "batch_size".to_string(), |b| b.to_string());
    let size = spec.size.to_string();
    net.input(INPUT, DType::F32, &[&batch, "3", &size, &size]);
    let stem = ConvBn {
        conv: "conv1",
        bn: "bn1",
        shape: Conv2d::new(3, cfg.width, 7, 2),
    };
    let mut h = conv_bn(&mut net, cfg, &stem, INPUT, 1.0);
    h = net.op("/relu", "Relu", &[&h], vec![]);
    h = net.op(
        "/maxpool",
        "MaxPool",
        &[&h],
        vec![
            ("ceil_mode", int(0)),
            ("dilations", ints(&[1, 1])),
            ("kernel_shape", ints(&[3, 3])),
            ("pads", ints(&[1, 1, 1, 1])),
            ("strides", ints(&[2, 2])),
        ],
    );
    let mut cin = cfg.width;
    for (s, &blocks) in spec.arch.layers.iter().enumerate() {
        let planes = cfg.width << s;
        for b in 0..blocks {
            let stride = if s > 0 && b == 0 { 2 } else { 1 };
            h = block(&mut net, spec, (s + 1, b), (cin, planes, stride), &h);
            cin = planes * spec.arch.block.expansion();
        }
    }
    h = net.op("/avgpool", "GlobalAveragePool", &[&h], vec![]);
    h = if cfg.view_flatten {
        view_flatten(&mut net, &h)
    } else {
        net.op("", "Flatten", &[&h], vec![("axis", int(1))])
    };
    linear_into(&mut net, "fc", &h, (cin, cfg.classes), OUTPUT);
    net.output(OUTPUT, &[&batch, &cfg.classes.to_string()]);
    net.finish()
}
