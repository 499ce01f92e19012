//! Built-in models written the way today's exporters write them: ResNet-50-, BERT- and
//! GQA-decoder-shaped graphs as `torch.onnx.export` emits them (dynamic batch and sequence axes,
//! shape subgraphs, `Constant` nodes, torch's naming), at small widths but with the real
//! structures, and deterministic for a seed.
//!
//! They live in the library rather than in the tests because the shipped recipes
//! (`recipes/*.recipe`) are locked against some of them: [`recipe_models`] lists those, and
//! `dmove models` writes them, so a fresh clone can run `dmove check recipes/*.recipe` without
//! binaries in git. The locks record each model's SHA-256, so any change to a builder that
//! alters these bytes shows up as drift in `dmove check` (and in `tests/suite/recipe_models.rs`).

pub mod bert;
pub mod decoder;
pub mod dlrm;
pub mod efficientnet;
pub mod gqa_layer;
pub mod mixer;
pub mod mobilenet;
pub mod net;
pub mod networks;
pub mod resnet;
pub mod torch_idioms;
pub mod wavenet;
pub mod yolo;

/// A model the shipped recipes are locked against: its name (the lock's `models/<name>.onnx`)
/// and how to write it. Building is deferred, so listing the names costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct RecipeModel {
    pub name: &'static str,
    build: fn() -> Vec<u8>,
}

impl RecipeModel {
    /// The file the locks name, relative to their `models/` directory.
    pub fn file_name(&self) -> String {
        format!("{}.onnx", self.name)
    }

    /// The ONNX bytes: the same on every call and every machine (fixed configurations and
    /// seeds), since the locks pin their SHA-256.
    pub fn bytes(&self) -> Vec<u8> {
        (self.build)()
    }
}

/// The models `recipes/*.recipe.lock` are locked against (all but `mlp`, which uses the test
/// fixture): four of the library's own, then each network of the suite at its small size
/// (`SuiteNetwork::small`) under the suite's name, unless one of the four has that name already.
/// Changing a configuration or seed here changes the bytes, and every lock built on that model
/// must be updated with `dmove check --update`.
pub fn recipe_models() -> Vec<RecipeModel> {
    let mut models = vec![
        RecipeModel {
            name: "encoder",
            // The demo's encoder layer at its default sizes and seed.
            build: || crate::demo::model::encoder_model(&Default::default(), 2024),
        },
        RecipeModel {
            name: "resnet50",
            build: resnet50_model,
        },
        RecipeModel {
            name: "bert",
            build: bert_model,
        },
        RecipeModel {
            name: "decoder",
            build: decoder_model,
        },
    ];
    for network in networks::networks() {
        if models.iter().all(|m| m.name != network.name) {
            models.push(RecipeModel {
                name: network.name,
                build: network.small,
            });
        }
    }
    models
}

/// ResNet-50's eval-mode export at width 8 on 64×64 images.
fn resnet50_model() -> Vec<u8> {
    resnet50_at(64)
}

/// The locked ResNet-50 (width 8, its seed) on `size`×`size` images: the benches measure it at
/// 224, the size the real network is trained at.
pub fn resnet50_at(size: i64) -> Vec<u8> {
    let cfg = resnet::ResNetConfig {
        width: 8,
        classes: 10,
        opset: 17,
        batchnorm: false,
        view_flatten: false,
    };
    resnet::resnet50(&cfg, size, 11).bytes
}

/// A two-layer BERT at hidden size 32, opset 17 (LayerNormalization nodes).
fn bert_model() -> Vec<u8> {
    let cfg = bert::BertConfig {
        vocab: 50,
        hidden: 32,
        heads: 4,
        layers: 2,
        intermediate: 64,
        max_positions: 16,
        opset: 17,
        mask_min: f32::MIN,
    };
    bert::bert(&cfg, 17).bytes
}

/// A two-layer decoder whose 4 query heads share 2 key/value heads.
fn decoder_model() -> Vec<u8> {
    let cfg = decoder::DecoderConfig {
        vocab: 50,
        hidden: 32,
        heads: 4,
        kv_heads: 2,
        layers: 2,
        intermediate: 48,
        max_positions: 16,
        opset: 17,
    };
    decoder::decoder(&cfg, 23).bytes
}
