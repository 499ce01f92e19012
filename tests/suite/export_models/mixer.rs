//! The network suite's MLP-Mixer block (`dmove::zoo::mixer`): Mixer-B/16's patch embedding,
//! one mixer block, LayerNorm, mean over patches and classifier, as timm's model exports. At
//! `small()` the imported operators, the parameter count, C against the interpreter and the
//! interpreter against ONNX Runtime; at `full()` the parameter count, and the formula at
//! twelve blocks is timm's `mixer_b16_224`.

use super::counts;
use super::pipeline::{
    assert_moderate, import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees,
};
use dmove::check::random_inputs;
use dmove::zoo::mixer::{self, mixer, MixerConfig};

/// Mixer's parameters from the architecture: the patch projection (a conv with bias); per
/// block two LayerNorms, the token MLP (`patches → tokens_mlp → patches`) and the channel MLP
/// (`hidden → channels_mlp → hidden`), each Linear with its bias; the final LayerNorm and the
/// classifier.
fn mixer_parameters(cfg: &MixerConfig) -> u64 {
    let (h, n) = (cfg.hidden, cfg.patches());
    let linear = |a: i64, b: i64| a * b + b;
    let stem = 3 * cfg.patch * cfg.patch * h + h;
    let block = 2 * (2 * h)
        + linear(n, cfg.tokens_mlp)
        + linear(cfg.tokens_mlp, n)
        + linear(h, cfg.channels_mlp)
        + linear(cfg.channels_mlp, h);
    (stem + cfg.blocks as i64 * block + 2 * h + linear(h, cfg.classes)) as u64
}

/// The builder also counts each GELU's three float Constants (√2, 1, 0.5), two per block.
fn scalar_constants(cfg: &MixerConfig) -> u64 {
    6 * cfg.blocks as u64
}

#[test]
fn mixer_parameter_formula_is_timms_mixer_b16() {
    let twelve = MixerConfig {
        blocks: 12,
        ..MixerConfig::full()
    };
    assert_eq!(mixer_parameters(&twelve), 59_880_472);
    let cfg = MixerConfig::full();
    assert_eq!(cfg.patches(), 196);
    assert_eq!(
        mixer(&cfg, 5).parameters,
        mixer_parameters(&cfg) + scalar_constants(&cfg)
    );
}

#[test]
fn mixer_small_matches_through_c_and_onnxruntime() {
    let cfg = MixerConfig::small();
    let model = mixer(&cfg, 5);
    assert_eq!(
        model.parameters,
        mixer_parameters(&cfg) + scalar_constants(&cfg)
    );
    let p = import_bound(&model.bytes, &cfg.dims());
    // The stem's Conv, the folded flatten's Reshape and its Transpose; per block two
    // Transposes, four Linears (MatMul + bias Add), two GELUs (Div, Erf, Add, 2 Muls) and two
    // residual Adds; three LayerNorms; the mean and the classifier.
    let b = cfg.blocks;
    let expected = counts(&[
        ("Add", 8 * b),
        ("Conv", 1),
        ("Div", 2 * b),
        ("Erf", 2 * b),
        ("Gemm", 1),
        ("LayerNormalization", 2 * b + 1),
        ("MatMul", 4 * b),
        ("Mul", 4 * b),
        ("ReduceMean", 1),
        ("Reshape", 1),
        ("Transpose", 1 + 2 * b),
    ]);
    assert_eq!(library_ops(&p), expected);

    let inputs = random_inputs(&p, 6).expect("inputs");
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[mixer::OUTPUT];
    assert_eq!(out.shape, [cfg.batch as usize, cfg.classes as usize]);
    assert_moderate("logits", out, 0.1);
    onnxruntime_agrees("MLP-Mixer-shaped export", &model.bytes, &inputs, &ours);
}
