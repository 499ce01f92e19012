//! What tests that depend on tools outside Rust share: recording a check that could not run
//! (`skip`) and ONNX Runtime as an independent oracle (`peer`).

pub mod peer;
pub mod skip;
