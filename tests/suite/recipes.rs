//! The data-driven recipe suite and the reference's examples, run.
//!
//! Every `tests/recipes/fail/*.recipe` is loaded from its file (so relative `use`s work; helper
//! modules live in `fail/modules/` and `pass/modules/` and are not cases), checked and, when the
//! checker finds no error, run; the rendered diagnostics (the checker's, the run's warnings and
//! the run's error) are snapshotted, so each snapshot proves which error is reported and where.
//! Every `tests/recipes/pass/*.recipe` must check without errors and run; its snapshot is a
//! summary (steps with their sites and rules, skips, decisions, expectations, prints, warnings,
//! the final program's hash) and its final program must compute what the starting one did.
//!
//! A case starts with `# model: NAME` (the program it runs on, see [`program`]; not needed by a
//! case the checker rejects) and a comment that says what it proves, shown in its snapshot.
//!
//! The reference (`docs/recipe-language.md`) is tested too: every fenced block that is a whole
//! recipe (starts with `recipe "`) checks and runs on the `mlp` model, or, fenced as
//! `recipe-error`, fails with the diagnostic its snapshot shows.

use dmove::check::fixtures::matmul;
use dmove::check::{random_inputs, same_outputs, NumericsError};
use dmove::ir::{Program, Schedule, SymExpr};
use dmove::onnx::{import, import_file, ImportOptions, ModelBuilder};
use dmove::recipe::run::describe::{describe_all, number};
use dmove::recipe::run::{run, ExpectOutcome, RunOptions, RunReport};
use dmove::recipe::{check, load_file, load_source, Diagnostic, Loaded};
use dmove::transform::engine::{program_hash, Checks, Engine, Layer};
use dmove::transform::{lookup, ParamValue};
use std::fmt::Write;
use std::path::{Path, PathBuf};

// ------------------------------------------------------------------- models

