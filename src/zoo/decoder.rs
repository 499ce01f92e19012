//! A Llama-style decoder with grouped-query attention, as `torch.onnx.export` writes a
//! `LlamaForCausalLM`-shaped model in eager mode (`dynamic_axes` on batch and sequence): RMSNorm
//! as Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul, rotary embeddings (cos/sin tables gathered at
//! `Range`-made position ids, `rotate_half` as Slice/Neg/Concat), the causal mask built from
//! `Range`, `Less` and `Where`, K/V heads repeated for the query heads
//! (`x[:, :, None].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)`: Unsqueeze →
//! Expand → Reshape with shapes from Shape subgraphs), SiLU-gated MLP and the LM head.

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{reshape, scope, size_of, split_heads};
use crate::ir::DType;

pub const INPUT_IDS: &str = "input_ids";
pub const LOGITS: &str = "logits";

#[derive(Clone, Copy, Debug)]
pub struct DecoderConfig {
    pub vocab: i64,
    pub hidden: i64,
    pub heads: i64,
    /// Key/value heads; each serves `heads / kv_heads` query heads.
    pub kv_heads: i64,
    pub layers: usize,
    pub intermediate: i64,
    pub max_positions: i64,
    pub opset: i64,
}

impl DecoderConfig {
    fn head_dim(&self) -> i64 {
        self.hidden / self.heads
    }
}

const RMS_EPS: f32 = 1e-6;

/// `weight * (x * rsqrt(mean(x²) + eps))`.
fn rms_norm(net: &mut Net, module: &str, x: &str, width: i64) -> String {
    let s = scope(module);
    let two = net.const_f32(&s, 2.0);
    let square = net.op(&s, "Pow", &[x, &two], vec![]);
    let mean = net.op(
        &s,
        "ReduceMean",
        &[&square],
        vec![("axes", ints(&[-1])), ("keepdims", int(1))],
    );
    let eps = net.const_f32(&s, RMS_EPS);
    let shifted = net.op(&s, "Add", &[&mean, &eps], vec![]);
    let root = net.op(&s, "Sqrt", &[&shifted], vec![]);
    let inv = net.op(&s, "Reciprocal", &[&root], vec![]);
    let normed = net.op(&s, "Mul", &[x, &inv], vec![]);
    let w = net.weight(&format!("{module}.weight"), &[width], 1.0, 0.1);
    net.op(&s, "Mul", &[&w, &normed], vec![])
}

/// A bias-free `nn.Linear`: MatMul with the exporter's transposed weight.
fn linear(net: &mut Net, module: &str, x: &str, fan_in: i64, fan_out: i64) -> String {
    let w = net.kaiming("onnx::MatMul", &[fan_in, fan_out], fan_in);
    net.op(&scope(module), "MatMul", &[x, &w], vec![])
}

/// The rotary tables at positions `0..seq`, shaped `[1, 1, seq, d]` for broadcasting: the
/// position ids come from `torch.arange(seq)` (Range with the limit read by Shape).
fn rotary_tables(net: &mut Net, cfg: &DecoderConfig, ids: &str) -> (String, String) {
    let s = "/model/rotary_emb";
    let d = cfg.head_dim();
    let half = (d / 2) as usize;
    let mut cos = Vec::new();
    let mut sin = Vec::new();
    for pos in 0..cfg.max_positions {
        let angles: Vec<f32> = (0..half)
            .map(|i| pos as f32 / 10000f32.powf(2.0 * i as f32 / d as f32))
            .collect();
        // `emb = cat(freqs, freqs)`: each angle serves both halves.
        for _ in 0..2 {
            cos.extend(angles.iter().map(|a| a.cos()));
            sin.extend(angles.iter().map(|a| a.sin()));
        }
    }
    let shape = net.op(s, "Shape", &[ids], vec![]);
    let one = net.const_i64(s, &[], vec![1]);
    let seq = net.op(s, "Gather", &[&shape, &one], vec![("axis", int(0))]);
    let start = net.const_i64(s, &[], vec![0]);
    let step = net.const_i64(s, &[], vec![1]);
    let positions = net.op(s, "Range", &[&start, &seq, &step], vec![]);
    let axes = net.const_i64(s, &[1], vec![0]);
    let positions = net.op(s, "Unsqueeze", &[&positions, &axes], vec![]);
    let mut table = |name: &str, values: Vec<f32>| {
        let t = net.table(name, &[cfg.max_positions, d], values);
        let rows = net.op(s, "Gather", &[&t, &positions], vec![("axis", int(0))]);
        let axes = net.const_i64(s, &[1], vec![1]);
        net.op(s, "Unsqueeze", &[&rows, &axes], vec![])
    };
    let cos = table("model.rotary_emb.cos_cached", cos);
    let sin = table("model.rotary_emb.sin_cached", sin);
    (cos, sin)
}

