//! WaveNet's residual stack as `torch.onnx.export` writes r9y9's `wavenet_vocoder`
//! (`dmove::zoo::wavenet`): operator counts, the parameter count from the architecture, C against
//! the interpreter and the interpreter against ONNX Runtime on a one-hot input.

use super::counts;
use super::pipeline::{import_bound, interpreter_and_c_agree, library_ops, onnxruntime_agrees};
use dmove::ir::Tensor;
use dmove::zoo::wavenet::{self, wavenet, WaveNetConfig, KERNEL};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// The exported model's float values, counted from the architecture: the causal input
/// convolution; per layer the dilated convolution to both gate halves and the 1×1 skip
/// convolution; the 1×1 residual convolution of every layer but the last (whose residual output
/// feeds nothing, so the exporter drops it); the two output convolutions; and the float
/// `Constant`s: √0.5 after each kept residual sum, the 0 the skip sum starts from and √(1/layers).
fn wavenet_parameters(cfg: &WaveNetConfig) -> u64 {
    let conv = |cin: i64, cout: i64, k: i64| cin * cout * k + cout;
    let layers = cfg.layers() as i64;
    let total = conv(cfg.classes, cfg.residual, KERNEL)
        + layers * (conv(cfg.residual, 2 * cfg.gate, KERNEL) + conv(cfg.gate, cfg.skip, 1))
        + (layers - 1) * conv(cfg.gate, cfg.residual, 1)
        + conv(cfg.skip, cfg.skip, 1)
        + conv(cfg.skip, cfg.classes, 1)
        + (layers - 1)
        + 2;
    total as u64
}

/// The imported program's operators. Per layer: dilated, skip and (but the last) residual
/// convolutions; the causal cut of each dilated convolution and of the input convolution; the
/// gate's Split, Tanh, Sigmoid and Mul; the residual sum and its √0.5 scale; one Add into the
/// skip sum (the first adds 0). Then the skip scale, two ReLUs and two output convolutions.
fn wavenet_ops(cfg: &WaveNetConfig) -> BTreeMap<String, usize> {
    let l = cfg.layers();
    counts(&[
        ("Add", 2 * l - 1),
        ("Conv", 1 + 3 * l - 1 + 2),
        ("Mul", l + (l - 1) + 1),
        ("Relu", 2),
        ("Sigmoid", l),
        ("Slice", l + 1),
        ("Split", l),
        ("Tanh", l),
    ])
}

#[test]
fn wavenet_full_imports_with_the_architectures_parameters() {
    let cfg = WaveNetConfig::full();
    let model = wavenet(&cfg, 1);
    assert_eq!(model.parameters, wavenet_parameters(&cfg));
    assert_eq!(model.parameters, 906_517);
    // The PyTorch module's `sum(p.numel())` also counts the last layer's residual 1×1
    // convolution (64·64 + 64), and no `Constant`s.
    let dead = cfg.gate * cfg.residual + cfg.residual;
    let constants = cfg.layers() as u64 + 1;
    assert_eq!(model.parameters + dead as u64 - constants, 910_656);
    // The full size imports (under a second in a debug build).
    assert_eq!(
        library_ops(&import_bound(&model.bytes, &[])),
        wavenet_ops(&cfg)
    );
}

/// A one-hot `[1, classes, samples]` input: a random class at each sample.
fn one_hot(cfg: &WaveNetConfig, seed: u64) -> BTreeMap<String, Tensor> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (classes, samples) = (cfg.classes as usize, cfg.samples as usize);
    let mut data = vec![0.0f32; classes * samples];
    for t in 0..samples {
        data[rng.gen_range(0..classes) * samples + t] = 1.0;
    }
    BTreeMap::from([(
        wavenet::INPUT.to_string(),
        Tensor::f32(vec![1, classes, samples], data),
    )])
}

#[test]
fn wavenet_small_matches_through_c_and_onnxruntime() {
    let cfg = WaveNetConfig::small();
    let model = wavenet(&cfg, 1);
    assert_eq!(model.parameters, wavenet_parameters(&cfg));
    let p = import_bound(&model.bytes, &[]);
    assert_eq!(library_ops(&p), wavenet_ops(&cfg));

    let inputs = one_hot(&cfg, 7);
    let ours = interpreter_and_c_agree(&p, &inputs);
    let out = &ours[wavenet::OUTPUT];
    let (classes, samples) = (cfg.classes as usize, cfg.samples as usize);
    assert_eq!(out.shape, [1, classes, samples]);
    let values = out.to_f64_vec();
    let largest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(largest > 0.1 && largest < 100.0, "logits up to {largest}");
    onnxruntime_agrees("WaveNet stack", &model.bytes, &inputs, &ours);
}
