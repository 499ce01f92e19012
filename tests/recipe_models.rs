//! The models the recipes in `recipes/` are locked against, written by the same builders the
//! export-shaped tests use (`tests/export_models/`), so the committed `.onnx` files are
//! reproducible without committing binaries: this test writes each one that is missing
//! (`recipes/models/` is not in git; `.ci/run` runs this test before `dmove check recipes/`)
//! and fails when one that exists differs from what its builder writes today. The lock files
//! record each model's SHA-256, so a drifted builder shows up there too.
//! `DMOVE_BLESS_MODELS=1 cargo test --test recipe_models` rewrites them.

#[path = "export_models/bert.rs"]
#[allow(dead_code)]
mod bert;
#[path = "export_models/decoder.rs"]
#[allow(dead_code)]
mod decoder;
#[path = "export_models/net.rs"]
#[allow(dead_code)]
mod net;
#[path = "export_models/resnet.rs"]
#[allow(dead_code)]
mod resnet;
#[path = "export_models/torch_idioms.rs"]
#[allow(dead_code)]
mod torch_idioms;

use std::path::PathBuf;

fn models() -> Vec<(&'static str, Vec<u8>)> {
    let resnet = resnet::ResNetConfig {
        width: 8,
        classes: 10,
        opset: 17,
        batchnorm: false,
        view_flatten: false,
    };
    let bert = bert::BertConfig {
        vocab: 50,
        hidden: 32,
        heads: 4,
        layers: 2,
        intermediate: 64,
        max_positions: 16,
        opset: 17,
        mask_min: f32::MIN,
    };
    let decoder = decoder::DecoderConfig {
        vocab: 50,
        hidden: 32,
        heads: 4,
        kv_heads: 2,
        layers: 2,
        intermediate: 48,
        max_positions: 16,
        opset: 17,
    };
    let encoder = dmove::demo::model::encoder_model(&Default::default(), 2024);
    vec![
        ("encoder", encoder),
        ("resnet50", resnet::resnet50(&resnet, 64, 11).bytes),
        ("bert", bert::bert(&bert, 17).bytes),
        ("decoder", decoder::decoder(&decoder, 23).bytes),
    ]
}

#[test]
fn recipe_models_are_reproducible() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recipes/models");
    let bless = std::env::var_os("DMOVE_BLESS_MODELS").is_some();
    for (name, bytes) in models() {
        let path = dir.join(format!("{name}.onnx"));
        if bless || !path.exists() {
            std::fs::create_dir_all(&dir).expect("create recipes/models");
            std::fs::write(&path, &bytes).expect("write model");
            continue;
        }
        let existing = std::fs::read(&path).expect("read model");
        assert!(
            existing == bytes,
            "{} differs from what its builder writes today; rebuild with DMOVE_BLESS_MODELS=1",
            path.display()
        );
    }
}
