//! `dmove demo --json` on a small encoder layer: every step is a complete, checked record.

use super::support::{assert_success, dmove, stdout};
use serde_json::Value;

/// Keys whose values are node ids or lists of them.
const NODE_KEYS: [&str; 7] = [
    "site", "touched", "added", "removed", "modified", "node", "nodes",
];

fn is_node_id(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.strip_prefix('n')
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Every value under a node-id key anywhere in `v` is an `"nNN"` string (or a list of them),
/// and no string anywhere is a Rust debug form of an id.
fn check_node_ids(v: &Value, path: &str, seen: &mut usize) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let at = format!("{path}.{k}");
                if NODE_KEYS.contains(&k.as_str()) {
                    let ids: Vec<&Value> = match x {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for id in ids {
                        assert!(is_node_id(id), "{at}: {id} is not an `nNN` string");
                        *seen += 1;
                    }
                }
                check_node_ids(x, &at, seen);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check_node_ids(x, &format!("{path}[{i}]"), seen);
            }
        }
        Value::String(s) => assert!(!s.contains("NodeId("), "{path}: {s}"),
        _ => {}
    }
}

#[test]
fn every_step_of_a_small_demo_is_a_complete_checked_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "demo",
        "--json",
        "--seq",
        "16",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--ffn",
        "64",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--no-peer",
    ];
    let o = dmove(&args, dir.path());
    assert_success(&o);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("the report is JSON");
    assert_eq!(v["config"]["seq"], 16);
    assert_eq!(v["config"]["hidden"], 32);
    let steps = v["steps"].as_array().expect("`steps` is an array");
    assert!(!steps.is_empty(), "the demo applied no steps");
    let mut previous_hash: Option<&str> = None;
    for (i, step) in steps.iter().enumerate() {
        let at = format!("steps[{i}]");
        let t = step["transformation"].as_str().expect("transformation");
        assert!(
            dmove::transform::builtins().iter().any(|x| x.name() == t),
            "{at}: `{t}` is no built-in transformation"
        );
        let site = step["site"].as_array().expect("site");
        assert!(!site.is_empty(), "{at}: empty site");
        assert!(site.iter().all(is_node_id), "{at}: site {site:?}");
        assert!(
            step["params"].is_object(),
            "{at}: params {}",
            step["params"]
        );
        let checks = step["checks"].as_array().expect("checks");
        let layers: Vec<&str> = checks
            .iter()
            .map(|c| c["layer"].as_str().expect("layer"))
            .collect();
        assert_eq!(layers, ["structural", "legality", "numerics"], "{at}");
        for c in checks {
            assert_eq!(
                c["outcome"], "passed",
                "{at}: a lowered or unknown layer: {c}"
            );
        }
        let before = step["hash_before"].as_str().expect("hash_before");
        let after = step["hash_after"].as_str().expect("hash_after");
        for h in [before, after] {
            assert!(
                !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()),
                "{at}: hash `{h}`"
            );
        }
        assert_ne!(before, after, "{at}: a step that changed nothing");
        if let Some(prev) = previous_hash {
            assert_eq!(prev, before, "{at}: steps do not chain");
        }
        previous_hash = Some(after);
    }
    let mut seen = 0;
    check_node_ids(&v, "", &mut seen);
    assert!(seen >= steps.len(), "only {seen} node ids found");
}
