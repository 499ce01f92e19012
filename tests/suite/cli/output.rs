//! Files written with `-o` (and `--dot`): ordinary permissions, clear errors, causes once.

use super::support::{
    assert_clean_failure, assert_success, dmove, dmove_with_umask, fixture, flat, mlp_ir_dir,
    occurrences, stderr,
};

#[cfg(unix)]
#[test]
fn new_files_get_the_umask_default_permissions() {
    use super::support::mode;
    let dir = mlp_ir_dir();
    let d = dir.path();
    let mlp = fixture("mlp.onnx");
    let writes: [(&[&str], &str); 5] = [
        (&["import", &mlp, "-o", "imported.ir"], "imported.ir"),
        (&["import", &mlp, "--dot", "graph.dot"], "graph.dot"),
        (
            &["import", &mlp, "--summary", "-o", "summary.txt"],
            "summary.txt",
        ),
        (
            &[
                "apply",
                "mlp.ir",
                "-t",
                "Parallelize",
                "--at",
                "n19",
                "-o",
                "applied.ir",
            ],
            "applied.ir",
        ),
        (&["c", "mlp.ir", "-o", "model.c"], "model.c"),
    ];
    for (umask, want) in [("022", 0o644), ("002", 0o664), ("077", 0o600)] {
        for (args, file) in writes {
            let path = d.join(file);
            let _ = std::fs::remove_file(&path);
            let o = dmove_with_umask(umask, args, d);
            assert_success(&o);
            assert_eq!(
                mode(&path),
                want,
                "{file} under umask {umask}: {:o}",
                mode(&path)
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn an_overwritten_file_keeps_its_permissions() {
    use super::support::mode;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let path = d.join("out.ir");
    std::fs::write(&path, "old").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let o = dmove_with_umask("022", &["import", &fixture("mlp.onnx"), "-o", "out.ir"], d);
    assert_success(&o);
    assert_eq!(mode(&path), 0o640);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with("program \"mlp\""), "{text}");
}

#[test]
fn writing_into_a_missing_directory_names_the_target_not_a_temporary_file() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let mlp = fixture("mlp.onnx");
    let cases: [(&[&str], &str); 5] = [
        (
            &["import", &mlp, "-o", "missing/sub/out.ir"],
            "missing/sub/out.ir",
        ),
        (
            &["import", &mlp, "--dot", "missing/graph.dot"],
            "missing/graph.dot",
        ),
        (
            &[
                "apply",
                "mlp.ir",
                "-t",
                "Parallelize",
                "--at",
                "n19",
                "-o",
                "missing/a.ir",
            ],
            "missing/a.ir",
        ),
        (&["c", "mlp.ir", "-o", "missing/model.c"], "missing/model.c"),
        (
            &[
                "demo",
                "--write-model",
                "missing/demo.onnx",
                "--seq",
                "8",
                "--hidden",
                "16",
            ],
            "missing/demo.onnx",
        ),
    ];
    for (args, target) in cases {
        let o = dmove(args, d);
        assert_clean_failure(&o);
        let err = stderr(&o);
        let flat = flat(&err);
        assert!(flat.contains(&format!("cannot write {target}")), "{err}");
        assert_eq!(occurrences(&flat, "No such file or directory"), 1, "{err}");
        assert!(!err.contains(".tmp"), "{err}");
        assert!(!err.contains(".dmove-"), "{err}");
    }
    assert!(!d.join("missing").exists());
    let stray: Vec<_> = std::fs::read_dir(d)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(stray.is_empty(), "temporary files left behind: {stray:?}");
}

#[test]
fn an_unreadable_textual_model_reports_the_cause_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let commands: [&[&str]; 3] = [
        &["import", "/nonexistent.ir"],
        &[
            "apply",
            "/nonexistent.ir",
            "-t",
            "Parallelize",
            "--at",
            "n1",
        ],
        &["conformance", "/nonexistent-dir"],
    ];
    for args in commands {
        let o = dmove(args, d);
        assert_clean_failure(&o);
        let err = stderr(&o);
        assert!(flat(&err).contains("cannot read /nonexistent"), "{err}");
        assert_eq!(occurrences(&err, "No such file or directory"), 1, "{err}");
    }
}

#[test]
fn an_unreadable_onnx_model_reports_the_cause_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let commands: [&[&str]; 3] = [
        &["import", "/nonexistent.onnx"],
        &["import", "/nonexistent.onnx", "--summary"],
        &[
            "apply",
            "/nonexistent.onnx",
            "-t",
            "Parallelize",
            "--at",
            "n1",
        ],
    ];
    for args in commands {
        let o = dmove(args, d);
        assert_clean_failure(&o);
        let err = stderr(&o);
        assert!(flat(&err).contains("/nonexistent.onnx"), "{err}");
        assert_eq!(occurrences(&err, "No such file or directory"), 1, "{err}");
    }
}
