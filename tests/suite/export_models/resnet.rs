//! torchvision's ResNets (`dmove::zoo::resnet`): the locked ResNet-50-shaped exports (eval mode
//! and BN kept with `view` flattening), and ResNet-18 and Wide-ResNet-50-2 as the suite builds
//! them, each imported, counted, lowered to C and compared with ONNX Runtime.

use super::counts;
use super::pipeline::{
    assert_shape_subgraphs_folded, cli_summary, import_bound, interpreter_and_c_agree, library_ops,
    onnxruntime_agrees,
};
use dmove::check::random_inputs;
use dmove::zoo::resnet::{
    self, resnet, resnet50, Architecture, Block, ResNetConfig, ResNetSpec, RESNET18, RESNET50,
    WIDE_RESNET50_2,
};
use dmove::zoo::torch_idioms::{self, sequential_scope};

/// A ResNet's parameters at `width`, counted from the architecture (not from the builder):
/// convolution weights, per normalised channel `per_channel` values (2 for PyTorch's trainable
/// BN scale and shift, 4 for ONNX's BN with running statistics, 1 for a folded conv bias), and
/// the classifier. A block projects its shortcut where it changes the stride (each stage but the
/// first starts with stride 2) or the channel count.
fn resnet_parameters(arch: &Architecture, width: i64, classes: i64, per_channel: i64) -> i64 {
    let conv = |cin: i64, cout: i64, k: i64| cin * cout * k * k + per_channel * cout;
    let mut total = conv(3, width, 7);
    let mut cin = width;
    for (s, &blocks) in arch.layers.iter().enumerate() {
        let planes = width << s;
        let (inner, cout) = match arch.block {
            Block::Basic => (planes, planes),
            Block::Bottleneck => (planes * arch.width_factor, 4 * planes),
        };
        for b in 0..blocks {
            if (s > 0 && b == 0) || cin != cout {
                total += conv(cin, cout, 1);
            }
            total += match arch.block {
                Block::Basic => conv(cin, planes, 3) + conv(planes, planes, 3),
                Block::Bottleneck => {
                    conv(cin, inner, 1) + conv(inner, inner, 3) + conv(inner, cout, 1)
                }
            };
            cin = cout;
        }
    }
    total + cin * classes + classes
}

/// Convolutions of a ResNet at any width.
fn resnet_convolutions(arch: &Architecture) -> usize {
    let per_block = match arch.block {
        Block::Basic => 2,
        Block::Bottleneck => 3,
    };
    // The stem, each block's convolutions, and one projection per stage (the first stage's
    // bottlenecks widen 64 → 256; its basic blocks keep 64 and stride 1).
    let projections = match arch.block {
        Block::Basic => 3,
        Block::Bottleneck => 4,
    };
    1 + per_block * arch.layers.iter().sum::<usize>() + projections
}

#[test]
fn resnet_parameter_formulas_are_torchvisions() {
    // torchvision's published counts (`sum(p.numel() for p in model.parameters())`).
    assert_eq!(resnet_parameters(&RESNET18, 64, 1000, 2), 11_689_512);
    assert_eq!(resnet_parameters(&RESNET50, 64, 1000, 2), 25_557_032);
    assert_eq!(resnet_parameters(&WIDE_RESNET50_2, 64, 1000, 2), 68_883_240);
    // Folding BN leaves one bias per normalised channel: the count drops by the BN channels.
    assert_eq!(
        resnet_parameters(&RESNET18, 64, 1000, 1),
        11_689_512 - 4_800
    );
    assert_eq!(
        resnet_parameters(&WIDE_RESNET50_2, 64, 1000, 1),
        68_883_240 - 34_112
    );
    assert_eq!(resnet_convolutions(&RESNET18), 20);
    assert_eq!(resnet_convolutions(&WIDE_RESNET50_2), 53);
    assert_eq!(
        sequential_scope("layer1.0.downsample.0"),
        "/layer1/layer1.0/downsample/downsample.0"
    );
    assert_eq!(
        sequential_scope("features.1.0.block.0.0"),
        "/features/features.1/features.1.0/block/block.0/block.0.0"
    );
    assert_eq!(
        torch_idioms::scope("encoder.layer.0.attention.self"),
        "/encoder/layer.0/attention/self"
    );
}

