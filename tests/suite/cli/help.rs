//! Every argument of every command has help text, in `-h` and in `--help`.

use super::support::{assert_success, dmove, stdout};

/// The subcommands `dmove --help` lists (without `help`), each with its one-line description.
fn subcommands() -> Vec<(String, String)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = dmove(&["--help"], dir.path());
    assert_success(&o);
    let text = stdout(&o);
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == "Commands:" {
            inside = true;
            continue;
        }
        if inside {
            if line.trim().is_empty() {
                break;
            }
            let (name, about) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
            if name != "help" {
                out.push((name.to_string(), about.trim().to_string()));
            }
        }
    }
    out
}

/// The argument lines of the `Arguments:` and `Options:` sections of `help` that have no help
/// text: in the short layout the text follows the argument on its line after two spaces; in
/// the long layout it is on the next, more indented line.
fn undocumented(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let mut missing = Vec::new();
    let mut inside = false;
    let mut arguments = 0;
    for (i, line) in lines.iter().enumerate() {
        if matches!(*line, "Arguments:" | "Options:") {
            inside = true;
            continue;
        }
        if !line.starts_with(' ') && !line.is_empty() {
            inside = false;
        }
        let trimmed = line.trim_start();
        if !inside || !trimmed.starts_with(['-', '<', '[']) {
            continue;
        }
        arguments += 1;
        let indent = line.len() - trimmed.len();
        let same_line = trimmed
            .split_once("  ")
            .is_some_and(|(_, text)| !text.trim().is_empty());
        let next_line = lines.get(i + 1).is_some_and(|next| {
            let t = next.trim_start();
            !t.is_empty() && next.len() - t.len() > indent && !t.starts_with(['-', '<', '['])
        });
        if !same_line && !next_line {
            missing.push(line.to_string());
        }
    }
    assert!(arguments > 0, "no arguments found in:\n{help}");
    missing
}

#[test]
fn every_subcommand_is_described() {
    let commands = subcommands();
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "demo",
        "import",
        "transforms",
        "apply",
        "match",
        "analyze",
        "c",
        "conformance",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for (name, about) in &commands {
        assert!(!about.is_empty(), "`dmove {name}` has no description");
    }
}

#[test]
fn every_argument_of_every_subcommand_has_help_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut problems = Vec::new();
    for (name, _) in subcommands() {
        for flag in ["-h", "--help"] {
            let o = dmove(&[name.as_str(), flag], dir.path());
            assert_success(&o);
            let help = stdout(&o);
            assert!(help.contains("Usage: "), "{name} {flag}:\n{help}");
            for line in undocumented(&help) {
                problems.push(format!("dmove {name} {flag}: `{}`", line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "arguments without help text:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_help_parser_notices_a_bare_argument() {
    let short =
        "Usage: x\n\nOptions:\n      --json  Print JSON\n      --bare\n  -h, --help  Print help\n";
    assert_eq!(undocumented(short), ["      --bare"]);
    let long = "Usage: x\n\nArguments:\n  [MODEL]\n          The model\n\nOptions:\n      --bare\n\n      --kept <N>\n          Kept\n";
    assert_eq!(undocumented(long), ["      --bare"]);
}
