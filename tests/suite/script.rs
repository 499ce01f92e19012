//! Rhai scripts: the sandbox holds, scripted transformations are checked and recorded exactly
//! like built-ins, and script errors point at the script.

use crate::common;

use dmove::ir::NodeId;
use dmove::script::{self, ErrorKind, Limit, Limits};
use dmove::{find, program_hash, Checks, Engine, Layer, ParamValue, Params, Refusal};
use std::time::Duration;

fn load(name: &str, text: &str) -> std::sync::Arc<script::Script> {
    script::load(name, name, text, Limits::default()).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn stdlib(name: &str) -> String {
    std::fs::read_to_string(format!("{}/stdlib/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn order(v: &[i64]) -> Params {
    Params::from([("order".to_string(), ParamValue::Ints(v.to_vec()))])
}

/// The accumulation map of the matmul fixture (its map over i, j, k).
fn acc_map(p: &dmove::Program) -> NodeId {
    dmove::transform::explain(find("Parallelize").unwrap(), p, &Params::new())[1].site[0]
}

#[test]
fn the_scripted_interchange_rewrites_exactly_like_the_builtin() {
    load("interchange.rhai", &stdlib("interchange.rhai"));
    let scripted = find("ScriptedInterchange").expect("registered by loading the script");
    let builtin = find("MapInterchange").unwrap();
    let base = common::matmul(8, 4, 6);
    let at = acc_map(&base);
    let (mut a, mut b) = (base.clone(), base.clone());
    let mut engine = Engine::new(Checks::default());
    let sa = engine
        .apply(&mut a, builtin, &[at], &order(&[2, 0, 1]))
        .unwrap();
    let sb = engine
        .apply(&mut b, scripted, &[at], &order(&[2, 0, 1]))
        .unwrap();
    assert_eq!(sa.hash_after, sb.hash_after);
    assert_eq!(program_hash(&a), program_hash(&b));
    assert_eq!(sb.transformation, "ScriptedInterchange");
    assert!(
        sb.passed(Layer::Numerics).is_some(),
        "checked like a built-in"
    );
    // The same refusal for a non-permutation, before anything runs.
    let before = program_hash(&b);
    let refused = engine
        .apply(&mut b, scripted, &[at], &order(&[0, 0, 1]))
        .unwrap_err();
    assert!(
        matches!(&refused, Refusal::NotApplicable(na) if na.reason.contains("not a permutation") && na.fault.is_none()),
        "{refused}"
    );
    assert_eq!(program_hash(&b), before);
}

#[test]
fn the_scripted_interchange_matches_the_builtin_on_the_first_maps_of_the_demo_model() {
    load("interchange.rhai", &stdlib("interchange.rhai"));
    let (scripted, builtin) = (
        find("ScriptedInterchange").unwrap(),
        find("MapInterchange").unwrap(),
    );
    let cfg = dmove::demo::DemoOptions::default().config;
    let checks = Checks::default().lower(Layer::Numerics, "hash comparison only");
    let (baseline, _, _) = dmove::demo::programs(&cfg, 7, &checks).unwrap();
    let mut p = baseline.clone();
    dmove::expand_all(&mut p).unwrap();
    let mut engine = Engine::new(checks);
    let mut compared = 0;
    // The first 40 maps (the demo's maps come in a few shapes; every one is compared).
    for site in builtin.candidates(&p).into_iter().take(40) {
        let Some(dmove::ir::NodeKind::Map(m)) = p.node(site[0]).map(|n| &n.kind) else {
            continue;
        };
        let reversed: Vec<i64> = (0..m.params.len() as i64).rev().collect();
        let (mut a, mut b) = (p.clone(), p.clone());
        let ra = engine.apply(&mut a, builtin, &site, &order(&reversed));
        let rb = engine.apply(&mut b, scripted, &site, &order(&reversed));
        match (ra, rb) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x.hash_after, y.hash_after, "at {:?}", site);
                compared += 1;
            }
            (Err(x), Err(y)) => assert_eq!(
                x.to_string().replace("MapInterchange", "T"),
                y.to_string().replace("ScriptedInterchange", "T")
            ),
            (x, y) => panic!("the built-in said {x:?}, the script {y:?}"),
        }
    }
    assert!(compared > 10, "only {compared} maps compared");
}

const WRONG_SLOPE: &str = r#"
transformation(#{
    name: "SteeperLeakOops",
    level: "operator",
    doc: "a wrong rewrite: changes a LeakyRelu's slope",
    site: [#{ name: "act", node: "op", ops: ["LeakyRelu"], doc: "the activation" }],
    check: |program, site, args| (),
    rewrite: |edit, site, args| edit.set_attr(site[0], "alpha", 0.5),
});
"#;

