//! ONNX Runtime as a peer: the same model file and inputs, timed in a Python child process.
//!
//! ONNX Runtime is never a dependency of dmove: when `python3` (or `$DMOVE_PYTHON`) cannot
//! import `onnxruntime`, the peer is reported as unavailable and everything else still runs.

use crate::ir::{DType, Tensor};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Why the peer could not be measured.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PeerError {
    #[error("onnxruntime is not available: {0}")]
    Unavailable(String),
    #[error("onnxruntime failed: {0}")]
    Failed(String),
    #[error("I/O while preparing the peer run: {0}")]
    Io(#[from] std::io::Error),
}

/// The peer's timings and outputs.
#[derive(Debug)]
pub struct PeerRun {
    pub samples_ms: Vec<f64>,
    pub outputs: BTreeMap<String, Tensor>,
}

/// Reads the inputs listed in argv, times `session.run`, writes outputs and prints timings.
const SCRIPT: &str = r#"
import json, sys, time
try:
    import numpy as np
    import onnxruntime as ort
except Exception as e:
    print("UNAVAILABLE " + str(e)); sys.exit(3)
d = sys.argv[1]
spec = json.load(open(d + "/spec.json"))
sess = ort.InferenceSession(d + "/model.onnx", providers=["CPUExecutionProvider"])
feeds = {}
for i, inp in enumerate(spec["inputs"]):
    feeds[inp["name"]] = np.fromfile(d + "/in%d.bin" % i, dtype=inp["dtype"]).reshape(inp["shape"])
for _ in range(spec["warmup"]):
    sess.run(None, feeds)
times = []
for _ in range(spec["reps"]):
    t = time.perf_counter()
    outs = sess.run(None, feeds)
    times.append((time.perf_counter() - t) * 1e3)
names = [o.name for o in sess.get_outputs()]
shapes = []
for i, o in enumerate(outs):
    np.ascontiguousarray(o, dtype=np.float32).tofile(d + "/out%d.bin" % i)
    shapes.append(list(o.shape))
print(json.dumps({"times": times, "outputs": names, "shapes": shapes}))
"#;

/// Runs `model` (ONNX bytes) in ONNX Runtime on `inputs` (f32 tensors, or i64 ones such as
/// token ids); its outputs must be f32.
pub fn onnxruntime(
    model: &[u8],
    inputs: &[(String, Tensor)],
    warmup: usize,
    reps: usize,
) -> Result<PeerRun, PeerError> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("model.onnx"), model)?;
    let mut spec_inputs = Vec::new();
    for (i, (name, t)) in inputs.iter().enumerate() {
        let dtype = match t.dtype() {
            DType::F32 => "float32",
            DType::I64 => "int64",
            other => {
                return Err(PeerError::Failed(format!(
                    "input `{name}` is {other}, not f32 or i64"
                )))
            }
        };
        std::fs::write(dir.path().join(format!("in{i}.bin")), t.to_le_bytes())?;
        spec_inputs.push(serde_json::json!({"name": name, "shape": t.shape, "dtype": dtype}));
    }
    let spec = serde_json::json!({"inputs": spec_inputs, "warmup": warmup, "reps": reps});
    std::fs::write(dir.path().join("spec.json"), spec.to_string())?;
    let python = std::env::var("DMOVE_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = crate::interrupt::output(Command::new(&python).arg("-c").arg(SCRIPT).arg(dir.path()))
        .map_err(|e| PeerError::Unavailable(format!("cannot start `{python}`: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(why) = stdout.strip_prefix("UNAVAILABLE ") {
        return Err(PeerError::Unavailable(why.trim().to_string()));
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("no message");
        return Err(PeerError::Failed(last.to_string()));
    }
    parse_result(&stdout, dir.path())
}

fn parse_result(stdout: &str, dir: &Path) -> Result<PeerRun, PeerError> {
    let bad = |what: &str| PeerError::Failed(format!("unexpected peer output: {what}"));
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).map_err(|_| bad("not JSON"))?;
    let samples_ms = v["times"]
        .as_array()
        .ok_or_else(|| bad("no times"))?
        .iter()
        .filter_map(serde_json::Value::as_f64)
        .collect();
    let names = v["outputs"].as_array().ok_or_else(|| bad("no outputs"))?;
    let shapes = v["shapes"].as_array().ok_or_else(|| bad("no shapes"))?;
    let mut outputs = BTreeMap::new();
    for (i, (name, shape)) in names.iter().zip(shapes).enumerate() {
        let shape: Vec<usize> = shape
            .as_array()
            .ok_or_else(|| bad("shape"))?
            .iter()
            .filter_map(|d| d.as_u64().map(|d| d as usize))
            .collect();
        let bytes = std::fs::read(dir.join(format!("out{i}.bin")))?;
        let data: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if data.len() != shape.iter().product::<usize>() {
            return Err(bad("output size"));
        }
        outputs.insert(
            name.as_str().unwrap_or_default().to_string(),
            Tensor::f32(shape, data),
        );
    }
    Ok(PeerRun {
        samples_ms,
        outputs,
    })
}
