//! The real-model table of `docs/models.md`: one row per model, rendered as markdown and
//! spliced between the document's markers when `DMOVE_WRITE_MODELS_TABLE=1`.

use std::path::Path;

const BEGIN: &str = "<!-- real-models:begin -->";
const END: &str = "<!-- real-models:end -->";

/// What one model measured: identification, timings, and the worst errors.
pub struct Row {
    pub model: String,
    pub opset: i64,
    pub ir_version: i64,
    pub ops: Vec<String>,
    /// The `--dim` / `--shape` flags the model was imported with.
    pub bindings: String,
    pub import_ms: f64,
    pub lower_ms: f64,
    /// Largest |interpreter − oracle| over every output element.
    pub oracle_abs: f64,
    /// `oracle_abs` over the largest |oracle| value: the error on the outputs' scale.
    pub oracle_rel: f64,
    /// Largest |C − interpreter|.
    pub c_abs: f64,
    /// `onnxruntime 1.x` or `onnx.reference 1.x`.
    pub oracle: String,
}

/// The markdown table, with a caption naming the build profile and the onnx release.
pub fn markdown(rows: &[Row], onnx: &str) -> String {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let mut s = format!(
        "Written by onnx {onnx}; times from a {profile} build of dmove on this machine.\n\n\
         | model | opset / IR | operators | bindings | import ms | lowering ms | \
         max abs error vs oracle | relative | C vs interpreter | oracle |\n\
         |---|---|---|---|--:|--:|--:|--:|--:|---|\n"
    );
    for r in rows {
        let cells = [
            r.model.clone(),
            format!("{} / {}", r.opset, r.ir_version),
            r.ops.join(", "),
            r.bindings.clone(),
            format!("{:.1}", r.import_ms),
            format!("{:.1}", r.lower_ms),
            format!("{:.1e}", r.oracle_abs),
            format!("{:.1e}", r.oracle_rel),
            format!("{:.1e}", r.c_abs),
            r.oracle.clone(),
        ];
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

/// The part of `doc` between the markers (the table), or `None` without them.
fn table_in(doc: &str) -> Option<(usize, usize)> {
    let start = doc.find(BEGIN)? + BEGIN.len();
    let end = start + doc[start..].find(END)?;
    Some((start, end))
}

/// Replaces the table in `path` by `table`, atomically (a temporary file renamed into place).
pub fn splice(path: &Path, table: &str) {
    let doc = std::fs::read_to_string(path).expect("docs/models.md");
    let (start, end) = table_in(&doc).expect("docs/models.md has the table markers");
    let updated = format!("{}\n{table}{}", &doc[..start], &doc[end..]);
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, updated).expect("write the table");
    std::fs::rename(&tmp, path).expect("replace docs/models.md");
}

/// The model names the committed table lists (first column of its body rows).
pub fn listed_models(path: &Path) -> Vec<String> {
    let doc = std::fs::read_to_string(path).expect("docs/models.md");
    let (start, end) = table_in(&doc).expect("docs/models.md has the table markers");
    doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| model "))
        .filter_map(|l| l.split('|').nth(1).map(|c| c.trim().to_string()))
        .collect()
}
