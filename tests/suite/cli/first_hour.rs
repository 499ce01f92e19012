//! What a new user meets in their first hour (issue 29): each mistake is named for what it is,
//! with the fix, before anything runs; what was printed before a failure is kept; and a
//! benchmark or build replays the decisions `dmove run` locked.

use super::recipe_support::{mlp, project, read, recipe, run_ok};
use super::support::{assert_clean_failure, assert_success, dmove, flat, stderr};
use dmove::onnx::ModelBuilder;

/// The tiny MLP with its batch left symbolic (`batch`), as exporters write it.
fn symbolic_mlp() -> Vec<u8> {
    ModelBuilder::new("symbolic_mlp", 17)
        .input("x", ["batch", "8"])
        .initializer("w", &[8, 16], vec![0.25; 8 * 16])
        .node("MatMul", &["x", "w"], &["y"], vec![])
        .output("y", ["batch", "16"])
        .encode()
}

#[test]
fn an_unbound_dimension_is_named_with_its_flag_before_any_step() {
    let dir = project();
    let d = dir.path();
    std::fs::write(d.join("models/sym.onnx"), symbolic_mlp()).expect("write");
    let o = dmove(&["run", "tiny.recipe", "--model", "models/sym.onnx"], d);
    assert_clean_failure(&o);
    let err = flat(&stderr(&o));
    assert!(
        err.contains("dimension `batch` (input `x`, axis 0) has no value")
            && err.contains("--dim batch=N")
            && err.contains("after 0 step(s)"),
        "{err}"
    );
    assert!(!err.contains("unsafe(numerics)"), "{err}");
    // Bound, the same run succeeds.
    let o = dmove(
        &[
            "run",
            "tiny.recipe",
            "--model",
            "models/sym.onnx",
            "--dim",
            "batch=4",
        ],
        d,
    );
    assert_success(&o);
}

#[test]
fn a_set_on_the_running_module_by_its_own_name_is_its_parameter() {
    let dir = project();
    let d = dir.path();
    let o = dmove(
        &[
            "run",
            "std::loops",
            "--model",
            "models/mlp.onnx",
            "--set",
            "loops::nothing=1",
        ],
        d,
    );
    assert_clean_failure(&o);
    let report = run_ok(d, &["--set", "tiny::tile=4", "-o", "out"]);
    assert!(report.contains("steps"), "{report}");
    let lock: serde_json::Value = serde_json::from_str(&read(d, "tiny.recipe.lock")).expect("json");
    assert_eq!(lock["entries"][0]["params"]["tile"], 4, "{lock}");
}

#[test]
fn a_set_that_no_running_rule_reads_is_refused_naming_those_that_are_read() {
    let dir = project();
    let d = dir.path();
    // std::cpu passes std::gemm's tile as arguments: gemm::mr itself is never read.
    let o = dmove(
        &[
            "run",
            "std::cpu",
            "--model",
            "models/mlp.onnx",
            "--set",
            "gemm::mr=4",
        ],
        d,
    );
    assert_clean_failure(&o);
    let err = flat(&stderr(&o));
    assert!(
        err.contains("`--set gemm::mr=4` changes nothing")
            && err.contains("parameters this run reads: outer_tile"),
        "{err}"
    );
    assert!(!d.join("cpu.recipe.lock").exists(), "nothing was recorded");
}

#[test]
fn print_output_before_a_failure_is_shown() {
    let dir = project();
    let d = dir.path();
    std::fs::write(
        d.join("fails.recipe"),
        "recipe \"fails\" version \"0.1.0\"\n\nmain {\n  print(\"about to fail\")\n  \
         expect len(ops()) == 0, \"nothing is lowered yet\"\n}\n",
    )
    .expect("write");
    let o = dmove(&["run", "fails.recipe", "--model", "models/mlp.onnx"], d);
    assert_clean_failure(&o);
    let err = stderr(&o);
    assert!(err.contains("print   about to fail"), "{err}");
}

#[test]
fn runs_of_two_models_without_o_do_not_overwrite_each_other() {
    let dir = project();
    let d = dir.path();
    std::fs::write(d.join("models/other.onnx"), mlp(2)).expect("write");
    run_ok(d, &[]);
    let o = dmove(&["run", "tiny.recipe", "--model", "models/other.onnx"], d);
    assert_success(&o);
    assert!(d.join("dmove-out/mlp/optimized.ir").is_file());
    assert!(d.join("dmove-out/other/optimized.ir").is_file());
}

#[test]
fn a_syntax_error_in_a_script_run_as_a_recipe_is_the_only_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("mlp.onnx"), mlp(1)).expect("write");
    std::fs::write(
        d.join("bad.rhai"),
        "fn main() {\n  apply(\"Expand\" everywhere);\n}\n",
    )
    .expect("write");
    let o = dmove(&["run", "bad.rhai", "--model", "mlp.onnx"], d);
    assert_clean_failure(&o);
    let err = flat(&stderr(&o));
    assert!(err.contains("bad.rhai has 1 error(s)"), "{err}");
    assert!(
        !err.contains("script::main"),
        "the wrapper's call is not reported: {err}"
    );
}

/// A recipe whose tile is chosen by measurement: `dmove bench` and `dmove build` replay what
/// `dmove run` locked instead of refusing or searching again.
#[test]
fn bench_and_build_replay_the_decisions_run_locked() {
    let dir = project();
    let d = dir.path();
    let chosen = recipe(2).replace(
        "param tile: int in pow2(2..8) = 2",
        "param tile: int in pow2(2..8) = 2\n\nchoose tile by bench(reps = 1)",
    );
    std::fs::write(d.join("tiny.recipe"), chosen).expect("write");
    run_ok(d, &["-o", "out"]);
    let lock: serde_json::Value = serde_json::from_str(&read(d, "tiny.recipe.lock")).expect("json");
    let tile = lock["entries"][0]["params"]["tile"].clone();
    let o = dmove(
        &[
            "bench",
            "models/mlp.onnx",
            "--recipe",
            "tiny.recipe",
            "--vs",
            "baseline",
            "--reps",
            "1",
        ],
        d,
    );
    assert_success(&o);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "replaying the decisions of tiny.recipe.lock (tile = {tile})"
        )),
        "{err}"
    );
    let o = dmove(
        &[
            "build",
            "models/mlp.onnx",
            "--recipe",
            "tiny.recipe",
            "-o",
            "ship",
        ],
        d,
    );
    assert_success(&o);
    assert!(
        stderr(&o).contains("replaying the decisions"),
        "{}",
        stderr(&o)
    );
}
