//! torchvision's EfficientNet-B0 (`dmove::zoo::efficientnet`) as the eval-mode export writes it:
//! parameters against torchvision's count, and at `small()` the imported operators, C against the
//! interpreter and the interpreter against ONNX Runtime.

use super::counts;
use super::pipeline::{
    cli_summary, import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees,
};
use dmove::check::random_inputs;
use dmove::zoo::efficientnet::{self, efficientnet, EfficientNetConfig, B0};
use dmove::zoo::torch_idioms::make_divisible;

/// EfficientNet's parameters, counted from the architecture (not from the builder): per
/// convolution with BN its weights (`cin / groups · cout · k²`) and `per_channel` values per
/// output channel (2 for PyTorch's BN scale and shift, 1 for the bias BN folds into); per MBConv
/// a 1×1 expansion to `_make_divisible(t · cin, 8)` channels (none when that is `cin`), the k×k
/// depthwise convolution, squeeze-excitation to `max(1, cin / 4)` channels (two 1×1
/// convolutions with biases, no BN) and the 1×1 projection; the stem, the last 1×1 conv to
/// 4 × the last stage's channels and the classifier.
fn efficientnet_parameters(cfg: &EfficientNetConfig, per_channel: i64) -> i64 {
    let conv =
        |cin: i64, cout: i64, k: i64, groups: i64| cin / groups * cout * k * k + per_channel * cout;
    let se = |channels: i64, squeeze: i64| 2 * channels * squeeze + squeeze + channels;
    let mut cin = cfg.channels(B0[0].input_channels);
    let mut total = conv(3, cin, 3, 1);
    for stage in &B0 {
        let cout = cfg.channels(stage.out_channels);
        for _ in 0..stage.layers {
            let expanded = make_divisible((stage.expand_ratio * cin) as f64, 8);
            if expanded != cin {
                total += conv(cin, expanded, 1, 1);
            }
            total += conv(expanded, expanded, stage.kernel, expanded)
                + se(expanded, (cin / 4).max(1))
                + conv(expanded, cout, 1, 1);
            cin = cout;
        }
    }
    let last = 4 * cin;
    total + conv(cin, last, 1, 1) + last * cfg.classes + cfg.classes
}

/// Blocks that add their input back: stride 1 and as many channels out as in.
fn residual_blocks(cfg: &EfficientNetConfig) -> usize {
    let mut cin = cfg.channels(B0[0].input_channels);
    let mut residual = 0;
    for stage in &B0 {
        let cout = cfg.channels(stage.out_channels);
        for b in 0..stage.layers {
            let stride = if b == 0 { stage.stride } else { 1 };
            residual += usize::from(stride == 1 && cin == cout);
            cin = cout;
        }
    }
    residual
}

#[test]
fn efficientnet_b0_parameter_formula_is_torchvisions() {
    let full = EfficientNetConfig::full();
    // torchvision's published count.
    assert_eq!(efficientnet_parameters(&full, 2), 5_288_548);
    // The export folds the 21,008 BN channels into biases.
    let exported = 5_288_548 - 21_008;
    assert_eq!(efficientnet_parameters(&full, 1), exported);
    assert_eq!(efficientnet(&full, 7).parameters, exported as u64);
    // torch's export has 9 Adds at width 1 and 10 at width 0.25, where the first block keeps
    // its 8 channels.
    assert_eq!(residual_blocks(&full), 9);
    assert_eq!(residual_blocks(&EfficientNetConfig::small()), 10);
}

#[test]
fn efficientnet_b0_matches_through_c_and_onnxruntime() {
    let cfg = EfficientNetConfig::small();
    let model = efficientnet(&cfg, 7);
    let p = import_bound(&model.bytes, &[]);
    let blocks: usize = B0.iter().map(|s| s.layers).sum();
    // 16 MBConvs: expansion (all but the first), depthwise, fc1, fc2 and projection convs; SiLU
    // (Sigmoid, Mul) after the stem, each expansion, each depthwise, each fc1 and the last conv;
    // squeeze-excitation's average pool, gate Sigmoid and Mul.
    let silu = 1 + (blocks - 1) + 2 * blocks + 1;
    assert_eq!(
        library_ops(&p),
        counts(&[
            ("Add", residual_blocks(&cfg)),
            ("Conv", 1 + (blocks - 1) + 4 * blocks + 1),
            ("Flatten", 1),
            ("GlobalAveragePool", blocks + 1),
            ("Gemm", 1),
            ("Mul", silu + blocks),
            ("Sigmoid", silu + blocks),
        ])
    );
    let params = efficientnet_parameters(&cfg, 1) as u64;
    assert_eq!(model.parameters, params);
    let summary = cli_summary(&model.bytes, &[]);
    assert_eq!(summary["parameters"], params);

    let inputs = random_inputs(&p, 5).expect("inputs");
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[efficientnet::OUTPUT];
    assert_eq!(out.shape, [1, cfg.classes as usize]);
    let largest = out.to_f64_vec().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(largest > 0.1 && largest < 100.0, "logits up to {largest}");
    onnxruntime_agrees("EfficientNet-B0 export", &model.bytes, &inputs, &ours);
}
