//! The benchmark suite of `dmove bench --suite`: the workloads dmove is measured on against
//! ONNX Runtime, OpenVINO and numpy, each built as an ONNX model in memory (no files), with
//! weights drawn from a fixed seed.

use super::model::{encoder_model, EncoderConfig};
use crate::onnx::writer::{AttrValue, ModelBuilder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One workload of the suite.
pub struct SuiteModel {
    /// Short identifier (`matmul_1024`), used in tables and JSON.
    pub name: &'static str,
    /// What it is, in words.
    pub title: String,
    pub onnx: Vec<u8>,
}

/// The opset the suite's models import.
const OPSET: i64 = 17;

/// Every workload of the suite, in the order they are run.
pub fn models(seed: u64) -> Vec<SuiteModel> {
    let large = EncoderConfig {
        seq: 256,
        hidden: 512,
        heads: 8,
        ffn: 2048,
    };
    let encoder = |cfg: EncoderConfig| {
        format!(
            "encoder layer: sequence {}, hidden {}, {} heads, FFN {}",
            cfg.seq, cfg.hidden, cfg.heads, cfg.ffn
        )
    };
    vec![
        SuiteModel {
            name: "matmul_1024",
            title: "MatMul 1024×1024 · 1024×1024".into(),
            onnx: matmul(1024),
        },
        SuiteModel {
            name: "conv3x3_64",
            title: "Conv 3×3, 64→64 channels, 56×56, pad 1, batch 1".into(),
            onnx: conv(64, 64, 56, 1, seed),
        },
        SuiteModel {
            name: "depthwise3x3_32",
            title: "depthwise Conv 3×3, 32 channels, 112×112, pad 1, batch 1".into(),
            onnx: conv(32, 32, 112, 32, seed),
        },
        SuiteModel {
            name: "encoder_128_256",
            title: encoder(EncoderConfig::default()),
            onnx: encoder_model(&EncoderConfig::default(), seed),
        },
        SuiteModel {
            name: "encoder_256_512",
            title: encoder(large),
            onnx: encoder_model(&large, seed),
        },
        SuiteModel {
            name: "softmax_4x128x128",
            title: "Softmax over the last axis of 1×4×128×128".into(),
            onnx: softmax([1, 4, 128, 128]),
        },
        SuiteModel {
            name: "layernorm_128x768",
            title: "LayerNormalization over the last axis of 128×768".into(),
            onnx: layernorm(128, 768, seed),
        },
    ]
}

/// `y = a @ b` with both operands inputs (so numpy can run it too).
pub fn matmul(n: i64) -> Vec<u8> {
    ModelBuilder::new("matmul", OPSET)
        .input("a", [n, n])
        .input("b", [n, n])
        .node("MatMul", &["a", "b"], &["y"], vec![])
        .output("y", [n, n])
        .encode()
}

/// A 3×3 convolution with bias, stride 1 and padding 1 over a `size`×`size` image: `group` 1 is
/// a dense convolution, `group == cin == cout` a depthwise one.
pub fn conv(cin: i64, cout: i64, size: i64, group: i64, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let per_group = cin / group;
    let bound = 1.0 / ((per_group * 9) as f32).sqrt();
    let mut uniform = |n: i64| (0..n).map(|_| rng.gen_range(-bound..bound)).collect();
    ModelBuilder::new("conv", OPSET)
        .input("x", [1, cin, size, size])
        .initializer("w", &[cout, per_group, 3, 3], uniform(cout * per_group * 9))
        .initializer("bias", &[cout], uniform(cout))
        .node(
            "Conv",
            &["x", "w", "bias"],
            &["y"],
            // `group` only where it is not ONNX's default 1, as the `onnx` helpers write it.
            [
                ("kernel_shape", AttrValue::Ints(vec![3, 3])),
                ("pads", AttrValue::Ints(vec![1, 1, 1, 1])),
            ]
            .into_iter()
            .chain((group != 1).then_some(("group", AttrValue::Int(group))))
            .collect(),
        )
        .output("y", [1, cout, size, size])
        .encode()
}

/// Softmax over the last axis of an input of `shape`.
pub fn softmax(shape: [i64; 4]) -> Vec<u8> {
    ModelBuilder::new("softmax", OPSET)
        .input("x", shape)
        .node(
            "Softmax",
            &["x"],
            &["y"],
            vec![("axis", AttrValue::Int(-1))],
        )
        .output("y", shape)
        .encode()
}

/// LayerNormalization over the last axis of `rows`×`cols`, with a random scale and bias.
pub fn layernorm(rows: i64, cols: i64, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut around = |centre: f32| {
        (0..cols)
            .map(|_| centre + rng.gen_range(-0.5..0.5))
            .collect()
    };
    ModelBuilder::new("layernorm", OPSET)
        .input("x", [rows, cols])
        .initializer("scale", &[cols], around(1.0))
        .initializer("bias", &[cols], around(0.0))
        .node(
            "LayerNormalization",
            &["x", "scale", "bias"],
            &["y"],
            vec![
                ("axis", AttrValue::Int(-1)),
                ("epsilon", AttrValue::Float(1e-5)),
            ],
        )
        .output("y", [rows, cols])
        .encode()
}