/// `x * cos + rotate_half(x) * sin`, `rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])`.
fn rotate(net: &mut Net, s: &str, x: &str, (cos, sin): (&str, &str), d: i64) -> String {
    let direct = net.op(s, "Mul", &[x, cos], vec![]);
    let axis = net.const_i64(s, &[1], vec![3]);
    let zero = net.const_i64(s, &[1], vec![0]);
    let mid = net.const_i64(s, &[1], vec![d / 2]);
    let end = net.const_i64(s, &[1], vec![i64::MAX]);
    let step = net.const_i64(s, &[1], vec![1]);
    let first = net.op(s, "Slice", &[x, &zero, &mid, &axis, &step], vec![]);
    let second = net.op(s, "Slice", &[x, &mid, &end, &axis, &step], vec![]);
    let negated = net.op(s, "Neg", &[&second], vec![]);
    let rotated = net.op(s, "Concat", &[&negated, &first], vec![("axis", int(-1))]);
    let turned = net.op(s, "Mul", &[&rotated, sin], vec![]);
    net.op(s, "Add", &[&direct, &turned], vec![])
}

/// `repeat_kv`: `[b, kv, s, d]` → `[b, kv · n_rep, s, d]` through a broadcast Expand.
fn repeat_kv(net: &mut Net, cfg: &DecoderConfig, s: &str, x: &str) -> String {
    let n_rep = cfg.heads / cfg.kv_heads;
    let batch = size_of(net, s, x, 0);
    let seq = size_of(net, s, x, 2);
    let axes = net.const_i64(s, &[1], vec![2]);
    let x5 = net.op(s, "Unsqueeze", &[x, &axes], vec![]);
    let kv = net.const_i64(s, &[1], vec![cfg.kv_heads]);
    let rep = net.const_i64(s, &[1], vec![n_rep]);
    let d = net.const_i64(s, &[1], vec![cfg.head_dim()]);
    let wide = net.op(
        s,
        "Concat",
        &[&batch, &kv, &rep, &seq, &d],
        vec![("axis", int(0))],
    );
    let expanded = net.op(s, "Expand", &[&x5, &wide], vec![]);
    let heads = net.const_i64(s, &[1], vec![cfg.kv_heads * n_rep]);
    let merged = net.op(
        s,
        "Concat",
        &[&batch, &heads, &seq, &d],
        vec![("axis", int(0))],
    );
    reshape(net, cfg.opset, s, &expanded, &merged)
}

/// The additive causal mask `[1, 1, seq, seq]`: 0 where `col <= row`, the f32 minimum above.
fn causal_mask(net: &mut Net, opset: i64, ids: &str) -> String {
    let s = "/model";
    let shape = net.op(s, "Shape", &[ids], vec![]);
    let one = net.const_i64(s, &[], vec![1]);
    let seq = net.op(s, "Gather", &[&shape, &one], vec![("axis", int(0))]);
    let start = net.const_i64(s, &[], vec![0]);
    let step = net.const_i64(s, &[], vec![1]);
    let cond = net.op(s, "Range", &[&start, &seq, &step], vec![]);
    // `mask_cond < (mask_cond + 1).view(-1, 1)`.
    let one_i = net.const_i64(s, &[], vec![1]);
    let next = net.op(s, "Add", &[&cond, &one_i], vec![]);
    let column = net.const_i64(s, &[2], vec![-1, 1]);
    let next = reshape(net, opset, s, &next, &column);
    let allowed = net.op(s, "Less", &[&cond, &next], vec![]);
    let zero = net.const_f32(s, 0.0);
    let min = net.const_f32(s, f32::MIN);
    let mask = net.op(s, "Where", &[&allowed, &zero, &min], vec![]);
    let axes = net.const_i64(s, &[2], vec![0, 1]);
    net.op(s, "Unsqueeze", &[&mask, &axes], vec![])
}

