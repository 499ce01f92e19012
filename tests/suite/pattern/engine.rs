//! The engine: traces that replay to the same hash, budgets with stop reasons, explicitly
//! lowered checks, and numerics through compiled C for programs beyond the interpreter budget.

use crate::common;
use dmove::ir::text::print_exact;
use dmove::ir::{NodeId, NodeKind, Program};
use dmove::transform::engine::{
    program_hash, replay, Budget, Checks, Engine, Layer, Refusal, ReplayError, StopReason, Trace,
};
use dmove::transform::{lookup, ParamValue, Params};
use std::collections::BTreeMap;
use std::time::Duration;

fn map_id(p: &Program, label: &str) -> NodeId {
    let mut found = None;
    p.graph.walk(&mut |n| {
        if n.label == label && matches!(n.kind, NodeKind::Map(_)) {
            found = Some(n.id);
        }
    });
    found.unwrap_or_else(|| panic!("no map labelled {label}"))
}

fn one(name: &str, v: ParamValue) -> Params {
    let mut p = Params::new();
    p.insert(name.to_string(), v);
    p
}

/// Tiles and parallelizes a matmul, recording the steps.
fn recorded(p: &mut Program) -> Trace {
    let mut trace = Trace::new(p);
    let mut engine = Engine::default();
    let acc = map_id(p, "acc");
    let tiles = one("tiles", ParamValue::Ints(vec![4, 0, 0]));
    let t = lookup("MapTiling").expect("exists");
    trace
        .steps
        .push(engine.apply(p, t, &[acc], &tiles).expect("tiles"));
    let t = lookup("Parallelize").expect("exists");
    trace.steps.push(
        engine
            .apply(p, t, &[acc], &Params::new())
            .expect("parallel"),
    );
    trace
}

#[test]
fn a_saved_trace_replays_to_the_same_hash() {
    let original = common::matmul(9, 5, 7);
    let mut p = original.clone();
    let trace = recorded(&mut p);
    assert_eq!(trace.model_hash, program_hash(&original));
    assert_eq!(trace.steps[1].hash_after, program_hash(&p));
    assert_eq!(trace.steps[0].hash_after, trace.steps[1].hash_before);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    trace.save(&path).expect("saves");
    let loaded = Trace::load(&path).expect("loads");
    assert_eq!(loaded, trace);
    let mut again = original.clone();
    let steps = replay(&mut again, &loaded).expect("replays");
    assert_eq!(steps.len(), 2);
    assert_eq!(print_exact(&again), print_exact(&p));
}

#[test]
fn replay_names_the_first_diverging_step_and_rejects_another_model() {
    let original = common::matmul(9, 5, 7);
    let mut p = original.clone();
    let mut trace = recorded(&mut p);
    trace.steps[1].hash_after = "0".repeat(32);
    let err = replay(&mut original.clone(), &trace).unwrap_err();
    match err {
        ReplayError::Diverged {
            step,
            transformation,
            ..
        } => assert_eq!((step, transformation.as_str()), (2, "Parallelize")),
        other => panic!("unexpected {other:?}"),
    }
    let err = replay(&mut common::matmul(9, 5, 8), &trace).unwrap_err();
    assert!(matches!(err, ReplayError::ModelMismatch { .. }), "{err}");
    assert!(matches!(
        Trace::from_json("{\"steps\": 3}"),
        Err(dmove::transform::engine::TraceError::Json(_))
    ));
}

#[test]
fn budgets_stop_with_their_reason() {
    let fusion = lookup("MapFusion").expect("exists");
    let mut engine = Engine::default();
    let mut p = common::elementwise_chain(3, 4);
    let r = engine.apply_repeatedly(&mut p, fusion, &Params::new(), &Budget::steps(1));
    assert_eq!((r.steps.len(), r.stop), (1, StopReason::StepLimit));
    let r = engine.apply_repeatedly(&mut p, fusion, &Params::new(), &Budget::steps(9));
    assert_eq!((r.steps.len(), r.stop), (1, StopReason::Fixpoint));
    let mut p = common::elementwise_chain(3, 4);
    let before = print_exact(&p);
    let budget = Budget::steps(9).with_time(Duration::ZERO);
    let r = engine.apply_repeatedly(&mut p, fusion, &Params::new(), &budget);
    assert_eq!((r.steps.len(), r.stop), (0, StopReason::TimeLimit));
    assert_eq!(print_exact(&p), before);
}

