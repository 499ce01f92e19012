//! `dmove bench` on tiny models: the JSON carries every variant's required figures, the text
//! shows the table, numpy joins only a single MatMul, and a peer that cannot be imported is
//! reported as such with its install command. No test asserts a time.

use super::support::{assert_success, command, dmove, fixture, stderr, stdout};
use serde_json::Value;
use std::path::Path;

/// `dmove bench MODEL --json --reps 2 --warmup 0 EXTRA…`, parsed.
fn bench_json(model: &str, extra: &[&str], python: Option<&Path>, dir: &Path) -> Value {
    let mut c = command(dir);
    c.args(["bench", model, "--json", "--reps", "2", "--warmup", "0"])
        .args(extra);
    if let Some(p) = python {
        c.env("DMOVE_PYTHON", p);
    }
    let out = c.output().expect("the binary runs");
    assert_success(&out);
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)))
}

/// The figures every measured variant has.
fn assert_measured(v: &Value, name: &str) {
    assert_eq!(v["available"], true, "{name}: {v}");
    for key in ["median_ms", "min_ms", "max_ms", "gflops"] {
        assert!(
            v[key].as_f64().is_some_and(|x| x >= 0.0),
            "{name}.{key}: {v}"
        );
    }
    assert!(
        v["min_ms"].as_f64() <= v["median_ms"].as_f64(),
        "{name}: {v}"
    );
    assert!(
        v["median_ms"].as_f64() <= v["max_ms"].as_f64(),
        "{name}: {v}"
    );
    assert_eq!(v["reps"], 2, "{name}: {v}");
    assert!(v.get("foreign_load").is_some(), "{name}: {v}");
    assert_eq!(v["agrees"], true, "{name}: {v}");
}

/// `--plot`'s chart is a well-formed SVG with a labelled bar row per measured variant.
fn assert_chart_has_rows(path: &Path, variants: &[&str]) {
    let svg = std::fs::read_to_string(path).expect("the chart was written");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let texts: Vec<&str> = (doc.descendants())
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for v in variants {
        let label = format!("{v} (2 runs)");
        assert!(texts.contains(&label.as_str()), "{label} in {texts:?}");
    }
}

/// Whether `python3` can import `modules` (peers are optional; CI installs onnxruntime).
fn importable(modules: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn json_has_every_variant_with_its_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v = bench_json(
        &fixture("mlp.onnx"),
        &["--plot", "chart.svg"],
        None,
        dir.path(),
    );
    assert_chart_has_rows(&dir.path().join("chart.svg"), &["baseline", "dmove"]);
    assert!(v["machine"]["cpus"].as_u64().is_some_and(|c| c >= 1), "{v}");
    assert!(v["machine"]["peak_assumption"].is_string(), "{v}");
    assert_eq!(v["settings"]["reps"], 2);
    let w = &v["workloads"][0];
    assert_eq!(w["name"], "mlp");
    assert_eq!(w["reference"], "interpreter");
    assert!(w["flops"].as_u64().is_some_and(|f| f > 0), "{w}");
    let variants = &w["variants"];
    for name in ["baseline", "dmove"] {
        assert_measured(&variants[name], name);
        assert!(variants[name]["bytes_moved"]
            .as_u64()
            .is_some_and(|b| b > 0));
    }
    assert!(variants["dmove"]["speedup_vs"]["baseline"]
        .as_f64()
        .is_some());
    // The peers are present either way: measured, or saying why not.
    for (peer, module) in [
        ("onnxruntime", "numpy, onnxruntime"),
        ("openvino", "numpy, openvino"),
    ] {
        let p = &variants[peer];
        if importable(module) {
            assert_measured(p, peer);
            assert!(p["version"].is_string(), "{p}");
        } else {
            assert_eq!(p["available"], false, "{p}");
            let note = p["note"].as_str().unwrap_or_default();
            assert!(note.contains("pip install"), "{note}");
            crate::support::skip::record(
                &format!("`dmove bench` timing {peer}"),
                &format!("{peer} is not importable"),
                &format!("pip install {module}"),
            );
        }
    }
    // The mlp is MatMul + Add + Relu: numpy does not apply, so it is left out.
    assert!(variants.get("numpy").is_none(), "{variants}");
    assert!(v["under_load"].is_null());
}

