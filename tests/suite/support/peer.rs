//! ONNX Runtime as an independent oracle, shared by every test that compares with it
//! (`peer`, `export_models`).
//!
//! A missing peer is never a silent pass: with `DMOVE_REQUIRE_PEER=1` (CI sets it and installs
//! onnxruntime) the comparison panics; without it the skip is printed and tallied
//! ([`super::skip`]) and the comparison left out.

use super::skip::skip;
use dmove::bench::peer::{onnxruntime, PeerError, PeerRun};
use dmove::ir::Tensor;

/// Runs `model` in ONNX Runtime on `inputs`. `None` when onnxruntime is not installed and not
/// required (the skip is recorded, see [`super::skip`]); panics when it is required, or when
/// it is installed but fails.
pub fn run_peer(what: &str, model: &[u8], inputs: &[(String, Tensor)]) -> Option<PeerRun> {
    match onnxruntime(model, inputs, 0, 1) {
        Ok(run) => Some(run),
        Err(PeerError::Unavailable { why, .. }) => {
            skip(
                &format!("{what} against ONNX Runtime"),
                &format!("onnxruntime not installed ({why})"),
                "pip install onnxruntime numpy",
            );
            None
        }
        Err(e) => panic!("onnxruntime ({what}): {e}"),
    }
}
