//! `dmove run`: the optimized IR, the C and the lock are written; the lock is deterministic;
//! the report says what happened.

use super::recipe_support::{project, read, run_ok};
use super::support::{assert_clean_failure, dmove, flat, stderr};

#[test]
fn run_writes_the_ir_the_c_and_the_lock_and_reports() {
    let dir = project();
    let d = dir.path();
    let report = run_ok(d, &["-o", "out"]);
    for line in [
        "recipe tiny 0.1.0 on models/mlp.onnx",
        "steps ",
        "checks per step",
        "time    checked ",
        "slowest ",
        "dmd ",
        "wrote ",
    ] {
        assert!(report.contains(line), "missing `{line}` in:\n{report}");
    }
    assert!(
        report.contains("expect  len(ops()) == 0 at tiny.recipe:"),
        "{report}"
    );
    assert!(report.contains(": held"), "{report}");
    let ir = read(d, "out/optimized.ir");
    assert!(ir.starts_with("program"), "{ir}");
    assert!(read(d, "out/optimized.c").contains("dm_run"));
    assert!(d.join("out/optimized.weights").is_file());
    let lock: serde_json::Value = serde_json::from_str(&read(d, "tiny.recipe.lock")).expect("json");
    assert_eq!(lock["recipe"], "tiny");
    assert_eq!(lock["tool"], format!("dmove {}", env!("CARGO_PKG_VERSION")));
    let entry = &lock["entries"][0];
    assert_eq!(entry["model"], "models/mlp.onnx");
    assert_eq!(entry["params"]["tile"], 2);
    assert!(
        !entry["steps"].as_array().expect("steps").is_empty(),
        "{entry}"
    );
    assert_eq!(entry["final_hash"].as_str().map(str::len), Some(32));
}

#[test]
fn running_twice_gives_byte_identical_locks() {
    let dir = project();
    let d = dir.path();
    run_ok(d, &[]);
    let first = read(d, "tiny.recipe.lock");
    run_ok(d, &[]);
    assert_eq!(first, read(d, "tiny.recipe.lock"));
    assert!(first.ends_with("}\n"));
    // Another binding is another entry; the first one is kept.
    run_ok(d, &["--lock", "other.lock", "--set", "tile=4"]);
    let other: serde_json::Value = serde_json::from_str(&read(d, "other.lock")).expect("json");
    assert_eq!(other["entries"][0]["set"]["tile"], "4");
    assert_eq!(other["entries"][0]["params"]["tile"], 4);
    assert_eq!(first, read(d, "tiny.recipe.lock"));
}

#[test]
fn json_reports_the_documented_keys() {
    let dir = project();
    let o = dmove(
        &["run", "tiny.recipe", "--model", "models/mlp.onnx", "--json"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    for key in [
        "recipe",
        "model",
        "steps",
        "steps_per_rule",
        "skipped",
        "checks",
        "decisions",
        "expectations",
        "dmd",
        "bytes",
        "outputs",
        "final_hash",
    ] {
        assert!(!v[key].is_null(), "missing {key}: {v}");
    }
    assert!(v["dmd"]["before"].is_number(), "{v}");
    assert_eq!(v["outputs"]["lock"], "tiny.recipe.lock");
    // Where the checked steps' time went: one entry per step, each with its phases, and totals
    // that add them up.
    let times = v["step_times"].as_array().expect("step_times");
    assert_eq!(Some(times.len() as u64), v["steps"].as_u64(), "{v}");
    for phase in [
        "plan",
        "rewrite",
        "validate",
        "races",
        "numerics",
        "c_build_time",
    ] {
        assert!(
            times[0][phase].as_f64().is_some_and(|s| s >= 0.0),
            "{phase}: {v}"
        );
    }
    let numerics: f64 = times.iter().filter_map(|t| t["numerics"].as_f64()).sum();
    let total = v["timing"]["numerics"].as_f64().expect("timing.numerics");
    assert!((numerics - total).abs() < 1e-6, "{numerics} vs {total}");
    assert_eq!(v["timing"]["steps"], v["steps"]);
}

#[test]
fn a_recipe_with_errors_renders_them_and_runs_nothing() {
    let dir = project();
    let d = dir.path();
    std::fs::write(
        d.join("bad.recipe"),
        "recipe \"bad\" version \"0.1.0\"\n\nmain {\n  MapTilling(m)\n}\n",
    )
    .expect("write");
    let o = dmove(&["run", "bad.recipe", "--model", "models/mlp.onnx"], d);
    assert_clean_failure(&o);
    let err = flat(&stderr(&o));
    assert!(err.contains("dmove::recipe::unknown_name"), "{err}");
    assert!(err.contains("bad.recipe"), "{err}");
    assert!(!d.join("bad.recipe.lock").exists());
    assert!(!d.join("dmove-out").exists());
}

#[test]
fn the_written_c_builds_and_runs_with_its_weights_file() {
    let dir = project();
    let d = dir.path();
    run_ok(d, &["-o", "out"]);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = std::process::Command::new(&cc)
        .args([
            "-O1",
            "-fopenmp",
            "-std=c11",
            "-o",
            "out/prog",
            "out/optimized.c",
            "-lm",
        ])
        .current_dir(d)
        .output()
        .expect("the C compiler runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let io = d.join("io");
    std::fs::create_dir_all(&io).expect("mkdir");
    let x: Vec<u8> = (0..32 * 8)
        .flat_map(|i| (i as f32 / 64.0).to_le_bytes())
        .collect();
    std::fs::write(io.join("in0.bin"), x).expect("write input");
    let ran = std::process::Command::new(d.join("out/prog"))
        .args(["out/optimized.weights", "io", "0", "1"])
        .current_dir(d)
        .output()
        .expect("the program runs");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let y = std::fs::read(io.join("out0.bin")).expect("output");
    assert_eq!(y.len(), 32 * 16 * 4);
}

#[test]
fn bench_times_the_baseline_and_the_optimized_program_side_by_side() {
    let dir = project();
    let o = dmove(
        &[
            "run",
            "tiny.recipe",
            "--model",
            "models/mlp.onnx",
            "--bench",
            "--json",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = v["bench"].as_array().expect("bench rows");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["variant"].as_str()).collect();
    assert_eq!(
        names,
        ["baseline", "optimized", "onnxruntime", "openvino"],
        "{v}"
    );
    for row in &rows[..2] {
        assert!(row["stats"]["median_ms"].is_number(), "{row}");
        assert!(row["foreign_load"]["cores"].is_number(), "{row}");
        assert!(
            row["max_abs_error"].as_f64().expect("error") < 1e-4,
            "{row}"
        );
    }
}