#[test]
fn a_peer_that_cannot_be_imported_is_reported_with_its_install_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A real Python that cannot see site-packages (`-S`): numpy and every peer fail to import.
    let python = dir.path().join("bare-python");
    std::fs::write(&python, "#!/bin/sh\nexec python3 -S \"$@\"\n").expect("write");
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let v = bench_json(
        &fixture("mlp.onnx"),
        &["--vs", "onnxruntime,openvino,numpy"],
        Some(&python),
        dir.path(),
    );
    let variants = &v["workloads"][0]["variants"];
    assert!(variants.get("baseline").is_none(), "{variants}");
    assert_measured(&variants["dmove"], "dmove");
    for (peer, hint) in [
        ("onnxruntime", "pip install onnxruntime numpy"),
        ("openvino", "pip install openvino numpy"),
    ] {
        let note = variants[peer]["note"].as_str().unwrap_or_default();
        assert_eq!(variants[peer]["available"], false);
        assert!(
            note.contains("not available") && note.contains(hint),
            "{peer}: {note}"
        );
    }
    // Asked for by name, numpy says why it does not apply instead of disappearing.
    let note = variants["numpy"]["note"].as_str().unwrap_or_default();
    assert!(note.contains("not a single MatMul"), "{note}");
}

#[test]
fn a_single_matmul_is_also_run_by_numpy_and_the_table_prints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("mm.onnx");
    std::fs::write(&model, dmove::demo::suite::matmul(24)).expect("write");
    let model = model.display().to_string();
    let v = bench_json(
        &model,
        &["--vs", "numpy", "--threads", "1"],
        None,
        dir.path(),
    );
    let w = &v["workloads"][0];
    assert_eq!(v["settings"]["threads"], 1);
    assert_eq!(w["flops"], 2 * 24 * 24 * 24);
    let numpy = &w["variants"]["numpy"];
    if importable("numpy") {
        assert_measured(numpy, "numpy");
    } else {
        let note = numpy["note"].as_str().unwrap_or_default();
        assert!(note.contains("pip install numpy"), "{note}");
    }
    let out = dmove(
        &[
            "bench", &model, "--reps", "2", "--warmup", "0", "--vs", "baseline",
        ],
        dir.path(),
    );
    assert_success(&out);
    let text = stdout(&out);
    for needle in [
        "machine:",
        "median ms",
        "GFLOP/s",
        "foreign",
        "baseline",
        "dmove",
        "faster than",
    ] {
        assert!(text.contains(needle), "no `{needle}` in:\n{text}");
    }
    // Standard error is not a terminal here: no progress bar was drawn.
    assert!(!stderr(&out).contains('\r'), "{}", stderr(&out));
}

#[test]
fn a_model_and_the_suite_are_exclusive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dmove(&["bench", &fixture("mlp.onnx"), "--suite"], dir.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
    let out = dmove(&["bench"], dir.path());
    assert!(!out.status.success());
}

#[test]
fn the_suites_list_their_workloads_and_only_picks_among_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let names = |suite: &[&str]| -> Vec<String> {
        let out = dmove(&[&["bench", "--list"], suite].concat(), dir.path());
        assert_success(&out);
        (stdout(&out).lines())
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect()
    };
    let kernels = names(&["--suite"]);
    assert_eq!(kernels, names(&["--suite", "kernels"]));
    assert!(kernels.contains(&"softmax_4x128x128".to_string()));
    let networks = names(&["--suite", "networks"]);
    assert!(networks.contains(&"resnet50".to_string()), "{networks:?}");
    assert!(networks.iter().all(|n| !kernels.contains(n)));

    let out = dmove(
        &["bench", "--suite", "networks", "--only", "resnet5"],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("`resnet5` is not a workload of the networks suite")
            && err.contains("resnet50"),
        "{err}"
    );

    let v: serde_json::Value = serde_json::from_slice(
        &dmove(
            &[
                "bench",
                "--suite",
                "--only",
                "softmax_4x128x128",
                "--reps",
                "1",
                "--warmup",
                "0",
                "--vs",
                "baseline",
                "--json",
            ],
            dir.path(),
        )
        .stdout,
    )
    .expect("JSON");
    let run: Vec<&str> = (v["workloads"].as_array().expect("workloads").iter())
        .map(|w| w["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(run, ["softmax_4x128x128"]);
}
