//! One Llama decoder layer with grouped-query attention (TinyLlama-1.1B's widths, with 8
//! key/value heads where TinyLlama has 4) as a current exporter writes it at opset 23:
//! `torch.onnx.export(LlamaDecoderLayer(config).eval(), …, dynamo=True, opset_version=23)` with
//! SDPA attention, after onnxscript's opset-23 fusions. The norms are `RMSNormalization` (what
//! `aten.rms_norm` lowers to, and what the fusion makes of Pow/ReduceMean/Add/Sqrt/Reciprocal/
//! Mul); Q and K go through `view(b, s, -1, d).transpose(1, 2)` (Reshape → Transpose) into
//! `RotaryEmbedding` in the fusion's form (4-D input, `num_heads` and `interleaved = 0`
//! written), reading cos/sin caches (initializers `[max_positions, d/2]`) at the `position_ids`
//! input — the operator's cache form, which `torch.onnx.ops.rotary_embedding` also takes;
//! `scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)` becomes one 4-D
//! `Attention` with `is_causal = 1` and no head attributes (for 4-D inputs the exporter leaves
//! `q_num_heads`/`kv_num_heads` to the shapes: 32 query heads against 8 key/value heads), then
//! Transpose → Reshape → `o_proj`, the residual Add, and the SiLU-gated MLP (Sigmoid and Mul,
//! as `aten.silu` lowers). Shapes are static, as the dynamo exporter writes them without
//! `dynamic_shapes`. Node names follow the zoo's `torch.onnx` conventions (see `net.rs`), not
//! the dynamo exporter's.

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{linear, reshape, Module};
use crate::ir::DType;
use crate::onnx::AttrValue;

pub const HIDDEN_STATES: &str = "hidden_states";
pub const POSITION_IDS: &str = "position_ids";
pub const OUTPUT: &str = "output";

/// ONNX's code for float, the `stash_type` the fused RMSNormalization computes in.
const FLOAT: i64 = 1;
const OPSET: i64 = 23;

#[derive(Clone, Copy, Debug)]
pub struct GqaLayerConfig {
    pub hidden: i64,
    /// Query heads.
    pub heads: i64,
    /// Key/value heads; each serves `heads / kv_heads` query heads.
    pub kv_heads: i64,
    pub intermediate: i64,
    pub batch: i64,
    pub sequence: i64,
    /// Rows of the rotary caches (the model's `max_position_embeddings`).
    pub max_positions: i64,
    /// The rotary base (`rope_theta`).
    pub theta: f64,
    pub rms_eps: f32,
}

impl GqaLayerConfig {
    /// TinyLlama-1.1B's layer (hidden 2048, 32 query heads of 64, MLP 5632, 2048 positions,
    /// θ = 10000, ε = 1e-5) with 8 key/value heads (TinyLlama has 4; 8 is Llama-3's grouping
    /// of 4 query heads per key/value head) on one sequence of 256 tokens.
    pub fn full() -> Self {
        GqaLayerConfig {
            hidden: 2048,
            heads: 32,
            kv_heads: 8,
            intermediate: 5632,
            batch: 1,
            sequence: 256,
            max_positions: 2048,
            theta: 10000.0,
            rms_eps: 1e-5,
        }
    }

    /// The same structure at hidden size 64 (4 query heads sharing 2 key/value heads of 16),
    /// two sequences of 8 tokens.
    pub fn small() -> Self {
        GqaLayerConfig {
            hidden: 64,
            heads: 4,
            kv_heads: 2,
            intermediate: 96,
            batch: 2,
            sequence: 8,
            max_positions: 32,
            theta: 10000.0,
            rms_eps: 1e-5,
        }
    }

    pub fn head_dim(&self) -> i64 {
        self.hidden / self.heads
    }
}

/// `RMSNormalization(x, weight)` over the last axis, as `aten.rms_norm` and the fusion write it.
fn rms_norm(net: &mut Net, cfg: &GqaLayerConfig, name: &str, x: &str) -> String {
    let w = net.weight(&format!("{name}.weight"), &[cfg.hidden], 1.0, 0.1);
    net.op(
        &format!("/{name}"),
        "RMSNormalization",
        &[x, &w],
        vec![
            ("axis", int(-1)),
            ("epsilon", AttrValue::Float(cfg.rms_eps)),
            ("stash_type", int(FLOAT)),
        ],
    )
}

/// `cos(p·θ^(-2i/d))` and `sin(…)` for every position `p` and pair `i`: `[max_positions, d/2]`.
fn rotary_caches(cfg: &GqaLayerConfig) -> (Vec<f32>, Vec<f32>) {
    let d = cfg.head_dim();
    let angles: Vec<f64> = (0..cfg.max_positions)
        .flat_map(|p| (0..d / 2).map(move |i| (p, i)))
        .map(|(p, i)| p as f64 * cfg.theta.powf(-2.0 * i as f64 / d as f64))
        .collect();
    let cos = angles.iter().map(|a| a.cos() as f32).collect();
    let sin = angles.iter().map(|a| a.sin() as f32).collect();
    (cos, sin)
}

