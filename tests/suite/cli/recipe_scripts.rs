//! Scripts from the command line: a recipe that uses a standard script to choose its tiles and
//! a scripted transformation by name, a script run as the whole recipe (with its lock checked
//! by `dmove check`), and script errors shown at the script's line with the recipe's call.

use super::recipe_support::{project, read};
use super::support::{assert_clean_failure, assert_success, dmove, stderr, stdout};

const TILED: &str = r#"recipe "tiled" version "0.1.0"

use std::loops
use std::tiles
use std::interchange

main {
  apply Expand everywhere
  for each m in maps(depth = 0) {
    if params(m) == 2 {
      ScriptedInterchange(m, order = [1, 0])
    }
    loops::schedule(m, tiles::row_tile(m))
  }
  expect len(ops()) == 0, "every operator is lowered"
}
"#;

#[test]
fn a_recipe_uses_a_script_for_its_tiles_and_a_scripted_transformation_by_name() {
    let dir = project();
    let d = dir.path();
    std::fs::write(d.join("tiled.recipe"), TILED).unwrap();
    let o = dmove(&["run", "tiled.recipe", "--model", "models/mlp.onnx"], d);
    assert_success(&o);
    let lock: serde_json::Value = serde_json::from_str(&read(d, "tiled.recipe.lock")).unwrap();
    let steps = lock["entries"][0]["steps"].as_array().unwrap();
    let scripted: Vec<_> = (steps.iter())
        .filter(|s| s["transformation"] == "ScriptedInterchange")
        .collect();
    assert!(!scripted.is_empty(), "{steps:?}");
    let hash = dmove::script::hash_text(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/stdlib/interchange.rhai"
        ))
        .unwrap(),
    );
    assert!(
        scripted.iter().all(|s| s["script"] == hash.as_str()),
        "{scripted:?}"
    );
    assert!(steps
        .iter()
        .all(|s| s["transformation"] == "ScriptedInterchange" || s.get("script").is_none()));
    let check = dmove(&["check", "tiled.recipe"], d);
    assert_success(&check);
}

const SCRIPT: &str = r#"// Tiles every top-level map of the model along its first parameter.
fn main() {
    let steps = 0;
    for site in candidates("Expand") {
        apply("Expand", site);
    }
    for m in program().maps() {
        if m.scope() == () && m.params.len() >= 1 && m.params[0].extent == 32 {
            let tiles = [];
            for p in m.params { tiles.push(0); }
            tiles[0] = 8;
            apply("MapTiling", m, #{ tiles: tiles });
            steps += 1;
        }
    }
    if steps == 0 { throw "nothing to tile"; }
}
"#;

#[test]
fn a_script_runs_as_the_whole_recipe_with_a_lock_that_check_reproduces() {
    let dir = project();
    let d = dir.path();
    std::fs::write(d.join("tile.rhai"), SCRIPT).unwrap();
    let o = dmove(&["run", "tile.rhai", "--model", "models/mlp.onnx"], d);
    assert_success(&o);
    let lock: serde_json::Value = serde_json::from_str(&read(d, "tile.rhai.lock")).unwrap();
    let steps = lock["entries"][0]["steps"].as_array().unwrap();
    assert!(
        steps.iter().any(|s| s["transformation"] == "MapTiling"),
        "{steps:?}"
    );
    assert_success(&dmove(&["check", "tile.rhai"], d));
    // A changed script is noticed: the lock's recipe hash covers the script's text.
    std::fs::write(
        d.join("tile.rhai"),
        SCRIPT.replace("tiles[0] = 8", "tiles[0] = 4"),
    )
    .unwrap();
    let drifted = dmove(&["check", "tile.rhai"], d);
    assert!(!drifted.status.success(), "{}", stdout(&drifted));
}

#[test]
fn a_script_error_is_shown_at_the_script_line_and_the_recipe_call() {
    let dir = project();
    let d = dir.path();
    std::fs::write(
        d.join("bad.rhai"),
        "fn tile(m) {\n    let x = m.params;\n    x[99].extent\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("r.recipe"),
        "recipe \"r\" version \"0.1.0\"\nuse \"./bad.rhai\" as bad\n\nmain {\n  apply Expand everywhere\n  for each m in maps(depth = 0) {\n    print bad::tile(m)\n  }\n}\n",
    )
    .unwrap();
    let o = dmove(&["run", "r.recipe", "--model", "models/mlp.onnx"], d);
    assert_clean_failure(&o);
    let err = stderr(&o);
    for want in [
        "dmove::script::runtime",
        "bad.rhai:3",
        "r.recipe:7",
        "called here",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }
}

#[test]
fn a_runaway_scripted_check_is_a_definite_error_even_inside_try() {
    let dir = project();
    let d = dir.path();
    std::fs::write(
        d.join("spin.rhai"),
        "transformation(#{ name: \"SpinForever\", level: \"intra_operator\", doc: \"never decides\",\n  site: [#{ name: \"map\", node: \"map\", doc: \"a map\" }],\n  check: Fn(\"spin\"), rewrite: |e, s, a| () });\nfn spin(p, s, a) {\n    loop { }\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("r.recipe"),
        "recipe \"r\" version \"0.1.0\"\nuse \"./spin.rhai\" as spin\n\nmain {\n  apply Expand everywhere\n  try {\n    apply SpinForever once\n  }\n}\n",
    )
    .unwrap();
    let o = dmove(
        &[
            "run",
            "r.recipe",
            "--model",
            "models/mlp.onnx",
            "--script-time",
            "0.5",
        ],
        d,
    );
    assert_clean_failure(&o);
    let err = stderr(&o);
    for want in [
        "dmove::script::limit",
        "time limit",
        "spin.rhai:5",
        "r.recipe:7",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }
}

#[test]
fn transforms_lists_a_loaded_scripts_transformations() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/stdlib/interchange.rhai");
    let o = dmove(&["transforms", "--script", script], dir.path());
    assert_success(&o);
    let out = stdout(&o);
    assert!(
        out.contains("ScriptedInterchange (IntraOperator, scripted "),
        "{out}"
    );
    assert!(out.contains("MapInterchange (IntraOperator)\n"), "{out}");
    std::fs::write(dir.path().join("broken.rhai"), "fn f( {").unwrap();
    let o = dmove(&["transforms", "--script", "broken.rhai"], dir.path());
    assert_clean_failure(&o);
    assert!(
        stderr(&o).contains("dmove::script::syntax"),
        "{}",
        stderr(&o)
    );
}
