//! The recipe interpreter end to end: recipes loaded from text and run on small programs
//! (the matmul fixture, and an element-wise chain imported from ONNX and lowered).

use dmove::check::fixtures::matmul;
use dmove::ir::{NodeKind, Program, Schedule, SymExpr};
use dmove::onnx::{import, ImportOptions, ModelBuilder};
use dmove::recipe::modules::{load_source, Loaded};
use dmove::recipe::run::{run, ExpectOutcome, RunError, RunOptions, RunReport};
use dmove::transform::engine::{program_hash, Checks};

fn load(text: &str) -> Loaded {
    let l = load_source("test.recipe", text, None);
    assert!(
        !l.has_errors(),
        "{}",
        l.sources.render_plain(&l.diagnostics)
    );
    l
}

fn opts() -> RunOptions {
    RunOptions {
        checks: Checks::default(),
        ..RunOptions::default()
    }
}

fn mm() -> Program {
    matmul(
        SymExpr::int(8),
        SymExpr::int(8),
        SymExpr::int(8),
        Schedule::Sequential,
    )
}

/// `y = tanh(sigmoid(relu(x)))` on 4×8, lowered: three element-wise maps in a chain.
fn chain() -> Program {
    let model = ModelBuilder::new("chain", 17)
        .input("x", [4i64, 8])
        .output("y", [4i64, 8])
        .node("Relu", &["x"], &["a"], vec![])
        .node("Sigmoid", &["a"], &["b"], vec![])
        .node("Tanh", &["b"], &["y"], vec![])
        .build();
    let mut p = import(&model, &ImportOptions::default()).expect("imports");
    dmove::expand_all(&mut p).expect("lowers");
    p
}

fn maps(p: &Program) -> usize {
    let mut n = 0;
    p.graph.walk(&mut |node| {
        if matches!(node.kind, NodeKind::Map(_)) {
            n += 1;
        }
    });
    n
}

fn top_maps(p: &Program) -> usize {
    (p.graph.nodes())
        .filter(|n| matches!(n.kind, NodeKind::Map(_)))
        .count()
}

fn ok(text: &str, p: &mut Program) -> RunReport {
    ok_with(text, p, &opts())
}

fn ok_with(text: &str, p: &mut Program, o: &RunOptions) -> RunReport {
    let l = load(text);
    match run(&l, p, o) {
        Ok(r) => r,
        Err(e) => panic!("{}", l.sources.render_plain(&[e.diagnostic])),
    }
}

/// Runs a recipe expected to fail; returns the error and its rendering.
fn fails(text: &str, p: &mut Program) -> (RunError, String) {
    let l = load(text);
    match run(&l, p, &opts()) {
        Ok(r) => panic!("expected a failure, got {} steps", r.steps.len()),
        Err(e) => {
            let shown = l.sources.render_plain(std::slice::from_ref(&e.diagnostic));
            (e, shown)
        }
    }
}

#[test]
fn let_if_print_and_note() {
    let mut p = mm();
    let r = ok(
        r#"main {
  let n = len(maps())
  if n > 1 { print "maps:", n } else { print "few" }
  note "checked " + "twice"
  let acc = maps()[1]
  print name(acc), params(acc), loop_order(acc), output_params(acc)
}"#,
        &mut p,
    );
    assert_eq!(r.printed[0], "maps: 2");
    assert!(
        r.printed[1].starts_with("map \"acc\" (n"),
        "{:?}",
        r.printed
    );
    assert!(r.printed[1].ends_with(" 3 [0, 2, 1] 1"), "{:?}", r.printed);
    assert_eq!(r.notes, ["checked twice"]);
    assert!(r.steps.is_empty());
}

#[test]
fn a_transformation_call_records_its_step_and_rule() {
    let mut p = mm();
    let r = ok(
        r#"rule tile(m: map) {
  MapTiling(m, tiles = [4, 0, 0])
}
main {
  tile(maps(depth = 0)[1])
  Parallelize(maps(depth = 0)[0])
}"#,
        &mut p,
    );
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[0].step.transformation, "MapTiling");
    assert_eq!(r.steps[0].rule.as_deref(), Some("tile"));
    assert_eq!(r.steps[1].rule, None);
}

