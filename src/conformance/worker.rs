//! Running one case in its own process under a time limit.
//!
//! A case can run away in three places: the interpreter (an operator looping over a huge
//! shape), the C compiler, or the generated program. None of them can be stopped from inside
//! the process that runs it — a thread cannot be killed, and the interpreter and `cc` have no
//! cancel point — so each case runs in a child process (the `dmove` binary in its worker mode,
//! see [`Worker::dmove`]) that is the leader of its own process group. When the time limit
//! passes, the whole group is killed with `SIGKILL`, which takes the compiler and the compiled
//! program with it, and the case is reported as [`Status::Timeout`]. The same isolation turns a
//! crash `catch_unwind` cannot catch (stack overflow, abort, out of memory) into that case's
//! failure instead of the end of the run.
//!
//! The worker speaks JSON lines on its standard output: a [`Message::Stage`] whenever the case
//! enters a stage (so a timeout or crash says where it happened), then one
//! [`Message::Result`]. Its standard input is a pipe the runner never writes: when the runner
//! dies (Ctrl-C), the pipe closes and the worker kills its own group, so no case outlives it.

use super::run::{run_case_observed, uses_only_required_ops};
use super::{case_name, CaseResult, Stage, Status};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Bytes of a worker's standard error kept for a crash report (the end, where the cause is).
const STDERR_TAIL: usize = 4096;

/// How often a worker that closed its output is polled for its exit.
const EXIT_POLL: Duration = Duration::from_millis(10);

/// The command that runs one case: `program args… CASE_DIR [--no-c]`, printing [`Message`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worker {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl Worker {
    /// The `dmove` binary at `program` in its worker mode: `dmove conformance --worker CASE`.
    pub fn dmove(program: impl Into<PathBuf>) -> Worker {
        Worker {
            program: program.into(),
            args: vec!["conformance".into(), "--worker".into()],
        }
    }
}

/// One line of the worker's output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Message {
    /// The case entered this stage.
    Stage(Stage),
    /// The case's outcome; the last line.
    Result(CaseResult),
}

/// The worker side: runs the case in `dir` in this process and prints its messages on
/// standard output, after arranging to die with its process group when the runner goes away.
pub fn serve(dir: &Path, c: bool) -> std::io::Result<()> {
    std::thread::spawn(|| {
        // Nothing is ever written to this pipe; end of file means the runner is gone. Errors
        // mean the same, and there is nobody left to report them to.
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        let _ = rustix::process::kill_current_process_group(rustix::process::Signal::KILL);
    });
    let emit = |m: &Message| -> std::io::Result<()> {
        let line = serde_json::to_string(m).map_err(std::io::Error::other)?;
        writeln!(std::io::stdout().lock(), "{line}")
    };
    // A runner that stopped reading is handled by the watchdog above; a failed stage line
    // only loses detail, so it does not abort the case.
    let result = run_case_observed(dir, c, &|stage| {
        let _ = emit(&Message::Stage(stage));
    });
    emit(&Message::Result(result))
}

/// The runner side: runs the case in `dir` through `worker`, killing it (and everything it
/// started) when it exceeds `limit`. Never fails: problems with the worker itself are that
/// case's failure.
pub fn run_isolated(worker: &Worker, dir: &Path, c: bool, limit: Duration) -> CaseResult {
    let start = Instant::now();
    let mut command = Command::new(&worker.program);
    command
        .args(&worker.args)
        .arg(dir)
        .args((!c).then_some("--no-c"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let message = format!("cannot start {}: {e}", worker.program.display());
            return ended(dir, Status::Fail, Stage::Load, message, start);
        }
    };
    let watch = Watch::new(&mut child);
    let deadline = start + limit;
    let (mut stage, mut result, mut garbled) = (Stage::Load, None, None);
    let mut timed_out = loop {
        match watch
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(line) => match serde_json::from_str::<Message>(&line) {
                Ok(Message::Stage(s)) => stage = s,
                Ok(Message::Result(r)) => result = Some(r),
                Err(_) => {
                    garbled.get_or_insert(line);
                }
            },
            Err(RecvTimeoutError::Disconnected) => break false,
            Err(RecvTimeoutError::Timeout) => break true,
        }
    };
    let status = if timed_out {
        kill(&mut child)
    } else {
        match wait_until(&mut child, deadline) {
            Some(status) => Some(status),
            None => {
                timed_out = true;
                kill(&mut child)
            }
        }
    };
    drop(watch.stdin);
    let stderr = watch.stderr.join().unwrap_or_default();
    if timed_out && result.is_none() {
        let message = format!("exceeded the time limit of {}", seconds(limit));
        return ended(dir, Status::Timeout, stage, message, start);
    }
    match result {
        Some(mut r) => {
            r.seconds = start.elapsed().as_secs_f64();
            r
        }
        None => {
            let how = status.map_or_else(|| "an unknown status".to_string(), |s| s.to_string());
            let mut message = format!("the case's process ended with {how} before reporting");
            if let Some(line) = garbled {
                message.push_str(&format!("; it printed `{line}`"));
            }
            if let Some(last) = stderr.lines().rev().find(|l| !l.trim().is_empty()) {
                message.push_str(&format!("; its last words: {}", last.trim()));
            }
            ended(dir, Status::Fail, stage, message, start)
        }
    }
}

