//! `dmove demo`: the whole pipeline on a built-in transformer encoder layer.

pub mod schedule;
