//! Running the built `dmove` binary and reading what it prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub const DMOVE: &str = env!("CARGO_BIN_EXE_dmove");

/// A command for the binary, run in `dir`, with colour forced off so the text is plain.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new(DMOVE);
    c.current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("FORCE_COLOR")
        .env_remove("CLICOLOR_FORCE");
    c
}

/// Runs `dmove ARGS` in `dir`.
pub fn dmove(args: &[&str], dir: &Path) -> Output {
    command(dir).args(args).output().expect("the binary runs")
}

/// Runs `dmove ARGS` in `dir` through `sh -c 'umask MASK; exec dmove ARGS'`, so the child
/// starts with that umask whatever the test runner's is.
pub fn dmove_with_umask(umask: &str, args: &[&str], dir: &Path) -> Output {
    let script = format!("umask {umask}; exec \"$0\" \"$@\"");
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(DMOVE)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs")
}

/// A file of `tests/fixtures`, as an absolute path.
pub fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A diagnostic as one line: miette wraps long messages and prefixes each line with box
/// drawing (`×`, `│`, `╰─▶`); this joins the lines with single spaces and drops that
/// decoration, so a phrase can be looked for wherever the wrapping fell.
pub fn flat(text: &str) -> String {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !matches!(*w, "×" | "│" | "╰─▶" | "├─▶" | "⚠"))
        .collect();
    words.join(" ")
}

/// `o` failed the way a handled error fails: exit code 1 (not clap's 2, not a panic's 101),
/// nothing on standard output, and no panic message.
#[track_caller]
pub fn assert_clean_failure(o: &Output) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "exit status {}: {err}", o.status);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("RUST_BACKTRACE"), "{err}");
}

/// `o` succeeded.
#[track_caller]
pub fn assert_success(o: &Output) {
    assert!(
        o.status.success(),
        "exit status {}: {}",
        o.status,
        stderr(o)
    );
}

/// A temporary directory holding `mlp.ir`: the MLP fixture imported with `--expand --exact`
/// (maps n13 proj_init, n19 proj_acc [i0, i1, k], n27 bias, n33 act).
pub fn mlp_ir_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mlp = fixture("mlp.onnx");
    let o = dmove(
        &["import", &mlp, "--expand", "--exact", "-o", "mlp.ir"],
        dir.path(),
    );
    assert_success(&o);
    assert!(dir.path().join("mlp.ir").is_file());
    dir
}

/// The permission bits of `path`.
#[cfg(unix)]
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// How often `needle` occurs in `haystack` (non-overlapping).
pub fn occurrences(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}
