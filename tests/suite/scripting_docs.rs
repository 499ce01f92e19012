//! The scripting reference (`docs/scripting.md`) is tested: every ```rhai block loads with
//! `dmove::script::load`, or — when the line before its fence is `<!-- error: CODE -->` — fails
//! with that diagnostic code (when it loads, or when its `example()` or `main()` is called).
//! A block that defines `fn example()` is called with a program lent read-only, as a
//! transformation's check sees it; one that defines `fn main()` is called as a recipe calls a
//! script function, in a session whose actions apply through the engine. Both run on two small
//! programs: a lowered matmul (maps only) and the MLP fixture at the operator level.

use crate::common;

use dmove::onnx::{import_file, ImportOptions};
use dmove::script::world::{in_session, reading, Session};
use dmove::script::{self, Limits, Script, ScriptError};
use dmove::{Checks, Engine, Program};
use std::path::Path;
use std::sync::Arc;

/// One ```rhai block of the reference.
struct Block {
    /// 1-based line of the fence, to name the block in failures.
    line: usize,
    /// The code the block must fail with and a part of its message, from a
    /// `<!-- error: CODE "part" -->` line before it.
    error: Option<(String, String)>,
    text: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every ```rhai block of the reference, with the expectation written before it.
fn blocks() -> Vec<Block> {
    let doc = std::fs::read_to_string(root().join("docs/scripting.md")).expect("the reference");
    let lines: Vec<&str> = doc.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim();
        if !fence.starts_with("```") || fence == "```" {
            i += 1;
            continue;
        }
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .unwrap_or_else(|| panic!("the fence at line {} is never closed", i + 1));
        if fence == "```rhai" {
            let before = lines[..i].iter().rev().find(|l| !l.trim().is_empty());
            let error = before
                .and_then(|l| l.trim().strip_prefix("<!-- error:"))
                .and_then(|l| l.strip_suffix("-->"))
                .map(|e| {
                    let (code, part) = e.trim().split_once(' ').unwrap_or((e.trim(), ""));
                    (code.to_string(), part.trim().trim_matches('"').to_string())
                });
            found.push(Block {
                line: i + 1,
                error,
                text: lines[i + 1..end].join("\n") + "\n",
            });
        }
        i = end + 1;
    }
    found
}

/// The programs examples run on.
fn programs() -> Vec<(&'static str, Program)> {
    let mlp = import_file(
        &root().join("tests/fixtures/mlp.onnx"),
        &ImportOptions::default(),
    )
    .expect("the mlp fixture imports");
    vec![("matmul 8×4×6", common::matmul(8, 4, 6)), ("mlp", mlp)]
}

fn defines(s: &Script, name: &str) -> bool {
    s.functions()
        .iter()
        .any(|(f, arity)| f == name && *arity == 0)
}

/// Calls the block's `example()` (program lent read-only) and `main()` (in a session) on `p`;
/// the number of steps `main()` applied.
fn exercise(s: &Arc<Script>, p: &Program) -> Result<usize, ScriptError> {
    // What the functions return is theirs to print; only their failure matters here.
    if defines(s, "example") {
        let _ = reading(p, || s.call("example", ()))?;
    }
    if !defines(s, "main") {
        return Ok(0);
    }
    // Every check runs, numerics included: an example's rewrite must be a correct one.
    let session = Session {
        program: p.clone(),
        engine: Engine::new(Checks::default()),
        steps: Vec::new(),
        measure: false,
    };
    let (result, session) = in_session(session, || s.call("main", ()));
    let _ = result?;
    Ok(session.steps.len())
}

#[test]
fn every_rhai_block_of_the_reference_loads_and_runs() {
    let blocks = blocks();
    assert!(
        blocks.len() >= 10,
        "docs/scripting.md has only {} rhai blocks",
        blocks.len()
    );
    assert!(
        blocks.iter().any(|b| b.error.is_some()),
        "the reference shows no error"
    );
    let programs = programs();
    for b in &blocks {
        let name = format!("docs/scripting.md:{}", b.line);
        let outcome = script::load(&name, &name, &b.text, Limits::default()).and_then(|s| {
            let mut steps = 0;
            for (_, p) in &programs {
                steps += exercise(&s, p)?;
            }
            Ok((s, steps))
        });
        match (&b.error, outcome) {
            (None, Ok((s, steps))) => assert!(
                steps > 0 || !defines(&s, "main"),
                "{name}: its main() applies nothing on either program"
            ),
            (None, Err(e)) => panic!("{name}: {} ({e:?})", e.code()),
            (Some((code, part)), Err(e)) => {
                assert_eq!(e.code(), code, "{name}: {e:?}");
                assert!(e.message.contains(part.as_str()), "{name}: {e:?}");
            }
            (Some((code, _)), Ok(_)) => panic!("{name} should fail with {code}, and did not"),
        }
    }
}

/// The reference documents every function and property the scripting API registers (the
/// names a script can call), so a new one cannot be added without its documentation.
#[test]
fn the_reference_names_every_registered_function() {
    let doc = std::fs::read_to_string(root().join("docs/scripting.md")).expect("the reference");
    let api: &[&str] = &[
        // Program
        ".name",
        ".inputs",
        ".outputs",
        ".hash",
        ".nodes()",
        ".maps()",
        ".operators()",
        ".node(",
        ".data(",
        ".data_names()",
        ".symbols()",
        // Node
        ".id",
        ".kind",
        ".label",
        ".op",
        ".attrs",
        ".data",
        ".schedule",
        ".params",
        ".inputs()",
        ".outputs()",
        ".body()",
        ".scope()",
        // Memlet
        ".subset",
        ".volume",
        ".wcr",
        ".src",
        ".dst",
        ".src_conn",
        ".dst_conn",
        // Data
        ".dtype",
        ".shape",
        ".storage",
        ".elements",
        ".element_bytes",
        // Edit
        ".reorder_params(",
        ".set_schedule(",
        ".set_attr(",
        ".set_label(",
        ".rename_symbol(",
        "edit.apply(",
        // actions
        "program()",
        "apply(",
        "applies(",
        "candidates(",
        "transformations()",
        "dmd()",
        "bytes_moved()",
        "bench(",
        "cache_sizes()",
        "transformation(#{",
        // diagnostics
        "dmove::script::syntax",
        "dmove::script::runtime",
        "dmove::script::limit",
        "dmove::script::declaration",
    ];
    let missing: Vec<&&str> = api.iter().filter(|n| !doc.contains(**n)).collect();
    assert!(
        missing.is_empty(),
        "docs/scripting.md never shows {missing:?}"
    );
}
