//! `dmove repl`: standard input mode (a script, its exit status) and a real terminal driven by
//! tmux (completion, multi-line blocks, Ctrl-C, undo/redo hashes, `:save` then `dmove check`).

use crate::support::skip;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const DMOVE: &str = env!("CARGO_BIN_EXE_dmove");

/// Generous: a slow machine still passes; nothing asserts how long anything took.
const PATIENCE: Duration = Duration::from_secs(300);

fn repl_stdin(dir: &Path, script: &str) -> Output {
    let mut child = Command::new(DMOVE)
        .arg("repl")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dmove runs");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(script.as_bytes()).expect("script written");
    drop(stdin);
    child.wait_with_output().expect("dmove finishes")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The value after `prefix` on the first line that has it.
fn after<'a>(out: &'a str, prefix: &str) -> &'a str {
    let line = out
        .lines()
        .find(|l| l.contains(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in:\n{out}"));
    let at = line.find(prefix).unwrap_or(0) + prefix.len();
    line[at..].split_whitespace().next().unwrap_or("")
}

/// `dmove check s.recipe` in `dir` passes, at the session's hash.
fn check_reproduces(dir: &Path, hash: &str) {
    let check = Command::new(DMOVE)
        .args(["check", "s.recipe"])
        .current_dir(dir)
        .output()
        .expect("dmove check runs");
    assert!(check.status.success(), "{}", text(&check.stderr));
    let stdout = text(&check.stdout);
    assert!(
        stdout.contains(&format!("ok: s.onnx (1 step, {hash})")),
        "{stdout}"
    );
}

#[test]
fn a_script_on_stdin_runs_undoes_saves_and_the_saved_recipe_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = "\
let mm = ops(\"MatMul\")
print len(mm)
for each m in ops(\"Softmax\") {
  print name(m)
}
:apply Expand at n0
:undo
:redo
:save s.recipe
";
    let out = repl_stdin(dir.path(), script);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("\n8\n") || stdout.starts_with("8\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Softmax \"softmax\""),
        "the block ran: {stdout}"
    );
    assert!(
        stdout.contains("step 1: Expand at n0 (impl=pure)"),
        "{stdout}"
    );
    // The first hash shown is the step's.
    let applied = after(&stdout, "hash ");
    let undone = after(&stdout, "undid 1 input(s); hash ");
    assert!(stdout.contains("(as at the start)"), "{stdout}");
    assert_eq!(after(&stdout, "redid 1 input(s); hash "), applied);
    assert_ne!(undone, applied);
    assert!(stdout.contains("it reproduces the session"), "{stdout}");
    let recipe = std::fs::read_to_string(dir.path().join("s.recipe")).expect("saved");
    assert!(recipe.contains("Expand(node(\"n0\"))"), "{recipe}");
    check_reproduces(dir.path(), applied);
}

#[test]
fn an_error_on_stdin_is_shown_the_session_goes_on_and_the_status_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = repl_stdin(dir.path(), "MapTilling(ops()[0])\n:nope\nprint 1 + 1\n");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success());
    assert!(stderr.contains("did you mean `MapTiling`?"), "{stderr}");
    assert!(
        stderr.contains("input 1:1:1"),
        "rendered at the input's span: {stderr}"
    );
    assert!(stderr.contains("unknown command `:nope`"), "{stderr}");
    assert!(stderr.contains("2 input(s) failed"), "{stderr}");
    assert_eq!(stdout.trim(), "2", "the session went on after the errors");
}

/// A tmux session running `dmove repl` in `dir`.
struct Tmux {
    name: String,
}