/// The runner's ends of a worker's pipes: its output lines as they come, the tail of its
/// standard error once it closes, and its standard input (held open: closing it stops it).
struct Watch {
    lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    stdin: Option<std::process::ChildStdin>,
}

impl Watch {
    fn new(child: &mut Child) -> Watch {
        let (tx, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let err = child.stderr.take();
        let stderr = std::thread::spawn(move || {
            let mut tail = Vec::new();
            let mut buf = [0u8; 1024];
            if let Some(mut err) = err {
                while let Ok(n @ 1..) = err.read(&mut buf) {
                    tail.extend_from_slice(&buf[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
            }
            String::from_utf8_lossy(&tail).into_owned()
        });
        Watch {
            lines,
            stderr,
            stdin: child.stdin.take(),
        }
    }
}

/// The worker's exit status once it exits, or `None` if `deadline` passes first.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(EXIT_POLL),
            Ok(None) => return None,
            // The status cannot be read; nothing more can be learnt by waiting.
            Err(_) => return None,
        }
    }
}

/// Kills the worker's whole process group (it leads it: see `process_group(0)`) before
/// reaping the worker, so the group id cannot have been reused, then reaps it.
fn kill(child: &mut Child) -> Option<ExitStatus> {
    let group = rustix::process::Pid::from_child(child);
    if rustix::process::kill_process_group(group, rustix::process::Signal::KILL).is_err() {
        // The group is already gone; make sure of the worker itself.
        let _ = child.kill();
    }
    child.wait().ok()
}

/// A result the runner writes itself (the worker reported none).
fn ended(dir: &Path, status: Status, stage: Stage, message: String, start: Instant) -> CaseResult {
    CaseResult {
        name: case_name(dir),
        status,
        max_error: None,
        stage: Some(stage),
        message: Some(message),
        listed: uses_only_required_ops(dir),
        specialised_inputs: Vec::new(),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// `120 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that runs `script` in `sh` (the case directory is its `$1`).
    fn shell(script: &str) -> Worker {
        Worker {
            program: "sh".into(),
            args: vec!["-c".into(), script.into(), "sh".into()],
        }
    }

    /// Whether process `pid` still runs (a zombie does not: it only waits to be reaped).
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim().starts_with('Z'))
        })
    }

    #[test]
    fn a_runaway_case_is_stopped_with_everything_it_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("grandchild.pid");
        let script = format!(
            "echo '{{\"stage\":\"c-run\"}}'; sleep 600 & echo $! > {}; wait",
            pid_file.display()
        );
        let start = Instant::now();
        let r = run_isolated(
            &shell(&script),
            dir.path(),
            true,
            Duration::from_millis(500),
        );
        assert!(start.elapsed() < Duration::from_secs(10), "{r:?}");
        assert_eq!(r.status, Status::Timeout, "{r:?}");
        assert_eq!(r.stage, Some(Stage::CRun));
        assert!(r.message.as_deref().is_some_and(|m| m.contains("0.5 s")));
        let pid = std::fs::read_to_string(&pid_file).expect("the script wrote its child's pid");
        let pid = pid.trim();
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(pid)
        });
        assert!(gone, "the worker's child {pid} survived the timeout");
    }

    #[test]
    fn a_worker_that_dies_is_a_failure_with_its_last_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let worker = shell("echo '{\"stage\":\"interpreter\"}'; echo 'stack overflow' >&2; exit 7");
        let r = run_isolated(&worker, dir.path(), true, Duration::from_secs(30));
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert_eq!(r.stage, Some(Stage::Interpreter));
        let message = r.message.unwrap_or_default();
        assert!(message.contains("exit status: 7"), "{message}");
        assert!(message.contains("stack overflow"), "{message}");
    }

    #[test]
    fn a_reported_result_is_taken_as_it_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let result = CaseResult {
            name: "test_x".into(),
            status: Status::Pass,
            max_error: Some(0.0),
            stage: None,
            message: None,
            listed: true,
            specialised_inputs: vec!["shape".into()],
            seconds: 99.0,
        };
        let line = serde_json::to_string(&Message::Result(result.clone())).expect("json");
        let worker = shell(&format!("echo '{line}'"));
        let r = run_isolated(&worker, dir.path(), false, Duration::from_secs(30));
        assert!(r.seconds < 99.0, "the runner times the case itself");
        assert_eq!(CaseResult { seconds: 99.0, ..r }, result);
    }

    #[test]
    fn a_missing_worker_program_is_the_case_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let worker = Worker {
            program: dir.path().join("no-such-program"),
            args: Vec::new(),
        };
        let r = run_isolated(&worker, dir.path(), true, Duration::from_secs(30));
        assert_eq!((r.status, r.stage), (Status::Fail, Some(Stage::Load)));
    }
}