/// Import (library and CLI), folded shapes, operator counts, parameters, C against the
/// interpreter and the interpreter against ONNX Runtime for one ResNet; `batch` binds the
/// dynamic `batch_size` axis when the spec has one. Returns the largest logit's magnitude.
fn check_resnet(spec: &ResNetSpec, batch: i64, expected_ops: &[(&str, usize)]) -> f64 {
    let model = resnet(spec, 11);
    let dims: Vec<(&str, i64)> = match spec.batch {
        Some(b) => {
            assert_eq!(b, batch);
            vec![]
        }
        None => vec![("batch_size", batch)],
    };
    let cfg = &spec.cfg;
    let p = import_bound(&model.bytes, &dims);
    assert_eq!(library_ops(&p), counts(expected_ops));
    assert_shape_subgraphs_folded(&p);
    let per_channel = if cfg.batchnorm { 4 } else { 1 };
    let params = resnet_parameters(&spec.arch, cfg.width, cfg.classes, per_channel) as u64;
    assert_eq!(model.parameters, params);

    let summary = cli_summary(&model.bytes, &dims);
    let convolutions = resnet_convolutions(&spec.arch);
    assert_eq!(summary["operators"]["Conv"], convolutions);
    let bn = if cfg.batchnorm { convolutions } else { 0 };
    assert_eq!(
        summary["operators"]["BatchNormalization"]
            .as_u64()
            .unwrap_or(0),
        bn as u64
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
    assert_eq!(out.shape, [batch as usize, cfg.classes as usize]);
    // The logits are O(1), so the tolerance checks real numbers, not rounding noise.
    let largest = out.to_f64_vec().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        largest > 0.1 && largest.is_finite(),
        "logits up to {largest}"
    );
    let what = format!(
        "ResNet export ({:?} blocks {:?}, opset {}, batchnorm {})",
        spec.arch.block, spec.arch.layers, cfg.opset, cfg.batchnorm
    );
    onnxruntime_agrees(&what, &model.bytes, &inputs, &ours);
    largest
}

/// The locked ResNet-50's export (`resnet50`, dynamic batch) at another configuration.
fn locked_resnet50(cfg: ResNetConfig, size: i64) -> ResNetSpec {
    let spec = ResNetSpec {
        arch: RESNET50,
        cfg,
        size,
        batch: None,
        branch_scale: 1.0,
    };
    // `resnet50` is this spec.
    assert_eq!(resnet50(&cfg, size, 11).bytes, resnet(&spec, 11).bytes);
    spec
}

/// The eval-mode export: BN folded into conv biases, `torch.flatten` as Flatten, opset 17;
/// width 8 on 64×64 images, so the last stage still sees 2×2 maps.
#[test]
fn resnet50_shaped_eval_export_matches_through_c_and_onnxruntime() {
    let cfg = ResNetConfig {
        width: 8,
        classes: 10,
        opset: 17,
        batchnorm: false,
        view_flatten: false,
    };
    // He-uniform throughout (branch scale 1): the 16 residual sums grow the logits to ~150.
    check_resnet(
        &locked_resnet50(cfg, 64),
        1,
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

/// BatchNormalization kept, `x.view(x.size(0), -1)` flattening, opset 13; a batch of two, so
/// the folded view shape must carry the bound batch.
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
        &locked_resnet50(cfg, 32),
        2,
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

/// ResNet-18 at `small()`: 8 basic blocks (two 3×3 convolutions each, a ReLU after the first
/// and after the sum), projections in stages 2–4 only, static batch 1.
#[test]
fn resnet18_matches_through_c_and_onnxruntime() {
    let largest = check_resnet(
        &ResNetSpec::small(RESNET18),
        1,
        &[
            ("Add", 8),
            ("Conv", 20),
            ("Flatten", 1),
            ("GlobalAveragePool", 1),
            ("Gemm", 1),
            ("MaxPool", 1),
            ("Relu", 17),
        ],
    );
    // The scaled residual branches keep the logits O(1).
    assert!(largest < 10.0, "logits up to {largest}");
}

/// Wide-ResNet-50-2 at `small()`: ResNet-50's graph with bottlenecks twice as wide inside.
#[test]
fn wide_resnet50_2_matches_through_c_and_onnxruntime() {
    let largest = check_resnet(
        &ResNetSpec::small(WIDE_RESNET50_2),
        1,
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
    assert!(largest < 10.0, "logits up to {largest}");
}
