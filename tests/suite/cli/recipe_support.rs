//! What the recipe command tests share: a small ONNX model written in the test, and a recipe
//! with a parameter whose value changes the steps.

use super::support::{assert_success, dmove, stdout};
use dmove::onnx::ModelBuilder;
use std::path::Path;

/// `y = relu(x·W + b)` with `x: 32×8` and weights that depend on `seed`, so two seeds give two
/// models of the same structure with different bytes.
pub fn mlp(seed: u32) -> Vec<u8> {
    let weight = |n: usize, k: u32| -> Vec<f32> {
        (0..n)
            .map(|i| ((i as u32 * 7 + k * 13 + seed * 31) % 17) as f32 / 17.0 - 0.5)
            .collect()
    };
    ModelBuilder::new("tiny_mlp", 17)
        .input("x", [32, 8])
        .initializer("w", &[8, 16], weight(8 * 16, 1))
        .initializer("b", &[16], weight(16, 2))
        .node("MatMul", &["x", "w"], &["xw"], vec![])
        .node("Add", &["xw", "b"], &["z"], vec![])
        .node("Relu", &["z"], &["y"], vec![])
        .output("y", [32, 16])
        .encode()
}

/// A recipe that lowers everything, fuses, and schedules every map with tile `tile`
/// (`param tile … = DEFAULT`).
pub fn recipe(default_tile: i64) -> String {
    format!(
        r#"recipe "tiny" version "0.1.0"

use std::fusion
use std::loops

# The tile of each map's longest output parameter.
param tile: int in pow2(2..8) = {default_tile}

main {{
  apply Expand everywhere
  fusion::elementwise()
  loops::all(tile)
  expect len(ops()) == 0, "every operator is lowered"
}}
"#
    )
}

/// A directory with `models/mlp.onnx` and `tiny.recipe` (tile 2).
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("models")).expect("mkdir");
    std::fs::write(dir.path().join("models/mlp.onnx"), mlp(1)).expect("write model");
    std::fs::write(dir.path().join("tiny.recipe"), recipe(2)).expect("write recipe");
    dir
}

/// `dmove run tiny.recipe --model models/mlp.onnx ARGS…`, which must succeed; its stdout.
pub fn run_ok(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["run", "tiny.recipe", "--model", "models/mlp.onnx"];
    all.extend_from_slice(args);
    let o = dmove(&all, dir);
    assert_success(&o);
    stdout(&o)
}

pub fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}
