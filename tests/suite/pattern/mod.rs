//! Patterns, matching with reasons, incremental re-matching, and the engine's traces, budgets,
//! lowered checks and compiled-C numerics.

mod cli;
mod engine;
mod incremental;
mod matching;
