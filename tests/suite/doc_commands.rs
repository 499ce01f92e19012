//! Every command README.md and docs/ show is run, so the docs cannot drift from the tool.
//!
//! A fenced block's info string says how its lines run:
//! - ```` ```sh ````: the block runs as one `sh -e` script in a scratch directory that holds
//!   the repository's example files (`tests/fixtures`, a copy of `recipes`), with `dmove` on
//!   `PATH` being the binary under test; every line must succeed. The blocks of one file run in
//!   order in one directory, so a later block reads what an earlier one wrote.
//! - ```` ```sh slow ````: the same, for what takes minutes (the demo's steps, benchmarks that
//!   reproduce the docs' tables): run by the ignored test below, which `cargo test` reports as
//!   ignored, never as passed; run it with `cargo test --release --test suite doc_commands::
//!   -- --ignored` (`DMOVE_DOC_BIN` may name the binary, e.g. the release build).
//! - ```` ```sh ci ````: commands `.ci/run` itself runs (the set-up commands, the conformance
//!   suite): each line must appear there (`dmove X` as `cargo run --release -- X`).
//!
//! A block whose first command is `cargo` runs in the repository itself (a benchmark target).
//!
//! Any other `sh` marker fails the test, so a block cannot opt out silently.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How a block's lines are run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Run,
    Slow,
    Ci,
}

/// One fenced `sh` block.
#[derive(Debug)]
struct Block {
    file: PathBuf,
    /// 1-based line of the opening fence.
    line: usize,
    kind: Kind,
    commands: Vec<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// Where the parser is: outside any block, inside a block of another language, or inside an
/// `sh` block.
enum State {
    Outside,
    Other,
    Sh(Block),
}

/// The `sh` blocks of `file`.
fn blocks(file: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(file).expect("readable");
    let mut out = Vec::new();
    let mut state = State::Outside;
    for (k, line) in text.lines().enumerate() {
        state = match (state, line.strip_prefix("```")) {
            (State::Sh(b), Some(_)) => {
                out.push(b);
                State::Outside
            }
            (State::Other, Some(_)) => State::Outside,
            (State::Outside, Some(info)) => {
                let mut words = info.split_whitespace();
                if words.next() != Some("sh") {
                    State::Other
                } else {
                    let kind = match words.next() {
                        None => Kind::Run,
                        Some("slow") => Kind::Slow,
                        Some("ci") => Kind::Ci,
                        Some(other) => panic!(
                            "{}:{}: unknown marker `sh {other}` (use `sh`, `sh slow` or `sh ci`)",
                            file.display(),
                            k + 1
                        ),
                    };
                    State::Sh(Block {
                        file: file.to_path_buf(),
                        line: k + 1,
                        kind,
                        commands: Vec::new(),
                    })
                }
            }
            (State::Sh(mut b), None) => {
                if !line.trim().is_empty() {
                    b.commands.push(line.to_string());
                }
                State::Sh(b)
            }
            (other, None) => other,
        };
    }
    out
}

/// A scratch directory with the repository's example files and `dmove` on `PATH`.
struct Scratch {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Scratch {
    fn new(binary: &Path) -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("tests")).expect("mkdir tests");
        std::os::unix::fs::symlink(
            root().join("tests/fixtures"),
            dir.path().join("tests/fixtures"),
        )
        .expect("link the fixtures");
        // Runs write locks beside recipes: a copy keeps the repository's own unchanged.
        copy_dir(&root().join("recipes"), &dir.path().join("recipes"));
        let bin = dir.path().join(".bin");
        std::fs::create_dir(&bin).expect("mkdir .bin");
        std::os::unix::fs::symlink(binary, bin.join("dmove")).expect("link dmove");
        Scratch { dir, bin }
    }

