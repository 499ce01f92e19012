//! Data-movement analysis against known results: the published closed form for naive matmul,
//! the tiled-matmul bounds, a brute-force LRU stack, SHARDS against exact, IR traces checked by
//! hand, choosing by DMD, and the command line.
//!
//! The N = 128 tiled-matmul bounds are the heavy part: `cargo test --test suite analysis:: -- --ignored`.

mod choose;
mod cli;
mod known;
mod reuse;
mod trace;
