//! The demo network: one transformer encoder layer, built as an ONNX model in memory the way
//! PyTorch exports it (MatMul + Add projections, Reshape/Transpose into heads, scaled softmax
//! attention, residuals, LayerNormalization, an erf-based GELU feed-forward block).

use crate::onnx::writer::{AttrValue, ModelBuilder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Sizes of the encoder layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EncoderConfig {
    pub seq: i64,
    pub hidden: i64,
    pub heads: i64,
    pub ffn: i64,
}

impl Default for EncoderConfig {
    /// Batch 1, sequence 128, hidden 256, 4 heads, feed-forward 1024.
    fn default() -> Self {
        EncoderConfig {
            seq: 128,
            hidden: 256,
            heads: 4,
            ffn: 1024,
        }
    }
}

impl EncoderConfig {
    /// Multiply-adds counted twice: projections, attention scores and context, feed-forward.
    pub fn matmul_flops(&self) -> u64 {
        let (s, d, f) = (self.seq as u64, self.hidden as u64, self.ffn as u64);
        2 * s * d * d * 4 + 2 * 2 * s * s * d + 2 * 2 * s * d * f
    }
}

/// Name of the model's input and output.
pub const INPUT: &str = "x";
pub const OUTPUT: &str = "y";

/// Weights drawn uniformly in ±1/sqrt(fan_in) from a fixed seed, so runs are reproducible.
pub fn encoder_model(cfg: &EncoderConfig, seed: u64) -> Vec<u8> {
    let EncoderConfig {
        seq,
        hidden,
        heads,
        ffn,
    } = *cfg;
    let head_dim = hidden / heads;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut weights = |rows: i64, cols: i64| -> Vec<f32> {
        let bound = 1.0 / (rows as f32).sqrt();
        (0..rows * cols)
            .map(|_| rng.gen_range(-bound..bound))
            .collect()
    };
    let mut m = ModelBuilder::new("encoder_layer", 17)
        .input(INPUT, [1, seq, hidden])
        .output(OUTPUT, [1, seq, hidden]);
    for (name, rows, cols) in [
        ("wq", hidden, hidden),
        ("wk", hidden, hidden),
        ("wv", hidden, hidden),
        ("wo", hidden, hidden),
        ("w1", hidden, ffn),
        ("w2", ffn, hidden),
    ] {
        m = m.initializer(name, &[rows, cols], weights(rows, cols));
    }
    for (name, len) in [
        ("bq", hidden),
        ("bk", hidden),
        ("bv", hidden),
        ("bo", hidden),
        ("b1", ffn),
        ("b2", hidden),
    ] {
        m = m.initializer(name, &[len], weights(len, 1));
    }
    for ln in ["ln1", "ln2"] {
        m = m
            .initializer(
                &format!("{ln}_scale"),
                &[hidden],
                vec![1.0; hidden as usize],
            )
            .initializer(&format!("{ln}_bias"), &[hidden], vec![0.0; hidden as usize]);
    }
    m = m
        .initializer_i64("split_heads", &[4], vec![1, seq, heads, head_dim])
        .initializer_i64("merge_heads", &[3], vec![1, seq, hidden])
        .initializer("scale", &[], vec![(head_dim as f32).sqrt()])
        .initializer("sqrt2", &[], vec![std::f32::consts::SQRT_2])
        .initializer("half", &[], vec![0.5])
        .initializer("one", &[], vec![1.0]);
    let perm = |p: &[i64]| vec![("perm", AttrValue::Ints(p.to_vec()))];
    for (p, w, b) in [("q", "wq", "bq"), ("k", "wk", "bk"), ("v", "wv", "bv")] {
        let (mm, lin, heads4) = (format!("{p}_mm"), format!("{p}_lin"), format!("{p}_heads"));
        m = m
            .named_node(&format!("{p}_proj"), "MatMul", &[INPUT, w], &[&mm], vec![])
            .named_node(&format!("{p}_bias"), "Add", &[&mm, b], &[&lin], vec![])
            .named_node(
                &format!("{p}_split"),
                "Reshape",
                &[&lin, "split_heads"],
                &[&heads4],
                vec![],
            );
    }
    m = m
        .named_node(
            "q_perm",
            "Transpose",
            &["q_heads"],
            &["q_t"],
            perm(&[0, 2, 1, 3]),
        )
        .named_node(
            "k_perm",
            "Transpose",
            &["k_heads"],
            &["k_t"],
            perm(&[0, 2, 3, 1]),
        )
        .named_node(
            "v_perm",
            "Transpose",
            &["v_heads"],
            &["v_t"],
            perm(&[0, 2, 1, 3]),
        )
        .named_node("scores", "MatMul", &["q_t", "k_t"], &["s_raw"], vec![])
        .named_node("scale_scores", "Div", &["s_raw", "scale"], &["s"], vec![])
        .named_node(
            "softmax",
            "Softmax",
            &["s"],
            &["attn"],
            vec![("axis", AttrValue::Int(-1))],
        )
        .named_node("context", "MatMul", &["attn", "v_t"], &["ctx"], vec![])
        .named_node(
            "ctx_perm",
            "Transpose",
            &["ctx"],
            &["ctx_t"],
            perm(&[0, 2, 1, 3]),
        )
        .named_node(
            "merge",
            "Reshape",
            &["ctx_t", "merge_heads"],
            &["ctx_m"],
            vec![],
        )
        .named_node("o_proj", "MatMul", &["ctx_m", "wo"], &["o_mm"], vec![])
        .named_node("o_bias", "Add", &["o_mm", "bo"], &["o"], vec![])
        .named_node("residual1", "Add", &[INPUT, "o"], &["r1"], vec![])
        .named_node(
            "ln1",
            "LayerNormalization",
            &["r1", "ln1_scale", "ln1_bias"],
            &["h"],
            vec![
                ("axis", AttrValue::Int(-1)),
                ("epsilon", AttrValue::Float(1e-5)),
            ],
        )
        .named_node("ffn1", "MatMul", &["h", "w1"], &["f_mm"], vec![])
        .named_node("ffn1_bias", "Add", &["f_mm", "b1"], &["f"], vec![])
        .named_node("gelu_div", "Div", &["f", "sqrt2"], &["g1"], vec![])
        .named_node("gelu_erf", "Erf", &["g1"], &["g2"], vec![])
        .named_node("gelu_add", "Add", &["g2", "one"], &["g3"], vec![])
        .named_node("gelu_mul", "Mul", &["f", "g3"], &["g4"], vec![])
        .named_node("gelu_half", "Mul", &["g4", "half"], &["g"], vec![])
        .named_node("ffn2", "MatMul", &["g", "w2"], &["f2_mm"], vec![])
        .named_node("ffn2_bias", "Add", &["f2_mm", "b2"], &["f2"], vec![])
        .named_node("residual2", "Add", &["h", "f2"], &["r2"], vec![])
        .named_node(
            "ln2",
            "LayerNormalization",
            &["r2", "ln2_scale", "ln2_bias"],
            &[OUTPUT],
            vec![
                ("axis", AttrValue::Int(-1)),
                ("epsilon", AttrValue::Float(1e-5)),
            ],
        );
    m.encode()
}
