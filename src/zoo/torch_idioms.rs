//! How `torch.onnx.export` names scopes, the shape idioms it writes for `x.size(i)`, `view`,
//! `permute`, constant slices and `chunk`, its `Conv` attributes, and the layers torchvision's
//! classifiers share (convolutions with batch norm folded in, the final `nn.Linear`), used by the
//! model builders.

use super::net::{int, ints, Attrs, Net};
use crate::onnx::AttrValue;

/// The exporter's scope of a submodule reached through `ModuleList`s, which add no scope of
/// their own (`encoder.layer.0.attention.self` → `/encoder/layer.0/attention/self`).
pub fn scope(module: &str) -> String {
    let mut out = String::new();
    let mut parts = module.split('.').peekable();
    while let Some(p) = parts.next() {
        match parts.peek() {
            Some(n) if n.parse::<usize>().is_ok() => {
                out.push_str(&format!("/{p}.{n}"));
                parts.next();
            }
            _ => out.push_str(&format!("/{p}")),
        }
    }
    out
}

/// The exporter's scope of a submodule reached through `Sequential`s, which are called and so
/// add a scope level each, named after the level above when nested
/// (`layer1.0.downsample.0` → `/layer1/layer1.0/downsample/downsample.0`,
/// `features.1.0.block.0.0` → `/features/features.1/features.1.0/block/block.0/block.0.0`).
pub fn sequential_scope(module: &str) -> String {
    let mut scope = String::new();
    let mut level = String::new();
    for part in module.split('.') {
        level = match part.parse::<usize>() {
            Ok(_) => format!("{level}.{part}"),
            Err(_) => part.to_string(),
        };
        scope.push('/');
        scope.push_str(&level);
    }
    scope
}

/// `x.size(i)` as a one-element tensor: Shape → Gather(scalar i) → Unsqueeze(axes [0]).
pub fn size_of(net: &mut Net, scope: &str, x: &str, i: i64) -> String {
    let shape = net.op(scope, "Shape", &[x], vec![]);
    let index = net.const_i64(scope, &[], vec![i]);
    let dim = net.op(scope, "Gather", &[&shape, &index], vec![("axis", int(0))]);
    let axes = net.const_i64(scope, &[1], vec![0]);
    net.op(scope, "Unsqueeze", &[&dim, &axes], vec![])
}

/// `Reshape`, with the `allowzero = 0` the exporter writes from opset 14 on.
pub fn reshape(net: &mut Net, opset: i64, scope: &str, x: &str, shape: &str) -> String {
    let attrs = match opset >= 14 {
        true => vec![("allowzero", int(0))],
        false => vec![],
    };
    net.op(scope, "Reshape", &[x, shape], attrs)
}

/// `x.view(x.size(0), x.size(1), heads, d).permute(perm)` (BERT's `transpose_for_scores`,
/// Llama's `view(bsz, q_len, heads, head_dim).transpose(1, 2)`).
pub fn split_heads(
    net: &mut Net,
    opset: i64,
    scope: &str,
    x: &str,
    (heads, d): (i64, i64),
    perm: &[i64],
) -> String {
    let batch = size_of(net, scope, x, 0);
    let seq = size_of(net, scope, x, 1);
    let heads = net.const_i64(scope, &[1], vec![heads]);
    let d = net.const_i64(scope, &[1], vec![d]);
    let shape = net.op(
        scope,
        "Concat",
        &[&batch, &seq, &heads, &d],
        vec![("axis", int(0))],
    );
    let y = reshape(net, opset, scope, x, &shape);
    net.op(scope, "Transpose", &[&y], vec![("perm", ints(perm))])
}

/// torchvision's `_make_divisible(v, divisor)`: `v` rounded to the nearest multiple of `divisor`
/// (at least `divisor`), one multiple more when rounding lost over 10%. MobileNetV2 and
/// EfficientNet size their channels with it.
pub fn make_divisible(v: f64, divisor: i64) -> i64 {
    let rounded = divisor.max((v + divisor as f64 / 2.0) as i64 / divisor * divisor);
    match (rounded as f64) < 0.9 * v {
        true => rounded + divisor,
        false => rounded,
    }
}

/// A `nn.Conv2d` as torchvision's blocks configure it: a square kernel, padding `(k - 1) / 2`,
/// dilation 1, `groups` (the channel count for a depthwise convolution).
#[derive(Clone, Copy, Debug)]
pub struct Conv2d {
    pub cin: i64,
    pub cout: i64,
    pub kernel: i64,
    pub stride: i64,
    pub groups: i64,
}

impl Conv2d {
    /// A dense convolution (one group).
    pub fn new(cin: i64, cout: i64, kernel: i64, stride: i64) -> Conv2d {
        Conv2d {
            cin,
            cout,
            kernel,
            stride,
            groups: 1,
        }
    }

