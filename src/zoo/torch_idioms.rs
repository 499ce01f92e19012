//! How `torch.onnx.export` names scopes, and the shape idioms it writes for `x.size(i)`, `view`
//! and `permute`, shared by the model builders.

use super::net::{int, ints, Net};
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
/// add a scope level each (`layer1.0.downsample.0` → `/layer1/layer1.0/downsample/downsample.0`).
pub fn sequential_scope(module: &str) -> String {
    let mut scope = String::new();
    let mut last = "";
    for part in module.split('.') {
        if part.parse::<usize>().is_ok() {
            scope.push_str(&format!("/{last}.{part}"));
        } else {
            scope.push_str(&format!("/{part}"));
        }
        last = part;
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