#[test]
fn not_applicable_outside_try_names_the_node_and_the_reason() {
    let mut p = mm();
    let (e, shown) = fails("main {\n  MapTiling(maps()[0], tiles = [0, 0])\n}", &mut p);
    assert_eq!(e.diagnostic.code, "dmove::recipe::not_applicable");
    assert!(
        e.diagnostic
            .message
            .starts_with("`MapTiling` does not apply at map \"init\" (n"),
        "{shown}"
    );
    assert!(e.diagnostic.note.is_some(), "{shown}");
    assert_eq!(e.diagnostic.span.start, 9, "{shown}");
}

#[test]
fn try_rolls_back_and_records_the_skip() {
    let mut p = mm();
    let before = program_hash(&p);
    let r = ok(
        r#"main {
  let m = maps()[1]
  try {
    MapTiling(m, tiles = [4, 0, 0])
    MapTiling(maps()[0], tiles = [0, 0])
  }
}"#,
        &mut p,
    );
    assert_eq!(program_hash(&p), before, "the first tiling was rolled back");
    assert!(r.steps.is_empty());
    assert_eq!(r.skipped.len(), 1);
    assert!(
        r.skipped[0].reason.contains("does not apply"),
        "{:?}",
        r.skipped
    );
}

#[test]
fn first_takes_the_first_alternative_that_succeeds_and_failed_ones_leave_no_trace() {
    let mut p = mm();
    let r = ok(
        r#"main {
  first {
    print "tried"
    MapTiling(maps()[1], tiles = [4, 0, 0])
    MapTiling(maps()[0], tiles = [0, 0])
  } or {
    Parallelize(maps()[0])
  }
}"#,
        &mut p,
    );
    assert!(r.printed.is_empty(), "{:?}", r.printed);
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].step.transformation, "Parallelize");
}

#[test]
fn first_with_every_alternative_failing_fails_like_the_last() {
    let mut p = mm();
    let (e, _) = fails(
        "main {\n  first { MapTiling(maps()[0], tiles = [0, 0]) } or { MapTiling(maps()[0], tiles = [0, 0]) }\n}",
        &mut p,
    );
    assert_eq!(e.diagnostic.code, "dmove::recipe::not_applicable");
}

#[test]
fn a_stale_handle_names_the_step_that_consumed_it() {
    let mut p = chain();
    let (e, shown) = fails(
        r#"main {
  let a = maps()[0]
  let b = maps()[1]
  MapFusion(a, b)
  print exists(a), exists(b)
  print params(a)
}"#,
        &mut p,
    );
    assert_eq!(e.diagnostic.code, "dmove::recipe::stale_handle", "{shown}");
    assert!(
        e.diagnostic.message.contains("which step 1 (MapFusion at"),
        "{shown}"
    );
    assert!(
        e.diagnostic
            .message
            .starts_with("handle `a` refers to map \"relu_0\""),
        "{shown}"
    );
    assert_eq!(e.report.steps.len(), 1);
    assert_eq!(e.report.printed, ["false true"]);
}

const FUSE: &str = r#"pattern chain {
  a = map
  t = data[kind = transient]
  b = map
  a -> t -> b
}
rule fuse(m: chain) {
  MapFusion(m.a, m.b)
}
"#;

#[test]
fn apply_everywhere_fuses_a_three_map_chain() {
    let mut p = chain();
    assert_eq!(top_maps(&p), 3);
    let r = ok(
        &format!("{FUSE}main {{\n  apply fuse everywhere\n}}"),
        &mut p,
    );
    assert_eq!(top_maps(&p), 1, "{:?}", r.skipped);
    assert_eq!(r.steps.len(), 2);
    assert!(r.steps.iter().all(|s| s.rule.as_deref() == Some("fuse")));
    assert!(r.warnings.is_empty());
}

