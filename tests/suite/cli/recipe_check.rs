//! `dmove check`: a fresh lock passes; a changed model or a changed parameter default fails
//! with a diff naming the step; `--update` rewrites the lock.

use super::recipe_support::{mlp, project, read, recipe, run_ok};
use super::support::{assert_success, dmove, flat, stderr, stdout};

#[test]
fn a_fresh_lock_checks_by_recipe_and_by_lock() {
    let dir = project();
    let d = dir.path();
    run_ok(d, &[]);
    for arg in ["tiny.recipe", "tiny.recipe.lock"] {
        let o = dmove(&["check", arg], d);
        assert_success(&o);
        let out = stdout(&o);
        assert!(out.starts_with("ok: models/mlp.onnx ("), "{out}");
    }
}

#[test]
fn a_changed_model_fails_with_both_hashes_and_the_first_step() {
    let dir = project();
    let d = dir.path();
    run_ok(d, &[]);
    let locked = read(d, "tiny.recipe.lock");
    std::fs::write(d.join("models/mlp.onnx"), mlp(2)).expect("write");
    let o = dmove(&["check", "tiny.recipe"], d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("drift: models/mlp.onnx"), "{out}");
    assert!(out.contains("model changed: locked sha256 "), "{out}");
    assert!(out.contains("step 1: locked Expand at n"), "{out}");
    assert!(out.contains("final IR hash: locked "), "{out}");
    assert!(
        flat(&stderr(&o)).contains("dmove check --update"),
        "{}",
        stderr(&o)
    );
    assert_eq!(locked, read(d, "tiny.recipe.lock"), "check must not write");
    let o = dmove(&["check", "--update", "tiny.recipe"], d);
    assert_success(&o);
    assert_ne!(locked, read(d, "tiny.recipe.lock"));
    assert_success(&dmove(&["check", "tiny.recipe"], d));
}

#[test]
fn a_changed_parameter_default_names_the_parameter_and_the_step() {
    let dir = project();
    let d = dir.path();
    run_ok(d, &[]);
    std::fs::write(d.join("tiny.recipe"), recipe(4)).expect("write");
    let o = dmove(&["check", "tiny.recipe"], d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("note: the recipe changed"), "{out}");
    assert!(out.contains("param tile: locked 2 → now 4"), "{out}");
    assert!(out.contains("locked MapTiling at n"), "{out}");
    assert!(out.contains("from rule `loops::schedule` (line "), "{out}");
    assert!(out.contains("now MapTiling at n"), "{out}");
    assert_success(&dmove(&["check", "--update", "tiny.recipe"], d));
    let o = dmove(&["check", "tiny.recipe"], d);
    assert_success(&o);
    assert!(!stdout(&o).contains("note:"), "{}", stdout(&o));
}

#[test]
fn a_missing_lock_or_model_is_a_clean_failure() {
    let dir = project();
    let d = dir.path();
    let o = dmove(&["check", "tiny.recipe"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("tiny.recipe.lock"), "{}", stderr(&o));
    run_ok(d, &[]);
    std::fs::remove_file(d.join("models/mlp.onnx")).expect("rm");
    let o = dmove(&["check", "tiny.recipe"], d);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("could not replay models/mlp.onnx"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
