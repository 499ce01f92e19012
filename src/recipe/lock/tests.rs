use super::*;
use crate::recipe::run::choose::Candidate;
use crate::transform::ParamValue as TValue;

fn step(t: &str, site: u32, tiles: i64, rule: Option<&str>, line: usize, hash: &str) -> LockedStep {
    LockedStep {
        script: None,
        transformation: t.to_string(),
        site: vec![NodeId(site)],
        params: Params::from([("tiles".to_string(), TValue::Ints(vec![tiles, 0]))]),
        rule: rule.map(str::to_string),
        line,
        hash_after: hash.to_string(),
    }
}

fn sample(model: &str) -> LockEntry {
    let chosen = BTreeMap::from([("tile".to_string(), ParamValue::Int(16))]);
    LockEntry {
        model: model.to_string(),
        model_sha256: "ab".repeat(32),
        dims: BTreeMap::from([("batch".to_string(), 1)]),
        shapes: BTreeMap::from([("x".to_string(), vec![1, 3, 8, 8])]),
        as_written: false,
        set: BTreeMap::new(),
        params: BTreeMap::from([
            ("tile".to_string(), ParamValue::Int(16)),
            ("alpha".to_string(), ParamValue::Float(0.1)),
            ("cpu::fuse".to_string(), ParamValue::Bool(true)),
        ]),
        decisions: vec![Decision {
            params: vec!["tile".to_string()],
            by: "dmd".to_string(),
            candidates: vec![
                Candidate {
                    values: chosen.clone(),
                    score: Some(1234.5678e-3),
                    error: None,
                },
                Candidate {
                    values: BTreeMap::from([("tile".to_string(), ParamValue::Int(32))]),
                    score: None,
                    error: Some("MapTiling refused".to_string()),
                },
            ],
            chosen,
        }],
        steps: vec![
            step("MapFusion", 27, 0, None, 3, "1111aaaa2222"),
            step("MapTiling", 19, 16, Some("schedule"), 14, "3f2a3f2a3f2a"),
        ],
        final_hash: "3f2a3f2a3f2a".to_string(),
    }
}

fn sample_lock() -> Lock {
    let mut lock = Lock::new("mlp", "cafe");
    lock.upsert(sample("models/mlp.onnx"));
    lock
}

#[test]
fn serializing_twice_gives_identical_bytes_and_reads_back() {
    let lock = sample_lock();
    let a = lock.to_json();
    let b = lock.clone().to_json();
    assert_eq!(a, b);
    assert!(a.ends_with("}\n") && !a.ends_with("\n\n"), "{a}");
    let back = Lock::from_json(Path::new("x.lock"), &a).expect("reads back");
    assert_eq!(back, lock);
    assert_eq!(back.to_json(), a);
}

#[test]
fn floats_and_values_keep_their_natural_json_form() {
    let text = sample_lock().to_json();
    assert!(text.contains("\"alpha\": 0.1,"), "{text}");
    assert!(text.contains("\"score\": 1.2345678"), "{text}");
    assert!(text.contains("\"tiles\": [\n"), "{text}");
    assert!(text.contains("\"n19\""), "{text}");
    // Keys of maps are sorted: the module's parameter sorts before the root's.
    let alpha = text.find("\"alpha\"").expect("alpha");
    let fuse = text.find("\"cpu::fuse\"").expect("fuse");
    let tile = text.find("\"tile\": 16").expect("tile");
    assert!(alpha < fuse && fuse < tile, "{text}");
    assert!(!text.contains("as_written"), "{text}");
}

#[test]
fn another_format_is_refused_not_misread() {
    let text = sample_lock()
        .to_json()
        .replace(&format!("\"format\": {FORMAT}"), "\"format\": 7");
    let err = Lock::from_json(Path::new("x.lock"), &text).expect_err("format 7");
    assert!(matches!(err, LockError::Format { found: 7, .. }), "{err:?}");
    let err = Lock::from_json(Path::new("x.lock"), "{").expect_err("not JSON");
    assert!(matches!(err, LockError::Malformed { .. }), "{err:?}");
}

#[test]
fn an_older_format_lock_is_read_with_a_note_and_rewritten_as_today_s_format() {
    for older in OLDEST_FORMAT..FORMAT {
        older_format_is_read(older);
    }
}

fn older_format_is_read(older: u32) {
    let text = sample_lock().to_json().replace(
        &format!("\"format\": {FORMAT}"),
        &format!("\"format\": {older}"),
    );
    let old = Lock::from_json(Path::new("x.lock"), &text).expect("an older format is read");
    assert_eq!(old.format, older);
    let notes = drift::compare_header(&old, &old.tool, &old.recipe_hash);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(!notes[0].fails());
    assert!(
        notes[0].to_string().contains("dmove check --update"),
        "{}",
        notes[0]
    );
    let (recipe, hash) = (old.recipe.clone(), old.recipe_hash.clone());
    assert_eq!(old.updated(&recipe, &hash, Vec::new()).format, FORMAT);
}

#[test]
fn upsert_replaces_the_matching_entry_and_keeps_the_others_sorted() {
    let mut lock = sample_lock();
    lock.upsert(sample("a.onnx"));
    let mut other_shape = sample("models/mlp.onnx");
    other_shape.shapes.insert("x".into(), vec![2, 3, 8, 8]);
    lock.upsert(other_shape);
    assert_eq!(lock.entries.len(), 3);
    let mut replaced = sample("models/mlp.onnx");
    replaced.final_hash = "new".into();
    lock.upsert(replaced);
    assert_eq!(lock.entries.len(), 3);
    let models: Vec<&str> = lock.entries.iter().map(|e| e.model.as_str()).collect();
    assert_eq!(models, ["a.onnx", "models/mlp.onnx", "models/mlp.onnx"]);
    assert_eq!(lock.entries[1].final_hash, "new");
    assert_eq!(lock.entries[2].shapes["x"], [2, 3, 8, 8]);
}