#[test]
fn apply_transformation_everywhere_matches_the_engine() {
    let mut p = chain();
    let r = ok("main {\n  apply MapFusion everywhere\n}", &mut p);
    assert_eq!(top_maps(&p), 1);
    assert_eq!(r.steps.len(), 2);
}

#[test]
fn a_rule_that_matched_nothing_warns_with_the_nearest_miss() {
    let mut p = mm();
    let r = ok(
        &format!("{FUSE}main {{\n  apply fuse everywhere\n}}"),
        &mut p,
    );
    assert_eq!(r.warnings.len(), 1);
    let w = &r.warnings[0];
    assert_eq!(w.code, "dmove::recipe::no_match");
    assert!(
        w.note.as_deref().unwrap_or("").contains("nearest miss"),
        "{w:?}"
    );
}

#[test]
fn apply_once_and_at() {
    let mut p = chain();
    let r = ok(
        &format!("{FUSE}main {{\n  apply fuse once\n  apply MapFusion once\n}}"),
        &mut p,
    );
    assert_eq!(r.steps.len(), 2);
    assert_eq!(top_maps(&p), 1);
    let mut p = chain();
    let r = ok(
        &format!("{FUSE}main {{\n  for each m in matches(chain) {{ apply fuse at m }}\n}}"),
        &mut p,
    );
    // Fusion keeps the consumer, so the second match (b -> c) still holds after the first.
    assert_eq!(r.steps.len(), 2);
    assert_eq!(top_maps(&p), 1);
}

#[test]
fn for_each_skips_handles_an_earlier_iteration_consumed() {
    let mut p = chain();
    let r = ok(
        r#"main {
  let a = maps()[0]
  let b = maps()[1]
  for each m in [b, a] {
    if m == b { MapFusion(a, b) } else { print "unreached" }
  }
}"#,
        &mut p,
    );
    assert_eq!(r.steps.len(), 1);
    assert!(r.printed.is_empty());
    assert_eq!(r.skipped.len(), 1);
    assert!(
        r.skipped[0].reason.starts_with("map \"relu_0\" (n")
            && r.skipped[0].reason.contains("removed by step 1"),
        "{:?}",
        r.skipped
    );
}

#[test]
fn repeat_stops_at_a_fixpoint() {
    let mut p = chain();
    let r = ok(
        "main {\n  repeat (max 10) { apply MapFusion once } until fixpoint\n}",
        &mut p,
    );
    assert_eq!(r.steps.len(), 2);
    assert!(r.warnings.is_empty());
    let mut p = chain();
    let r = ok(
        "main {\n  repeat (max 1) { apply MapFusion once } until fixpoint\n}",
        &mut p,
    );
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].code, "dmove::recipe::no_fixpoint");
}

#[test]
fn for_each_over_a_selection() {
    let mut p = mm();
    let r = ok(
        "main {\n  for each m in maps(depth = 0) { try { Parallelize(m) } }\n}",
        &mut p,
    );
    assert!(!r.steps.is_empty());
    assert!(r.steps.len() + r.skipped.len() == 2, "{:?}", r.skipped);
}

#[test]
fn expect_holds_or_shows_both_sides() {
    let mut p = mm();
    let r = ok("main {\n  expect len(maps()) == 2\n}", &mut p);
    assert_eq!(r.expects[0].outcome, ExpectOutcome::Held);
    assert_eq!(r.expects[0].text, "len(maps()) == 2");
    let (e, shown) = fails("main {\n  expect len(maps()) < 1 + 0\n}", &mut p);
    assert_eq!(e.diagnostic.code, "dmove::recipe::expect");
    assert_eq!(
        e.diagnostic.message, "len(maps()) is 2, which is not < 1 + 0 = 1",
        "{shown}"
    );
    let (e, _) = fails("main {\n  expect maps() == [], \"no maps left\"\n}", &mut p);
    assert_eq!(e.diagnostic.message, "no maps left");
}

