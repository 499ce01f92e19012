//! How `torch.onnx.export` names scopes, the shape idioms it writes for `x.size(i)`, `view`,
//! `permute`, constant slices and `chunk`, and its `Conv` attributes, shared by the model builders.

use super::net::{int, ints, Attrs, Net};

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
