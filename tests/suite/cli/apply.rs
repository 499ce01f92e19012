//! `dmove apply`: the one-line report of an applied step, lowered layers, and `--explain`.

use super::support::{assert_success, dmove, mlp_ir_dir, stderr, stdout};
use std::path::Path;

/// Splits `s` at `sep` where no parenthesis is open: the checks of a report are separated by
/// ", ", and a layer's own "(…, …)" is not split.
fn split_top<'a>(s: &'a str, sep: &str) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if depth == 0 && rest.starts_with(sep) {
            parts.push(&s[start..i]);
            i += sep.len();
            start = i;
            continue;
        }
        let c = rest.chars().next().expect("a character");
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "unbalanced parentheses in `{s}`");
        i += c.len_utf8();
    }
    assert_eq!(depth, 0, "unbalanced parentheses in `{s}`");
    parts.push(&s[start..]);
    parts
}

/// Runs `dmove apply mlp.ir -t T --explain ARGS` in `dir`, which must succeed silently on
/// standard error; returns standard output.
fn explained(dir: &Path, transformation: &str, args: &[&str]) -> String {
    let mut all = vec!["apply", "mlp.ir", "-t", transformation, "--explain"];
    all.extend_from_slice(args);
    let o = dmove(&all, dir);
    assert_success(&o);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    stdout(&o)
}

/// The report of a successful `apply`: the step (`T at SITE (PARAMS)`) and its checks.
struct Report {
    step: String,
    checks: Vec<String>,
}

/// Runs `dmove apply ARGS` in `dir`, which must succeed with exactly one line on standard
/// error, `applied …; checks: …`, free of Rust debug forms.
fn applied(dir: &Path, args: &[&str]) -> Report {
    let mut all = vec!["apply"];
    all.extend_from_slice(args);
    let o = dmove(&all, dir);
    assert_success(&o);
    let err = stderr(&o);
    assert!(err.ends_with('\n'), "{err:?}");
    let line = err.trim_end_matches('\n');
    assert!(!line.contains('\n'), "more than one line: {err}");
    for debug in [
        "NodeId(", "[", "]", "{", "}", "Some(", "None", "\"", "Passed", "Lowered",
    ] {
        assert!(!line.contains(debug), "`{debug}` in `{line}`");
    }
    let rest = line
        .strip_prefix("applied ")
        .unwrap_or_else(|| panic!("`{line}`"));
    let (step, checks) = rest
        .split_once("; checks: ")
        .unwrap_or_else(|| panic!("`{line}`"));
    let checks = split_top(checks, ", ")
        .into_iter()
        .map(str::to_string)
        .collect();
    Report {
        step: step.to_string(),
        checks,
    }
}

#[track_caller]
fn assert_checked(r: &Report) {
    assert_eq!(r.checks.len(), 3, "{:?}", r.checks);
    assert_eq!(r.checks[0], "structural");
    assert!(r.checks[1].starts_with("legality ("), "{}", r.checks[1]);
    assert!(
        r.checks[1].contains("parallel maps race-free"),
        "{}",
        r.checks[1]
    );
    assert!(r.checks[2].starts_with("numerics ("), "{}", r.checks[2]);
    assert!(r.checks[2].ends_with(')'), "{}", r.checks[2]);
}

#[test]
fn an_applied_step_reports_site_parameters_and_every_check() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let r = applied(
        d,
        &[
            "mlp.ir",
            "-t",
            "MapTiling",
            "--at",
            "n19",
            "--param",
            "tiles=16,0,0",
            "-o",
            "b.ir",
        ],
    );
    assert_eq!(r.step, "MapTiling at n19 (tiles=16,0,0)");
    assert_checked(&r);
    assert!(
        r.checks[2].contains("reference interpreter"),
        "{:?}",
        r.checks
    );
    let r = applied(
        d,
        &["mlp.ir", "-t", "MapFusion", "--at", "n27,n33", "-o", "a.ir"],
    );
    assert_eq!(r.step, "MapFusion at n27,n33");
    assert_checked(&r);
    let r = applied(
        d,
        &["mlp.ir", "-t", "Parallelize", "--at", "n19", "-o", "c.ir"],
    );
    assert_eq!(r.step, "Parallelize at n19 (min_work=262144)");
    assert_checked(&r);
    // The written IR loads again and carries the rewrite.
    let o = dmove(&["import", "b.ir"], d);
    assert_success(&o);
    assert!(
        stdout(&o).contains("n19 map \"proj_acc\""),
        "{}",
        stdout(&o)
    );
}

#[test]
fn every_parameter_is_reported_defaults_included_and_map_parameters_by_position() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let r = applied(
        d,
        &[
            "mlp.ir",
            "-t",
            "StripMining",
            "--at",
            "n19",
            "--param",
            "param=k",
            "--param",
            "size=4",
            "-o",
            "s.ir",
        ],
    );
    assert_eq!(r.step, "StripMining at n19 (param=2, size=4)");
    assert_checked(&r);
    // `k` now runs 4 times: Unroll applies with its default `max`, which the report shows.
    let r = applied(d, &["s.ir", "-t", "Unroll", "--at", "n19", "-o", "u.ir"]);
    assert_eq!(r.step, "Unroll at n19 (max=16)");
    assert_checked(&r);
}