const LEAKY: &str = r#"program "leaky"

data x: f32[4, 6] input
data y: f32[4, 6] output

signature (x) -> (y)

graph {
  n0 access x
  n1 library "act" LeakyRelu { alpha = 0.1 }
  n2 access y
  n0 -> n1 x[0:4, 0:6] -> in0
  n1 -> n2 out0 -> y[0:4, 0:6]
}
"#;

#[test]
fn a_script_that_changes_the_results_is_refused_and_rolled_back() {
    load("wrong_slope.rhai", WRONG_SLOPE);
    let t = find("SteeperLeakOops").unwrap();
    let mut p = dmove::ir::text::parse(LEAKY).unwrap().program;
    let site = t.candidates(&p);
    assert_eq!(site.len(), 1, "the one LeakyRelu");
    let before = dmove::ir::text::print_exact(&p);
    let mut engine = Engine::new(Checks::default());
    let refused = engine
        .apply(&mut p, t, &site[0], &Params::new())
        .unwrap_err();
    assert_eq!(refused.layer(), Some(Layer::Numerics), "{refused}");
    assert_eq!(
        dmove::ir::text::print_exact(&p),
        before,
        "rolled back byte for byte"
    );
}

fn limits() -> Limits {
    Limits {
        operations: 200_000,
        time: Duration::from_millis(300),
        ..Limits::default()
    }
}

fn failing(text: &str, limits: Limits) -> script::ScriptError {
    let s = script::load("t.rhai", "t.rhai", text, limits).expect("loads");
    s.call("run", ()).expect_err("stopped")
}

#[test]
fn a_runaway_loop_is_stopped_by_the_operation_limit_at_the_loop() {
    let text = "fn run() {\n    let x = 0;\n    loop { x += 1; }\n}\n";
    let e = failing(text, limits());
    assert_eq!(e.kind, ErrorKind::Limit(Limit::Operations), "{e:?}");
    assert_eq!(e.line, Some(3), "{e:?}");
}

