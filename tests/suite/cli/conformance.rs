//! `dmove conformance`: results streamed one line per case as they finish (text or JSON lines),
//! `--quiet`, the time limit, the manifest check that speaks only of what ran, and no progress
//! line in a pipe.

use super::support::{command, dmove, flat, stderr, stdout};
use crate::conformance::cases::{slow_case, suite};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// `dmove conformance DIR --no-c ARGS`.
fn conformance(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["conformance", dir.to_str().expect("utf-8"), "--no-c"];
    all.extend_from_slice(args);
    dmove(&all, dir)
}

/// The line of case `name` (its second word).
fn case_line<'a>(text: &'a str, name: &str) -> &'a str {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(name))
        .collect();
    assert_eq!(lines.len(), 1, "one line for {name} in:\n{text}");
    lines[0]
}

#[test]
fn each_case_gets_one_line_and_the_summary_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let o = conformance(dir.path(), &["--jobs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let ok = case_line(&text, "test_relu_ok");
    assert!(
        ok.starts_with("pass ") && ok.contains("(max error 0.00e0)"),
        "{ok}"
    );
    let seconds = ok.split_whitespace().nth(2).expect("a time");
    assert!(
        seconds
            .strip_suffix('s')
            .is_some_and(|s| s.parse::<f64>().is_ok()),
        "{ok}"
    );
    let wrong = case_line(&text, "test_relu_wrong");
    assert!(
        wrong.starts_with("FAIL ") && wrong.contains("[interpreter]"),
        "{wrong}"
    );
    assert!(wrong.contains("`y`"), "a failure says why: {wrong}");
    assert!(
        case_line(&text, "test_made_up").contains("MadeUpOp"),
        "{text}"
    );
    assert!(
        case_line(&text, "test_corrupt").contains("[load]"),
        "{text}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("4 cases: 1 passed, 2 failed, 1 unsupported, 0 timed out (33.3% of supported cases pass)"),
        "{last}"
    );
    assert!(!stderr(&o).contains('\r'), "no progress line in a pipe");
}

/// The first results are printed while the last case still runs; and when the runner dies
/// (as on Ctrl-C), the worker running a case does not outlive it.
#[test]
fn results_stream_while_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    slow_case(dir.path(), "test_zz_slow");
    let mut child = command(dir.path())
        .args(["conformance", dir.path().to_str().expect("utf-8")])
        .args(["--no-c", "--timeout", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("runs");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    for _ in 0..4 {
        let line = lines.next().expect("a line").expect("text");
        assert!(!line.contains("test_zz_slow"), "{line}");
    }
    assert!(child.try_wait().expect("status").is_none(), "still running");
    let slow = dir.path().join("test_zz_slow");
    let workers = || processes_naming(&slow);
    let start = Instant::now();
    while workers() == 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers(), 1, "the slow case runs in a worker");
    child.kill().expect("kill");
    child.wait().expect("reaped");
    let start = Instant::now();
    while workers() > 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers(), 0, "the worker outlived the runner");
}

/// Live processes (not zombies) whose command line names `path`.
fn processes_naming(path: &Path) -> usize {
    let needle = path.to_str().expect("utf-8").as_bytes().to_vec();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let p = e.path();
            let cmdline = std::fs::read(p.join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim().starts_with('Z'));
            !zombie && cmdline.windows(needle.len()).any(|w| w == needle)
        })
        .count()
}

#[test]
fn a_case_over_the_limit_is_a_timeout_and_a_listed_one_regresses() {
    let dir = tempfile::tempdir().expect("tempdir");
    slow_case(dir.path(), "test_slow");
    let manifest = dir.path().join("expected.txt");
    std::fs::write(&manifest, "test_slow\n").expect("write");
    let path = manifest.to_str().expect("utf-8");
    let o = conformance(dir.path(), &["--timeout", "1", "--manifest", path]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    let line = case_line(&text, "test_slow");
    assert!(
        line.starts_with("TIMEOUT ") && line.contains("[interpreter]"),
        "{line}"
    );
    assert!(line.contains("exceeded the time limit of 1 s"), "{line}");
    assert!(
        text.contains("1 cases: 0 passed, 0 failed, 0 unsupported, 1 timed out (0.0% of supported"),
        "{text}"
    );
    assert!(
        flat(&stderr(&o)).contains("test_slow (timeout)"),
        "{}",
        stderr(&o)
    );
    let bad = conformance(dir.path(), &["--timeout", "0"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("not a positive number of seconds"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn json_lines_per_case_then_the_summary_and_quiet_keeps_failures() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let manifest = dir.path().join("expected_pass.txt");
    let m = manifest.to_str().expect("utf-8");
    let o = conformance(dir.path(), &["--json", "--write-manifest", m]);
    assert!(o.status.success(), "{}", stderr(&o));
    let values: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(values.len(), 5);
    let summary = &values[4];
    assert_eq!(summary["summary"]["passed"], 1);
    assert_eq!(summary["summary"]["failed"], 2);
    assert_eq!(summary["summary"]["unsupported"], 1);
    assert_eq!(summary["summary"]["timeout"], 0);
    let wrong = values
        .iter()
        .find(|v| v["name"] == "test_relu_wrong")
        .expect("a line");
    assert_eq!(
        (&wrong["status"], &wrong["stage"]),
        (&"fail".into(), &"interpreter".into())
    );
    let written = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(written.lines().any(|l| l == "test_relu_ok"));
    assert!(!written.contains("test_relu_wrong"));

    let quiet = stdout(&conformance(dir.path(), &["--quiet"]));
    let words: Vec<&str> = quiet
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(words, ["FAIL", "FAIL", "4"], "{quiet}");
}

/// `--filter test_gemm` ran 11 cases and claimed "no regression against 860 listed case(s)":
/// the sentence now counts only listed cases that ran, and says how many the filter left out.
#[test]
fn the_manifest_check_speaks_only_of_what_ran() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let manifest = dir.path().join("expected_pass.txt");
    let m = manifest.to_str().expect("utf-8");
    std::fs::write(&manifest, "test_relu_ok\ntest_abs\ntest_gemm_alpha\n").expect("write");
    let o = conformance(dir.path(), &["--filter", "relu", "--manifest", m]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "no regression against 1 listed case(s); 2 listed case(s) not selected by the filter"
        ),
        "{}",
        stderr(&o)
    );
    std::fs::write(&manifest, "test_relu_ok\ntest_relu_wrong\ntest_relu_gone\n").expect("write");
    let o = conformance(dir.path(), &["--manifest", m]);
    assert_eq!(o.status.code(), Some(1));
    let err = flat(&stderr(&o));
    assert!(
        err.contains("test_relu_wrong (fail)") && err.contains("test_relu_gone (missing)"),
        "{err}"
    );
    assert!(!err.contains("test_relu_ok ("), "{err}");
    assert!(
        err.contains("1 of 2 listed case(s) that ran did not pass; 1 listed case(s) missing from"),
        "{err}"
    );
    let text = stdout(&o);
    assert!(text.contains("1 passed, 2 failed, 1 unsupported"), "{text}");
}
