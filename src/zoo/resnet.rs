//! ResNet-50 as `torch.onnx.export(torchvision.models.resnet50().eval(), …,
//! dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}})` writes it, at a
//! chosen width: the stem (7×7/2 conv, BN, ReLU, 3×3/2 max pool), bottleneck stages of
//! [3, 4, 6, 3] blocks (1×1 → 3×3 carrying the stride → 1×1 with expansion 4, a projection
//! shortcut in each stage's first block), global average pooling, flatten and the classifier.
//! Only the channel counts shrink (`width` instead of 64); convolutions, kernels, strides and
//! paddings are ResNet-50's.

use super::net::{int, ints, Attrs, Exported, Net};
use super::torch_idioms::sequential_scope;
use crate::ir::DType;
use crate::onnx::AttrValue;

/// Blocks per stage, as in ResNet-50.
pub const STAGES: [usize; 4] = [3, 4, 6, 3];
/// Output channels of a bottleneck relative to its inner width.
const EXPANSION: i64 = 4;
pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";

#[derive(Clone, Copy, Debug)]
pub struct ResNetConfig {
    /// Channels of the stem and of the first stage's inner convolutions (64 in ResNet-50).
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

impl ResNetConfig {
    /// torchvision's network as `torch.onnx.export` writes it in eval mode: width 64, 1000
    /// classes, opset 17, BN folded, `torch.flatten`.
    pub fn torchvision() -> Self {
        ResNetConfig {
            width: 64,
            classes: 1000,
            opset: 17,
            batchnorm: false,
            view_flatten: false,
        }
    }
}

/// Conv (+ BN when kept), the way the exporter writes a `conv` + `bn` module pair.
struct ConvBn<'a> {
    conv: &'a str,
    bn: &'a str,
    cin: i64,
    cout: i64,
    kernel: i64,
    stride: i64,
}

fn conv_bn(net: &mut Net, cfg: &ResNetConfig, c: &ConvBn, x: &str) -> String {
    let k = c.kernel;
    let fan_in = c.cin * k * k;
    // He-uniform, so activations keep their scale through 50 ReLU layers.
    let spread = (6.0 / fan_in as f32).sqrt();
    let attrs: Attrs = vec![
        ("dilations", ints(&[1, 1])),
        ("group", int(1)),
        ("kernel_shape", ints(&[k, k])),
        ("pads", ints(&[k / 2; 4])),
        ("strides", ints(&[c.stride, c.stride])),
    ];
    let dims = [c.cout, c.cin, k, k];
    if !cfg.batchnorm {
        // BN folded into the convolution: the exporter names the new tensors `onnx::Conv_<n>`.
        let w = net.weight("onnx::Conv", &dims, 0.0, spread);
        let b = net.weight("onnx::Conv", &[c.cout], 0.0, 0.1);
        return net.op(&sequential_scope(c.conv), "Conv", &[x, &w, &b], attrs);
    }
    let w = net.weight(&format!("{}.weight", c.conv), &dims, 0.0, spread);
    let y = net.op(&sequential_scope(c.conv), "Conv", &[x, &w], attrs);
    let scale = net.weight(&format!("{}.weight", c.bn), &[c.cout], 1.0, 0.2);
    let bias = net.weight(&format!("{}.bias", c.bn), &[c.cout], 0.0, 0.1);
    let mean = net.weight(&format!("{}.running_mean", c.bn), &[c.cout], 0.0, 0.1);
    let var = net.weight(&format!("{}.running_var", c.bn), &[c.cout], 1.0, 0.5);
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

/// One bottleneck block `layer<s>.<b>` of inner width `planes`.
fn bottleneck(
    net: &mut Net,
    cfg: &ResNetConfig,
    (stage, block): (usize, usize),
    (cin, planes, stride): (i64, i64, i64),
    x: &str,
) -> String {
    let module = format!("layer{stage}.{block}");
    let scope = sequential_scope(&module);
    let relu = |net: &mut Net, k: usize, x: &str| {
        let name = if k == 0 {
            "relu".to_string()
        } else {
            format!("relu_{k}")
        };
        net.op(&format!("{scope}/{name}"), "Relu", &[x], vec![])
    };
    let mut h = x.to_string();
    for (i, (c_in, c_out, kernel, s)) in [
        (cin, planes, 1, 1),
        (planes, planes, 3, stride),
        (planes, planes * EXPANSION, 1, 1),
    ]
    .into_iter()
    .enumerate()
    {
        let conv = format!("{module}.conv{}", i + 1);
        let bn = format!("{module}.bn{}", i + 1);
        let spec = ConvBn {
            conv: &conv,
            bn: &bn,
            cin: c_in,
            cout: c_out,
            kernel,
            stride: s,
        };
        h = conv_bn(net, cfg, &spec, &h);
        if i < 2 {
            h = relu(net, i, &h);
        }
    }
    let shortcut = if block == 0 {
        let spec = ConvBn {
            conv: &format!("{module}.downsample.0"),
            bn: &format!("{module}.downsample.1"),
            cin,
            cout: planes * EXPANSION,
            kernel: 1,
            stride,
        };
        conv_bn(net, cfg, &spec, x)
    } else {
        x.to_string()
    };
    let sum = net.op(&scope, "Add", &[&h, &shortcut], vec![]);
    relu(net, 2, &sum)
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

/// Writes the model; its input is `[batch_size, 3, size, size]`.
pub fn resnet50(cfg: &ResNetConfig, size: i64, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", cfg.opset, seed);
    net.input(
        INPUT,
        DType::F32,
        &["batch_size", "3", &size.to_string(), &size.to_string()],
    );
    let stem = ConvBn {
        conv: "conv1",
        bn: "bn1",
        cin: 3,
        cout: cfg.width,
        kernel: 7,
        stride: 2,
    };
    let mut h = conv_bn(&mut net, cfg, &stem, INPUT);
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
    for (s, &blocks) in STAGES.iter().enumerate() {
        let planes = cfg.width << s;
        for b in 0..blocks {
            let stride = if s > 0 && b == 0 { 2 } else { 1 };
            h = bottleneck(&mut net, cfg, (s + 1, b), (cin, planes, stride), &h);
            cin = planes * EXPANSION;
        }
    }
    h = net.op("/avgpool", "GlobalAveragePool", &[&h], vec![]);
    h = if cfg.view_flatten {
        view_flatten(&mut net, &h)
    } else {
        net.op("", "Flatten", &[&h], vec![("axis", int(1))])
    };
    let w = net.kaiming("fc.weight", &[cfg.classes, cin], cin);
    let b = net.kaiming("fc.bias", &[cfg.classes], cin);
    net.op_into(
        "/fc",
        "Gemm",
        &[&h, &w, &b],
        OUTPUT,
        vec![
            ("alpha", AttrValue::Float(1.0)),
            ("beta", AttrValue::Float(1.0)),
            ("transB", int(1)),
        ],
    );
    net.output(OUTPUT, &["batch_size", &cfg.classes.to_string()]);
    net.finish()
}
