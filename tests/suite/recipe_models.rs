//! The models the recipes in `recipes/` are locked against (`dmove::zoo::recipe_models`, which
//! `dmove models` writes) stay what the builders write today: this test writes each one that is
//! missing from `recipes/models/` (not in git) and fails when one that exists differs, so a
//! builder that drifted is caught here as well as by the locks' SHA-256 in `dmove check`.
//! `DMOVE_BLESS_MODELS=1 cargo test --test suite recipe_models::` rewrites them.

use dmove::zoo::recipe_models;
use std::path::PathBuf;

#[test]
fn recipe_models_are_reproducible() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recipes/models");
    let bless = std::env::var_os("DMOVE_BLESS_MODELS").is_some();
    for m in recipe_models() {
        let path = dir.join(m.file_name());
        let bytes = m.bytes();
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