impl Tmux {
    fn start(dir: &Path) -> Tmux {
        let name = format!("dmove-repl-{}", std::process::id());
        let cmd = format!("{DMOVE} repl --history {}", dir.join("history").display());
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "50",
                "-s",
                &name,
                "-c",
            ])
            .arg(dir)
            .arg(cmd)
            .status()
            .expect("tmux runs");
        assert!(ok.success(), "tmux new-session");
        Tmux { name }
    }

    fn keys(&self, keys: &[&str]) {
        let ok = Command::new("tmux")
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(ok.success());
    }

    /// Waits for an empty prompt (so keys reach the line editor, not a busy terminal, which
    /// would discard them at Ctrl-C), then types `line` and Enter.
    fn line(&self, line: &str) {
        self.ready();
        self.keys(&["-l", line]);
        self.keys(&["Enter"]);
    }

    /// Waits until the last line on the screen is an empty prompt.
    fn ready(&self) {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim)
                == Some("dmove>")
            {
                return;
            }
            assert!(start.elapsed() < PATIENCE, "never saw a prompt:\n{screen}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-J", "-S", "-2000", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        text(&out.stdout)
    }

    /// Waits until the screen shows `want` at least `times` times; returns the screen.
    fn wait_for(&self, want: &str, times: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(want).count() >= times {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "never saw `{want}` ×{times}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

#[test]
fn a_terminal_session_matches_explains_applies_undoes_redoes_and_saves() {
    if Command::new("tmux").arg("-V").output().is_err() {
        skip::skip(
            "the REPL in a real terminal",
            "tmux is not installed",
            "apt-get install tmux",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(dir.path());
    t.wait_for("dmove> ", 1);
    t.line(":matches matmul_add");
    t.wait_for("6 match(es) of `matmul_add`", 1);
    t.line(":whynot Expand at n1");
    t.wait_for("nearest candidate: n0: applies", 1);
    // Completion: `:sh` + Tab is `:show`.
    t.ready();
    t.keys(&["-l", ":sh"]);
    t.keys(&["Tab"]);
    t.wait_for("dmove> :show", 1);
    t.keys(&["-l", " n0"]);
    t.keys(&["Enter"]);
    t.wait_for("n0 library \"q_proj\" MatMul", 1);
    // A block spans lines while its brace is open.
    t.line("for each m in ops(\"Softmax\") {");
    t.keys(&["-l", "print name(m)"]);
    t.keys(&["Enter"]);
    t.keys(&["-l", "}"]);
    t.keys(&["Enter"]);
    t.wait_for("Softmax \"softmax\" (n37)", 1);
    // Ctrl-C while idle clears the line.
    t.ready();
    t.keys(&["-l", "garbage that is never run"]);
    t.keys(&["C-c"]);
    t.line("print 40 + 2");
    t.wait_for("\n42", 1);
    t.line(":apply Expand at n0");
    let screen = t.wait_for("step 1: Expand at n0", 1);
    let applied = after(&screen, "hash ").to_string();
    t.line(":undo");
    let screen = t.wait_for("(as at the start)", 1);
    let start = after(&screen, "undid 1 input(s); hash ").to_string();
    assert_ne!(start, applied);
    t.line(":redo");
    t.wait_for(&format!("redid 1 input(s); hash {applied}"), 1);
    // Ctrl-C during long work interrupts it; the program is unchanged.
    // (Expanding every operator of the encoder takes about 1.5 s on a fast machine: Ctrl-C
    // comes well inside it.)
    t.line("apply Expand everywhere");
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["C-c"]);
    t.wait_for("interrupted (Ctrl-C)", 1);
    t.line(":history");
    let screen = t.wait_for(&format!("{}  Expand(node(\"n0\"))", &applied[..12]), 1);
    let history = &screen[screen.rfind(":history").unwrap_or(0)..];
    assert!(!history.contains("apply Expand everywhere"), "{history}");
    t.line(":eval len(ops(\"MatMul\"))");
    t.wait_for("\n7\n", 1);
    t.line(":save s.recipe");
    t.wait_for("it reproduces the session", 1);
    t.keys(&["C-d"]);
    check_reproduces(dir.path(), &applied);
    assert!(
        dir.path().join("history").exists(),
        "the history file was written"
    );
}