/// The programs a case can name in `# model: NAME`.
fn program(name: &str) -> Program {
    match name {
        // y = relu(x·w + b), x: 64×128, w: 128×32, at the operator level (the README's model).
        "mlp" => import_file(
            &root().join("tests/fixtures/mlp.onnx"),
            &ImportOptions::default(),
        )
        .expect("the mlp fixture imports"),
        // C = A·B, 8×8×8: an init map and an accumulation map, already lowered.
        "matmul" => matmul(
            SymExpr::int(8),
            SymExpr::int(8),
            SymExpr::int(8),
            Schedule::Sequential,
        ),
        // y = tanh(sigmoid(relu(x))) on 4×8, lowered: three element-wise maps in a chain.
        "chain" => {
            let model = ModelBuilder::new("chain", 17)
                .input("x", [4i64, 8])
                .output("y", [4i64, 8])
                .node("Relu", &["x"], &["a"], vec![])
                .node("Sigmoid", &["a"], &["b"], vec![])
                .node("Tanh", &["b"], &["y"], vec![])
                .build();
            let mut p = import(&model, &ImportOptions::default()).expect("imports");
            dmove::expand_all(&mut p).expect("lowers");
            p
        }
        other => panic!("unknown model `{other}` (known: mlp, matmul, chain)"),
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn opts() -> RunOptions {
    RunOptions {
        checks: Checks::default(),
        ..RunOptions::default()
    }
}

// -------------------------------------------------------------------- cases

/// One case file and what its first comment lines say.
struct Case {
    name: String,
    /// Relative to the crate root, so rendered diagnostics name it the same on every machine.
    path: PathBuf,
    model: Option<String>,
    /// The comment that says what the case proves.
    about: String,
}

/// The cases of `tests/recipes/DIR` (its `*.recipe` files, not its subdirectories), sorted.
fn cases(dir: &str) -> Vec<Case> {
    let rel = Path::new("tests/recipes").join(dir);
    let mut found: Vec<Case> = std::fs::read_dir(root().join(&rel))
        .expect("the case directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "recipe"))
        .map(|p| {
            let name = p
                .file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&p).expect("a readable case");
            let (model, about) = directives(&name, &text);
            Case {
                path: rel.join(p.file_name().expect("a file name")),
                name,
                model,
                about,
            }
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!found.is_empty(), "no cases in {}", rel.display());
    found
}

/// `# model: NAME` (optional) and the comment after it (required).
fn directives(name: &str, text: &str) -> (Option<String>, String) {
    let mut lines = text.lines().map(str::trim);
    let mut line = lines.next().unwrap_or("");
    let model = line.strip_prefix("# model:").map(|m| {
        line = lines.next().unwrap_or("");
        m.trim().to_string()
    });
    let about = line.strip_prefix('#').map(str::trim).unwrap_or("");
    assert!(
        !about.is_empty(),
        "{name}: the case must start with a comment saying what it proves"
    );
    (model, about.to_string())
}

/// Snapshots `text` as `name`, with the case's comment as the snapshot's description. The
/// crate's directory and version are replaced by `<root>` and `<version>`, so snapshots do not
/// depend on the machine or the release (the cases' own versions are `1.0.0`).
fn snapshot(name: &str, about: &str, text: &str) {
    let dir = root().canonicalize().expect("the crate directory");
    let text = (text.replace(&dir.display().to_string(), "<root>"))
        .replace(env!("CARGO_PKG_VERSION"), "<version>");
    insta::with_settings!({ description => about, omit_expression => true }, {
        insta::assert_snapshot!(name, text);
    });
}

fn has_error(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

/// What checking and running a recipe gave: every diagnostic in order (the checker's, the
/// run's warnings, the run's error), and the report and final program of a successful run.
struct Outcome {
    diagnostics: Vec<Diagnostic>,
    ran: Option<(RunReport, Program)>,
    /// `check`, or `run (after N step(s))` for a run that failed: where the error was found.
    stage: String,
}

/// Checks `l` and, when it has no errors, runs it on the program `model` names (`what` names
/// the recipe in panics).
fn outcome(l: &Loaded, model: Option<&str>, what: &str) -> Outcome {
    let mut diagnostics = check(l);
    if has_error(&diagnostics) {
        return Outcome {
            diagnostics,
            ran: None,
            stage: "check".into(),
        };
    }
    let model = model.unwrap_or_else(|| panic!("{what} checks, so it needs `# model: NAME`"));
    let mut p = program(model);
    let (ran, stage) = match run(l, &mut p, &opts()) {
        Ok(report) => {
            diagnostics.extend(report.warnings.iter().cloned());
            (Some((report, p)), "run".into())
        }
        Err(e) => {
            let stage = format!("run (after {} step(s))", e.report.steps.len());
            diagnostics.extend(e.report.warnings);
            diagnostics.push(e.diagnostic);
            (None, stage)
        }
    };
    Outcome {
        diagnostics,
        ran,
        stage,
    }
}

#[test]
fn fail_cases_report_their_error() {
    for case in cases("fail") {
        let l = load_file(&case.path);
        let text = fails(&l, case.model.as_deref(), &case.name);
        snapshot(&format!("fail_{}", case.name), &case.about, &text);
    }
}

#[test]
fn pass_cases_run_and_keep_the_outputs() {
    for case in cases("pass") {
        let l = load_file(&case.path);
        let model = case.model.as_deref().unwrap_or_else(|| {
            panic!("{}: a pass case needs `# model: NAME`", case.name);
        });
        let (text, _) = passes(&l, model, &case.name);
        snapshot(&format!("pass_{}", case.name), &case.about, &text);
    }
}

/// Checks and runs a recipe that must fail; returns where the error was found and every
/// diagnostic, rendered.
fn fails(l: &Loaded, model: Option<&str>, what: &str) -> String {
    let o = outcome(l, model, what);
    let shown = l.sources.render_plain(&o.diagnostics);
    assert!(
        o.ran.is_none() && has_error(&o.diagnostics),
        "{what}: expected an error, got:\n{shown}"
    );
    format!("found by: {}\n{shown}", o.stage)
}

/// Runs a recipe that must check and run on `model`, and checks that its final program computes
/// what the starting one did; returns its summary (warnings rendered at the end) and whether
/// there were warnings.
fn passes(l: &Loaded, model: &str, what: &str) -> (String, bool) {
    let o = outcome(l, Some(model), what);
    let shown = l.sources.render_plain(&o.diagnostics);
    let Some((report, p)) = o.ran else {
        panic!("{what}: expected a clean run, got:\n{shown}");
    };
    assert!(!has_error(&o.diagnostics), "{what}:\n{shown}");
    let start = program(model);
    let mut text = summary(l, &start, &report, &p);
    text.push_str(&numerics(&start, &p, what));
    if !shown.is_empty() {
        let _ = write!(text, "warnings:\n{shown}");
    }
    (text, !o.diagnostics.is_empty())
}

// ------------------------------------------------------------------ summary

/// The steps, skips, decisions, expectations, prints, notes and lowerings of a run, and the
/// final program's hash.
fn summary(l: &Loaded, start: &Program, r: &RunReport, end: &Program) -> String {
    let mut out = String::from("steps:\n");
    for (i, (step, site)) in r.steps.iter().zip(sites(start, r)).enumerate() {
        let params: Vec<String> = (step.step.params.iter())
            .map(|(k, v)| format!("{k} = {}", value(v)))
            .collect();
        let rule = step.rule.as_deref().unwrap_or("main");
        let _ = writeln!(
            out,
            "  {}. {} at {site} ({}) [{rule}]",
            i + 1,
            step.step.transformation,
            params.join(", ")
        );
    }
    let _ = writeln!(out, "skipped: {}", r.skipped.len());
    for s in &r.skipped {
        let _ = writeln!(
            out,
            "  - line {}: {}",
            l.sources.line_col(s.span).0,
            s.reason
        );
    }
    out.push_str("decisions:\n");
    for d in &r.decisions {
        let tried: Vec<String> = (d.candidates.iter())
            .map(|c| {
                let score = c.score.map_or_else(
                    || format!("failed: {}", c.error.as_deref().unwrap_or("?")),
                    number,
                );
                format!("{} → {score}", values(&c.values))
            })
            .collect();
        let _ = writeln!(
            out,
            "  {} by {}: {} [{}]",
            d.params.join(", "),
            d.by,
            values(&d.chosen),
            tried.join("; ")
        );
    }
    out.push_str("expects:\n");
    for e in &r.expects {
        let outcome = match &e.outcome {
            ExpectOutcome::Held => "held".to_string(),
            ExpectOutcome::NotChecked(why) => format!("not checked ({why})"),
        };
        let _ = writeln!(out, "  {}: {outcome}", e.text);
    }
    for (title, lines) in [
        ("printed", &r.printed),
        ("notes", &r.notes),
        ("lowered", &r.lowered),
    ] {
        let _ = writeln!(out, "{title}:");
        for line in lines {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "hash: {}", program_hash(end));
    out
}

/// Each step's site in IR terms, described in the program the step applied to (the steps are
/// replayed on a copy of `start` with the structural checks only).
fn sites(start: &Program, r: &RunReport) -> Vec<String> {
    let checks = Checks::default()
        .lower(Layer::Legality, "replayed")
        .lower(Layer::Numerics, "replayed");
    let mut engine = Engine::new(checks);
    let mut p = start.clone();
    (r.steps.iter())
        .map(|s| {
            let site = describe_all(&p, &s.step.site);
            let t = lookup(&s.step.transformation).expect("a registered transformation");
            engine
                .apply(&mut p, t, &s.step.site, &s.step.params)
                .unwrap_or_else(|e| panic!("step {site} does not replay: {e:?}"));
            site
        })
        .collect()
}

fn value(v: &ParamValue) -> String {
    match v {
        ParamValue::Ints(v) => format!("{v:?}"),
        ParamValue::Str(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn values<V: std::fmt::Display>(m: &std::collections::BTreeMap<String, V>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    parts.join(", ")
}

/// Compares the final program's outputs with the starting program's on random inputs; the
/// line says whether they were compared.
fn numerics(start: &Program, end: &Program, what: &str) -> String {
    let inputs = random_inputs(start, 7).expect("the fixtures have static shapes");
    match same_outputs(start, end, &inputs) {
        Ok(outputs) => format!("numerics: {} output(s) as before\n", outputs.len()),
        Err(e @ (NumericsError::Original(_) | NumericsError::Rewritten(_))) => {
            format!("numerics: not compared ({e})\n")
        }
        Err(e) => panic!("{what}: the optimized program computes something else: {e}"),
    }
}

// ---------------------------------------------------------------- reference

/// A whole recipe of the reference: its name (from its header), whether it is fenced as
/// `recipe-error`, and its text.
struct Example {
    name: String,
    error: bool,
    text: String,
}

/// Every fenced block of `docs/recipe-language.md` that is a whole recipe (not an outline).
fn examples() -> Vec<Example> {
    let doc = std::fs::read_to_string(root().join("docs/recipe-language.md")).expect("the doc");
    let mut found: Vec<Example> = Vec::new();
    for block in doc.split("```").skip(1).step_by(2) {
        let (info, text) = block.split_once('\n').unwrap_or((block, ""));
        let info = info.trim();
        // The file-structure outline (whose `…` are placeholders) is not a recipe.
        let whole = text
            .strip_prefix("recipe \"")
            .filter(|_| !text.contains('…'));
        let Some(rest) = whole else {
            assert!(
                info != "recipe-error",
                "a `recipe-error` block must be a whole recipe"
            );
            continue;
        };
        assert!(
            ["", "recipe", "recipe-error"].contains(&info),
            "unknown fence `{info}`"
        );
        let name = rest.split('"').next().unwrap_or_default().to_string();
        assert!(
            found.iter().all(|e| e.name != name),
            "two examples are named `{name}`"
        );
        found.push(Example {
            name,
            error: info == "recipe-error",
            text: text.to_string(),
        });
    }
    found
}

fn load_example(e: &Example) -> Loaded {
    load_source(&format!("{}.recipe", e.name), &e.text, None)
}

#[test]
fn the_reference_examples_run_on_the_mlp_model() {
    let runnable: Vec<Example> = examples().into_iter().filter(|e| !e.error).collect();
    assert!(runnable.len() >= 10, "{} examples", runnable.len());
    // Independent runs of a few steps each on the largest model: in parallel, to keep the
    // suite fast in debug builds (a failing example panics its thread, which fails the scope).
    std::thread::scope(|s| {
        for e in &runnable {
            s.spawn(move || {
                let (text, warned) = passes(&load_example(e), "mlp", &e.name);
                assert!(!warned, "the example `{}` warns:\n{text}", e.name);
            });
        }
    });
}

#[test]
fn the_reference_error_examples_fail() {
    let errors: Vec<Example> = examples().into_iter().filter(|e| e.error).collect();
    assert!(!errors.is_empty(), "the reference shows no error");
    for e in &errors {
        let text = fails(&load_example(e), Some("mlp"), &e.name);
        let about = "an example of docs/recipe-language.md fenced as `recipe-error`";
        snapshot(&format!("doc_{}", e.name), about, &text);
    }
}

/// Each construct of the language, as it is spelt in a recipe.
const CONSTRUCTS: &[&str] = &[
    "requires dmove",
    "use std::",
    "param ",
    "pow2(",
    " where ",
    "enum(",
    ": float",
    ": bool",
    "choose ",
    " by dmd",
    " fixed",
    "pattern ",
    "-> ",
    "op Relu(",
    "rule ",
    " everywhere",
    " once",
    " at ",
    "for each ",
    "try {",
    "first {",
    "} or {",
    "repeat (max",
    "until fixpoint",
    "if ",
    "} else if ",
    "} else {",
    "let ",
    "expect ",
    "baseline.",
    "unsafe(",
    " because ",
    "print ",
    "note ",
];

#[test]
fn the_reference_has_a_runnable_example_of_every_construct() {
    let all: String = (examples().into_iter())
        .filter(|e| !e.error)
        .map(|e| e.text)
        .collect();
    let missing: Vec<&&str> = CONSTRUCTS.iter().filter(|c| !all.contains(**c)).collect();
    assert!(missing.is_empty(), "no runnable example uses {missing:?}");
}

/// A case renamed or removed leaves its snapshot behind; this keeps the snapshots and the cases
/// in step.
#[test]
fn every_snapshot_belongs_to_a_case() {
    let mut expected: Vec<String> = (cases("fail").into_iter())
        .map(|c| format!("fail_{}", c.name))
        .chain(
            cases("pass")
                .into_iter()
                .map(|c| format!("pass_{}", c.name)),
        )
        .chain(
            (examples().into_iter())
                .filter(|e| e.error)
                .map(|e| format!("doc_{}", e.name)),
        )
        .map(|n| format!("suite__recipes__{n}.snap"))
        .collect();
    expected.sort();
    let mut found: Vec<String> = std::fs::read_dir(root().join("tests/suite/snapshots"))
        .expect("the snapshots")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("suite__recipes__") && n.ends_with(".snap"))
        .collect();
    found.sort();
    let orphans: Vec<&String> = found.iter().filter(|f| !expected.contains(f)).collect();
    assert!(orphans.is_empty(), "snapshots without a case: {orphans:?}");
}
