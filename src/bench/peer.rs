//! Other runtimes as peers: the same model and inputs, timed in a Python child process.
//!
//! ONNX Runtime, OpenVINO and numpy are never dependencies of dmove: when `python3` (or
//! `$DMOVE_PYTHON`) cannot import one, that peer is reported as unavailable with the command
//! that installs it, and everything else still runs. Each peer runs at its best settings for a
//! latency benchmark with the thread count it is given, so a ratio against it is not flattered:
//! ONNX Runtime with every graph optimization and `intra_op_num_threads`; OpenVINO with f32
//! inference precision, `INFERENCE_NUM_THREADS` and the latency hint; numpy (a single MatMul
//! only) through its BLAS with the BLAS thread variables set.
//!
//! One Python harness reads the inputs, warms up, times each call and writes the outputs; a
//! peer only supplies how to import itself and a `run(feeds)` function.

use crate::ir::{DType, Tensor};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A runtime dmove is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Peer {
    OnnxRuntime,
    OpenVino,
    /// `numpy.matmul`: only for a model that is one MatMul (see [`PeerJob::matmul`]).
    Numpy,
}

impl Peer {
    pub const ALL: [Peer; 3] = [Peer::OnnxRuntime, Peer::OpenVino, Peer::Numpy];

    /// The variant name in reports (`onnxruntime`, `openvino`, `numpy`).
    pub fn name(self) -> &'static str {
        match self {
            Peer::OnnxRuntime => "onnxruntime",
            Peer::OpenVino => "openvino",
            Peer::Numpy => "numpy",
        }
    }

    /// The command that makes the peer importable.
    pub fn install_hint(self) -> &'static str {
        match self {
            Peer::OnnxRuntime => "pip install onnxruntime numpy",
            Peer::OpenVino => "pip install openvino numpy",
            Peer::Numpy => "pip install numpy",
        }
    }

    /// Python that imports the peer (defining `VERSION`) and defines `run(feeds)` returning
    /// `(names, arrays)`; `d` is the job directory, `spec` its description, `threads` the count.
    fn code(self) -> &'static str {
        match self {
            Peer::OnnxRuntime => ORT,
            Peer::OpenVino => OPENVINO,
            Peer::Numpy => NUMPY,
        }
    }
}

const ORT: &str = r#"
def setup():
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if threads > 0:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    sess = ort.InferenceSession(d + "/model.onnx", so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return ort.__version__, lambda feeds: (names, sess.run(None, feeds))
"#;

const OPENVINO: &str = r#"
def setup():
    import openvino as ov
    core = ov.Core()
    config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
    if threads > 0:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = core.compile_model(core.read_model(d + "/model.onnx"), "CPU", config)
    request = compiled.create_infer_request()
    outs = compiled.outputs
    # A tensor has several names where an Identity writes a graph output; the graph's is wanted.
    wanted = set(spec["outputs"])
    names = [next((n for n in sorted(o.get_names()) if n in wanted), o.get_any_name()) for o in outs]
    def run(feeds):
        result = request.infer(feeds)
        return names, [result[o] for o in outs]
    return ov.__version__, run
"#;

const NUMPY: &str = r#"
def setup():
    a, b = spec["matmul"]["a"], spec["matmul"]["b"]
    out = [spec["matmul"]["output"]]
    return np.__version__, lambda feeds: (out, [np.matmul(feeds[a], feeds[b])])
"#;

/// Reads the inputs listed in the spec, times `run`, writes outputs and prints timings.
const HARNESS: &str = r#"
import json, sys, time
d = sys.argv[1]
spec = json.load(open(d + "/spec.json"))
threads = spec["threads"]
try:
    import numpy as np
    version, run = setup()
except ImportError as e:
    print("UNAVAILABLE " + str(e)); sys.exit(3)
feeds = {}
for i, inp in enumerate(spec["inputs"]):
    feeds[inp["name"]] = np.fromfile(d + "/in%d.bin" % i, dtype=inp["dtype"]).reshape(inp["shape"])
for _ in range(spec["warmup"]):
    run(feeds)
times = []
for _ in range(max(spec["reps"], 1)):
    t = time.perf_counter()
    names, outs = run(feeds)
    times.append((time.perf_counter() - t) * 1e3)
times = times[:spec["reps"]]
shapes = []
for i, o in enumerate(outs):
    np.ascontiguousarray(o, dtype=np.float32).tofile(d + "/out%d.bin" % i)
    shapes.append(list(np.shape(o)))
print(json.dumps({"times": times, "outputs": names, "shapes": shapes, "version": version}))
"#;

/// Why a peer could not be measured.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PeerError {
    #[error("{peer} is not available ({why}); install it with `{hint}`", peer = .peer.name(), hint = .peer.install_hint())]
    Unavailable { peer: Peer, why: String },
    #[error("{peer} does not apply: {why}", peer = .peer.name())]
    NotApplicable { peer: Peer, why: String },
    #[error("{peer} failed: {why}", peer = .peer.name())]
    Failed { peer: Peer, why: String },
    #[error("I/O while preparing the peer run: {0}")]
    Io(#[from] std::io::Error),
}

/// The peer's timings and outputs.
#[derive(Debug)]
pub struct PeerRun {
    pub samples_ms: Vec<f64>,
    pub outputs: BTreeMap<String, Tensor>,
    /// The peer's version, as it reports it.
    pub version: String,
}

/// What a peer runs: an ONNX model (ONNX Runtime, OpenVINO) or a MatMul's operands (numpy).
pub struct PeerJob<'a> {
    pub model: &'a [u8],
    /// f32 tensors, or i64 ones such as token ids. A MatMul's constant operand is passed as an
    /// input too (numpy has no model to read it from).
    pub inputs: &'a [(String, Tensor)],
    pub warmup: usize,
    pub reps: usize,
    /// Threads the peer may use; 0 leaves its default.
    pub threads: usize,
    /// For numpy: the operand names of `a @ b` and the output's name.
    pub matmul: Option<(String, String, String)>,
}

