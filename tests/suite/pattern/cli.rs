//! `dmove match` end to end on the MLP fixture (MatMul → t → Add → u → Relu).

use std::process::{Command, Output};

fn dmove_match(args: &[&str]) -> Output {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mlp.onnx");
    Command::new(env!("CARGO_BIN_EXE_dmove"))
        .arg("match")
        .arg(model)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn lists_matches_and_explains_a_node() {
    let o = dmove_match(&["--pattern", "matmul_add"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "mm=n0 t=n3 add=n4\n");
    let o = dmove_match(&["--pattern", "matmul_add", "--why", "n4"]);
    assert_eq!(
        stdout(&o),
        "n4 is the `add` capture of the match anchored at n0: mm=n0 t=n3 add=n4\n"
    );
    let o = dmove_match(&["--pattern", "matmul_add", "--why", "n0"]);
    assert_eq!(
        stdout(&o),
        "`matmul_add` matches at n0: mm=n0 t=n3 add=n4\n"
    );
}

#[test]
fn unknown_patterns_and_bad_nodes_are_errors() {
    let o = dmove_match(&["--pattern", "nope"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no built-in pattern `nope`"), "{err}");
    let o = dmove_match(&["--pattern", "matmul_add", "--why", "x7"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a valid node id"));
}
