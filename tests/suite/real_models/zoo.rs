//! The model zoo `scripts/real_models.py` writes: running the script with a Python whose onnx
//! package knows opset 23, and reading its `models.json` sidecar and raw tensors back.

use crate::support::skip::skip;
use dmove::ir::Tensor;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `models.json`: the onnx release that wrote the zoo, and its models.
#[derive(Deserialize)]
pub struct Zoo {
    pub onnx: String,
    pub models: Vec<Entry>,
}

/// One model as the sidecar describes it.
#[derive(Deserialize)]
pub struct Entry {
    pub name: String,
    pub opset: i64,
    pub ir_version: i64,
    pub ops: Vec<String>,
    /// `--dim NAME=VALUE` bindings.
    pub dims: BTreeMap<String, i64>,
    /// `--shape INPUT=DIMS` bindings (inputs whose dimensions are `-1` or unnamed).
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub inputs: Vec<TensorFile>,
    pub outputs: Vec<TensorFile>,
    /// `onnxruntime`, or `onnx.reference` when ONNX Runtime could not run the model.
    pub oracle: String,
    pub oracle_version: String,
    /// Why ONNX Runtime is not the oracle (empty when it is).
    pub oracle_note: String,
}

/// A tensor stored as raw little-endian values next to the model.
#[derive(Deserialize)]
pub struct TensorFile {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// The Python to write the zoo with: `$DMOVE_ONNX_PYTHON`, else the environment `.ci/run`
/// creates for the newest onnx release (`target/onnx-newest-venv`), else `python3`.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("DMOVE_ONNX_PYTHON") {
        return p.into();
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/onnx-newest-venv/bin/python");
    if venv.exists() {
        venv
    } else {
        "python3".into()
    }
}

/// Writes the zoo into `dir` and reads its sidecar. `None` when the onnx package is missing or
/// too old and `DMOVE_REQUIRE_PEER` is not set (a recorded skip); a failure otherwise.
pub fn write(dir: &Path) -> Option<Zoo> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real_models.py");
    let python = python();
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(why) = stdout.strip_prefix("UNAVAILABLE ") {
        skip(
            "the real-model zoo against its oracle",
            &format!(
                "{} cannot write the model zoo ({})",
                python.display(),
                why.trim()
            ),
            "set DMOVE_ONNX_PYTHON to a Python with onnx>=1.18",
        );
        return None;
    }
    assert!(
        out.status.success(),
        "scripts/real_models.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("models.json")).expect("models.json");
    Some(serde_json::from_str(&text).expect("models.json parses"))
}

impl Entry {
    /// The directory the model and its tensors are in.
    pub fn dir(&self, zoo: &Path) -> PathBuf {
        zoo.join(&self.name)
    }

    pub fn model_bytes(&self, zoo: &Path) -> Vec<u8> {
        std::fs::read(self.dir(zoo).join("model.onnx")).expect("model.onnx")
    }

    /// The inputs the oracle ran on, by name.
    pub fn inputs(&self, zoo: &Path) -> BTreeMap<String, Tensor> {
        self.read_all(zoo, "input", &self.inputs)
    }

    /// The oracle's outputs, by name.
    pub fn oracle_outputs(&self, zoo: &Path) -> BTreeMap<String, Tensor> {
        self.read_all(zoo, "output", &self.outputs)
    }

    fn read_all(&self, zoo: &Path, kind: &str, files: &[TensorFile]) -> BTreeMap<String, Tensor> {
        let dir = self.dir(zoo);
        let tensors = files.iter().enumerate().map(|(i, f)| {
            let bytes = std::fs::read(dir.join(format!("{kind}_{i}.bin"))).expect("tensor file");
            (f.name.clone(), f.read(&bytes))
        });
        tensors.collect()
    }
}

impl TensorFile {
    fn read(&self, bytes: &[u8]) -> Tensor {
        let shape = self.shape.clone();
        let t = match self.dtype.as_str() {
            "float32" => Tensor::f32(shape, words(bytes).map(f32::from_le_bytes).collect()),
            "int64" => Tensor::i64(shape, words(bytes).map(i64::from_le_bytes).collect()),
            other => panic!("`{}`: unexpected element type {other}", self.name),
        };
        assert_eq!(
            t.len(),
            self.shape.iter().product::<usize>(),
            "`{}` size",
            self.name
        );
        t
    }
}

/// Fixed-width little-endian words of `bytes` (4 for f32, 8 for i64).
fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes
        .chunks_exact(N)
        .map(|c| c.try_into().expect("exact chunk"))
}