#[test]
fn expect_on_time_without_measuring_is_not_checked() {
    let mut p = mm();
    let r = ok("main {\n  expect time() < 0.8 * baseline.time\n}", &mut p);
    assert!(matches!(r.expects[0].outcome, ExpectOutcome::NotChecked(_)));
}

#[test]
fn expect_on_dmd_against_the_baseline() {
    let mut p = mm();
    let r = ok(
        "main {\n  expect dmd() <= baseline.dmd\n  print bytes() > 0\n}",
        &mut p,
    );
    assert_eq!(r.expects[0].outcome, ExpectOutcome::Held);
    assert_eq!(r.printed, ["true"]);
}

#[test]
fn unsafe_lowers_the_layer_inside_the_block_only() {
    let mut p = mm();
    let r = ok(
        r#"main {
  unsafe(numerics) because "tested elsewhere" {
    MapTiling(maps()[1], tiles = [4, 0, 0])
  }
  Parallelize(maps()[0])
}"#,
        &mut p,
    );
    assert_eq!(r.lowered.len(), 1);
    assert!(
        r.lowered[0].starts_with("numerics: tested elsewhere (test.recipe:2)"),
        "{:?}",
        r.lowered
    );
    assert_eq!(r.steps[0].step.lowered().len(), 1);
    assert!(r.steps[1].step.lowered().is_empty());
}

#[test]
fn set_values_reach_main() {
    let mut p = mm();
    let text = "param tile: int in pow2(2..8) = 2\nmain {\n  print tile * 2\n  MapTiling(maps()[1], tiles = [tile, 0, 0])\n}";
    let mut o = opts();
    o.set.insert("tile".into(), "4".into());
    let r = ok_with(text, &mut p, &o);
    assert_eq!(r.printed, ["8"]);
    assert_eq!(r.params["tile"], dmove::recipe::run::ParamValue::Int(4));
    assert_eq!(r.steps[0].step.params["tiles"].to_string(), "4,0,0");
}

#[test]
fn runtime_errors_are_definite_even_inside_try() {
    let mut p = mm();
    let (e, _) = fails("main {\n  try { print maps()[7] }\n}", &mut p);
    assert_eq!(e.diagnostic.code, "dmove::recipe::runtime");
    assert!(e.diagnostic.message.contains("out of range"));
    let (e, _) = fails(
        "main {\n  try { MapTiling(maps(), tiles = [1]) }\n}",
        &mut p,
    );
    assert_eq!(e.diagnostic.code, "dmove::recipe::bad_argument");
}

#[test]
fn rule_recursion_is_limited() {
    let mut p = mm();
    let (e, _) = fails("rule r(n: int) { r(n + 1) }\nmain { r(0) }", &mut p);
    assert!(
        e.diagnostic.message.contains("64 levels"),
        "{}",
        e.diagnostic.message
    );
}

#[test]
fn a_search_decides_before_main_runs() {
    let mut p = mm();
    let text = "param tile: int in [2, 4] = 2\nchoose tile fixed\nmain {\n  print tile\n}";
    let r = ok(text, &mut p);
    assert_eq!(r.printed, ["2"]);
    assert_eq!(r.decisions.len(), 1);
    assert_eq!(maps(&p), 2);
}

/// A small MLP layer at the operator level: `sigmoid(relu(x·W + b))`.
fn mlp() -> Program {
    let w: Vec<f32> = (0..64).map(|k| (k % 7) as f32 * 0.1 - 0.3).collect();
    let model = ModelBuilder::new("mlp", 17)
        .input("x", [4i64, 8])
        .output("y", [4i64, 8])
        .initializer("w", &[8, 8], w)
        .initializer("b", &[8], vec![0.1; 8])
        .node("MatMul", &["x", "w"], &["h"], vec![])
        .node("Add", &["h", "b"], &["z"], vec![])
        .node("Relu", &["z"], &["r"], vec![])
        .node("Sigmoid", &["r"], &["y"], vec![])
        .build();
    import(&model, &ImportOptions::default()).expect("imports")
}

