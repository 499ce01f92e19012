//! Models written the way today's exporters write them (`scripts/real_models.py`: opsets 17–23
//! with Attention, RotaryEmbedding, RMSNormalization, GroupNormalization, Gelu; `dim_param`
//! axes, `-1` and unnamed dimensions; IR versions 8 to the onnx package's default), each
//! imported with the bindings its sidecar records, lowered fully, its C compared with the
//! interpreter and the interpreter with the oracle's outputs: ONNX Runtime's, or
//! `onnx.reference`'s where ONNX Runtime cannot run the model (the table says which).
//!
//! Without a Python whose onnx package knows opset 23 the test prints `SKIPPED:`; with
//! `DMOVE_REQUIRE_PEER=1` (CI) that, and a model whose oracle fell back because onnxruntime is
//! not installed, are failures. `DMOVE_WRITE_MODELS_TABLE=1 cargo test --release --test
//! suite real_models::` rewrites the table in `docs/models.md`; every run checks that the table lists
//! exactly the models of the zoo.

mod table;
mod zoo;

use crate::export_models::pipeline::{c_agrees, interpret, lower_fully};
use crate::support::skip::required;
use dmove::check::compare_outputs;
use dmove::numerics::Comparison;
use dmove::onnx::{import_bytes, ImportOptions};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;
use table::Row;
use zoo::Entry;

/// The `--dim` and `--shape` flags of `e`, as a user types them.
fn flags(e: &Entry) -> String {
    let dims = e.dims.iter().map(|(n, v)| format!("--dim {n}={v}"));
    let shapes = e.shapes.iter().map(|(n, s)| {
        let s: Vec<String> = s.iter().map(i64::to_string).collect();
        format!("--shape {n}={}", s.join("x"))
    });
    dims.chain(shapes).collect::<Vec<_>>().join(" ")
}

fn worst(comparisons: &BTreeMap<String, Comparison>) -> f64 {
    comparisons
        .values()
        .map(|c| c.max_abs_error)
        .fold(0.0, f64::max)
}

/// Import with bindings, full lowering, C against the interpreter, the interpreter against the
/// oracle; panics (caught per model by the caller) at the first disagreement.
fn check(zoo: &Path, e: &Entry) -> Row {
    let opts = ImportOptions {
        dims: e.dims.clone(),
        input_shapes: e.shapes.clone(),
        ..ImportOptions::default()
    };
    let bytes = e.model_bytes(zoo);
    let start = Instant::now();
    let p = import_bytes(&bytes, &opts).unwrap_or_else(|err| panic!("import: {err}"));
    let import_ms = start.elapsed().as_secs_f64() * 1e3;
    let unbound: Vec<&String> = p
        .symbols
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k)
        .collect();
    assert!(
        unbound.is_empty(),
        "symbols left unbound by {}: {unbound:?}",
        flags(e)
    );

    let start = Instant::now();
    let lowered = lower_fully(&p);
    let lower_ms = start.elapsed().as_secs_f64() * 1e3;

    let inputs = e.inputs(zoo);
    let ours = interpret(&p, &inputs);
    let c = c_agrees(&lowered, &inputs, &ours);
    let theirs = e.oracle_outputs(zoo);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "the interpreter and {} name the same outputs",
        e.oracle
    );
    let vs_oracle = compare_outputs(&ours, &theirs)
        .unwrap_or_else(|err| panic!("the interpreter does not match {}: {err}", e.oracle));
    let scale = theirs
        .values()
        .flat_map(|t| t.to_f64_vec())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    // Outputs of size O(1): a tolerance met by all-zero outputs would prove nothing.
    assert!(scale > 0.1 && scale.is_finite(), "outputs up to {scale}");
    Row {
        model: e.name.clone(),
        opset: e.opset,
        ir_version: e.ir_version,
        ops: e.ops.clone(),
        bindings: flags(e),
        import_ms,
        lower_ms,
        oracle_abs: worst(&vs_oracle),
        oracle_rel: worst(&vs_oracle) / scale,
        c_abs: worst(&c),
        oracle: format!("{} {}", e.oracle, e.oracle_version),
    }
}

/// The text of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    text.unwrap_or("panic without a message").to_string()
}

#[test]
fn exported_models_import_lower_and_match_their_oracle() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-models");
    let Some(zoo) = zoo::write(&dir) else {
        return;
    };
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for e in &zoo.models {
        if required() {
            assert!(
                !e.oracle_note.starts_with("onnxruntime not installed"),
                "DMOVE_REQUIRE_PEER is set but {}: {}",
                e.name,
                e.oracle_note
            );
        }
        match catch_unwind(AssertUnwindSafe(|| check(&dir, e))) {
            Ok(row) => rows.push(row),
            Err(payload) => failures.push(format!("{}: {}", e.name, panic_message(&*payload))),
        }
    }
    let markdown = table::markdown(&rows, &zoo.onnx);
    eprintln!("{markdown}");
    assert!(
        failures.is_empty(),
        "models that fail:\n{}",
        failures.join("\n")
    );

    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/models.md");
    if std::env::var("DMOVE_WRITE_MODELS_TABLE").is_ok_and(|v| v == "1") {
        table::splice(&doc, &markdown);
    }
    let names: Vec<String> = zoo.models.iter().map(|e| e.name.clone()).collect();
    assert_eq!(
        table::listed_models(&doc),
        names,
        "docs/models.md lists the zoo's models; rewrite it with \
         DMOVE_WRITE_MODELS_TABLE=1 cargo test --release --test suite real_models::"
    );
}