#[test]
fn lowered_checks_are_recorded_never_silent() {
    let mut p = common::matmul(4, 3, 5);
    let acc = map_id(&p, "acc");
    let t = lookup("MapTiling").expect("exists");
    let tiles = one("tiles", ParamValue::Ints(vec![2, 0, 0]));
    let mut engine = Engine::new(Checks::default().lower(Layer::Numerics, "test: not needed"));
    let step = engine.apply(&mut p, t, &[acc], &tiles).expect("tiles");
    let shown: Vec<String> = step.checks.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        shown,
        [
            "structural",
            "legality (preconditions; parallel maps race-free)",
            "numerics lowered by the user: test: not needed"
        ]
    );
    assert_eq!(
        step.lowered(),
        BTreeMap::from([(Layer::Numerics, "test: not needed".to_string())])
    );
}

#[test]
fn a_waived_legality_failure_is_recorded_in_the_step() {
    let mut p = common::matmul(4, 3, 5);
    let acc = map_id(&p, "acc");
    // The accumulation's lanes (k) all add into the same C[i, j]: vectorizing over k is
    // refused as a legality condition, which an explicit lowering waives (and numerics still
    // checks the result).
    let vectorize = lookup("Vectorize").expect("exists");
    let err = Engine::default()
        .apply(&mut p, vectorize, &[acc], &Params::new())
        .unwrap_err();
    let Refusal::NotApplicable(why) = &err else {
        panic!("expected a precondition refusal, got {err}");
    };
    let mut lowered = Engine::new(Checks::default().lower(Layer::Legality, "test"));
    let step = lowered
        .apply(&mut p, vectorize, &[acc], &Params::new())
        .expect("waived");
    let shown: Vec<String> = step.checks.iter().map(|c| c.to_string()).collect();
    assert_eq!(shown[0], "structural");
    // Every failed condition is waived and listed, the first being the one that refused.
    let first_waived = format!("legality lowered by the user: test; waived: {}", why.reason);
    assert!(shown[1].starts_with(&first_waived), "{shown:?}");
    assert!(shown[2].starts_with("numerics ("), "{shown:?}");
}

#[test]
fn large_programs_are_checked_through_compiled_c_with_cached_original_outputs() {
    let mut p = common::matmul(6, 5, 7);
    let acc = map_id(&p, "acc");
    let checks = Checks {
        numerics_budget: 10,
        ..Checks::default()
    };
    let mut engine = Engine::new(checks);
    let t = lookup("MapTiling").expect("exists");
    let tiles = one("tiles", ParamValue::Ints(vec![4, 0, 0]));
    let step = engine.apply(&mut p, t, &[acc], &tiles).expect("tiles");
    assert!(
        step.passed(Layer::Numerics)
            .is_some_and(|how| how.contains("compiled C")),
        "{:?}",
        step.checks
    );
    // The cache holds the outputs of the changed region on both sides (keyed by the hash of
    // the region's standalone program).
    let first = engine.cached();
    assert_eq!(first.len(), 2, "{first:?}");
    let par = lookup("Parallelize").expect("exists");
    let step2 = engine
        .apply(&mut p, par, &[acc], &Params::new())
        .expect("parallel");
    assert!(step2
        .passed(Layer::Numerics)
        .is_some_and(|how| how.contains("compiled C")));
    // The first step's rewritten region served as the second step's original: one new entry.
    let second = engine.cached();
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(second[..2], first[..]);
}

#[test]
fn the_engine_times_every_checked_step_and_counts_only_real_c_builds() {
    // Sizes unique to this run, so the generated C is not in the compile cache yet.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_nanos() as i64;
    let (m, k, n) = (8 + nanos % 97, 5 + nanos / 97 % 89, 9 + nanos / 8633 % 83);
    let original = common::matmul(m, k, n);
    let checks = Checks {
        numerics_budget: 10,
        ..Checks::default()
    };
    let tiles = one("tiles", ParamValue::Ints(vec![4, 0, 0]));
    let t = lookup("MapTiling").expect("exists");
    let mut p = original.clone();
    let acc = map_id(&p, "acc");
    let mut engine = Engine::new(checks.clone());
    let step = engine.apply(&mut p, t, &[acc], &tiles).expect("tiles");
    // A precondition failure is not a checked step: nothing is logged for it.
    let vectorize = lookup("Vectorize").expect("exists");
    assert!(engine
        .apply(&mut p, vectorize, &[acc], &Params::new())
        .is_err());
    let log = engine.timings();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].step, step.summary());
    assert!(!log[0].refused);
    let time = &log[0].time;
    assert!(time.c_builds >= 1, "{time:?}");
    assert!(time.numerics >= time.c_build_time, "{time:?}");
    assert!(time.total() >= time.numerics, "{time:?}");
    // The same step again compiles nothing: the binaries are cached by content.
    let mut again = original.clone();
    let mut engine = Engine::new(checks);
    engine.apply(&mut again, t, &[acc], &tiles).expect("tiles");
    assert_eq!(
        engine.timings()[0].time.c_builds,
        0,
        "{:?}",
        engine.timings()
    );
}
