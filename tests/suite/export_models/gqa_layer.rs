//! The network suite's GQA decoder layer (`dmove::zoo::gqa_layer`): one TinyLlama-shaped layer
//! written with the opset-23 operators RMSNormalization, RotaryEmbedding and Attention. At
//! `small()` the imported operators, the parameter count, C against the interpreter and the
//! interpreter against ONNX Runtime (which runs opset-23 Attention with grouped-query heads);
//! at `full()` the parameter count, and the formula over 22 layers with TinyLlama's 4
//! key/value heads, the embeddings and the LM head is TinyLlama-1.1B's published count.

use super::counts;
use super::pipeline::{
    assert_moderate, import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees,
};
use dmove::ir::Tensor;
use dmove::zoo::gqa_layer::{self, gqa_layer, GqaLayerConfig};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// One Llama layer's parameters from the architecture: two RMSNorm weights, the bias-free Q
/// and O projections (`hidden × heads·d`), K and V (`hidden × kv_heads·d`), and the gate, up
/// and down projections of the MLP.
fn layer_parameters(cfg: &GqaLayerConfig) -> u64 {
    let (h, d) = (cfg.hidden, cfg.head_dim());
    let attention = 2 * h * cfg.heads * d + 2 * h * cfg.kv_heads * d;
    (2 * h + attention + 3 * h * cfg.intermediate) as u64
}

/// The builder also writes the rotary cos and sin caches, `[max_positions, d/2]` each.
fn caches(cfg: &GqaLayerConfig) -> u64 {
    (cfg.max_positions * cfg.head_dim()) as u64
}

#[test]
fn gqa_layer_parameter_formula_is_tinyllamas() {
    let cfg = GqaLayerConfig::full();
    // TinyLlama-1.1B: 22 layers like the suite's but with 4 key/value heads, a 32000-token
    // embedding, an untied LM head and the final norm make 1,100,048,384 parameters.
    let tiny_llama = GqaLayerConfig { kv_heads: 4, ..cfg };
    let (vocab, hidden) = (32_000, cfg.hidden as u64);
    let whole = 22 * layer_parameters(&tiny_llama) + 2 * vocab * hidden + hidden;
    assert_eq!(whole, 1_100_048_384);
    assert_eq!(layer_parameters(&cfg), 45_092_864);
    assert_eq!(
        gqa_layer(&cfg, 23).parameters,
        layer_parameters(&cfg) + caches(&cfg)
    );
}

#[test]
fn gqa_layer_small_matches_through_c_and_onnxruntime() {
    let cfg = GqaLayerConfig::small();
    let model = gqa_layer(&cfg, 23);
    assert_eq!(model.parameters, layer_parameters(&cfg) + caches(&cfg));
    // Static shapes: nothing to bind.
    let p = import_bound(&model.bytes, &[]);
    // Seven projections; Reshape and Transpose for Q, K, V and the context; RoPE on Q and K;
    // the residual Adds; SiLU (Sigmoid, Mul) and the gate product.
    let expected = counts(&[
        ("Add", 2),
        ("Attention", 1),
        ("MatMul", 7),
        ("Mul", 2),
        ("RMSNormalization", 2),
        ("Reshape", 4),
        ("RotaryEmbedding", 2),
        ("Sigmoid", 1),
        ("Transpose", 4),
    ]);
    assert_eq!(library_ops(&p), expected);

    let (batch, seq, hidden) = (
        cfg.batch as usize,
        cfg.sequence as usize,
        cfg.hidden as usize,
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let x = (0..batch * seq * hidden)
        .map(|_| rng.gen_range(-2.0f32..2.0))
        .collect();
    // Each sequence continues from its own offset into the caches, as after a prefix.
    let positions = (0..batch * seq)
        .map(|i| (i % seq + 5 * (i / seq)) as i64)
        .collect();
    let inputs = BTreeMap::from([
        (
            gqa_layer::HIDDEN_STATES.to_string(),
            Tensor::f32(vec![batch, seq, hidden], x),
        ),
        (
            gqa_layer::POSITION_IDS.to_string(),
            Tensor::i64(vec![batch, seq], positions),
        ),
    ]);
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[gqa_layer::OUTPUT];
    assert_eq!(out.shape, [batch, seq, hidden]);
    assert_moderate("layer output", out, 0.5);
    onnxruntime_agrees("GQA decoder layer (opset 23)", &model.bytes, &inputs, &ours);
}