#[test]
fn a_runaway_loop_is_stopped_by_the_time_limit_when_operations_are_plenty() {
    let text = "fn run() {\n    let x = 0;\n    while true { x += 1; }\n}\n";
    let generous = Limits {
        operations: 0,
        ..limits()
    };
    let started = std::time::Instant::now();
    let e = failing(text, generous);
    assert_eq!(e.kind, ErrorKind::Limit(Limit::Time), "{e:?}");
    assert_eq!(e.line, Some(3), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn deep_recursion_is_stopped() {
    let e = failing(
        "fn down(n) { down(n + 1) }\nfn run() { down(0) }\n",
        limits(),
    );
    assert_eq!(e.kind, ErrorKind::Limit(Limit::CallDepth), "{e:?}");
}

#[test]
fn no_api_reaches_the_file_system() {
    for attempt in [
        r#"fn run() { open_file("/etc/passwd") }"#,
        r#"fn run() { read_to_string("/etc/passwd") }"#,
        r#"fn run() { eval("1 + 1") }"#,
    ] {
        let e = match script::load("fs.rhai", "fs.rhai", attempt, limits()) {
            Ok(s) => s.call("run", ()).expect_err(attempt),
            Err(e) => e,
        };
        let refused = match e.kind {
            ErrorKind::Runtime => e.message.contains("not found"),
            ErrorKind::Syntax => e.message.contains("eval"),
            _ => false,
        };
        assert!(refused, "{attempt}: {e:?}");
    }
    let import = script::load(
        "imp.rhai",
        "imp.rhai",
        "import \"/etc/passwd\" as p;",
        limits(),
    )
    .unwrap_err();
    assert_eq!(import.kind, ErrorKind::Syntax, "{import:?}");
}

const SNEAKY: &str = r#"
transformation(#{
    name: "SneakyEdit",
    level: "intra_operator",
    doc: "tries to change the IR outside its rewrite",
    site: [#{ name: "map", node: "map", doc: "any map" }],
    check: Fn("sneak"),
    rewrite: |edit, site, args| (),
});
fn sneak(program, site, args) {
    apply("MapInterchange", site, #{ order: [0, 1] });
}
fn relabel(program) {
    let n = program.nodes()[0];
    n.label = "changed";
}
"#;

#[test]
fn a_script_cannot_mutate_the_ir_except_through_the_engine() {
    let s = load("sneaky.rhai", SNEAKY);
    let mut p = common::elementwise_chain(4, 3);
    let before = dmove::ir::text::print_exact(&p);
    let t = find("SneakyEdit").unwrap();
    let site = t.candidates(&p)[0].clone();
    let mut engine = Engine::new(Checks::default());
    let refused = engine.apply(&mut p, t, &site, &Params::new()).unwrap_err();
    let Refusal::NotApplicable(na) = &refused else {
        panic!("{refused}")
    };
    let fault = na
        .fault
        .as_ref()
        .expect("a script fault, not a silent refusal");
    assert!(
        fault.error.message.contains("not inside a transformation"),
        "{}",
        fault.error.message
    );
    // A view has no setter, and outside a call there is no program at all.
    let relabel = dmove::script::world::reading(&p, || {
        s.call("relabel", (dmove::script::views::ProgramView,))
    });
    let relabel = relabel.expect_err("a view has no setter");
    assert_eq!(relabel.kind, ErrorKind::Runtime, "{relabel:?}");
    assert!(relabel.message.contains("label"), "{}", relabel.message);
    assert_eq!(dmove::ir::text::print_exact(&p), before);
    let outside = s
        .call("relabel", (dmove::script::views::ProgramView,))
        .unwrap_err();
    assert!(
        outside.message.contains("no program is lent"),
        "{}",
        outside.message
    );
}

#[test]
fn declarations_are_checked_when_the_script_loads() {
    let typo =
        r#"transformation(#{ name: "Typo", level: "operator", doc: "", site: [], chekc: 1 });"#;
    let e = script::load("typo.rhai", "typo.rhai", typo, limits()).unwrap_err();
    assert!(e.message.contains("`chekc` is not a key"), "{e:?}");
    assert_eq!(e.kind, ErrorKind::Declaration, "{e:?}");
    assert_eq!(e.line, Some(1));
    let shadow = r#"transformation(#{ name: "MapTiling", level: "operator", doc: "", site: [#{name: "m", node: "map", doc: ""}], check: |p, s, a| (), rewrite: |e, s, a| () });"#;
    let e = script::load("shadow.rhai", "shadow.rhai", shadow, limits()).unwrap_err();
    assert!(e.message.contains("already exists"), "{e:?}");
}

const MALFORMED: &str = r#"
transformation(#{
    name: "AnswersWithANumber",
    level: "intra_operator",
    doc: "a buggy check: returns 42",
    site: [#{ name: "map", node: "map", doc: "any map" }],
    check: |program, site, args| 42,
    rewrite: |edit, site, args| (),
});
"#;

#[test]
fn a_check_that_answers_neither_applies_nor_a_reason_is_a_fault_of_the_script() {
    load("malformed.rhai", MALFORMED);
    let t = find("AnswersWithANumber").unwrap();
    let mut p = common::elementwise_chain(4, 3);
    let site = t.candidates(&p)[0].clone();
    let refused = Engine::new(Checks::default())
        .apply(&mut p, t, &site, &Params::new())
        .unwrap_err();
    assert!(refused.is_script_fault(), "{refused}");
    assert!(
        refused.to_string().contains("the check returned i64"),
        "{refused}"
    );
}

/// A script `name` declaring one transformation `ReloadProbe` whose doc is `doc`.
fn reload_probe(doc: &str) -> String {
    format!(
        r#"transformation(#{{ name: "ReloadProbe", level: "operator", doc: "{doc}", site: [#{{name: "m", node: "map", doc: ""}}], check: |p, s, a| true, rewrite: |e, s, a| () }});"#
    )
}

#[test]
fn an_edited_script_replaces_its_own_transformations_and_no_other_file_can_take_them() {
    let doc = || find("ReloadProbe").expect("registered").schema().doc;
    script::load(
        "probe.rhai",
        "/a/probe.rhai",
        &reload_probe("first"),
        limits(),
    )
    .unwrap();
    assert_eq!(doc(), "first");
    script::load(
        "probe.rhai",
        "/a/probe.rhai",
        &reload_probe("edited"),
        limits(),
    )
    .unwrap();
    assert_eq!(doc(), "edited", "the edited text replaces the first one");
    script::load(
        "probe.rhai",
        "/a/probe.rhai",
        &reload_probe("first"),
        limits(),
    )
    .unwrap();
    assert_eq!(
        doc(),
        "first",
        "going back to the first text (an undo) restores it"
    );
    let other = script::load("probe.rhai", "/b/probe.rhai", &reload_probe("b"), limits());
    let e = other.expect_err("another file declaring the same name is refused");
    assert!(e.message.contains("already exists"), "{e:?}");
    assert_eq!(doc(), "first", "a refused load changes nothing");
    let count = dmove::transform::all()
        .iter()
        .filter(|t| t.name() == "ReloadProbe")
        .count();
    assert_eq!(count, 1, "one registration at a time");
}
