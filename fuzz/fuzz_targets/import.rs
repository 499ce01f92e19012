//! Arbitrary bytes as an ONNX model: decoding, the model checks and the import must return
//! errors, never panic (issue 3, "Bad input").
#![no_main]

use dmove::onnx::{import_bytes, ImportOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = import_bytes(data, &ImportOptions::default());
});
