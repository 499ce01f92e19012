//! Checks that did not run are never counted as passed in silence. Each skip prints a
//! `SKIPPED:` line as it happens (to the process's stderr, past the harness's capture) and is
//! tallied; when the test binary exits — after the harness's own `test result` line — one line
//! per reason says how many checks it skipped and how to make them run. With
//! `DMOVE_REQUIRE_PEER=1` (CI sets it and installs every tool) a skip is a failure instead.

use std::io::Write;
use std::sync::{Mutex, Once};

/// Whether the environment demands every tool: `DMOVE_REQUIRE_PEER` set to anything but empty
/// or `0`.
pub fn required() -> bool {
    std::env::var("DMOVE_REQUIRE_PEER").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// One skipped check: why, and how to make it run.
struct Skip {
    why: String,
    remedy: String,
}

static SKIPS: Mutex<Vec<Skip>> = Mutex::new(Vec::new());
static SUMMARY: Once = Once::new();

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
}

/// Records that the check `what` did not run because `why`; `remedy` says how to make it run.
/// Panics instead when [`required`].
pub fn skip(what: &str, why: &str, remedy: &str) {
    assert!(
        !required(),
        "DMOVE_REQUIRE_PEER is set, but {why}: `{what}` cannot run ({remedy})"
    );
    record(what, why, remedy);
}

/// [`skip`] for a tool no environment is required to have (CI does not install it either):
/// recorded and summed up, never a failure.
pub fn record(what: &str, why: &str, remedy: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {why}: `{what}` did not run; {remedy}, or set DMOVE_REQUIRE_PEER=1 to make this \
         a failure"
    );
    SKIPS.lock().unwrap_or_else(|e| e.into_inner()).push(Skip {
        why: why.to_string(),
        remedy: remedy.to_string(),
    });
    // SAFETY: `atexit` registers a plain function with the C runtime; `summary` only reads a
    // static and writes to stdout.
    SUMMARY.call_once(|| unsafe {
        atexit(summary);
    });
}

/// The closing summary: how many checks each reason skipped.
extern "C" fn summary() {
    let skips = SKIPS.lock().unwrap_or_else(|e| e.into_inner());
    let mut reasons: Vec<(&str, &str, usize)> = Vec::new();
    for s in skips.iter() {
        match reasons.iter_mut().find(|(why, _, _)| *why == s.why) {
            Some((_, _, n)) => *n += 1,
            None => reasons.push((&s.why, &s.remedy, 1)),
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "SKIPPED in this test binary: {} check(s) did not run and were not counted as passed",
        skips.len()
    );
    for (why, remedy, n) in reasons {
        let _ = writeln!(out, "  {n} × {why} ({remedy})");
    }
    let _ = out.flush();
}
