//! The transformation contract: applied steps keep the program valid and equivalent; refused
//! steps say why and leave the program untouched.

use crate::common;

use dmove::ir::{NodeId, NodeKind, Program, Schedule, Storage};
use dmove::transform::engine::{
    apply, apply_repeatedly, Budget, Checks, Layer, Refusal, StopReason,
};
use dmove::transform::{lookup, ParamValue, Params};

fn map_id(p: &Program, label: &str) -> NodeId {
    let mut found = None;
    p.graph.walk(&mut |n| {
        if n.label == label && matches!(n.kind, NodeKind::Map(_)) {
            found = Some(n.id);
        }
    });
    found.unwrap_or_else(|| panic!("no map labelled {label}"))
}

fn params(pairs: &[(&str, ParamValue)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[test]
fn fusing_an_elementwise_chain_removes_the_transients() {
    let mut p = common::elementwise_chain(5, 3);
    let fusion = lookup("MapFusion").expect("exists");
    let repeated = apply_repeatedly(
        &mut p,
        fusion,
        &Params::new(),
        &Checks::default(),
        &Budget::steps(10),
    );
    let (steps, stop) = (repeated.steps, repeated.stop);
    assert_eq!(stop, StopReason::Fixpoint);
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s.passed(Layer::Numerics).is_some()));
    assert!(!p.data.contains_key("T1") && !p.data.contains_key("T2"));
    let registers = p
        .data
        .values()
        .filter(|d| d.storage == Storage::Register)
        .count();
    assert_eq!(registers, 2);
    let maps = p
        .graph
        .nodes()
        .filter(|n| matches!(n.kind, NodeKind::Map(_)))
        .count();
    assert_eq!(maps, 1);
    // The fused map keeps the last consumer's id.
    assert_eq!(map_id(&p, "residual"), steps[1].site[1]);
}

#[test]
fn fusion_refuses_different_iteration_spaces_and_leaves_the_program_unchanged() {
    let mut p = common::matmul(4, 3, 5);
    let before = p.clone();
    let init = map_id(&p, "init");
    let acc = map_id(&p, "acc");
    let err = apply(
        &mut p,
        lookup("MapFusion").expect("exists"),
        &[init, acc],
        &Params::new(),
        &Checks::default(),
    )
    .unwrap_err();
    match err {
        Refusal::NotApplicable(n) => {
            assert_eq!(n.node, acc);
            assert!(n.reason.contains("not a global transient"), "{}", n.reason);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(p, before);
}

#[test]
fn tiling_interchange_and_parallelization_keep_matmul_results() {
    let mut p = common::matmul(37, 19, 23);
    let acc = map_id(&p, "acc");
    let checks = Checks::default();
    let tiled = apply(
        &mut p,
        lookup("MapTiling").expect("exists"),
        &[acc],
        &params(&[("tiles", ParamValue::Ints(vec![8, 16, 0]))]),
        &checks,
    )
    .expect("tiles");
    assert_eq!(tiled.touched[0], acc);
    assert!(tiled.passed(Layer::Numerics).is_some());
    let inner = tiled.touched[1];
    apply(
        &mut p,
        lookup("MapInterchange").expect("exists"),
        &[inner],
        &params(&[("order", ParamValue::Ints(vec![0, 2, 1]))]),
        &checks,
    )
    .expect("interchanges");
    apply(
        &mut p,
        lookup("Parallelize").expect("exists"),
        &[acc],
        &Params::new(),
        &checks,
    )
    .expect("outer tile map is parallel");
    let NodeKind::Map(m) = &p.node(acc).expect("exists").kind else {
        panic!("not a map")
    };
    assert_eq!(m.schedule, Schedule::Parallel);
    assert_eq!(
        m.params.iter().map(|q| q.name.as_str()).collect::<Vec<_>>(),
        ["i_tile", "j_tile"]
    );
}

#[test]
fn parallelize_refuses_a_write_race_naming_the_colliding_parameter() {
    use dmove::ir::build::{In, Out};
    use dmove::ir::{DataKind, Range, Subset, SymExpr, TExpr};
    let mut p = Program::new("race");
    common::declare(&mut p, "X", &[4, 3], DataKind::Input);
    common::declare(&mut p, "Y", &[4], DataKind::Output);
    let s = SymExpr::sym;
    p.build(|b| {
        b.map(
            "last",
            vec![("i", Range::upto(4)), ("j", Range::upto(3))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "keep",
                    vec![In("x", "X", Subset::element([s("i"), s("j")]))],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([s("i")]),
                        None,
                        TExpr::input("x"),
                    )],
                );
            },
        );
    });
    let last = map_id(&p, "last");
    let before = p.clone();
    let t = lookup("Parallelize").expect("exists");
    let err = apply(&mut p, t, &[last], &Params::new(), &Checks::default()).unwrap_err();
    let Refusal::NotApplicable(n) = err else {
        panic!("unexpected refusal kind")
    };
    assert_eq!(n.node, last);
    assert!(n.reason.contains("differ only in `j`"), "{}", n.reason);
    assert_eq!(p, before);
}