/// Runs `model` (ONNX bytes) in ONNX Runtime with its default thread count; its outputs must
/// be f32. The independent oracle of the tests.
pub fn onnxruntime(
    model: &[u8],
    inputs: &[(String, Tensor)],
    warmup: usize,
    reps: usize,
) -> Result<PeerRun, PeerError> {
    let job = PeerJob {
        model,
        inputs,
        warmup,
        reps,
        threads: 0,
        matmul: None,
    };
    run(Peer::OnnxRuntime, &job)
}

/// Runs `job` in `peer` through Python.
pub fn run(peer: Peer, job: &PeerJob) -> Result<PeerRun, PeerError> {
    let failed = |why: String| PeerError::Failed { peer, why };
    if peer == Peer::Numpy && job.matmul.is_none() {
        return Err(PeerError::NotApplicable {
            peer,
            why: "the model is not a single MatMul".into(),
        });
    }
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("model.onnx"), job.model)?;
    let mut spec_inputs = Vec::new();
    for (i, (name, t)) in job.inputs.iter().enumerate() {
        let dtype = match t.dtype() {
            DType::F32 => "float32",
            DType::I64 => "int64",
            other => return Err(failed(format!("input `{name}` is {other}, not f32 or i64"))),
        };
        std::fs::write(dir.path().join(format!("in{i}.bin")), t.to_le_bytes())?;
        spec_inputs.push(serde_json::json!({"name": name, "shape": t.shape, "dtype": dtype}));
    }
    let matmul =
        (job.matmul.as_ref()).map(|(a, b, out)| serde_json::json!({"a": a, "b": b, "output": out}));
    // The graph's output names (none for bytes that do not parse: the peer then reports why).
    let outputs: Vec<String> = crate::onnx::load_model(job.model)
        .ok()
        .and_then(|m| m.graph)
        .map(|g| g.output.into_iter().filter_map(|o| o.name).collect())
        .unwrap_or_default();
    let spec = serde_json::json!({"inputs": spec_inputs, "warmup": job.warmup, "reps": job.reps,
        "threads": job.threads, "matmul": matmul, "outputs": outputs});
    std::fs::write(dir.path().join("spec.json"), spec.to_string())?;
    let python = std::env::var("DMOVE_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut cmd = Command::new(&python);
    cmd.arg("-c")
        .arg(format!("{}\n{HARNESS}", peer.code()))
        .arg(dir.path());
    if job.threads > 0 {
        // numpy's BLAS (OpenBLAS, MKL or an OpenMP one) reads its thread count at import.
        for var in ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"] {
            cmd.env(var, job.threads.to_string());
        }
    }
    let out = crate::interrupt::output(&mut cmd).map_err(|e| PeerError::Unavailable {
        peer,
        why: format!("cannot start `{python}`: {e}"),
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(why) = stdout.strip_prefix("UNAVAILABLE ") {
        return Err(PeerError::Unavailable {
            peer,
            why: why.trim().to_string(),
        });
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(failed(
            err.lines().last().unwrap_or("no message").to_string(),
        ));
    }
    parse_result(&stdout, dir.path()).map_err(failed)
}

fn parse_result(stdout: &str, dir: &Path) -> Result<PeerRun, String> {
    let bad = |what: &str| format!("unexpected peer output: {what}");
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
        let bytes = std::fs::read(dir.join(format!("out{i}.bin"))).map_err(|e| e.to_string())?;
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
        version: v["version"].as_str().unwrap_or("unknown").to_string(),
    })
}