    /// Runs `block` as one `sh -e` script (so a here-document or a `cd` carries across its
    /// lines); the error names the block and what it printed.
    fn run(&self, block: &Block) {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let script = block.commands.join("\n");
        let dir = match block.commands.first() {
            Some(c) if c.starts_with("cargo ") => root(),
            _ => self.dir.path().to_path_buf(),
        };
        let out = Command::new("sh")
            .args(["-e", "-c", &script])
            .current_dir(dir)
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .output()
            .expect("sh starts");
        assert!(
            out.status.success(),
            "{}:{}: the block failed ({}):\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            block.file.display(),
            block.line,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("readable") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Runs the blocks of `kind` of every document, each document in a scratch directory of its
/// own; returns how many command lines ran.
fn run_blocks(kind: Kind, binary: &Path) -> usize {
    let mut ran = 0;
    for doc in documents() {
        let chosen: Vec<Block> = (blocks(&doc).into_iter())
            .filter(|b| b.kind == kind)
            .collect();
        if chosen.is_empty() {
            continue;
        }
        let scratch = Scratch::new(binary);
        for block in &chosen {
            scratch.run(block);
            ran += block.commands.len();
        }
    }
    ran
}

#[test]
fn every_command_the_docs_show_runs() {
    let ran = run_blocks(Kind::Run, Path::new(env!("CARGO_BIN_EXE_dmove")));
    assert!(
        ran >= 10,
        "only {ran} commands found: is the block parser broken?"
    );
}

/// The demo and the benchmarks the docs show, with the binary of `DMOVE_DOC_BIN` (e.g. the
/// release build) or the one under test.
#[test]
#[ignore = "slow: the demo's steps and the benchmarks behind the docs' tables (minutes); run with --ignored"]
fn every_slow_command_the_docs_show_runs() {
    let binary = std::env::var_os("DMOVE_DOC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_dmove")));
    let binary = binary.canonicalize().expect("the binary exists");
    assert!(run_blocks(Kind::Slow, &binary) > 0, "no slow command found");
}

#[test]
fn every_ci_command_the_docs_show_is_run_by_ci() {
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let ci_lines: Vec<&str> = ci.lines().map(str::trim).collect();
    let mut checked = 0;
    for doc in documents() {
        for block in blocks(&doc).iter().filter(|b| b.kind == Kind::Ci) {
            for line in &block.commands {
                let command = line.split(" #").next().unwrap_or(line).trim();
                // CI runs `dmove` as `cargo run --release --`.
                let command = match command.strip_prefix("dmove ") {
                    Some(rest) => format!("cargo run --release -- {rest}"),
                    None => command.to_string(),
                };
                assert!(
                    ci_lines.iter().any(|l| l.contains(&command)),
                    "{}:{}: `{command}` is not run by .ci/run",
                    block.file.display(),
                    block.line
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 2,
        "the README's two set-up commands are `sh ci` blocks"
    );
}

#[test]
fn the_block_parser_reads_markers_and_skips_other_languages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("x.md");
    std::fs::write(
        &file,
        "text\n```text\ndmove not-a-command\n```\n```sh\ndmove a\n\ndmove b\n```\n\
         ```sh slow\ndmove c\n```\n```sh ci\ncargo test\n```\n```\nplain\n```\n",
    )
    .expect("write");
    let got: Vec<(Kind, Vec<String>)> = (blocks(&file).into_iter())
        .map(|b| (b.kind, b.commands))
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        [
            (Kind::Run, s(&["dmove a", "dmove b"])),
            (Kind::Slow, s(&["dmove c"])),
            (Kind::Ci, s(&["cargo test"])),
        ]
    );
}

/// Every whole recipe a document shows (a fenced block starting with `recipe "`, except those
/// fenced `recipe-error`, which show a mistake), with the line of its opening fence.
fn whole_recipes(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).expect("readable");
    let mut out = Vec::new();
    let mut open: Option<(usize, String, String)> = None;
    for (k, line) in text.lines().enumerate() {
        match (open.take(), line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((k + 1, info.trim().to_string(), String::new())),
            (Some((at, info, body)), Some(_)) => {
                if body.starts_with("recipe \"") && info != "recipe-error" {
                    out.push((at, body));
                }
            }
            (Some((at, info, mut body)), None) => {
                body.push_str(line);
                body.push('\n');
                open = Some((at, info, body));
            }
            (None, None) => {}
        }
    }
    out
}

/// The README's recipes are what a new user copies first, so they are canonically formatted.
/// (The language reference aligns its comments to explain each line, and shows skeletons such
/// as `param …`; the `recipes` module checks and runs its whole recipes.)
#[test]
fn every_whole_recipe_the_readme_shows_is_formatted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    for doc in [root().join("README.md")] {
        for (line, recipe) in whole_recipes(&doc) {
            let name = doc.file_stem().expect("a name").to_string_lossy();
            let path = dir.path().join(format!("{name}-{line}.recipe"));
            std::fs::write(&path, recipe).expect("write");
            files.push(path);
        }
    }
    assert!(!files.is_empty(), "the README's tour shows a recipe");
    let out = Command::new(env!("CARGO_BIN_EXE_dmove"))
        .arg("fmt")
        .arg("--check")
        .args(&files)
        .env("NO_COLOR", "1")
        .output()
        .expect("dmove runs");
    assert!(
        out.status.success(),
        "not formatted (named DOC-LINE, the line of the block's fence):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