fn attention(
    net: &mut Net,
    cfg: &DecoderConfig,
    l: usize,
    h: &str,
    rope: (&str, &str),
    mask: &str,
) -> String {
    let module = format!("model.layers.{l}.self_attn");
    let s = scope(&module);
    let d = cfg.head_dim();
    let q = linear(
        net,
        &format!("{module}.q_proj"),
        h,
        cfg.hidden,
        cfg.heads * d,
    );
    let k = linear(
        net,
        &format!("{module}.k_proj"),
        h,
        cfg.hidden,
        cfg.kv_heads * d,
    );
    let v = linear(
        net,
        &format!("{module}.v_proj"),
        h,
        cfg.hidden,
        cfg.kv_heads * d,
    );
    let perm = [0, 2, 1, 3];
    let q = split_heads(net, cfg.opset, &s, &q, (cfg.heads, d), &perm);
    let k = split_heads(net, cfg.opset, &s, &k, (cfg.kv_heads, d), &perm);
    let v = split_heads(net, cfg.opset, &s, &v, (cfg.kv_heads, d), &perm);
    let q = rotate(net, &s, &q, rope, d);
    let k = rotate(net, &s, &k, rope, d);
    let k = repeat_kv(net, cfg, &s, &k);
    let v = repeat_kv(net, cfg, &s, &v);
    let kt = net.op(&s, "Transpose", &[&k], vec![("perm", ints(&[0, 1, 3, 2]))]);
    let scores = net.op(&s, "MatMul", &[&q, &kt], vec![]);
    let root = net.const_f32(&s, (d as f32).sqrt());
    let scores = net.op(&s, "Div", &[&scores, &root], vec![]);
    let scores = net.op(&s, "Add", &[&scores, mask], vec![]);
    let probs = net.op(&s, "Softmax", &[&scores], vec![("axis", int(-1))]);
    let ctx = net.op(&s, "MatMul", &[&probs, &v], vec![]);
    let ctx = net.op(&s, "Transpose", &[&ctx], vec![("perm", ints(&perm))]);
    let batch = size_of(net, &s, h, 0);
    let seq = size_of(net, &s, h, 1);
    let width = net.const_i64(&s, &[1], vec![cfg.hidden]);
    let shape = net.op(
        &s,
        "Concat",
        &[&batch, &seq, &width],
        vec![("axis", int(0))],
    );
    let ctx = reshape(net, cfg.opset, &s, &ctx, &shape);
    linear(
        net,
        &format!("{module}.o_proj"),
        &ctx,
        cfg.hidden,
        cfg.hidden,
    )
}

/// `down(silu(gate(x)) * up(x))`, SiLU as Sigmoid and Mul.
fn mlp(net: &mut Net, cfg: &DecoderConfig, l: usize, x: &str) -> String {
    let module = format!("model.layers.{l}.mlp");
    let (hd, inter) = (cfg.hidden, cfg.intermediate);
    let gate = linear(net, &format!("{module}.gate_proj"), x, hd, inter);
    let act_scope = format!("{}/act_fn", scope(&module));
    let sig = net.op(&act_scope, "Sigmoid", &[&gate], vec![]);
    let act = net.op(&act_scope, "Mul", &[&gate, &sig], vec![]);
    let up = linear(net, &format!("{module}.up_proj"), x, hd, inter);
    let prod = net.op(&scope(&module), "Mul", &[&act, &up], vec![]);
    linear(net, &format!("{module}.down_proj"), &prod, inter, hd)
}

/// Writes the model; its input is `[batch_size, sequence]` token ids.
pub fn decoder(cfg: &DecoderConfig, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", cfg.opset, seed);
    net.input(INPUT_IDS, DType::I64, &["batch_size", "sequence"]);
    let embed = net.weight(
        "model.embed_tokens.weight",
        &[cfg.vocab, cfg.hidden],
        0.0,
        1.0,
    );
    let mut h = net.op(
        "/model/embed_tokens",
        "Gather",
        &[&embed, INPUT_IDS],
        vec![],
    );
    let (cos, sin) = rotary_tables(&mut net, cfg, INPUT_IDS);
    let mask = causal_mask(&mut net, cfg.opset, INPUT_IDS);
    for l in 0..cfg.layers {
        let layer = format!("model.layers.{l}");
        let normed = rms_norm(
            &mut net,
            &format!("{layer}.input_layernorm"),
            &h,
            cfg.hidden,
        );
        let attn = attention(&mut net, cfg, l, &normed, (&cos, &sin), &mask);
        h = net.op(&scope(&layer), "Add", &[&h, &attn], vec![]);
        let normed = rms_norm(
            &mut net,
            &format!("{layer}.post_attention_layernorm"),
            &h,
            cfg.hidden,
        );
        let ffn = mlp(&mut net, cfg, l, &normed);
        h = net.op(&scope(&layer), "Add", &[&h, &ffn], vec![]);
    }
    let h = rms_norm(&mut net, "model.norm", &h, cfg.hidden);
    let w = net.kaiming("onnx::MatMul", &[cfg.hidden, cfg.vocab], cfg.hidden);
    net.op_into("/lm_head", "MatMul", &[&h, &w], LOGITS, vec![]);
    net.output(LOGITS, &["batch_size", "sequence", &cfg.vocab.to_string()]);
    net.finish()
}