#[test]
fn without_an_output_file_the_ir_goes_to_standard_output() {
    let dir = mlp_ir_dir();
    let o = dmove(
        &["apply", "mlp.ir", "-t", "Parallelize", "--at", "n19"],
        dir.path(),
    );
    assert_success(&o);
    let ir = stdout(&o);
    assert!(ir.starts_with("program \"mlp\""), "{ir}");
    assert!(ir.contains("n19 map \"proj_acc\""), "{ir}");
    assert!(stderr(&o).starts_with("applied Parallelize at n19 (min_work=262144); checks: "));
}

#[test]
fn lowered_layers_are_reported_with_the_users_reason() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let r = applied(
        d,
        &[
            "mlp.ir",
            "-t",
            "Parallelize",
            "--at",
            "n19",
            "--no-numerics",
            "-o",
            "c.ir",
        ],
    );
    assert_eq!(r.step, "Parallelize at n19 (min_work=262144)");
    assert_eq!(r.checks.len(), 3, "{:?}", r.checks);
    assert_eq!(r.checks[0], "structural");
    assert!(r.checks[1].starts_with("legality ("), "{:?}", r.checks);
    assert_eq!(
        r.checks[2],
        "numerics lowered by the user: lowered on the command line (--no-numerics)"
    );
    let r = applied(
        d,
        &[
            "mlp.ir",
            "-t",
            "MapTiling",
            "--at",
            "n19",
            "--param",
            "tiles=16,0,0",
            "--no-legality",
            "-o",
            "b.ir",
        ],
    );
    assert_eq!(
        r.checks[1],
        "legality lowered by the user: lowered on the command line (--no-legality)"
    );
    assert!(r.checks[2].starts_with("numerics ("), "{:?}", r.checks);
}

/// The candidate lines of an `--explain` listing: (site, verdict).
fn candidates(listing: &str) -> Vec<(String, String)> {
    listing
        .lines()
        .skip(1)
        .map(|l| {
            let l = l
                .strip_prefix("  ")
                .unwrap_or_else(|| panic!("`{l}` is not indented"));
            let (site, verdict) = l.split_once(": ").unwrap_or_else(|| panic!("`{l}`"));
            (site.to_string(), verdict.to_string())
        })
        .collect()
}

#[test]
fn explain_lists_every_candidate_with_its_verdict_and_changes_nothing() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let before = std::fs::read(d.join("mlp.ir")).expect("read");
    let out = explained(d, "MapFusion", &[]);
    assert_eq!(
        out.lines().next(),
        Some("MapFusion: 3 candidate site(s), 1 apply"),
        "{out}"
    );
    let all = candidates(&out);
    let sites: Vec<&str> = all.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(sites, ["n13,n19", "n19,n27", "n27,n33"], "{out}");
    for (site, verdict) in &all {
        if site == "n27,n33" {
            assert_eq!(verdict, "applies");
        } else {
            let reason = verdict
                .strip_prefix("refused: ")
                .unwrap_or_else(|| panic!("{site}: `{verdict}`"));
            assert!(
                reason.starts_with("MapFusion does not apply at n"),
                "{reason}"
            );
            assert!(reason.contains("fusion needs exactly one producer and one consumer"));
        }
    }
    assert_eq!(std::fs::read(d.join("mlp.ir")).expect("read"), before);
}

#[test]
fn explain_at_a_site_gives_its_verdict() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let out = explained(d, "MapFusion", &["--at", "n27,n33"]);
    assert_eq!(out, "MapFusion at n27,n33: applies\n");
    let out = explained(d, "MapFusion", &["--at", "n13,n19"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("MapFusion at n13,n19: refused: MapFusion does not apply at n19: "),
        "{out}"
    );
    assert_eq!(
        lines[1],
        "MapFusion applies at 1 candidate site(s): n27,n33"
    );
}

#[test]
fn explain_at_a_node_that_is_no_candidate_names_the_nearest_one() {
    let dir = mlp_ir_dir();
    let d = dir.path();
    let out = explained(d, "MapFusion", &["--at", "n19"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with("MapFusion at n19: refused: MapFusion takes 2 node(s) at its site"),
        "{out}"
    );
    assert_eq!(
        lines[1],
        "n19 is not among the candidate sites of MapFusion"
    );
    let nearest = lines[2]
        .strip_prefix("nearest candidate: ")
        .unwrap_or_else(|| panic!("{out}"));
    let (site, verdict) = nearest.split_once(": ").expect("site: verdict");
    assert!(
        ["n13,n19", "n19,n27"].contains(&site),
        "the nearest candidate holds n19: {out}"
    );
    assert!(verdict.starts_with("refused: "), "{out}");
    assert_eq!(
        lines[3],
        "MapFusion applies at 1 candidate site(s): n27,n33"
    );
}

#[test]
fn explain_reports_a_site_independent_parameter_error_once() {
    let dir = mlp_ir_dir();
    let o = dmove(
        &[
            "apply",
            "mlp.ir",
            "-t",
            "MapTiling",
            "--explain",
            "--param",
            "tile=3",
        ],
        dir.path(),
    );
    super::support::assert_clean_failure(&o);
    let err = super::support::flat(&stderr(&o));
    assert_eq!(
        super::support::occurrences(&err, "has no parameter `tile`"),
        1,
        "{err}"
    );
    assert!(err.contains("did you mean `tiles`?"), "{err}");
}

#[test]
fn apply_without_a_site_or_explain_is_a_usage_error() {
    let dir = mlp_ir_dir();
    let o = dmove(&["apply", "mlp.ir", "-t", "MapFusion"], dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--at <NODE>"), "{}", stderr(&o));
}
