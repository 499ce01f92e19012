//! torchvision's MobileNetV2 (`dmove::zoo::mobilenet`) as the eval-mode export writes it:
//! parameters against torchvision's count, and at `small()` the imported operators, C against the
//! interpreter and the interpreter against ONNX Runtime.

use super::counts;
use super::pipeline::{
    cli_summary, import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees,
};
use dmove::check::random_inputs;
use dmove::zoo::mobilenet::{
    self, mobilenet_v2, MobileNetV2Config, FIRST_CHANNELS, INVERTED_RESIDUAL_SETTING,
};

/// MobileNetV2's parameters, counted from the architecture (not from the builder): per
/// convolution its weights (`cin / groups · cout · k²`) and `per_channel` values per output
/// channel (2 for PyTorch's BN scale and shift, 1 for the bias BN folds into), `per_relu6` per
/// ReLU6 (the exporter's Clip bounds: two float Constants; none in PyTorch), and the classifier.
/// Each inverted residual expands `cin` to `t · cin` (no expansion when `t` is 1), filters it
/// depthwise 3×3 and projects it to `c` channels.
fn mobilenet_v2_parameters(cfg: &MobileNetV2Config, per_channel: i64, per_relu6: i64) -> i64 {
    let conv =
        |cin: i64, cout: i64, k: i64, groups: i64| cin / groups * cout * k * k + per_channel * cout;
    let mut cin = cfg.channels(FIRST_CHANNELS);
    let mut total = conv(3, cin, 3, 1) + per_relu6;
    for &(t, c, n, _) in &INVERTED_RESIDUAL_SETTING {
        let cout = cfg.channels(c);
        for _ in 0..n {
            let hidden = t * cin;
            if t != 1 {
                total += conv(cin, hidden, 1, 1) + per_relu6;
            }
            total += conv(hidden, hidden, 3, hidden) + per_relu6 + conv(hidden, cout, 1, 1);
            cin = cout;
        }
    }
    let last = cfg.last_channels();
    total + conv(cin, last, 1, 1) + per_relu6 + last * cfg.classes + cfg.classes
}

/// Blocks that add their input back: stride 1 and as many channels out as in.
fn residual_blocks(cfg: &MobileNetV2Config) -> usize {
    let mut cin = cfg.channels(FIRST_CHANNELS);
    let mut residual = 0;
    for &(_, c, n, s) in &INVERTED_RESIDUAL_SETTING {
        let cout = cfg.channels(c);
        for b in 0..n {
            let stride = if b == 0 { s } else { 1 };
            residual += usize::from(stride == 1 && cin == cout);
            cin = cout;
        }
    }
    residual
}

#[test]
fn mobilenet_v2_parameter_formula_is_torchvisions() {
    let full = MobileNetV2Config::full();
    // torchvision's published count.
    assert_eq!(mobilenet_v2_parameters(&full, 2, 0), 3_504_872);
    // The export: 17,056 BN channels fold into biases, 35 ReLU6 add their two bounds.
    let exported = 3_504_872 - 17_056 + 2 * 35;
    assert_eq!(mobilenet_v2_parameters(&full, 1, 2), exported);
    assert_eq!(mobilenet_v2(&full, 7).parameters, exported as u64);
    // torch's export has 10 Adds at width 1 and 11 at width 0.25, where the first block keeps
    // its 8 channels.
    assert_eq!(residual_blocks(&full), 10);
    assert_eq!(residual_blocks(&MobileNetV2Config::small()), 11);
}

#[test]
fn mobilenet_v2_matches_through_c_and_onnxruntime() {
    let cfg = MobileNetV2Config::small();
    let model = mobilenet_v2(&cfg, 7);
    let p = import_bound(&model.bytes, &[]);
    // Convolutions: the stem, 2 in the first block and 3 in each of the other 16, the last 1×1;
    // a ReLU6 (Clip) after each but the 17 projections.
    assert_eq!(
        library_ops(&p),
        counts(&[
            ("Add", residual_blocks(&cfg)),
            ("Clip", 35),
            ("Conv", 52),
            ("Flatten", 1),
            ("GlobalAveragePool", 1),
            ("Gemm", 1),
        ])
    );
    let params = mobilenet_v2_parameters(&cfg, 1, 2) as u64;
    assert_eq!(model.parameters, params);
    let summary = cli_summary(&model.bytes, &[]);
    assert_eq!(summary["operators"]["Constant"], 70);
    assert_eq!(summary["parameters"], params);

    let inputs = random_inputs(&p, 5).expect("inputs");
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[mobilenet::OUTPUT];
    assert_eq!(out.shape, [1, cfg.classes as usize]);
    let largest = out.to_f64_vec().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(largest > 0.1 && largest < 100.0, "logits up to {largest}");
    onnxruntime_agrees("MobileNetV2 export", &model.bytes, &inputs, &ours);
}