    /// A depthwise convolution: one group per channel.
    pub fn depthwise(channels: i64, kernel: i64, stride: i64) -> Conv2d {
        Conv2d {
            cin: channels,
            cout: channels,
            kernel,
            stride,
            groups: channels,
        }
    }

    pub fn weight_dims(&self) -> [i64; 4] {
        [self.cout, self.cin / self.groups, self.kernel, self.kernel]
    }

    /// Inputs each output reads: `cin / groups · k²`.
    pub fn fan_in(&self) -> i64 {
        self.cin / self.groups * self.kernel * self.kernel
    }

    /// The attributes the exporter writes on the `Conv` node.
    pub fn attrs(&self) -> Attrs {
        let (k, s) = (self.kernel, self.stride);
        vec![
            ("dilations", ints(&[1, 1])),
            ("group", int(self.groups)),
            ("kernel_shape", ints(&[k, k])),
            ("pads", ints(&[(k - 1) / 2; 4])),
            ("strides", ints(&[s, s])),
        ]
    }
}

/// `conv` (the module `module`) followed by its batch norm, as the eval-mode exporter writes the
/// pair: one `Conv` whose folded weight and bias it names `onnx::Conv_<n>`. The weight is
/// uniform in ± `spread`, the bias in ± 0.1.
pub fn folded_conv(net: &mut Net, module: &str, x: &str, conv: &Conv2d, spread: f32) -> String {
    let w = net.weight("onnx::Conv", &conv.weight_dims(), 0.0, spread);
    let b = net.weight("onnx::Conv", &[conv.cout], 0.0, 0.1);
    net.op(
        &sequential_scope(module),
        "Conv",
        &[x, &w, &b],
        conv.attrs(),
    )
}

/// The classifier `nn.Linear` `module` (`fc`, `classifier.1`) on flattened features, as Gemm into
/// the graph output `out`, with PyTorch's default initialisation.
pub fn linear_into(net: &mut Net, module: &str, x: &str, (cin, cout): (i64, i64), out: &str) {
    let w = net.kaiming(&format!("{module}.weight"), &[cout, cin], cin);
    let b = net.kaiming(&format!("{module}.bias"), &[cout], cin);
    net.op_into(
        &sequential_scope(module),
        "Gemm",
        &[x, &w, &b],
        out,
        vec![
            ("alpha", AttrValue::Float(1.0)),
            ("beta", AttrValue::Float(1.0)),
            ("transB", int(1)),
        ],
    );
}

/// A submodule as the exporter sees it: its `state_dict` prefix (`encoder.layer.0.output.dense`)
/// and the scope its nodes are named in (`/encoder/layer.0/output/dense`), which depends on
/// whether its containers are `ModuleList`s ([`scope`]) or `Sequential`s ([`sequential_scope`]).
pub struct Module {
    pub name: String,
    pub scope: String,
}

impl Module {
    /// A submodule reached through `ModuleList`s.
    pub fn listed(name: &str) -> Module {
        Module {
            name: name.to_string(),
            scope: scope(name),
        }
    }

    /// A submodule reached through `Sequential`s.
    pub fn sequential(name: &str) -> Module {
        Module {
            name: name.to_string(),
            scope: sequential_scope(name),
        }
    }
}

/// `nn.Linear` applied to a tensor of rank 3 or more: MatMul with the transposed weight, which
/// the exporter writes as a new initializer (`onnx::MatMul_<n>`), then, with a bias, an Add
/// taking the bias first.
pub fn linear(
    net: &mut Net,
    m: &Module,
    x: &str,
    (fan_in, fan_out): (i64, i64),
    bias: bool,
) -> String {
    let w = net.kaiming("onnx::MatMul", &[fan_in, fan_out], fan_in);
    let b = bias.then(|| net.kaiming(&format!("{}.bias", m.name), &[fan_out], fan_in));
    let y = net.op(&m.scope, "MatMul", &[x, &w], vec![]);
    match b {
        Some(b) => net.op(&m.scope, "Add", &[&b, &y], vec![]),
        None => y,
    }
}

/// `nn.Linear` applied to a matrix: one Gemm with the `[out, in]` weight under its `state_dict`
/// name and `transB = 1`, writing `out` when given (a graph output) or its own output.
pub fn gemm(
    net: &mut Net,
    m: &Module,
    x: &str,
    (fan_in, fan_out): (i64, i64),
    out: Option<&str>,
) -> String {
    let w = net.kaiming(&format!("{}.weight", m.name), &[fan_out, fan_in], fan_in);
    let b = net.kaiming(&format!("{}.bias", m.name), &[fan_out], fan_in);
    let attrs = vec![
        ("alpha", AttrValue::Float(1.0)),
        ("beta", AttrValue::Float(1.0)),
        ("transB", int(1)),
    ];
    match out {
        Some(out) => {
            net.op_into(&m.scope, "Gemm", &[x, &w, &b], out, attrs);
            out.to_string()
        }
        None => net.op(&m.scope, "Gemm", &[x, &w, &b], attrs),
    }
}

