//! MLP-Mixer (Mixer-B/16's shapes) as `torch.onnx.export(timm.create_model("mixer_b16_224")
//! .eval(), x, opset_version=17, dynamic_axes={"input": {0: "batch_size"}, …})` writes it, with
//! `blocks` mixer blocks: the patch embedding (Conv 16×16 stride 16, then `flatten(2)` as
//! Shape → Slice → Concat → Reshape and `transpose(1, 2)`), per block the token-mixing MLP
//! (LayerNormalization, Transpose, `nn.Linear` as MatMul + Add, erf-GELU, Linear, Transpose,
//! residual Add) and the channel-mixing MLP (LayerNormalization, Linear, GELU, Linear, residual
//! Add), then LayerNormalization, the mean over patches (ReduceMean, `keepdims = 0`) and the
//! classifier (Gemm). All LayerNorms use timm's ε = 1e-6.
//!
//! [`MixerConfig::full`] has one block: the network suite measures a mixer block, and with
//! one block the block still holds 90% of the FLOPs while the stem and head keep the export's
//! real boundaries (image in, logits out); `blocks: 12` is Mixer-B/16 itself.

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{gelu, gemm, layer_norm, linear, reshape, Module};
use crate::ir::DType;

pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";
/// The symbolic batch dimension, bound at import (`--dim batch_size=1`).
pub const BATCH_SIZE: &str = "batch_size";

const OPSET: i64 = 17;
const LN_EPS: f32 = 1e-6;

#[derive(Clone, Copy, Debug)]
pub struct MixerConfig {
    /// Side of the square input image.
    pub image: i64,
    /// Side of a square patch (the stem's kernel and stride).
    pub patch: i64,
    pub hidden: i64,
    /// Hidden width of the token-mixing MLP.
    pub tokens_mlp: i64,
    /// Hidden width of the channel-mixing MLP.
    pub channels_mlp: i64,
    pub blocks: usize,
    pub classes: i64,
    /// The batch the model is run at (the export's batch axis is symbolic).
    pub batch: i64,
}

impl MixerConfig {
    /// Mixer-B/16 on a 224² image with one block: 196 patches, hidden 768, token MLP 384,
    /// channel MLP 3072, 1000 classes, batch 1.
    pub fn full() -> Self {
        MixerConfig {
            image: 224,
            patch: 16,
            hidden: 768,
            tokens_mlp: 384,
            channels_mlp: 3072,
            blocks: 1,
            classes: 1000,
            batch: 1,
        }
    }

    /// The same structure on a 32² image in 8×8 patches (16 patches), hidden 16, batch 2.
    pub fn small() -> Self {
        MixerConfig {
            image: 32,
            patch: 8,
            hidden: 16,
            tokens_mlp: 8,
            channels_mlp: 32,
            blocks: 1,
            classes: 10,
            batch: 2,
        }
    }

    pub fn patches(&self) -> i64 {
        (self.image / self.patch).pow(2)
    }