#[test]
fn the_standard_modules_run_on_an_operator_level_program() {
    let mut p = mlp();
    let r = ok(
        r#"use std::fusion
use std::loops
param tile: int in pow2(4..8) = 4
main {
  apply Expand everywhere
  fusion::elementwise()
  loops::all(tile)
  expect len(ops()) == 0, "every operator is lowered"
  expect dmd() <= baseline.dmd
}"#,
        &mut p,
    );
    let rules: std::collections::BTreeSet<Option<String>> =
        r.steps.iter().map(|s| s.rule.clone()).collect();
    assert!(rules.contains(&None), "Expand is issued by main");
    assert!(
        rules.contains(&Some("fusion::elementwise".into())),
        "{rules:?}"
    );
    assert!(rules.contains(&Some("loops::schedule".into())), "{rules:?}");
    assert_eq!(r.expects.len(), 2);
}

#[test]
fn not_applicable_helps_with_the_nearest_candidate_that_applies() {
    let mut p = chain();
    let (e, shown) = fails("main {\n  MapFusion(maps()[2], maps()[0])\n}", &mut p);
    assert_eq!(
        e.diagnostic.code, "dmove::recipe::not_applicable",
        "{shown}"
    );
    let help = e.diagnostic.help.clone().unwrap_or_default();
    assert!(
        help.starts_with("the nearest candidate where it applies: map \""),
        "{shown}"
    );
}

#[test]
fn apply_everywhere_skips_matches_whose_body_fails_and_does_not_retry_them() {
    let mut p = mm();
    let before = program_hash(&p);
    let r = ok(
        r#"pattern one {
  m = map
}
rule nothing(x: one) {
  print "body"
  MapTiling(x.m, tiles = zeros(params(x.m)))
}
main {
  apply nothing everywhere
}"#,
        &mut p,
    );
    assert_eq!(program_hash(&p), before);
    assert_eq!(r.skipped.len(), 2, "{:?}", r.skipped);
    assert!(r.printed.is_empty(), "a failed body leaves no trace");
    assert!(r.warnings.is_empty());
    assert!(
        r.skipped[0].reason.starts_with("one { m = map \"init\""),
        "{:?}",
        r.skipped
    );
}

#[test]
fn apply_everywhere_over_a_node_class() {
    let mut p = mm();
    let r = ok(
        "rule par(m: map) {\n  try { Parallelize(m) }\n}\nmain {\n  apply par everywhere\n}",
        &mut p,
    );
    assert!(!r.steps.is_empty());
    assert!(r.steps.iter().all(|s| s.rule.as_deref() == Some("par")));
    let mut p = chain();
    let r = ok(
        "rule t(x: tasklet) { print name(x) }\nmain {\n  apply t everywhere\n}",
        &mut p,
    );
    assert_eq!(r.printed.len(), 3, "{:?}", r.printed);
}

/// `std::gemm` turns a matmul's accumulation into the packed register-tiled kernel, every step
/// checked: tiles of 4 × 16 over a 16×6·6×32 product, B packed by column blocks, A read in
/// place.
#[test]
fn std_gemm_schedules_a_product_as_a_packed_register_tile() {
    let mut p = matmul(
        SymExpr::int(16),
        SymExpr::int(6),
        SymExpr::int(32),
        Schedule::Sequential,
    );
    let r = ok("use std::gemm\nmain {\n  gemm::all(4, 16)\n}\n", &mut p);
    let steps: Vec<&str> = (r.steps.iter())
        .map(|s| s.step.transformation.as_str())
        .collect();
    assert_eq!(
        steps,
        [
            "MapTiling",
            "MapInterchange",
            "Pack",
            "MapInterchange",
            "MapExpansion",
            "MapExpansion",
            "Unroll",
            "Vectorize",
            "LocalStorage",
            "Parallelize"
        ]
    );
    for packed in ["B_packed", "C_local"] {
        assert!(p.data.contains_key(packed), "{packed}");
    }
    assert!(!p.data.contains_key("A_packed"));
    // The init map and B's copy beside the kernel.
    assert_eq!(top_maps(&p), 3);
}
