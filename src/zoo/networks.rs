//! The network suite of `dmove bench --suite networks`: whole networks at the sizes they are
//! deployed at (batch 1, 224² images, sequences of 128–256), built by this module's siblings the
//! way today's exporters write them, with seeded weights. A network takes minutes to optimize
//! and seconds to run unoptimized, so the suite is a benchmark, never a test; each network's
//! builder is tested at a small size in `tests/suite/export_models/`.

use super::net::Exported;
use super::resnet::{self, ResNetConfig};

/// One network of the suite.
pub struct SuiteNetwork {
    /// Short identifier (`resnet50`), used in tables, JSON and `--only`.
    pub name: &'static str,
    /// What it is, in words.
    pub title: &'static str,
    /// Values of the export's symbolic dimensions (its dynamic batch or sequence axes).
    pub dims: &'static [(&'static str, i64)],
    build: fn(u64) -> Exported,
}

impl SuiteNetwork {
    /// The ONNX bytes, with weights drawn from `seed`.
    pub fn build(&self, seed: u64) -> Exported {
        (self.build)(seed)
    }
}

/// Batch 1 for the exporters' `batch_size` axis.
const BATCH_ONE: &[(&str, i64)] = &[("batch_size", 1)];

/// Every network of the suite, in the order they are run.
pub fn networks() -> Vec<SuiteNetwork> {
    vec![SuiteNetwork {
        name: "resnet50",
        title: "torchvision ResNet-50, 224×224, batch 1 (eval export, BN folded)",
        dims: BATCH_ONE,
        build: |seed| resnet::resnet50(&ResNetConfig::torchvision(), 224, seed),
    }]
}