#[test]
fn parallelizing_a_resolved_reduction_is_legal_once() {
    let mut p = common::matmul(4, 3, 5);
    let acc = map_id(&p, "acc");
    let t = lookup("Parallelize").expect("exists");
    apply(&mut p, t, &[acc], &Params::new(), &Checks::default()).expect("wcr reduction is legal");
    let before = p.clone();
    let err = apply(&mut p, t, &[acc], &Params::new(), &Checks::default()).unwrap_err();
    assert!(err.to_string().contains("already parallel"), "{err}");
    assert_eq!(p, before);
}

/// Runs the recipe `std::cpu` on `p`, every step checked.
fn std_cpu(p: &mut Program) -> dmove::recipe::run::RunReport {
    let recipe = dmove::demo::cpu_recipe().expect("std::cpu checks");
    dmove::demo::optimize(
        &recipe,
        p,
        &Checks::default(),
        1,
        dmove::progress::Mode::Quiet,
    )
    .expect("runs")
}

#[test]
fn std_cpu_keeps_results_and_runs_the_matmul_as_a_micro_kernel() {
    let mut p = common::matmul(70, 9, 33);
    let original = p.clone();
    let report = std_cpu(&mut p);
    let names: Vec<&str> = (report.steps.iter())
        .map(|s| s.step.transformation.as_str())
        .collect();
    // The product becomes std::gemm's kernel, B packed by column blocks (32 does not divide 33:
    // the last block is partly filled; the skipped `Pack` is A's try along the column tiles,
    // which do not block it) and A read in place; the init map gets std::loops' schedule,
    // lanes included.
    assert_eq!(
        names,
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
            "Parallelize",
            "MapExpansion",
            "MapTiling",
            "Parallelize",
            "Vectorize"
        ],
        "{:?}",
        report.skipped
    );
    let packs = (report.skipped.iter()).filter(|s| s.reason.contains("`Pack`"));
    assert_eq!(packs.count(), 1, "{:?}", report.skipped);
    let inputs = dmove::check::random_inputs(&original, 3).expect("inputs");
    dmove::check::same_outputs(&original, &p, &inputs).expect("same results");
}

#[test]
fn std_cpu_runs_a_dense_convolution_as_a_direct_micro_kernel() {
    // A padded 3×3 convolution whose ONNX node leaves `group` out (its default is 1), and a
    // depthwise one (group = channels), which stays a loop nest; both channels-last, both the
    // direct expansion over a padded copy of the input.
    for (group, kernel) in [(1, true), (8, false)] {
        let bytes = dmove::demo::suite::conv(8, 8, 16, group, 5);
        let mut p = dmove::onnx::import_bytes(&bytes, &Default::default()).expect("imports");
        let original = p.clone();
        let report = std_cpu(&mut p);
        let applied = |name: &str| {
            (report.steps.iter())
                .filter(|s| s.step.transformation == name)
                .count()
        };
        let expanded = |implementation: &str| {
            (report.steps.iter()).any(|s| {
                s.step.transformation == "Expand"
                    && s.step.params.get("impl") == Some(&ParamValue::Str(implementation.into()))
            })
        };
        assert!(expanded("padded") && !expanded("im2col"), "group {group}");
        // The convolution runs channels-last: one region, transposed in and out once.
        assert_eq!(applied("ChannelsLast"), 1, "group {group}");
        // No column matrix: the kernel reads the padded input where it lies.
        assert!(
            !p.data.keys().any(|name| name.ends_with("_col")),
            "group {group}"
        );
        // The kernel: a row of outputs unrolled, the 8 output channels as SIMD lanes, and the
        // weights packed by column blocks (at build time: the packed copy is a constant).
        assert_eq!(applied("Unroll"), usize::from(kernel), "group {group}");
        assert_eq!(applied("Pack"), usize::from(kernel), "group {group}");
        if kernel {
            let packed = (p.data.iter()).find(|(name, _)| name.ends_with("_packed"));
            let kind = packed.expect("packed weights").1.kind;
            assert_eq!(kind, dmove::ir::DataKind::Constant, "group {group}");
        }
        // The depthwise taps accumulate each row of outputs in a local buffer (std::loops).
        if !kernel {
            assert!(applied("LocalStorage") >= 1, "group {group}");
        }
        let inputs = dmove::check::random_inputs(&original, 3).expect("inputs");
        dmove::check::same_outputs(&original, &p, &inputs).expect("same results");
    }
}
