//! YOLOv8 as ultralytics' ONNX export writes it (`dmove::zoo::yolo`): operator counts, the
//! parameter count from `yolov8.yaml` (checked against the published YOLOv8n figures), C
//! against the interpreter and the interpreter against ONNX Runtime.

use super::counts;
use super::pipeline::{import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees};
use dmove::check::random_inputs;
use dmove::zoo::yolo::{self, yolo, YoloConfig, REG_MAX};
use std::collections::BTreeMap;

/// `yolov8.yaml`'s repeats of its eight `C2f`s (backbone, then neck) before depth scaling.
const C2F_REPEATS: [usize; 8] = [3, 6, 6, 3, 3, 3, 3, 3];
/// Which of them add their bottlenecks' input (the backbone's).
const C2F_SHORTCUT: [bool; 8] = [true, true, true, true, false, false, false, false];

/// The scale's channels and repeats, as ultralytics' `parse_model` computes them.
fn scaled(cfg: &YoloConfig) -> (impl Fn(i64) -> i64 + '_, impl Fn(usize) -> i64 + '_) {
    let ch = |c: i64| ((c.min(cfg.max_channels) as f64 * cfg.width) / 8.0).ceil() as i64 * 8;
    let n = |k: usize| ((k as f64 * cfg.depth).round() as i64).max(1);
    (ch, n)
}

/// YOLOv8's parameters from `yolov8.yaml`: every `Conv` has a bias-free convolution and
/// `per_channel` normalisation values per output channel (2 for PyTorch's BN scale and shift,
/// 1 for the bias of the convolution BN is folded into); the head's last 1×1 convolutions have
/// their own biases, and DFL's fixed 1×1 convolution holds 16 weights.
fn yolov8_parameters(cfg: &YoloConfig, per_channel: i64) -> i64 {
    let (ch, n) = scaled(cfg);
    let conv = |cin: i64, cout: i64, k: i64| cin * cout * k * k + per_channel * cout;
    let c2f = |cin: i64, cout: i64, n: i64| {
        let c = cout / 2;
        conv(cin, 2 * c, 1) + n * 2 * conv(c, c, 3) + conv((2 + n) * c, cout, 1)
    };
    let (c3, c4, c5) = (ch(256), ch(512), ch(1024));
    let backbone = conv(3, ch(64), 3)
        + conv(ch(64), ch(128), 3)
        + c2f(ch(128), ch(128), n(3))
        + conv(ch(128), c3, 3)
        + c2f(c3, c3, n(6))
        + conv(c3, c4, 3)
        + c2f(c4, c4, n(6))
        + conv(c4, c5, 3)
        + c2f(c5, c5, n(3))
        + conv(c5, c5 / 2, 1)
        + conv(2 * c5, c5, 1);
    let neck = c2f(c5 + c4, c4, n(3))
        + c2f(c4 + c3, c3, n(3))
        + conv(c3, c3, 3)
        + c2f(c3 + c4, c4, n(3))
        + conv(c4, c4, 3)
        + c2f(c4 + c5, c5, n(3));
    let (boxes, classes) = (
        (c3 / 4).max(16).max(4 * REG_MAX),
        c3.max(cfg.classes.min(100)),
    );
    let head: i64 = [c3, c4, c5]
        .iter()
        .map(|&c| {
            conv(c, boxes, 3)
                + conv(boxes, boxes, 3)
                + (boxes * 4 * REG_MAX + 4 * REG_MAX)
                + conv(c, classes, 3)
                + conv(classes, classes, 3)
                + (classes * cfg.classes + cfg.classes)
        })
        .sum();
    backbone + neck + head + REG_MAX
}

/// The float `Constant`s of the export: the anchor grid twice (`[1, 2, anchors]`), the strides
/// (`[1, anchors]`), the 2 of the box centre and the two upsamplings' scales.
fn yolov8_constants(cfg: &YoloConfig) -> i64 {
    let anchors: i64 = yolo::STRIDES.iter().map(|s| (cfg.size / s).pow(2)).sum();
    2 * 2 * anchors + anchors + 1 + 2 * 4
}

