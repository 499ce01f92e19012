//! The figures people read: `analyze --plot` for one program and for a comparison, and the
//! benchmark chart. Snapshots keep their structure (every text a reader sees — titles, axis
//! titles with units, ticks, bar labels and values — and how many shapes of each kind) so a
//! change to what a figure says shows up in review; the assertions say what must hold.

use dmove::analysis::kernels::Kernel;
use dmove::analysis::trace::IrTrace;
use dmove::analysis::{analyze, Options, Report};
use dmove::plot::{bench_chart, Timing};
use std::collections::BTreeMap;

/// Every text in document order, then the count of each kind of shape.
fn structure(svg: &str) -> String {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let mut out = String::new();
    let mut shapes: BTreeMap<&str, usize> = BTreeMap::new();
    for n in doc.descendants().filter(|n| n.is_element()) {
        match n.tag_name().name() {
            "text" => out.push_str(&format!("text {}\n", n.text().unwrap_or(""))),
            "svg" | "g" | "title" => {}
            other => *shapes.entry(other).or_default() += 1,
        }
    }
    for (k, v) in shapes {
        out.push_str(&format!("{k} × {v}\n"));
    }
    out
}

fn mlp() -> Report {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mlp.onnx");
    let p = dmove::import_file(std::path::Path::new(path), &Default::default()).expect("import");
    analyze(&IrTrace::new(&p).expect("trace"), &Options::default()).expect("analysis")
}

fn matmul(order: &str) -> Report {
    let params = [("n", "16"), ("order", order)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let k = Kernel::new("matmul", &params).expect("kernel");
    analyze(
        &k,
        &Options {
            line: Some(64),
            ..Options::default()
        },
    )
    .expect("analysis")
}

#[test]
fn one_programs_figure_names_the_program_and_labels_every_bar() {
    let r = mlp();
    let svg = dmove::analysis::svg::plot(&r);
    let s = structure(&svg);
    assert!(s.contains("text mlp — data movement"), "{s}");
    // Bars are labelled by node name and id, largest first, on a log axis with a unit.
    let labels: Vec<&str> = (s.lines())
        .filter_map(|l| l.strip_prefix("text "))
        .filter(|t| t.ends_with(')') && t.contains(" (n"))
        .collect();
    let mut by_dmd: Vec<&dmove::analysis::report::Entry> = r.nodes.iter().collect();
    by_dmd.sort_by(|a, b| b.dmd.total_cmp(&a.dmd));
    let want: Vec<String> = by_dmd
        .iter()
        .map(|e| format!("{} ({})", e.name, e.id.unwrap()))
        .collect();
    assert_eq!(labels, want);
    assert!(s.contains("— log scale"));
    assert!(s.contains("cache capacity (elements) — log₂ scale"));
    insta::assert_snapshot!("mlp_figure", s);
}

#[test]
fn a_comparison_shows_both_programs_side_by_side_with_capacity_in_bytes() {
    let (before, after) = (matmul("ijk"), matmul("ikj"));
    let svg = dmove::analysis::svg::compare(&before, &after, ["ijk", "ikj"]);
    let s = structure(&svg);
    assert!(
        s.contains("cache capacity (bytes, 64-byte lines) — log₂ scale"),
        "{s}"
    );
    assert!(
        s.contains("text 64 B") || s.contains("text 512 B"),
        "capacity ticks in bytes: {s}"
    );
    insta::assert_snapshot!("matmul_orders", s);
}

#[test]
fn the_benchmark_chart_draws_medians_with_min_max_whiskers() {
    let timings = [
        Timing {
            label: "baseline".into(),
            median_ms: 12.5,
            min_ms: 12.0,
            max_ms: 14.25,
            reps: 15,
        },
        Timing {
            label: "optimized".into(),
            median_ms: 3.2,
            min_ms: 3.0,
            max_ms: 3.9,
            reps: 15,
        },
        Timing {
            label: "onnxruntime".into(),
            median_ms: 2.1,
            min_ms: 2.05,
            max_ms: 2.6,
            reps: 15,
        },
    ];
    let svg = bench_chart("encoder_layer", &timings);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed");
    // Bars are proportional to the medians (a linear axis from zero).
    let bars: Vec<f64> = (doc.descendants())
        .filter(|n| {
            n.tag_name().name() == "rect" && n.children().any(|c| c.tag_name().name() == "title")
        })
        .map(|n| n.attribute("width").unwrap().parse().unwrap())
        .collect();
    assert_eq!(bars.len(), 3);
    assert!((bars[0] / bars[1] - 12.5 / 3.2).abs() < 0.02, "{bars:?}");
    insta::assert_snapshot!("bench_chart", svg);
}

#[test]
fn analyze_with_a_recipe_compares_the_naive_lowering_with_the_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = env!("CARGO_MANIFEST_DIR");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_dmove"))
        .args([
            "analyze",
            &format!("{repo}/tests/fixtures/mlp.onnx"),
            "--recipe",
        ])
        .arg(format!("{repo}/recipes/mlp.recipe"))
        .args(["--json", "--plot", "cmp.svg"])
        .current_dir(dir.path())
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let (before, after) = (
        v["baseline"]["dmd"].as_f64().unwrap(),
        v["optimized"]["dmd"].as_f64().unwrap(),
    );
    // The recipe's own expectation (README): it moves less data than the naive lowering.
    assert!(after < before, "{after} < {before}");
    let s = structure(&std::fs::read_to_string(dir.path().join("cmp.svg")).expect("plot"));
    assert!(
        s.contains("text mlp: naive lowering vs after recipe"),
        "{s}"
    );
    assert!(
        s.contains("text naive lowering") && s.contains("text after recipe"),
        "a legend"
    );
}
