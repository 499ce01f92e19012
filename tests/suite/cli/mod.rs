//! The `dmove` binary end to end: the README's tour, bad input, and a small demo; its
//! submodules cover each command's behaviour (schemas, parameter errors, reports,
//! `--explain`, invalid input, output files, `match`, the demo's JSON, `--help`, `models`).

mod apply;
mod bench;
mod conformance;
mod demo;
mod first_hour;
mod help;
mod invalid_input;
mod matching;
mod models;
mod output;
mod params;
mod recipe_check;
mod recipe_fmt;
mod recipe_run;
mod recipe_scripts;
mod recipe_support;
mod support;
mod transforms;

use support::{dmove, fixture, stderr};

#[test]
fn readme_tour_runs_as_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mlp = fixture("mlp.onnx");
    let steps: [&[&str]; 4] = [
        &["import", &mlp, "--expand", "--exact", "-o", "mlp.ir"],
        &[
            "apply",
            "mlp.ir",
            "-t",
            "MapFusion",
            "--at",
            "n27,n33",
            "-o",
            "a.ir",
        ],
        &[
            "apply",
            "a.ir",
            "-t",
            "MapTiling",
            "--at",
            "n19",
            "--param",
            "tiles=16,0,0",
            "-o",
            "b.ir",
        ],
        &[
            "apply",
            "b.ir",
            "-t",
            "Parallelize",
            "--at",
            "n19",
            "-o",
            "c.ir",
        ],
    ];
    for args in steps {
        let o = dmove(args, d);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let c = dmove(&["c", "c.ir"], d);
    assert!(c.status.success(), "{}", stderr(&c));
    assert!(String::from_utf8_lossy(&c.stdout).contains("#pragma omp for"));
    let refused = dmove(
        &["apply", "mlp.ir", "-t", "MapFusion", "--at", "n13,n19"],
        d,
    );
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("fusion needs exactly one producer and one consumer"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn bad_inputs_fail_cleanly_with_a_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("junk.onnx"), b"this is not a model").expect("write");
    let o = dmove(&["import", "junk.onnx"], d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("junk.onnx"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
    let o = dmove(&["import", "missing.onnx"], d);
    assert_eq!(o.status.code(), Some(1));
    let o = dmove(&["import", &fixture("mlp.onnx"), "--shape", "x=64xabc"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a valid shape binding"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        d.join("broken.ir"),
        "program \"p\"\ngraph {\n  n0 -> n99 x[0]\n}\n",
    )
    .expect("write");
    let o = dmove(
        &["apply", "broken.ir", "-t", "Parallelize", "--at", "n0"],
        d,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let o = dmove(
        &[
            "apply",
            &fixture("mlp.onnx"),
            "--expand",
            "-t",
            "NoSuchThing",
            "--at",
            "n1",
        ],
        d,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no transformation is named `NoSuchThing`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn small_demo_reports_json_with_the_documented_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "demo",
        "--json",
        "--no-peer",
        "--seq",
        "8",
        "--hidden",
        "16",
        "--heads",
        "2",
        "--ffn",
        "24",
        "--reps",
        "3",
        "--warmup",
        "1",
    ];
    let o = dmove(&args, dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    for key in ["baseline_ms", "optimized_ms", "speedup", "max_abs_error"] {
        assert!(v[key].is_number(), "missing {key}: {v}");
    }
    let tol = dmove::numerics::tolerance(dmove::ir::DType::F32);
    assert!(v["max_abs_error"].as_f64().expect("number") < tol.atol * 10.0);
    let model = dmove(
        &[
            "demo",
            "--write-model",
            "demo.onnx",
            "--seq",
            "8",
            "--hidden",
            "16",
            "--heads",
            "2",
            "--ffn",
            "24",
        ],
        dir.path(),
    );
    assert!(model.status.success());
    let imported = dmove(&["import", "demo.onnx"], dir.path());
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert!(String::from_utf8_lossy(&imported.stdout).contains("LayerNormalization"));
}

#[test]
fn import_text_round_trips_through_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mlp = fixture("mlp.onnx");
    for (args, out) in [
        (
            vec!["import", mlp.as_str(), "--exact", "-o", "a.ir"],
            "a.ir",
        ),
        (vec!["import", "a.ir", "--exact", "-o", "b.ir"], "b.ir"),
        (
            vec!["import", mlp.as_str(), "--expand", "--exact", "-o", "c.ir"],
            "c.ir",
        ),
        (vec!["import", "c.ir", "--exact", "-o", "d.ir"], "d.ir"),
    ] {
        let o = dmove(&args, d);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(d.join(out).exists());
    }
    let read = |f: &str| std::fs::read_to_string(d.join(f)).expect("read");
    assert_eq!(read("a.ir"), read("b.ir"));
    assert_eq!(read("c.ir"), read("d.ir"));
    let dot = dmove(&["import", "c.ir", "--dot", "-"], d);
    assert!(String::from_utf8_lossy(&dot.stdout).starts_with("digraph"));
}
