//! ONNX Runtime as an independent oracle, shared by every test that compares with it
//! (`tests/peer.rs`, `tests/export_models.rs`).
//!
//! A missing peer is never a silent pass: with `DMOVE_REQUIRE_PEER=1` (CI sets it and installs
//! onnxruntime) the comparison panics; without it the test prints
//! `SKIPPED: onnxruntime not installed …` straight to stderr (past the test harness's output
//! capture, so the line shows in a normal `cargo test` run) and leaves the comparison out.

use dmove::bench::peer::{onnxruntime, PeerError, PeerRun};
use dmove::ir::Tensor;
use std::io::Write;

/// Whether the environment demands the peer: `DMOVE_REQUIRE_PEER` set to anything but empty
/// or `0`.
pub fn peer_required() -> bool {
    std::env::var("DMOVE_REQUIRE_PEER").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Runs `model` in ONNX Runtime on `inputs`. `None` when onnxruntime is not installed and not
/// required (after printing the SKIPPED line naming `what`); panics when it is required, or when
/// it is installed but fails.
pub fn run_peer(what: &str, model: &[u8], inputs: &[(String, Tensor)]) -> Option<PeerRun> {
    match onnxruntime(model, inputs, 0, 1) {
        Ok(run) => Some(run),
        Err(PeerError::Unavailable { why, .. }) => {
            assert!(
                !peer_required(),
                "DMOVE_REQUIRE_PEER is set but onnxruntime is not available ({why}): \
                 `{what}` cannot compare with ONNX Runtime"
            );
            // Written to the process's stderr, not through `eprintln!`, which the test harness
            // captures and hides for passing tests.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: onnxruntime not installed ({why}): `{what}` did not compare with \
                 ONNX Runtime; set DMOVE_REQUIRE_PEER=1 to make this a failure"
            );
            None
        }
        Err(e) => panic!("onnxruntime ({what}): {e}"),
    }
}