#[test]
fn an_identical_replay_has_no_drift() {
    assert!(compare(&sample("m.onnx"), &sample("m.onnx")).is_empty());
    // Rule and line are not compared: moving a rule does not invalidate a lock.
    let mut moved = sample("m.onnx");
    moved.steps[1].line = 40;
    moved.steps[1].rule = Some("tile_all".into());
    assert!(compare(&sample("m.onnx"), &moved).is_empty());
}

#[test]
fn a_changed_model_names_both_hashes() {
    let mut now = sample("m.onnx");
    now.model_sha256 = "cd".repeat(32);
    let drift = compare(&sample("m.onnx"), &now);
    assert_eq!(drift.len(), 1);
    let text = drift[0].to_string();
    assert!(
        text.contains(&"ab".repeat(32)) && text.contains(&"cd".repeat(32)),
        "{text}"
    );
    assert!(drift[0].fails());
}

#[test]
fn the_first_differing_step_is_named_with_rule_line_and_hashes() {
    let mut now = sample("m.onnx");
    now.params.insert("tile".into(), ParamValue::Int(32));
    now.steps[1] = step("MapTiling", 19, 32, Some("schedule"), 14, "9c1b9c1b9c1b");
    now.final_hash = "9c1b9c1b9c1b".into();
    let text: Vec<String> = compare(&sample("m.onnx"), &now)
        .iter()
        .map(Drift::to_string)
        .collect();
    assert_eq!(
        text,
        [
            "param tile: locked 16 → now 32",
            "step 2: locked MapTiling at n19 (tiles=16,0) from rule `schedule` (line 14) → \
             3f2a3f2a…, now MapTiling at n19 (tiles=32,0) → 9c1b9c1b…",
            "final IR hash: locked 3f2a3f2a…, now 9c1b9c1b…",
        ]
    );
}

#[test]
fn a_shorter_replay_reports_the_missing_step_and_the_count() {
    let mut now = sample("m.onnx");
    now.steps.pop();
    now.params.remove("alpha");
    now.final_hash = "1111aaaa2222".into();
    let drift = compare(&sample("m.onnx"), &now);
    let text: Vec<String> = drift.iter().map(Drift::to_string).collect();
    assert_eq!(text[0], "param alpha: locked 0.1 → now (absent)");
    assert!(
        text[1].starts_with("step 2: locked MapTiling at n19")
            && text[1].ends_with(", now no step (the run ended here)"),
        "{}",
        text[1]
    );
    assert_eq!(text[2], "step count: locked 2, now 1");
    assert!(drift.iter().all(Drift::fails));
}

#[test]
fn tool_and_recipe_changes_are_notes() {
    let lock = sample_lock();
    assert!(compare_header(&lock, &tool_version(), "cafe").is_empty());
    let notes = compare_header(&lock, "dmove 9.9.9", "beef");
    assert_eq!(notes.len(), 2);
    assert!(notes.iter().all(|d| !d.fails()));
    assert_eq!(
        notes[0].to_string(),
        format!("note: locked by {}, now dmove 9.9.9", tool_version())
    );
}

#[test]
fn lock_paths_sit_beside_the_recipe() {
    let lock = default_path(Path::new("recipes/mlp.recipe"));
    assert_eq!(lock, Path::new("recipes/mlp.recipe.lock"));
    assert_eq!(recipe_of(&lock), Some(PathBuf::from("recipes/mlp.recipe")));
    assert_eq!(recipe_of(Path::new("mlp.json")), None);
    assert_eq!(recipe_of(Path::new(".lock")), None);
    assert_eq!(
        model_path(Path::new("recipes/mlp.recipe.lock"), "../m.onnx"),
        Path::new("recipes/../m.onnx")
    );
    assert_eq!(
        model_path(Path::new("x.lock"), "m.onnx"),
        Path::new("./m.onnx")
    );
}

#[test]
fn model_paths_are_relative_with_forward_slashes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let models = dir.path().join("models");
    let recipes = dir.path().join("recipes");
    std::fs::create_dir_all(&models).expect("mkdir");
    std::fs::create_dir_all(&recipes).expect("mkdir");
    let m = models.join("m.onnx");
    std::fs::write(&m, b"x").expect("write");
    assert_eq!(relative_path(&m, &recipes), "../models/m.onnx");
    assert_eq!(relative_path(&m, dir.path()), "models/m.onnx");
    assert_eq!(relative_path(&m, &models), "m.onnx");
    assert_eq!(sha256_hex(b"x").len(), 64);
}

#[test]
fn entries_describe_their_bindings() {
    let mut e = sample("m.onnx");
    assert_eq!(e.describe(), "m.onnx (batch=1; x=1x3x8x8)");
    e.dims.clear();
    e.shapes.clear();
    assert_eq!(e.describe(), "m.onnx");
}

#[test]
fn a_replay_fixes_searched_decisions_but_not_defaults_or_sets() {
    let mut e = sample("m.onnx");
    let one = |k: &str, v: i64| BTreeMap::from([(k.to_string(), ParamValue::Int(v))]);
    for (by, key) in [
        ("fixed", "impl"),
        ("set", "rows"),
        ("locked", "cols"),
        ("bench(reps = 5)", "unroll"),
    ] {
        e.decisions.push(Decision {
            params: vec![key.to_string()],
            by: by.to_string(),
            candidates: Vec::new(),
            chosen: one(key, 1),
        });
    }
    let keys: Vec<String> = e.replayed().into_keys().collect();
    assert_eq!(keys, ["cols", "tile", "unroll"]);
}
