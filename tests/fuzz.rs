//! Fuzzing without nightly: the inputs that once crashed a fuzz target (`fuzz/fuzz_targets`)
//! are replayed on every `cargo test`, and an ignored test mutates seed inputs for a bounded
//! time through the same entry points, for machines where libFuzzer cannot run:
//!
//! ```text
//! DMOVE_FUZZ_SECS=300 cargo test --release --test fuzz -- --ignored --nocapture
//! ```
//!
//! Inputs that panic are written to `target/fuzz-crashes/<target>/`; minimise them and add them
//! under `tests/fixtures/fuzz/<target>/`.

use dmove::ir::text::{parse, print_exact};
use dmove::onnx::{import_bytes, import_file, ImportOptions, ModelBuilder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The body of `fuzz/fuzz_targets/import.rs`.
fn import_target(data: &[u8]) {
    let _ = import_bytes(data, &ImportOptions::default());
}

/// The body of `fuzz/fuzz_targets/ir_text.rs`.
fn ir_text_target(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse(text);
    }
}

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 2] = [("import", import_target), ("ir_text", ir_text_target)];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn recorded_crashes_stay_fixed() {
    for (name, target) in TARGETS {
        let dir = fixtures().join("fuzz").join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).expect("readable fixture");
            let outcome = catch_unwind(AssertUnwindSafe(|| target(&data)));
            assert!(outcome.is_ok(), "{} panics again", file.display());
        }
    }
}

/// Valid inputs to mutate: the ONNX fixtures and in-memory models for `import`, their printed
/// IR for `ir_text`.
fn seeds() -> [(Target, Vec<Vec<u8>>); 2] {
    let mut models: Vec<Vec<u8>> = ["mlp.onnx", "typed_fields.onnx"]
        .iter()
        .map(|f| std::fs::read(fixtures().join(f)).expect("fixture"))
        .collect();
    models.push(
        ModelBuilder::new("shapes", 13)
            .input("x", ["N", "3", "4"])
            .initializer_i64("axes", &[1], vec![0])
            .initializer("w", &[4], vec![0.5; 4])
            .node("Shape", &["x"], &["s"], vec![])
            .node("Identity", &["x"], &["x1"], vec![])
            .node("Dropout", &["x1"], &["x2"], vec![])
            .node("Mul", &["x2", "w"], &["y"], vec![])
            .output("y", ["N", "3", "4"])
            .encode(),
    );
    let mlp = import_file(&fixtures().join("mlp.onnx"), &ImportOptions::default()).expect("mlp");
    let texts = vec![print_exact(&mlp).into_bytes()];
    [(import_target as Target, models), (ir_text_target, texts)]
}

/// One random edit: flip bits, overwrite with boundary bytes, insert, delete, duplicate or
/// truncate a range, or splice in part of another seed.
fn mutate(input: &mut Vec<u8>, donor: &[u8], rng: &mut ChaCha8Rng) {
    if input.is_empty() {
        input.push(rng.gen());
        return;
    }
    let at = rng.gen_range(0..input.len());
    match rng.gen_range(0..7) {
        0 => input[at] ^= 1 << rng.gen_range(0..8),
        1 => input[at] = [0x00, 0x01, 0x7f, 0x80, 0xff][rng.gen_range(0..5)],
        2 => input.insert(at, rng.gen()),
        3 => {
            let end = (at + rng.gen_range(1..16)).min(input.len());
            input.drain(at..end);
        }
        4 => {
            let end = (at + rng.gen_range(1..32)).min(input.len());
            let chunk = input[at..end].to_vec();
            input.splice(at..at, chunk);
        }
        5 => input.truncate(at.max(1)),
        _ if !donor.is_empty() => {
            let from = rng.gen_range(0..donor.len());
            let end = (from + rng.gen_range(1..64)).min(donor.len());
            input.splice(at..at, donor[from..end].iter().copied());
        }
        _ => input[at] = rng.gen(),
    }
}

#[test]
#[ignore = "runs for DMOVE_FUZZ_SECS seconds (default 60); see the module docs"]
fn fuzz_for_a_while() {
    let secs: u64 = std::env::var("DMOVE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-crashes");
    let mut rng = ChaCha8Rng::seed_from_u64(secs);
    let mut crashes = Vec::new();
    let all = seeds();
    for ((name, _), (target, corpus)) in TARGETS.iter().zip(all) {
        let deadline = Instant::now() + Duration::from_secs(secs / 2);
        let mut runs = 0u64;
        while Instant::now() < deadline {
            let mut input = corpus[rng.gen_range(0..corpus.len())].clone();
            let donor = &corpus[rng.gen_range(0..corpus.len())];
            for _ in 0..rng.gen_range(1..8) {
                mutate(&mut input, donor, &mut rng);
            }
            runs += 1;
            if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
                let dir = out.join(name);
                std::fs::create_dir_all(&dir).expect("crash directory");
                let file = dir.join(hex::encode(&Sha256::digest(&input)[..8]));
                std::fs::write(&file, &input).expect("crash file");
                crashes.push(file);
            }
        }
        eprintln!("{name}: {runs} inputs in {}s", secs / 2);
    }
    assert!(crashes.is_empty(), "crashing inputs: {crashes:?}");
}
