//! The checks every exported model goes through: import with its dimensions bound (library and
//! CLI), the imported operator list, full expansion → C → run against the reference
//! interpreter, and the interpreter against ONNX Runtime (a failure when it is missing and
//! `DMOVE_REQUIRE_PEER=1`, as in CI; otherwise a printed `SKIPPED:` line).

use crate::support::peer::run_peer;
use dmove::check::compare_outputs;
use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp;
use dmove::ir::validate::validate;
use dmove::ir::{LibraryNode, NodeKind, Program, Tensor};
use dmove::numerics::Comparison;
use dmove::onnx::{import_bytes, ImportOptions};
use dmove::ops::expand::expand_all;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

pub type Tensors = BTreeMap<String, Tensor>;

/// Imports `bytes` with the named `dim_param`s bound, as `--dim NAME=VALUE` does.
pub fn import_bound(bytes: &[u8], dims: &[(&str, i64)]) -> Program {
    let opts = ImportOptions {
        dims: dims.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        ..ImportOptions::default()
    };
    import_bytes(bytes, &opts).expect("the exported model imports")
}

/// Library node count per operator after import.
pub fn library_ops(p: &Program) -> BTreeMap<String, usize> {
    let mut ops = BTreeMap::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Library(lib) = &n.kind {
            *ops.entry(lib.op.clone()).or_insert(0) += 1;
        }
    });
    ops
}

/// The exporter's shape subgraphs are gone: no `Shape`/`Size` is left, and every shape, axes,
/// index-range or repeat operand of a data-movement operator is a constant of the program.
pub fn assert_shape_subgraphs_folded(p: &Program) {
    for (idx, node) in p.graph.ordered().into_iter().map(|i| (i, p.graph.node(i))) {
        let NodeKind::Library(lib) = &node.kind else {
            continue;
        };
        assert!(
            !matches!(lib.op.as_str(), "Shape" | "Size"),
            "{} was not folded",
            node.label
        );
        if !matches!(
            lib.op.as_str(),
            "Reshape" | "Expand" | "Slice" | "Unsqueeze" | "Squeeze" | "Tile"
        ) {
            continue;
        }
        for e in p.graph.in_edges(idx) {
            let position = e
                .memlet
                .dst_conn
                .as_deref()
                .and_then(|c| LibraryNode::connector_index(c, "in"));
            if position.is_some_and(|i| i > 0) {
                let data = &e.memlet.data;
                assert!(
                    p.constants.contains_key(data),
                    "{} reads its shape operand `{data}` from a computed tensor",
                    node.label
                );
            }
        }
    }
}

/// The default build, at `-O1`: these checks are about what the generated C computes, and a
/// whole lowered network takes `-O3 -march=native` about seven times as long to compile.
fn build_config() -> BuildConfig {
    let mut c = BuildConfig::from_env();
    c.flags
        .retain(|f| !f.starts_with("-O") && !f.starts_with("-march"));
    c.flags.push("-O1".into());
    c.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("export-models-cache");
    c
}

/// Runs `p` in the reference interpreter, then expands every operator, compiles the C and runs
/// it on the same inputs; the outputs must agree within `numerics` tolerances. Returns the
/// interpreter's outputs.
pub fn interpreter_and_c_agree(p: &Program, inputs: &Tensors) -> Tensors {
    let want = interpret(p, inputs);
    c_agrees(&lower_fully(p), inputs, &want);
    want
}

/// The interpreter's outputs of `p`, checked to be every graph output (at least one).
pub fn interpret(p: &Program, inputs: &Tensors) -> Tensors {
    let want = interp::run(p, inputs).expect("the interpreter runs the imported model");
    // `compare_outputs` walks the expected outputs: with none it would accept anything.
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        sorted(&p.outputs),
        "the interpreter computes every graph output"
    );
    assert!(!want.is_empty(), "the model has no outputs to compare");
    want
}

/// `p` with every operator expanded into maps and tasklets: valid, no library node left.
pub fn lower_fully(p: &Program) -> Program {
    let mut lowered = p.clone();
    expand_all(&mut lowered).expect("every operator expands");
    validate(&lowered).expect("the lowered program is valid");
    assert!(library_ops(&lowered).is_empty(), "library nodes left");
    lowered
}

/// Compiles `lowered` to C, runs it on `inputs` and checks its outputs against `want` (the
/// interpreter's) within `numerics` tolerances; returns the comparison of each output.
pub fn c_agrees(
    lowered: &Program,
    inputs: &Tensors,
    want: &Tensors,
) -> BTreeMap<String, Comparison> {
    let compiled = Compiled::build_with(lowered, &build_config()).expect("the C compiles");
    let got = compiled.run(inputs).expect("the compiled model runs");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "the compiled model returns the interpreter's outputs"
    );
    compare_outputs(&got, want).expect("C matches the interpreter")
}

fn sorted(names: &[String]) -> Vec<&String> {
    let mut v: Vec<&String> = names.iter().collect();
    v.sort();
    v.dedup();
    v
}

/// ONNX Runtime computes the same outputs as our interpreter. When onnxruntime is missing this
/// fails under `DMOVE_REQUIRE_PEER=1` (as CI sets it) and otherwise prints a `SKIPPED:` line
/// naming `what` (see `support::peer`).
pub fn onnxruntime_agrees(what: &str, bytes: &[u8], inputs: &Tensors, ours: &Tensors) {
    let feeds: Vec<(String, Tensor)> = inputs.clone().into_iter().collect();
    let Some(peer) = run_peer(what, bytes, &feeds) else {
        return;
    };
    // `compare_outputs` walks the peer's outputs: the same names on both sides, at least one.
    assert_eq!(
        peer.outputs.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "{what}: onnxruntime and the interpreter name the same outputs"
    );
    assert!(!ours.is_empty(), "{what}: no outputs to compare");
    compare_outputs(ours, &peer.outputs)
        .unwrap_or_else(|e| panic!("{what}: the interpreter does not match onnxruntime: {e}"));
}

/// `dmove import MODEL --dim … --summary --json` through the binary.
pub fn cli_summary(bytes: &[u8], dims: &[(&str, i64)]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("model.onnx");
    std::fs::write(&path, bytes).expect("write the model");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dmove"));
    cmd.arg("import").arg(&path).args(["--summary", "--json"]);
    for (name, v) in dims {
        cmd.arg("--dim").arg(format!("{name}={v}"));
    }
    let out = cmd.env("NO_COLOR", "1").output().expect("dmove runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON summary")
}

/// `what` holds real numbers: finite, some of magnitude above `floor` and none above 1e3, so a
/// comparison with tolerances checks the network's arithmetic rather than rounding noise around
/// zero or an overflow.
pub fn assert_moderate(what: &str, t: &Tensor, floor: f64) {
    let values = t.to_f64_vec();
    assert!(values.iter().all(|v| v.is_finite()), "{what}: not finite");
    let largest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        largest > floor && largest < 1e3,
        "{what}: magnitudes up to {largest}"
    );
}
