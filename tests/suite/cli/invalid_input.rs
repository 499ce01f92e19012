//! Textual IR that breaks the IR invariants is reported as the input's fault, by every command
//! that loads a model, before anything runs on it.

use super::support::{assert_clean_failure, dmove, flat, mlp_ir_dir, stderr, stdout};
use std::path::Path;

/// A complete small program, except that `n1` reads a container `zz` nobody declares.
const UNDECLARED: &str = r#"program "p"

data x: f32[4] input
data y: f32[4] output

signature (x) -> (y)

graph {
  n0 access x
  n1 access zz
  n2 map "copy" [i = 0:4] sequential {
    n3 access x
    n4 tasklet "copy" (a) { y = a }
    n5 access y
    n3 -> n4 x[i] -> a
    n4 -> n5 y -> y[i]
  }
  n6 access y
  n0 -> n2 x[0:4]
  n2 -> n6 y[0:4]
}
"#;

#[track_caller]
fn assert_invalid_input(o: &std::process::Output, file: &str, node: &str) {
    assert_clean_failure(o);
    assert!(stdout(o).is_empty(), "{}", stdout(o));
    let err = stderr(o);
    let flat = flat(&err);
    assert!(
        flat.contains(&format!("`{file}` is not a valid program")),
        "{err}"
    );
    assert!(
        flat.contains(&format!("node {node}: access to undeclared container `zz`")),
        "{err}"
    );
    assert!(!flat.contains("produced an invalid program"), "{err}");
    assert!(!flat.contains("the imported program is invalid"), "{err}");
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

#[test]
fn a_hand_written_program_naming_an_undeclared_container() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(d, "zz.ir", UNDECLARED);
    let commands: [&[&str]; 8] = [
        &["import", "zz.ir"],
        &["import", "zz.ir", "--exact", "-o", "out.ir"],
        &["import", "zz.ir", "--expand"],
        &["import", "zz.ir", "--summary"],
        &["apply", "zz.ir", "-t", "Parallelize", "--at", "n2"],
        &[
            "apply",
            "zz.ir",
            "-t",
            "Parallelize",
            "--at",
            "n2",
            "--no-numerics",
        ],
        &["apply", "zz.ir", "-t", "Parallelize", "--explain"],
        &["c", "zz.ir"],
    ];
    for args in commands {
        let o = dmove(args, d);
        assert_invalid_input(&o, "zz.ir", "n1");
    }
    assert!(!d.join("out.ir").exists());
}

#[test]
fn the_mlp_with_one_stray_access_node() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let ir = std::fs::read_to_string(d.join("mlp.ir")).expect("read");
    let needle = "\n  n1 access x\n";
    assert!(ir.contains(needle), "{ir}");
    write(
        d,
        "bad.ir",
        &ir.replacen(needle, "\n  n1 access x\n  n99 access zz\n", 1),
    );
    let commands: [&[&str]; 5] = [
        &["import", "bad.ir"],
        &["apply", "bad.ir", "-t", "Parallelize", "--at", "n19"],
        &["apply", "bad.ir", "-t", "MapFusion", "--at", "n27,n33"],
        &["apply", "bad.ir", "-t", "MapFusion", "--explain"],
        &["match", "bad.ir", "--pattern", "elementwise_chain"],
    ];
    for args in commands {
        let o = dmove(args, d);
        assert_invalid_input(&o, "bad.ir", "n99");
    }
}
