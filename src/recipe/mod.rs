//! The recipe language: files people keep in their repos that say how to optimize a model.
//!
//! The pipeline, one concept per module:
//! `parse` (grammar/recipe.pest → [`ast`] with spans) → `modules` (load `use`d files and the
//! embedded standard library) → `check` (every name, schema, capture and type, all errors at
//! once) → `run` (the interpreter, calling the checked [`crate::Engine`] for every rewrite) →
//! `lock` (what a run decided, replayed by `dmove check`). `format` prints a file canonically.
//! Every finding is a [`Diagnostic`] with a span, rendered with its source by [`Sources`].

// Every recipe finding is a `Diagnostic` value, returned by value on cold paths (one per failed
// check or run, never in a loop), so boxing it in each `Result` would only add indirection.
#![allow(clippy::result_large_err)]

pub mod ast;
pub mod builtins;
pub mod check;
pub mod diag;
pub mod format;
pub mod lock;
pub mod modules;
pub mod parse;
pub mod patterns;
pub mod resolve;
pub mod run;
pub mod scripts;
pub mod session;
pub mod stdlib;

pub use check::check;
pub use diag::{Diagnostic, FileId, Severity, Sources, Span};
pub use format::format;
pub use modules::{load_file, load_source, load_tree, Loaded, Module};
pub use parse::parse;

/// What the fuzz target and its corpus replay run on one input: the formatter's laws (`None`
/// when the text does not parse, `Err` when a law breaks) and, on every input, loading and the
/// whole checker, which must answer with diagnostics and never panic.
pub fn fuzz_one(text: &str) -> Option<Result<(), String>> {
    let laws = format::check_laws(text);
    let loaded = load_source("fuzz.recipe", text, None);
    let _ = check(&loaded);
    laws
}
