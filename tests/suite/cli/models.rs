//! `dmove models`: writes exactly the models the shipped locks pin (their SHA-256 computed here,
//! independently of dmove's own hashing), so the locks of `recipes/` can be checked in a fresh
//! clone; `--list` writes nothing; an unwritable directory is a clean error naming it.

use super::support::{assert_success, dmove, flat, stderr, stdout};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn recipes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recipes")
}

/// Every `models/…` file a lock in `recipes/` names, with the SHA-256 it records (`mlp` is
/// locked against a test fixture and is not among them).
fn locked_models() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(recipes_dir()).expect("read recipes/") {
        let path = entry.expect("entry").path();
        if !path.to_string_lossy().ends_with(".recipe.lock") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read lock");
        let lock: serde_json::Value = serde_json::from_str(&text).expect("lock is JSON");
        for e in lock["entries"].as_array().expect("entries") {
            let model = e["model"].as_str().expect("model");
            if let Some(file) = model.strip_prefix("models/") {
                let sha = e["model_sha256"].as_str().expect("model_sha256");
                out.insert(file.to_string(), sha.to_string());
            }
        }
    }
    out
}

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).expect("read model")))
}

#[test]
fn models_writes_exactly_what_the_locks_pin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let o = dmove(&["models", "-o", "models"], d);
    assert_success(&o);
    let written: Vec<String> = std::fs::read_dir(d.join("models"))
        .expect("models/ exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let locked = locked_models();
    assert_eq!(
        written.len(),
        locked.len(),
        "written {written:?}, locked {locked:?}"
    );
    let out = stdout(&o);
    for (file, sha) in &locked {
        let path = d.join("models").join(file);
        assert_eq!(&sha256(&path), sha, "models/{file} is not the locked model");
        let size = std::fs::metadata(&path).expect("metadata").len();
        let line = format!(
            "wrote {} ({size} bytes)",
            Path::new("models").join(file).display()
        );
        assert!(out.lines().any(|l| l == line), "no `{line}` in:\n{out}");
    }
    // That the locks then replay is `.ci/run`'s `dmove models` + `dmove check recipes/*.recipe`
    // (release; the smallest, bert, takes about a minute in a debug build).
}

#[test]
fn list_prints_the_names_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let o = dmove(&["models", "--list"], d);
    assert_success(&o);
    let names: Vec<String> = stdout(&o).lines().map(|l| format!("{l}.onnx")).collect();
    let locked: Vec<String> = locked_models().into_keys().collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, locked);
    assert_eq!(
        std::fs::read_dir(d).expect("read").count(),
        0,
        "--list wrote"
    );
}

#[test]
fn an_unwritable_directory_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // A regular file where a directory is needed fails for every user, root included.
    std::fs::write(d.join("taken"), b"").expect("write");
    let o = dmove(&["models", "-o", "taken/models"], d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = flat(&stderr(&o));
    assert!(err.contains("cannot write taken/models"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(stdout(&o), "");
}
