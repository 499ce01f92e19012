//! `dmove analyze` end to end.

use std::process::{Command, Output};

fn dmove(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dmove"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn kernel_json_reports_warm_and_cold_separately() {
    let o = dmove(&[
        "analyze",
        "--kernel",
        "matmul",
        "--param",
        "order=ijk",
        "--param",
        "n=8",
        "--only",
        "L,R",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["accesses"], 1024);
    assert_eq!(v["first_accesses"], 128);
    let warm = v["dmd_warm"].as_f64().expect("number");
    let cold = v["dmd_cold"].as_f64().expect("number");
    assert!((v["dmd"].as_f64().expect("number") - warm - cold).abs() < 1e-6);
    assert_eq!(v["arrays"].as_array().expect("arrays").len(), 3);
}

#[test]
fn sweep_fits_a_leading_term_and_plots_are_svg() {
    let o = dmove(&[
        "analyze", "--kernel", "matmul", "--sweep", "n=8..32", "--only", "L,R",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("dmd_warm ≈"), "{out}");
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("p.svg");
    let svg_arg = svg.display().to_string();
    let o = dmove(&[
        "analyze", "--kernel", "fft", "--param", "n=64", "--plot", &svg_arg,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(text.starts_with("<svg") && text.contains("polyline"));
}

#[test]
fn bad_input_is_reported_not_panicked() {
    for (args, needle) in [
        (vec!["analyze"], "either a MODEL"),
        (vec!["analyze", "--kernel", "nope"], "no built-in kernel"),
        (
            vec!["analyze", "--kernel", "matmul", "--param", "order=iij"],
            "permutation",
        ),
        (vec!["analyze", "--kernel", "matmul", "--only", "Z"], "`Z`"),
        (
            vec!["analyze", "--kernel", "fft", "--param", "n=12"],
            "power of two",
        ),
        (
            vec!["analyze", "--kernel", "matmul", "--sweep", "n=8"],
            "sweep",
        ),
        (
            vec!["analyze", "--kernel", "matmul", "--line", "0"],
            "cache-line",
        ),
        (
            vec!["analyze", "--kernel", "matmul", "--sample", "2"],
            "sampling rate",
        ),
    ] {
        let o = dmove(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
