//! The integration tests, as one test binary.
//!
//! Every integration test binary links the whole dmove library; 45 of them made `cargo test`
//! link 45 copies (~85 MB each) on a fresh machine. Here each test area is a module of this one
//! crate instead: `NAME.rs`, or `NAME/mod.rs` with its parts beside it in `NAME/`. Run one area
//! with a module-path filter: `cargo test --test suite transform_props::`.
//!
//! Helpers several areas use are the modules listed first: `common` (small hand-built
//! programs, random ones for property tests), `steps` (applying transformations with every
//! check and comparing with the interpreter), `support` (tools outside Rust: recorded skips,
//! ONNX Runtime). An area shares its own helpers by name (`crate::conformance::cases`,
//! `crate::export_models::pipeline`, `crate::ops_reduce::c_tested`).
//!
//! The data the tests read stays in `tests/` (`fixtures/`, `recipes/`, `conformance/`); insta
//! keeps its snapshots beside the sources, in `tests/suite/snapshots/`.
//!
//! All areas share one process, so a test must not depend on process-wide state another may
//! change: a script's transformations register process-wide (tests about the built-ins ask
//! for `transform::builtins()`, not `all()`), and what must run with its own environment,
//! limits or signal handling runs in a `dmove` child process.

mod common;
mod steps;
mod support;

mod analysis;
mod build;
mod checks_proven;
mod cli;
mod codegen;
mod conformance;
mod doc_commands;
mod dtypes;
mod export_models;
mod fuzz;
mod import_idioms;
mod ir_text;
mod legacy_opsets;
mod lsp;
mod onnx_import;
mod onnx_versions;
mod ops_cnn;
mod ops_codegen;
mod ops_index;
mod ops_movement;
mod ops_recurrent;
mod ops_reduce;
mod ops_transformer;
mod pattern;
mod peer;
mod plots;
mod real_models;
mod recipe_check;
mod recipe_choose;
mod recipe_models;
mod recipe_run;
mod recipe_syntax;
mod recipes;
mod repl;
mod script;
mod scripting_docs;
mod transform;
mod transform_contract;
mod transform_fused;
mod transform_global;
mod transform_maps;
mod transform_operator;
mod transform_props;
mod typed_compute;
mod view;
