//! torchvision's CNNs (ResNet-18, ResNet-50, Wide-ResNet-50-2, MobileNetV2, EfficientNet-B0),
//! BERT-shaped and GQA-decoder-shaped models written the way `torch.onnx.export` writes them
//! (dynamic batch and sequence axes, shape subgraphs, Constant nodes, torch's naming), then imported with their dimensions bound (library and CLI), checked
//! for folded shape subgraphs and exact operator counts, lowered to C and compared with the
//! reference interpreter, and the interpreter compared with ONNX Runtime (required when
//! `DMOVE_REQUIRE_PEER=1`, as CI sets it; otherwise a missing peer is a recorded skip, see `support::skip`).
//! The builders are the library's (`dmove::zoo`); widths are small, structures are the real ones.

pub mod pipeline;
mod wavenet;
mod yolo;

mod efficientnet;
mod mobilenet;
mod resnet;

mod bert_base;
mod dlrm;
mod gqa_layer;
mod mixer;

use dmove::ir::Tensor;
use dmove::zoo::bert::{self, bert, BertConfig};
use dmove::zoo::decoder::{self, decoder, DecoderConfig};
use pipeline::{
    assert_shape_subgraphs_folded, cli_summary, import_bound, interpreter_and_c_agree, library_ops,
    onnxruntime_agrees,
};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

const BATCH: usize = 2;
const SEQ: usize = 8;

fn bert_config(opset: i64, mask_min: f32) -> BertConfig {
    BertConfig {
        vocab: 50,
        hidden: 32,
        heads: 4,
        layers: 2,
        intermediate: 64,
        max_positions: 16,
        opset,
        mask_min,
    }
}

/// Token ids drawn from the whole vocabulary; the first sequence unpadded, the second with its
/// last three positions masked.
fn bert_inputs(vocab: i64) -> pipeline::Tensors {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let ids = (0..BATCH * SEQ).map(|_| rng.gen_range(0..vocab)).collect();
    let mask = (0..BATCH * SEQ)
        .map(|i| i64::from(i < SEQ || i % SEQ < SEQ - 3))
        .collect();
    BTreeMap::from([
        (
            bert::INPUT_IDS.to_string(),
            Tensor::i64(vec![BATCH, SEQ], ids),
        ),
        (
            bert::ATTENTION_MASK.to_string(),
            Tensor::i64(vec![BATCH, SEQ], mask),
        ),
    ])
}

fn check_bert(cfg: &BertConfig, expected_ops: &[(&str, usize)]) {
    let model = bert(cfg, 17);
    let dims = [("batch_size", BATCH as i64), ("sequence", SEQ as i64)];
    let p = import_bound(&model.bytes, &dims);
    assert_eq!(library_ops(&p), counts(expected_ops));
    assert_shape_subgraphs_folded(&p);

    let summary = cli_summary(&model.bytes, &dims);
    // Per layer two sizes for each of Q, K, V and one for the context; two in the embeddings.
    assert_eq!(summary["operators"]["Shape"], 7 * cfg.layers + 2);
    assert_eq!(
        summary["library_nodes"],
        library_ops(&p).values().sum::<usize>()
    );
    // The embeddings of the position ids ([1, seq]) and of the token-type ids expanded to
    // [batch, seq] depend on no input: they fold into constants, which count as parameters.
    let folded = (BATCH as u64 + 1) * SEQ as u64 * cfg.hidden as u64;
    assert_eq!(summary["parameters"], model.parameters + folded);
    assert_eq!(summary["unbound_symbols"], serde_json::json!([]));

    let inputs = bert_inputs(cfg.vocab);
    let ours = interpreter_and_c_agree(&p, &inputs);
    assert_eq!(
        ours[bert::LAST_HIDDEN].shape,
        [BATCH, SEQ, cfg.hidden as usize]
    );
    assert_eq!(ours[bert::POOLED].shape, [BATCH, cfg.hidden as usize]);
    let what = format!("BERT-shaped export (opset {})", cfg.opset);
    onnxruntime_agrees(&what, &model.bytes, &inputs, &ours);
}

/// Operators common to both opsets: embeddings (2 Adds), mask (Unsqueeze ×2, Cast, Sub, Mul),
/// per layer 8 MatMuls, 10 Adds, 4 Reshapes, 4 Transposes, 2 Divs, Softmax, Erf and 2 Muls,
/// and the pooler.
fn bert_common_ops(layers: usize) -> Vec<(&'static str, usize)> {
    vec![
        ("Cast", 1),
        ("Erf", layers),
        ("Gather", 2),
        ("Gemm", 1),
        ("Identity", 1),
        ("MatMul", 8 * layers),
        ("Reshape", 4 * layers),
        ("Softmax", layers),
        ("Tanh", 1),
        ("Transpose", 4 * layers),
        ("Unsqueeze", 2),
    ]
}

/// Opset 17: LayerNormalization nodes, `finfo(float32).min` in the mask.
#[test]
fn bert_shaped_opset17_export_matches_through_c_and_onnxruntime() {
    let cfg = bert_config(17, f32::MIN);
    let l = cfg.layers;
    let mut ops = bert_common_ops(l);
    ops.extend([
        ("Add", 2 + 10 * l),
        ("Div", 2 * l),
        ("LayerNormalization", 1 + 2 * l),
        ("Mul", 1 + 2 * l),
        ("Sub", 1),
    ]);
    check_bert(&cfg, &ops);
}