    /// The bindings of the export's symbolic dimensions.
    pub fn dims(&self) -> [(&'static str, i64); 1] {
        [(BATCH_SIZE, self.batch)]
    }
}

/// `self.proj(x).flatten(2).transpose(1, 2)`: `[b, hidden, h, w]` → `[b, h·w, hidden]`, the
/// flatten written by the exporter as `Reshape(x, Concat(Shape(x)[0:2], [-1]))`.
fn patch_embed(net: &mut Net, cfg: &MixerConfig) -> String {
    let (p, c) = (cfg.patch, cfg.hidden);
    let w = net.kaiming("stem.proj.weight", &[c, 3, p, p], 3 * p * p);
    let b = net.kaiming("stem.proj.bias", &[c], 3 * p * p);
    let conv = net.op(
        "/stem/proj",
        "Conv",
        &[INPUT, &w, &b],
        vec![
            ("dilations", ints(&[1, 1])),
            ("group", int(1)),
            ("kernel_shape", ints(&[p, p])),
            ("pads", ints(&[0; 4])),
            ("strides", ints(&[p, p])),
        ],
    );
    let s = "/stem";
    let shape = net.op(s, "Shape", &[&conv], vec![]);
    let axes = net.const_i64(s, &[1], vec![0]);
    let start = net.const_i64(s, &[1], vec![0]);
    let end = net.const_i64(s, &[1], vec![2]);
    let lead = net.op(s, "Slice", &[&shape, &start, &end, &axes], vec![]);
    let rest = net.const_i64(s, &[1], vec![-1]);
    let target = net.op(s, "Concat", &[&lead, &rest], vec![("axis", int(0))]);
    let flat = reshape(net, OPSET, s, &conv, &target);
    net.op(s, "Transpose", &[&flat], vec![("perm", ints(&[0, 2, 1]))])
}

/// timm's `Mlp`: `fc2(act(fc1(x)))` with `nn.GELU`.
fn mlp(net: &mut Net, module: &str, x: &str, (width, inner): (i64, i64)) -> String {
    let fc1 = Module::sequential(&format!("{module}.fc1"));
    let h = linear(net, &fc1, x, (width, inner), true);
    let act = Module::sequential(&format!("{module}.act"));
    let h = gelu(net, &act.scope, &h);
    let fc2 = Module::sequential(&format!("{module}.fc2"));
    linear(net, &fc2, &h, (inner, width), true)
}

/// `x + mlp_tokens(norm1(x).transpose(1, 2)).transpose(1, 2)`, then
/// `x + mlp_channels(norm2(x))`.
fn mixer_block(net: &mut Net, cfg: &MixerConfig, i: usize, x: &str) -> String {
    let block = Module::sequential(&format!("blocks.{i}"));
    let s = &block.scope;
    let name = |part: &str| Module::sequential(&format!("blocks.{i}.{part}"));
    let perm = || vec![("perm", ints(&[0, 2, 1]))];
    let h = layer_norm(net, &name("norm1"), x, cfg.hidden, LN_EPS);
    let h = net.op(s, "Transpose", &[&h], perm());
    let tokens = (cfg.patches(), cfg.tokens_mlp);
    let h = mlp(net, &format!("blocks.{i}.mlp_tokens"), &h, tokens);
    let h = net.op(s, "Transpose", &[&h], perm());
    let x = net.op(s, "Add", &[x, &h], vec![]);
    let h = layer_norm(net, &name("norm2"), &x, cfg.hidden, LN_EPS);
    let channels = (cfg.hidden, cfg.channels_mlp);
    let h = mlp(net, &format!("blocks.{i}.mlp_channels"), &h, channels);
    net.op(s, "Add", &[&x, &h], vec![])
}

/// Writes the model; its input is `[batch_size, 3, image, image]`, its output the logits
/// `[batch_size, classes]`.
pub fn mixer(cfg: &MixerConfig, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", OPSET, seed);
    let side = cfg.image.to_string();
    net.input(INPUT, DType::F32, &[BATCH_SIZE, "3", &side, &side]);
    let mut h = patch_embed(&mut net, cfg);
    for i in 0..cfg.blocks {
        h = mixer_block(&mut net, cfg, i, &h);
    }
    let h = layer_norm(
        &mut net,
        &Module::sequential("norm"),
        &h,
        cfg.hidden,
        LN_EPS,
    );
    let pooled = net.op(
        "",
        "ReduceMean",
        &[&h],
        vec![("axes", ints(&[1])), ("keepdims", int(0))],
    );
    let head = Module::sequential("head");
    gemm(
        &mut net,
        &head,
        &pooled,
        (cfg.hidden, cfg.classes),
        Some(OUTPUT),
    );
    net.output(OUTPUT, &[BATCH_SIZE, &cfg.classes.to_string()]);
    net.finish()
}
