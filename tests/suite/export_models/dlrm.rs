//! The network suite's DLRM (`dmove::zoo::dlrm`): the reference DLRM's export with
//! `nn.Embedding` lookups and the dot interaction. At `small()` the imported operators, the
//! parameter count, C against the interpreter and the interpreter against ONNX Runtime; at
//! `full()` the parameter count and the weights' size.

use super::counts;
use super::pipeline::{import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees};
use dmove::ir::Tensor;
use dmove::zoo::dlrm::{self, dlrm, DlrmConfig};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// Weights and biases of an MLP through `widths`.
fn mlp_parameters(widths: &[i64]) -> i64 {
    widths.windows(2).map(|w| w[0] * w[1] + w[1]).sum()
}

/// DLRM's parameters from the architecture: the tables, the bottom MLP (`dense → … → dim`)
/// and the top MLP from the interaction (`dim` plus one dot product per pair of the
/// `tables + 1` feature vectors) to one logit.
fn dlrm_parameters(cfg: &DlrmConfig) -> u64 {
    let mut bottom = vec![cfg.dense];
    bottom.extend(cfg.bottom);
    bottom.push(cfg.dim);
    let features = cfg.tables + 1;
    let mut top = vec![cfg.dim + features * (features - 1) / 2];
    top.extend(cfg.top);
    top.push(1);
    (cfg.tables * cfg.rows * cfg.dim + mlp_parameters(&bottom) + mlp_parameters(&top)) as u64
}

#[test]
fn dlrm_full_parameters_follow_the_formula_and_fit_in_200_mb() {
    let cfg = DlrmConfig::full();
    assert_eq!(cfg.interaction(), 415);
    let params = dlrm(&cfg, 7).parameters;
    assert_eq!(params, dlrm_parameters(&cfg));
    assert_eq!(params, 42_099_521);
    assert!(params * 4 < 200_000_000);
}

#[test]
fn dlrm_small_matches_through_c_and_onnxruntime() {
    let cfg = DlrmConfig::small();
    let model = dlrm(&cfg, 7);
    assert_eq!(model.parameters, dlrm_parameters(&cfg));
    let p = import_bound(&model.bytes, &cfg.dims());
    let tables = cfg.tables as usize;
    // Three Gemms and Relus in the bottom MLP, three Gemms, two Relus and the Sigmoid in the
    // top one; per table the row of indices and the lookup; the interaction's two Concats,
    // three Reshapes, three Transposes, the MatMul, Flatten and the Gather of the lower
    // triangle (its flat indices fold into a constant).
    let expected = counts(&[
        ("Concat", 2),
        ("Flatten", 1),
        ("Gather", 2 * tables + 1),
        ("Gemm", 6),
        ("MatMul", 1),
        ("Relu", 5),
        ("Reshape", 3),
        ("Sigmoid", 1),
        ("Transpose", 3),
    ]);
    assert_eq!(library_ops(&p), expected);

    let batch = cfg.batch as usize;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let dense = (0..batch * cfg.dense as usize)
        .map(|_| rng.gen_range(0.0f32..3.0))
        .collect();
    let indices = (0..tables * batch)
        .map(|_| rng.gen_range(0..cfg.rows))
        .collect();
    let inputs = BTreeMap::from([
        (
            dlrm::DENSE.to_string(),
            Tensor::f32(vec![batch, cfg.dense as usize], dense),
        ),
        (
            dlrm::INDICES.to_string(),
            Tensor::i64(vec![tables, batch], indices),
        ),
    ]);
    let ours = interpreter_and_c_agree(&p, &inputs);
    let pred = &ours[dlrm::PRED];
    assert_eq!(pred.shape, [batch, 1]);
    // Probabilities that differ between samples: the logits are neither ~0 nor saturated.
    let probs = pred.to_f64_vec();
    let (lo, hi) = probs
        .iter()
        .fold((1.0f64, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    assert!(lo > 1e-4 && hi < 1.0 - 1e-4 && hi - lo > 0.01, "{probs:?}");
    onnxruntime_agrees("DLRM-shaped export", &model.bytes, &inputs, &ours);
}
