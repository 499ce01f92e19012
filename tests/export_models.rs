//! ResNet-50-shaped and BERT-shaped models written the way `torch.onnx.export` writes them
//! (dynamic batch and sequence axes, shape subgraphs, Constant nodes, torch's naming), then
//! imported with their dimensions bound, checked for folded shape subgraphs, lowered to C and
//! compared with the reference interpreter, and the interpreter compared with ONNX Runtime.
//! The builders live in `export_models/`; widths are small, structures are the real ones.

#[path = "export_models/net.rs"]
mod net;
#[path = "export_models/pipeline.rs"]
mod pipeline;
#[path = "export_models/resnet.rs"]
mod resnet;

use dmove::check::random_inputs;
use pipeline::{
    assert_shape_subgraphs_folded, cli_summary, import_bound, interpreter_and_c_agree, library_ops,
    onnxruntime_agrees,
};
use resnet::{resnet50, torch_scope, ResNetConfig, STAGES};
use std::collections::BTreeMap;

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// ResNet-50's parameters at `width`, counted from the architecture (not from the builder):
/// convolution weights, per normalised channel `per_channel` values (2 for PyTorch's trainable
/// BN scale and shift, 4 for ONNX's BN with running statistics, 1 for a folded conv bias), and
/// the classifier.
fn resnet50_parameters(width: i64, classes: i64, per_channel: i64) -> i64 {
    let conv = |cin: i64, cout: i64, k: i64| cin * cout * k * k + per_channel * cout;
    let mut total = conv(3, width, 7);
    let mut cin = width;
    for (s, &blocks) in STAGES.iter().enumerate() {
        let planes = width << s;
        total += conv(cin, 4 * planes, 1); // projection shortcut
        for _ in 0..blocks {
            total += conv(cin, planes, 1) + conv(planes, planes, 3) + conv(planes, 4 * planes, 1);
            cin = 4 * planes;
        }
    }
    total + cin * classes + classes
}

#[test]
fn resnet50_parameter_formula_is_torchvisions() {
    // torchvision's resnet50 has 25,557,032 parameters.
    assert_eq!(resnet50_parameters(64, 1000, 2), 25_557_032);
    assert_eq!(
        torch_scope("layer1.0.downsample.0"),
        "/layer1/layer1.0/downsample/downsample.0"
    );
}

/// Import (library and CLI), folded shapes, operator counts, parameters, C against the
/// interpreter and the interpreter against ONNX Runtime for one ResNet variant.
fn check_resnet(cfg: &ResNetConfig, size: i64, expected_ops: &[(&str, usize)]) {
    let model = resnet50(cfg, size, 11);
    let dims = [("batch_size", 1)];
    let p = import_bound(&model.bytes, &dims);
    assert_eq!(library_ops(&p), counts(expected_ops));
    assert_shape_subgraphs_folded(&p);
    let per_channel = if cfg.batchnorm { 4 } else { 1 };
    let params = resnet50_parameters(cfg.width, cfg.classes, per_channel) as u64;
    assert_eq!(model.parameters, params);

    let summary = cli_summary(&model.bytes, &dims);
    assert_eq!(summary["operators"]["Conv"], 53);
    let bn = if cfg.batchnorm { 53 } else { 0 };
    assert_eq!(
        summary["operators"]["BatchNormalization"]
            .as_u64()
            .unwrap_or(0),
        bn
    );
    assert_eq!(
        summary["library_nodes"],
        library_ops(&p).values().sum::<usize>()
    );
    assert_eq!(summary["parameters"], params);
    assert_eq!(summary["unbound_symbols"], serde_json::json!([]));

    let inputs = random_inputs(&p, 5).expect("inputs");
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[resnet::OUTPUT];
    assert_eq!(out.shape, [1, cfg.classes as usize]);
    // The logits are O(1), so the tolerance checks real numbers, not rounding noise.
    let largest = out.to_f64_vec().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        largest > 0.1 && largest.is_finite(),
        "logits up to {largest}"
    );
    onnxruntime_agrees(&model.bytes, &inputs, &ours);
}

/// The eval-mode export: BN folded into conv biases, `torch.flatten` as Flatten, opset 17.
#[test]
fn resnet50_shaped_eval_export_matches_through_c_and_onnxruntime() {
    let cfg = ResNetConfig {
        width: 4,
        classes: 10,
        opset: 17,
        batchnorm: false,
        view_flatten: false,
    };
    check_resnet(
        &cfg,
        32,
        &[
            ("Add", 16),
            ("Conv", 53),
            ("Flatten", 1),
            ("GlobalAveragePool", 1),
            ("Gemm", 1),
            ("MaxPool", 1),
            ("Relu", 49),
        ],
    );
}

/// BatchNormalization kept, `x.view(x.size(0), -1)` flattening, opset 13.
#[test]
fn resnet50_shaped_batchnorm_view_export_matches_through_c_and_onnxruntime() {
    let cfg = ResNetConfig {
        width: 4,
        classes: 10,
        opset: 13,
        batchnorm: true,
        view_flatten: true,
    };
    check_resnet(
        &cfg,
        32,
        &[
            ("Add", 16),
            ("BatchNormalization", 53),
            ("Conv", 53),
            ("GlobalAveragePool", 1),
            ("Gemm", 1),
            ("MaxPool", 1),
            ("Relu", 49),
            ("Reshape", 1),
        ],
    );
}
