//! RegisterAccumulation: a reduction summed in a register and written once.

use super::{
    apply_checked, assert_matmul, compiled_matches_interpreter, map, map_id, param_names, refused,
};
use crate::common;
use dmove::ir::{NodeKind, Storage};
use dmove::transform::{ParamValue, Params};

#[test]
fn register_accumulation_splits_off_the_reduction_loop() {
    let mut p = common::matmul(7, 5, 6);
    let acc = map_id(&p, "acc");
    let step = apply_checked(&mut p, "RegisterAccumulation", &[acc], &Params::new());
    let inner = step.touched[1];
    assert_eq!(param_names(map(&p, acc)), ["i", "j"]);
    assert_eq!(param_names(map(&p, inner)), ["k"]);
    let reg = &p.data["C_acc"];
    assert_eq!(reg.storage, Storage::Register);
    assert!(reg.shape.is_empty());
    // The outer body: init tasklet, inner map, write tasklet (plus access nodes).
    let tasklets: Vec<&str> = map(&p, acc)
        .body
        .nodes()
        .filter(|n| matches!(n.kind, NodeKind::Tasklet(_)))
        .map(|n| n.label.as_str())
        .collect();
    assert_eq!(tasklets.len(), 2, "{tasklets:?}");
    assert_matmul(&p, 7, 5, 6);
}

#[test]
fn register_accumulation_in_a_parallel_map_compiles_without_atomics() {
    let mut p = common::matmul(9, 17, 8);
    let acc = map_id(&p, "acc");
    // Parallel whatever its size (this small map is below the default `min_work`).
    let always = Params::from([("min_work".to_string(), ParamValue::Int(0))]);
    apply_checked(&mut p, "Parallelize", &[acc], &always);
    apply_checked(&mut p, "RegisterAccumulation", &[acc], &Params::new());
    assert_matmul(&p, 9, 17, 8);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("#pragma omp for"), "{source}");
    let run = &source[source.find("void dm_run").expect("entry point")..];
    assert!(!run.contains("atomic"), "{run}");
}

#[test]
fn register_accumulation_refuses_maps_without_a_reduction() {
    let mut p = common::matmul(4, 6, 3);
    let init = map_id(&p, "init");
    let why = refused(
        &mut p,
        "RegisterAccumulation",
        &[init],
        &Params::new(),
        init,
    );
    assert_eq!(
        why,
        "the body makes no resolved (wcr) write: nothing accumulates"
    );
    let acc = map_id(&p, "acc");
    apply_checked(&mut p, "RegisterAccumulation", &[acc], &Params::new());
    let why = refused(&mut p, "RegisterAccumulation", &[acc], &Params::new(), acc);
    assert!(why.starts_with("the body contains map n"), "{why}");
}