/// The affine parameters of `nn.LayerNorm(width)`: a weight near 1 and a bias near 0.
pub fn layer_norm_params(net: &mut Net, name: &str, width: i64) -> (String, String) {
    let w = net.weight(&format!("{name}.weight"), &[width], 1.0, 0.1);
    let b = net.weight(&format!("{name}.bias"), &[width], 0.0, 0.1);
    (w, b)
}

/// `nn.LayerNorm(width, eps)` over the last axis from opset 17 on: one LayerNormalization.
pub fn layer_norm(net: &mut Net, m: &Module, x: &str, width: i64, eps: f32) -> String {
    let (w, b) = layer_norm_params(net, &m.name, width);
    net.op(
        &m.scope,
        "LayerNormalization",
        &[x, &w, &b],
        vec![("axis", int(-1)), ("epsilon", AttrValue::Float(eps))],
    )
}

/// GELU as `nn.GELU()` / `F.gelu` export before opset 20: `x * 0.5 * (1 + erf(x / sqrt 2))`,
/// written as the exporter orders it.
pub fn gelu(net: &mut Net, scope: &str, x: &str) -> String {
    let sqrt2 = net.const_f32(scope, std::f32::consts::SQRT_2);
    let scaled = net.op(scope, "Div", &[x, &sqrt2], vec![]);
    let erf = net.op(scope, "Erf", &[&scaled], vec![]);
    let one = net.const_f32(scope, 1.0);
    let shifted = net.op(scope, "Add", &[&erf, &one], vec![]);
    let prod = net.op(scope, "Mul", &[x, &shifted], vec![]);
    let half = net.const_f32(scope, 0.5);
    net.op(scope, "Mul", &[&prod, &half], vec![])
}

/// The attributes the exporter writes on every `Conv` (1-D or 2-D): `pads` lists the begins,
/// then the ends.
pub fn conv_attrs(
    kernel: &[i64],
    strides: &[i64],
    pads: &[i64],
    dilations: &[i64],
    group: i64,
) -> Attrs {
    vec![
        ("dilations", ints(dilations)),
        ("group", int(group)),
        ("kernel_shape", ints(kernel)),
        ("pads", ints(pads)),
        ("strides", ints(strides)),
    ]
}

/// `x[..., start:end]` on `axis` with constant bounds: four `Constant`s (axes first, then
/// starts, ends and steps, the order the exporter creates them in) and a `Slice`.
pub fn slice(net: &mut Net, scope: &str, x: &str, axis: i64, (start, end): (i64, i64)) -> String {
    let axes = net.const_i64(scope, &[1], vec![axis]);
    let starts = net.const_i64(scope, &[1], vec![start]);
    let ends = net.const_i64(scope, &[1], vec![end]);
    let steps = net.const_i64(scope, &[1], vec![1]);
    net.op(scope, "Slice", &[x, &starts, &ends, &axes, &steps], vec![])
}

/// `x.chunk(chunks, dim)` as the exporter writes it from opset 13 on (`prim::ConstantChunk`),
/// even for a static shape: the chunk size `(size + chunks - 1) / chunks` read with Shape →
/// Gather → Add → Div, and one `Slice` per chunk between multiples of it.
pub fn chunk(net: &mut Net, scope: &str, x: &str, chunks: i64, dim: i64) -> Vec<String> {
    let shape = net.op(scope, "Shape", &[x], vec![]);
    let axis = net.const_i64(scope, &[1], vec![dim]);
    let size = net.op(scope, "Gather", &[&shape, &axis], vec![("axis", int(0))]);
    let mut start = net.const_i64(scope, &[1], vec![0]);
    let round_up = net.const_i64(scope, &[1], vec![chunks - 1]);
    let padded = net.op(scope, "Add", &[&size, &round_up], vec![]);
    let count = net.const_i64(scope, &[1], vec![chunks]);
    let step = net.op(scope, "Div", &[&padded, &count], vec![]);
    (1..=chunks)
        .map(|i| {
            let index = net.const_i64(scope, &[1], vec![i]);
            let end = net.op(scope, "Mul", &[&step, &index], vec![]);
            let part = net.op(scope, "Slice", &[x, &start, &end, &axis], vec![]);
            start = end;
            part
        })
        .collect()
}
