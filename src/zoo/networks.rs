//! The network suite of `dmove bench --suite networks`: whole networks at the sizes they are
//! deployed at (batch 1 — 128 for DLRM, which serves batches —, 224² images, sequences of 128 and
//! 256), built by this module's siblings the way today's exporters write them, with seeded
//! weights. A network takes minutes to optimize and up to seconds to run unoptimized, so the
//! suite is a benchmark, never a test; each builder is tested at a small size in
//! `tests/suite/export_models/`.

use super::bert::{self, BertConfig};
use super::dlrm::{dlrm, DlrmConfig};
use super::efficientnet::{efficientnet, EfficientNetConfig};
use super::gqa_layer::{gqa_layer, GqaLayerConfig};
use super::mixer::{mixer, MixerConfig};
use super::mobilenet::{mobilenet_v2, MobileNetV2Config};
use super::net::Exported;
use super::resnet::{resnet, ResNetSpec, RESNET18, RESNET50, WIDE_RESNET50_2};
use super::wavenet::{wavenet, WaveNetConfig};
use super::yolo::{yolo, YoloConfig};

/// One network of the suite.
pub struct SuiteNetwork {
    /// Short identifier (`resnet50`), used in tables, JSON and `--only`.
    pub name: &'static str,
    /// What it is, in words.
    pub title: &'static str,
    /// Values of the export's symbolic dimensions (its dynamic batch or sequence axes).
    pub dims: Vec<(&'static str, i64)>,
    build: fn(u64) -> Exported,
    /// The same export at its `small()` configuration with seed 0: what `recipes/NAME.recipe`
    /// is locked against (a lock replays in seconds there, where the full network takes
    /// minutes).
    pub small: fn() -> Vec<u8>,
}

impl SuiteNetwork {
    /// The ONNX bytes, with weights drawn from `seed`.
    pub fn build(&self, seed: u64) -> Exported {
        (self.build)(seed)
    }
}

/// Every network of the suite, in the order they are run.
pub fn networks() -> Vec<SuiteNetwork> {
    let net = |name, title, build, small| SuiteNetwork {
        name,
        title,
        dims: Vec::new(),
        build,
        small,
    };
    vec![
        net(
            "resnet18",
            "torchvision ResNet-18, 224×224 (eval export, BN folded)",
            |seed| resnet(&ResNetSpec::full(RESNET18), seed),
            || resnet(&ResNetSpec::small(RESNET18), 0).bytes,
        ),
        net(
            "resnet50",
            "torchvision ResNet-50, 224×224 (eval export, BN folded)",
            |seed| resnet(&ResNetSpec::full(RESNET50), seed),
            || resnet(&ResNetSpec::small(RESNET50), 0).bytes,
        ),
        net(
            "wide_resnet50_2",
            "torchvision Wide-ResNet-50-2, 224×224 (eval export, BN folded)",
            |seed| resnet(&ResNetSpec::full(WIDE_RESNET50_2), seed),
            || resnet(&ResNetSpec::small(WIDE_RESNET50_2), 0).bytes,
        ),
        net(
            "mobilenet_v2",
            "torchvision MobileNetV2, 224×224 (inverted residuals, ReLU6 as Clip)",
            |seed| mobilenet_v2(&MobileNetV2Config::full(), seed),
            || mobilenet_v2(&MobileNetV2Config::small(), 0).bytes,
        ),
        net(
            "efficientnet_b0",
            "torchvision EfficientNet-B0, 224×224 (MBConv, squeeze-excitation, SiLU)",
            |seed| efficientnet(&EfficientNetConfig::full(), seed),
            || efficientnet(&EfficientNetConfig::small(), 0).bytes,
        ),
        SuiteNetwork {
            dims: bert::FULL_DIMS.to_vec(),
            ..net(
                "bert_base",
                "BERT-base, one encoder layer with embeddings and pooler, sequence 128",
                |seed| bert::bert(&BertConfig::full(), seed),
                || bert::bert(&BertConfig::small(), 0).bytes,
            )
        },
        net(
            "gqa_layer",
            "LLaMA-shaped decoder layer, opset 23 Attention/RotaryEmbedding/RMSNormalization, \
             32 query and 8 key/value heads, hidden 2048, sequence 256",
            |seed| gqa_layer(&GqaLayerConfig::full(), seed),
            || gqa_layer(&GqaLayerConfig::small(), 0).bytes,
        ),
        SuiteNetwork {
            dims: MixerConfig::full().dims().to_vec(),
            ..net(
                "mixer",
                "MLP-Mixer-B/16: patch embedding, one mixer block, head; 224×224",
                |seed| mixer(&MixerConfig::full(), seed),
                || mixer(&MixerConfig::small(), 0).bytes,
            )
        },
        SuiteNetwork {
            dims: DlrmConfig::full().dims().to_vec(),
            ..net(
                "dlrm",
                "DLRM: 26 embedding tables of 25,000×64, MLPs 13-512-256-64 and 415-512-256-1, \
                 dot interaction; batch 128",
                |seed| dlrm(&DlrmConfig::full(), seed),
                || dlrm(&DlrmConfig::small(), 0).bytes,
            )
        },
        net(
            "wavenet",
            "WaveNet: 2 stacks of 10 dilated causal convolutions (residual 64, skip 256), \
             16,000 one-hot samples",
            |seed| wavenet(&WaveNetConfig::full(), seed),
            || wavenet(&WaveNetConfig::small(), 0).bytes,
        ),
        net(
            "yolov8n",
            "YOLOv8n detector without NMS, 640×640 (C2f, SPPF, PAN neck, DFL head)",
            |seed| yolo(&YoloConfig::full(), seed),
            || yolo(&YoloConfig::small(), 0).bytes,
        ),
    ]
}
