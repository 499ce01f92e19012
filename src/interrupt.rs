//! Cancellation of long work: one process-wide flag, raised by Ctrl-C (SIGINT) once a front door
//! asks for it ([`catch_ctrl_c`]), checked at the boundaries of long work — between engine steps
//! (the recipe interpreter), between benchmark repetitions — and while waiting for a child process
//! (the C compiler, a generated program, the ONNX Runtime peer), which [`output`] kills.
//!
//! Work that sees the flag stops with an error; the front door that raised it decides what an
//! interrupted command leaves behind (the REPL restores the program from before the input) and
//! [`clear`]s it before the next command. Without [`catch_ctrl_c`], Ctrl-C keeps its default
//! meaning (the process ends) and the flag is never raised.

use std::io::Read;
use std::process::{Child, Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The longest a wait for a child goes without looking at the flag.
const POLL: Duration = Duration::from_millis(20);

fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Makes Ctrl-C raise the flag instead of ending the process (idempotent).
pub fn catch_ctrl_c() -> std::io::Result<()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_none() {
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(flag()))?;
        let _ = INSTALLED.set(());
    }
    Ok(())
}

/// Raises the flag (what Ctrl-C does; tests call it directly).
pub fn request() {
    flag().store(true, Ordering::SeqCst);
}

/// Whether the flag is raised.
pub fn requested() -> bool {
    flag().load(Ordering::SeqCst)
}

/// Lowers the flag; the front door does so before each command.
pub fn clear() {
    flag().store(false, Ordering::SeqCst);
}

/// Stopped by Ctrl-C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("interrupted (Ctrl-C)")]
#[diagnostic(code(dmove::interrupted))]
pub struct Interrupted;

/// `Err(Interrupted)` when the flag is raised: call at the boundaries of long work.
pub fn check() -> Result<(), Interrupted> {
    match requested() {
        true => Err(Interrupted),
        false => Ok(()),
    }
}

/// Runs `cmd` to completion like [`Command::output`] (no standard input), killing it when the flag is raised (the
/// error is then of kind `Interrupted`). Its output is read on threads while it runs, so a child
/// writing much cannot block on a full pipe.
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    use std::process::Stdio;
    let mut child = (cmd.stdin(Stdio::null()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child)?;
    let collect = |h: std::thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    match status {
        Some(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            Interrupted,
        )),
    }
}

/// Waits for `child`; `None` when the flag was raised and the child killed.
/// The first poll comes after a millisecond and the interval doubles up to [`POLL`], so a short
/// run (a cached compile, a small program) is not delayed by a whole interval.
fn wait(child: &mut Child) -> std::io::Result<Option<std::process::ExitStatus>> {
    let mut delay = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if requested() {
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(POLL);
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut out);
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_runs_to_completion_and_its_output_is_read() {
        clear();
        let out = output(Command::new("sh").args(["-c", "echo out; echo err >&2"])).expect("sh");
        assert!(out.status.success());
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn check_follows_the_flag() {
        // The flag is process-wide: this test only raises and lowers it around its own check,
        // and the child test above lowers it first.
        request();
        assert_eq!(check(), Err(Interrupted));
        clear();
        assert_eq!(check(), Ok(()));
    }
}