/// Opset 13: every LayerNorm decomposed as PyTorch writes it, -10000 in the mask.
#[test]
fn bert_shaped_opset13_export_matches_through_c_and_onnxruntime() {
    let cfg = bert_config(13, -10000.0);
    let l = cfg.layers;
    let norms = 1 + 2 * l;
    let mut ops = bert_common_ops(l);
    ops.extend([
        ("Add", 2 + 10 * l + 2 * norms),
        ("Div", 2 * l + norms),
        ("Mul", 1 + 2 * l + norms),
        ("Pow", norms),
        ("ReduceMean", 2 * norms),
        ("Sqrt", norms),
        ("Sub", 1 + norms),
    ]);
    check_bert(&cfg, &ops);
}

/// A decoder with grouped-query attention: 4 query heads share 2 key/value heads.
#[test]
fn gqa_decoder_shaped_export_matches_through_c_and_onnxruntime() {
    let cfg = DecoderConfig {
        vocab: 50,
        hidden: 32,
        heads: 4,
        kv_heads: 2,
        layers: 2,
        intermediate: 48,
        max_positions: 16,
        opset: 17,
    };
    let model = decoder(&cfg, 23);
    let dims = [("batch_size", BATCH as i64), ("sequence", SEQ as i64)];
    let p = import_bound(&model.bytes, &dims);
    let l = cfg.layers;
    let norms = 2 * l + 1;
    // Per layer: 9 MatMuls; Reshapes for Q, K, V, the two repeated heads and the context;
    // Transposes for Q, K, V, Kᵀ and the context; rotary on Q and K (2 Muls, 2 Slices, Neg,
    // Concat, Add each); Unsqueeze + Expand per repeated K/V; mask Add and 2 residual Adds;
    // SiLU (Sigmoid, Mul) and the gate product. Each RMSNorm: Pow, ReduceMean, Add, Sqrt,
    // Reciprocal, 2 Muls. The rotary tables and the causal mask fold into constants.
    let expected = counts(&[
        ("Add", 5 * l + norms),
        ("Concat", 2 * l),
        ("Div", l),
        ("Expand", 2 * l),
        ("Gather", 1),
        ("MatMul", 9 * l + 1),
        ("Mul", 6 * l + 2 * norms),
        ("Neg", 2 * l),
        ("Pow", norms),
        ("Reciprocal", norms),
        ("ReduceMean", norms),
        ("Reshape", 6 * l),
        ("Sigmoid", l),
        ("Slice", 4 * l),
        ("Softmax", l),
        ("Sqrt", norms),
        ("Transpose", 5 * l),
        ("Unsqueeze", 2 * l),
    ]);
    assert_eq!(library_ops(&p), expected);
    assert_shape_subgraphs_folded(&p);
    let summary = cli_summary(&model.bytes, &dims);
    assert_eq!(summary["operators"]["Range"], 2);
    assert_eq!(summary["operators"]["Where"], 1);
    assert_eq!(summary["library_nodes"], expected.values().sum::<usize>());
    // Folded float values count as parameters: the cos and sin rows at the positions
    // ([seq, d], then unsqueezed) and the causal mask ([seq, seq], then unsqueezed).
    let (seq, d) = (SEQ as u64, (cfg.hidden / cfg.heads) as u64);
    let folded = 2 * (2 * seq * d) + 2 * seq * seq;
    assert_eq!(summary["parameters"], model.parameters + folded);

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let ids = (0..BATCH * SEQ)
        .map(|_| rng.gen_range(0..cfg.vocab))
        .collect();
    let inputs = BTreeMap::from([(
        decoder::INPUT_IDS.to_string(),
        Tensor::i64(vec![BATCH, SEQ], ids),
    )]);
    let ours = interpreter_and_c_agree(&p, &inputs);
    assert_eq!(
        ours[decoder::LOGITS].shape,
        [BATCH, SEQ, cfg.vocab as usize]
    );
    onnxruntime_agrees("GQA-decoder-shaped export", &model.bytes, &inputs, &ours);
}

/// Without `--dim`, the shape subgraphs cannot fold, and the error names the dimensions to bind
/// rather than only the operator that needed a constant.
#[test]
fn unbound_dimensions_are_named_when_the_shape_subgraphs_cannot_fold() {
    let model = bert(&bert_config(17, f32::MIN), 17);
    let import = |dims: &[(&str, i64)]| {
        let opts = dmove::onnx::ImportOptions {
            dims: dims.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            ..Default::default()
        };
        dmove::onnx::import_bytes(&model.bytes, &opts)
    };
    let flags = |e: dmove::onnx::OnnxError| match e {
        dmove::onnx::OnnxError::ShapeFromUnboundDimension { node, flags, .. } => (node, flags),
        other => panic!("unexpected error: {other}"),
    };
    let (node, both) = flags(import(&[]).expect_err("shapes are unknown"));
    assert_eq!(node, "/embeddings/Slice");
    assert_eq!(both, "--dim batch_size=VALUE --dim sequence=VALUE");
    let (_, one) = flags(import(&[("batch_size", 2)]).expect_err("the sequence is unknown"));
    assert_eq!(one, "--dim sequence=VALUE");
}
