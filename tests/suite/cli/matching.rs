//! `dmove match`: `--why` on a later capture, and a map pattern on an unlowered model.

use super::support::{assert_success, dmove, fixture, stderr, stdout};

fn run(args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let mlp = fixture("mlp.onnx");
    let mut all = vec!["match", mlp.as_str()];
    all.extend_from_slice(args);
    dmove(&all, dir.path())
}

#[test]
fn why_at_a_later_capture_names_the_capture_and_the_anchor() {
    let o = run(&["--pattern", "matmul_add"]);
    assert_success(&o);
    assert_eq!(stdout(&o), "mm=n0 t=n3 add=n4\n");
    assert_eq!(stderr(&o), "1 match(es) of `matmul_add`\n");
    let o = run(&["--pattern", "matmul_add", "--why", "n4"]);
    assert_success(&o);
    assert_eq!(
        stdout(&o),
        "n4 is the `add` capture of the match anchored at n0: mm=n0 t=n3 add=n4\n"
    );
    let o = run(&["--pattern", "matmul_add", "--why", "n3"]);
    assert_success(&o);
    assert_eq!(
        stdout(&o),
        "n3 is the `t` capture of the match anchored at n0: mm=n0 t=n3 add=n4\n"
    );
    let o = run(&["--pattern", "matmul_add", "--why", "n7"]);
    assert_success(&o);
    assert_eq!(
        stdout(&o),
        "`matmul_add` does not match at n7: `mm`: expected op MatMul, found Relu\n"
    );
}

#[test]
fn a_map_pattern_on_an_unlowered_model_suggests_expand() {
    let o = run(&["--pattern", "elementwise_chain"]);
    assert_success(&o);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "0 match(es) of `elementwise_chain`: the pattern matches maps, and the model has none: \
         its operators are library nodes until lowered; add `--expand`\n"
    );
    let o = run(&["--pattern", "elementwise_chain", "--why", "n4"]);
    assert_success(&o);
    let out = stdout(&o);
    assert!(
        out.starts_with("`elementwise_chain` does not match at n4: "),
        "{out}"
    );
    assert!(
        out.ends_with(
            "`elementwise_chain` matches maps, and the model has none: its operators are \
             library nodes until lowered; add `--expand`\n"
        ),
        "{out}"
    );
    let o = run(&["--pattern", "elementwise_chain", "--expand"]);
    assert_success(&o);
    assert_eq!(stdout(&o), "producer=n27 t=n6 consumer=n33\n");
    assert_eq!(stderr(&o), "1 match(es) of `elementwise_chain`\n");
}

#[test]
fn an_operator_pattern_on_a_lowered_model_suggests_dropping_expand() {
    let o = run(&["--pattern", "matmul_add", "--expand"]);
    assert_success(&o);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "0 match(es) of `matmul_add`: the pattern starts at a MatMul node, and the model has \
         none: `--expand` lowered every operator to maps; drop it\n"
    );
}
