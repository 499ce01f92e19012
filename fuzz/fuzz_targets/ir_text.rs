//! Arbitrary text as textual IR: the parser must return located errors, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = dmove::ir::text::parse(text);
    }
});