/// `proj(x).view(b, s, -1, d).transpose(1, 2)`: `[b, heads, s, d]`.
fn heads_of(net: &mut Net, cfg: &GqaLayerConfig, proj: &str, x: &str, heads: i64) -> String {
    let d = cfg.head_dim();
    let m = Module::listed(&format!("self_attn.{proj}"));
    let y = linear(net, &m, x, (cfg.hidden, heads * d), false);
    let s = "/self_attn";
    let shape = net.const_i64(s, &[4], vec![cfg.batch, cfg.sequence, -1, d]);
    let y = reshape(net, OPSET, s, &y, &shape);
    net.op(s, "Transpose", &[&y], vec![("perm", ints(&[0, 2, 1, 3]))])
}

/// `RotaryEmbedding(x, cos_cache, sin_cache, position_ids)` on `[b, heads, s, d]`.
fn rotate(net: &mut Net, x: &str, (cos, sin): (&str, &str), heads: i64) -> String {
    net.op(
        "/self_attn",
        "RotaryEmbedding",
        &[x, cos, sin, POSITION_IDS],
        vec![("interleaved", int(0)), ("num_heads", int(heads))],
    )
}

fn attention(net: &mut Net, cfg: &GqaLayerConfig, x: &str, rope: (&str, &str)) -> String {
    let q = heads_of(net, cfg, "q_proj", x, cfg.heads);
    let k = heads_of(net, cfg, "k_proj", x, cfg.kv_heads);
    let v = heads_of(net, cfg, "v_proj", x, cfg.kv_heads);
    let q = rotate(net, &q, rope, cfg.heads);
    let k = rotate(net, &k, rope, cfg.kv_heads);
    let s = "/self_attn";
    let y = net.op(s, "Attention", &[&q, &k, &v], vec![("is_causal", int(1))]);
    let y = net.op(s, "Transpose", &[&y], vec![("perm", ints(&[0, 2, 1, 3]))]);
    let shape = net.const_i64(s, &[3], vec![cfg.batch, cfg.sequence, -1]);
    let y = reshape(net, OPSET, s, &y, &shape);
    let o = Module::listed("self_attn.o_proj");
    linear(net, &o, &y, (cfg.hidden, cfg.hidden), false)
}

/// `down(silu(gate(x)) * up(x))`, SiLU as Sigmoid and Mul.
fn mlp(net: &mut Net, cfg: &GqaLayerConfig, x: &str) -> String {
    let widths = (cfg.hidden, cfg.intermediate);
    let gate = linear(net, &Module::listed("mlp.gate_proj"), x, widths, false);
    let sig = net.op("/mlp/act_fn", "Sigmoid", &[&gate], vec![]);
    let act = net.op("/mlp/act_fn", "Mul", &[&gate, &sig], vec![]);
    let up = linear(net, &Module::listed("mlp.up_proj"), x, widths, false);
    let prod = net.op("/mlp", "Mul", &[&act, &up], vec![]);
    let down = Module::listed("mlp.down_proj");
    linear(net, &down, &prod, (cfg.intermediate, cfg.hidden), false)
}

/// Writes the layer; its inputs are the hidden states `[batch, sequence, hidden]` and the
/// positions `[batch, sequence]` (rows of the rotary caches, below `max_positions`).
pub fn gqa_layer(cfg: &GqaLayerConfig, seed: u64) -> Exported {
    let mut net = Net::new("main_graph", OPSET, seed);
    let (b, s, h) = (
        cfg.batch.to_string(),
        cfg.sequence.to_string(),
        cfg.hidden.to_string(),
    );
    net.input(HIDDEN_STATES, DType::F32, &[b.as_str(), &s, &h]);
    net.input(POSITION_IDS, DType::I64, &[b.as_str(), &s]);
    let (cos, sin) = rotary_caches(cfg);
    let half = cfg.head_dim() / 2;
    let cos = net.table(
        "self_attn.rotary_emb.cos_cache",
        &[cfg.max_positions, half],
        cos,
    );
    let sin = net.table(
        "self_attn.rotary_emb.sin_cache",
        &[cfg.max_positions, half],
        sin,
    );
    let normed = rms_norm(&mut net, cfg, "input_layernorm", HIDDEN_STATES);
    let attn = attention(&mut net, cfg, &normed, (&cos, &sin));
    let h1 = net.op("", "Add", &[HIDDEN_STATES, &attn], vec![]);
    let normed = rms_norm(&mut net, cfg, "post_attention_layernorm", &h1);
    let ffn = mlp(&mut net, cfg, &normed);
    net.op_into("", "Add", &[&h1, &ffn], OUTPUT, vec![]);
    net.output(OUTPUT, &[b.as_str(), &s, &h]);
    net.finish()
}
