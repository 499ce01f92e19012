//! Patterns, matching with reasons, incremental re-matching, and the engine's traces, budgets,
//! lowered checks and compiled-C numerics.

mod common;

#[path = "pattern/cli.rs"]
mod cli;
#[path = "pattern/engine.rs"]
mod engine;
#[path = "pattern/incremental.rs"]
mod incremental;
#[path = "pattern/matching.rs"]
mod matching;
