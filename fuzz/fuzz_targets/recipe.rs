//! Arbitrary text as a recipe: the parser and the checker must return located errors, never
//! panic, and what parses must format to text that parses to the same syntax and formats to
//! itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(Err(broken)) = dmove::recipe::fuzz_one(text) {
            panic!("{broken}");
        }
    }
});
