//! The network suite's BERT-base encoder layer (`BertConfig::full`): one layer of BERT-base as
//! `BertModel` exports it, with its embeddings and pooler. At `small()` the imported operators,
//! the parameter count, C against the interpreter and the interpreter against ONNX Runtime; at
//! `full()` the parameter count, and the formula at twelve layers is `bert-base-uncased`'s.

use super::counts;
use super::pipeline::{
    assert_moderate, import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees,
};
use dmove::ir::Tensor;
use dmove::zoo::bert::{self, bert, BertConfig, SMALL_DIMS};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// BERT's parameters counted from the architecture: word, position and token-type embeddings
/// and their LayerNorm; per layer Q, K, V and output projections with biases, two LayerNorms
/// and the two FFN projections; the pooler's dense layer.
fn bert_parameters(cfg: &BertConfig) -> u64 {
    let (h, i) = (cfg.hidden, cfg.intermediate);
    let embeddings = (cfg.vocab + cfg.max_positions + 2) * h + 2 * h;
    let layer = 4 * (h * h + h) + 2 * (2 * h) + (h * i + i) + (i * h + h);
    let pooler = h * h + h;
    (embeddings + cfg.layers as i64 * layer + pooler) as u64
}

/// The exporter's float scalar `Constant`s, which the builder counts with the parameters: per
/// layer √d and GELU's √2, 1 and 0.5; the mask's 1 and minimum.
fn scalar_constants(cfg: &BertConfig) -> u64 {
    4 * cfg.layers as u64 + 2
}

#[test]
fn bert_base_parameter_formula_is_bert_base_uncased() {
    let twelve = BertConfig {
        layers: 12,
        ..BertConfig::full()
    };
    assert_eq!(bert_parameters(&twelve), 109_482_240);
    let cfg = BertConfig::full();
    let model = bert(&cfg, 17);
    assert_eq!(
        model.parameters,
        bert_parameters(&cfg) + scalar_constants(&cfg)
    );
}

#[test]
fn bert_base_small_matches_through_c_and_onnxruntime() {
    let cfg = BertConfig::small();
    let model = bert(&cfg, 17);
    assert_eq!(
        model.parameters,
        bert_parameters(&cfg) + scalar_constants(&cfg)
    );
    let p = import_bound(&model.bytes, &SMALL_DIMS);
    // Embeddings: the word Gather and two Adds (the position and token-type lookups fold);
    // mask: two Unsqueezes, Cast, Sub, Mul; the layer: 6 MatMuls + 2 for the scores and
    // context, 10 Adds, 4 Reshapes and 4 Transposes, the score scaling and GELU's Div, Softmax,
    // Erf and 2 Muls; 3 LayerNorms; the pooler's Gather, Gemm and Tanh; the Identity naming
    // the last hidden state.
    let expected = counts(&[
        ("Add", 12),
        ("Cast", 1),
        ("Div", 2),
        ("Erf", 1),
        ("Gather", 2),
        ("Gemm", 1),
        ("Identity", 1),
        ("LayerNormalization", 3),
        ("MatMul", 8),
        ("Mul", 3),
        ("Reshape", 4),
        ("Softmax", 1),
        ("Sub", 1),
        ("Tanh", 1),
        ("Transpose", 4),
        ("Unsqueeze", 2),
    ]);
    assert_eq!(library_ops(&p), expected);

    let (batch, seq) = (SMALL_DIMS[0].1 as usize, SMALL_DIMS[1].1 as usize);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let ids = (0..batch * seq)
        .map(|_| rng.gen_range(0..cfg.vocab))
        .collect();
    // The second sequence has its last two positions padded.
    let mask = (0..batch * seq)
        .map(|i| i64::from(i < seq || i % seq < seq - 2))
        .collect();
    let inputs = BTreeMap::from([
        (
            bert::INPUT_IDS.to_string(),
            Tensor::i64(vec![batch, seq], ids),
        ),
        (
            bert::ATTENTION_MASK.to_string(),
            Tensor::i64(vec![batch, seq], mask),
        ),
    ]);
    let ours = interpreter_and_c_agree(&p, &inputs);
    let hidden = &ours[bert::LAST_HIDDEN];
    assert_eq!(hidden.shape, [batch, seq, cfg.hidden as usize]);
    assert_moderate("last hidden state", hidden, 0.5);
    assert_moderate("pooled output", &ours[bert::POOLED], 0.1);
    onnxruntime_agrees("BERT-base-shaped layer", &model.bytes, &inputs, &ours);
}