/// The imported program's operators: Conv + SiLU in 7 strided or plain `Conv`s, 2 per C2f and
/// 2 per bottleneck, 2 in SPPF and 4 per detection level; the head's 6 final 1×1 convolutions
/// and DFL's. The chunk's size arithmetic (Shape, Gather, Add, Div, Mul on int64) folds away.
fn yolov8_ops(cfg: &YoloConfig) -> BTreeMap<String, usize> {
    let (_, n) = scaled(cfg);
    let repeats: Vec<i64> = C2F_REPEATS.iter().map(|&k| n(k)).collect();
    let bottlenecks: i64 = repeats.iter().sum();
    let shortcuts: i64 = repeats
        .iter()
        .zip(C2F_SHORTCUT)
        .filter_map(|(&r, s)| s.then_some(r))
        .sum();
    let silu = (7 + 2 * 8 + 2 * bottlenecks + 2 + 4 * 3) as usize;
    counts(&[
        ("Add", shortcuts as usize + 2),
        ("Concat", 8 + 1 + 4 + 3 + 3),
        ("Conv", silu + 6 + 1),
        ("Div", 1),
        ("MaxPool", 3),
        ("Mul", silu + 1),
        ("Reshape", 5),
        ("Resize", 2),
        ("Sigmoid", silu + 1),
        ("Slice", 2),
        ("Softmax", 1),
        ("Split", 9),
        ("Sub", 2),
        ("Transpose", 1),
    ])
}

#[test]
fn yolov8n_full_imports_with_the_published_parameters() {
    let cfg = YoloConfig::full();
    // ultralytics reports 3,157,200 parameters for YOLOv8n with its BatchNorms and 3,151,904
    // after `fuse()`: folding drops BN's scale and shift and adds one conv bias per channel.
    assert_eq!(yolov8_parameters(&cfg, 2), 3_157_200);
    assert_eq!(yolov8_parameters(&cfg, 1), 3_151_904);
    assert_eq!(yolov8_constants(&cfg), 5 * 8400 + 9);
    let model = yolo(&cfg, 1);
    let expected = yolov8_parameters(&cfg, 1) + yolov8_constants(&cfg);
    assert_eq!(model.parameters, expected as u64);
    // The full size imports (two seconds in a debug build).
    assert_eq!(
        library_ops(&import_bound(&model.bytes, &[])),
        yolov8_ops(&cfg)
    );
}

#[test]
fn yolov8_small_matches_through_c_and_onnxruntime() {
    let cfg = YoloConfig::small();
    let model = yolo(&cfg, 1);
    let expected = yolov8_parameters(&cfg, 1) + yolov8_constants(&cfg);
    assert_eq!(model.parameters, expected as u64);

    let p = import_bound(&model.bytes, &[]);
    assert_eq!(library_ops(&p), yolov8_ops(&cfg));

    let inputs = random_inputs(&p, 5).expect("inputs");
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[yolo::OUTPUT];
    let anchors = cfg.anchors() as usize;
    assert_eq!(out.shape, [1, 4 + cfg.classes as usize, anchors]);
    // Boxes (centre, size) in pixels, spread over the image; class probabilities not saturated.
    let values = out.to_f64_vec();
    let (boxes, scores) = values.split_at(4 * anchors);
    assert!(boxes
        .iter()
        .all(|b| b.is_finite() && b.abs() < 16.0 * cfg.size as f64));
    let largest = boxes.iter().fold(0.0f64, |m, b| m.max(b.abs()));
    assert!(largest > cfg.size as f64 / 2.0, "boxes up to {largest}");
    let (lo, hi) = scores
        .iter()
        .fold((1.0f64, 0.0f64), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    assert!(
        lo > 0.01 && hi < 0.99 && hi - lo > 0.1,
        "scores in {lo}..{hi}"
    );
    onnxruntime_agrees("YOLOv8 export", &model.bytes, &inputs, &ours);
}
