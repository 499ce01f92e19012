//! One OpenMP region for the entry function: parallel maps are work-shared, a barrier stands
//! exactly where a later construct touches what an earlier one wrote (or writes what it read),
//! every other construct ends `nowait`, and `min_work` keeps small maps on one thread. Every
//! program also runs on one and on two threads against values computed here.

use super::support::{assert_close, at, bin, build, input, program, s, values};
use dmove::codegen::Compiled;
use dmove::ir::build::{In, Out, ScopeBuilder};
use dmove::ir::{
    BinOp, DataKind, NodeKind, Program, Range, Schedule, SymExpr, TExpr, Tensor, UnOp,
};
use dmove::transform::engine::{apply, Checks};
use dmove::transform::{lookup, ParamValue, Params};
use std::collections::BTreeMap;

const N: i64 = 64;

/// `dst[to] = src[i] * mul + add` for `i` in `range`.
#[allow(clippy::too_many_arguments)]
fn affine(
    b: &mut ScopeBuilder,
    label: &str,
    schedule: Schedule,
    range: Range,
    (src, dst): (&str, &str),
    to: SymExpr,
    mul: f32,
    add: f32,
) {
    b.map(label, vec![("i", range)], schedule, |b| {
        let value = bin(
            BinOp::Add,
            bin(BinOp::Mul, input("x"), TExpr::Const(mul.into())),
            TExpr::Const(add.into()),
        );
        b.tasklet(
            "f",
            vec![In("x", src, at(&[s("i")]))],
            vec![Out("y", dst, at(&[to]), None, value)],
        );
    });
}

fn reversed() -> SymExpr {
    SymExpr::Int(N - 1) - s("i")
}

/// The OpenMP pragmas of the generated source, in order.
fn pragmas(c: &Compiled) -> Vec<String> {
    c.source()
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("#pragma omp"))
        .map(str::to_string)
        .collect()
}

/// Runs on one and on two threads; both must give `expected` for every output.
fn check_threads(c: &Compiled, x: &[f32], expected: &[(&str, Vec<f32>)]) {
    let inputs = BTreeMap::from([("X".to_string(), Tensor::f32(vec![N as usize], x.to_vec()))]);
    for threads in [1, 2] {
        let out = c.run_threads(&inputs, Some(threads)).expect("runs");
        for (name, want) in expected {
            assert_close(&out[*name], want, &[N as usize]);
        }
    }
}

fn with(data: &[(&str, DataKind)]) -> Program {
    let shaped: Vec<(&str, DataKind, &[i64])> =
        data.iter().map(|(n, k)| (*n, *k, &[N][..])).collect();
    program("region", &shaped)
}

#[test]
fn a_consumer_of_a_work_shared_map_waits_at_a_barrier() {
    let mut p = with(&[
        ("X", DataKind::Input),
        ("A", DataKind::Transient),
        ("Y", DataKind::Output),
    ]);
    p.build(|b| {
        affine(
            b,
            "produce",
            Schedule::Parallel,
            Range::upto(N),
            ("X", "A"),
            s("i"),
            2.0,
            0.0,
        );
        // Reads the element another thread wrote: without the barrier it could read a zero.
        affine(
            b,
            "consume",
            Schedule::Parallel,
            Range::upto(N),
            ("A", "Y"),
            reversed(),
            1.0,
            1.0,
        );
    });
    let c = build(&p);
    assert_eq!(
        pragmas(&c),
        [
            "#pragma omp parallel",
            "#pragma omp for",
            "#pragma omp for nowait"
        ]
    );
    let x = values(N as usize, 1);
    let y = (0..N as usize)
        .map(|i| x[N as usize - 1 - i] * 2.0 + 1.0)
        .collect();
    check_threads(&c, &x, &[("Y", y)]);
}

#[test]
fn independent_maps_share_one_region_without_barriers() {
    let mut p = with(&[
        ("X", DataKind::Input),
        ("Y", DataKind::Output),
        ("Z", DataKind::Output),
    ]);
    p.build(|b| {
        affine(
            b,
            "double",
            Schedule::Parallel,
            Range::upto(N),
            ("X", "Y"),
            s("i"),
            2.0,
            0.0,
        );
        affine(
            b,
            "shift",
            Schedule::Parallel,
            Range::upto(N),
            ("X", "Z"),
            reversed(),
            1.0,
            1.0,
        );
    });
    let c = build(&p);
    assert_eq!(
        pragmas(&c),
        [
            "#pragma omp parallel",
            "#pragma omp for nowait",
            "#pragma omp for nowait"
        ]
    );
    let x = values(N as usize, 2);
    let y = x.iter().map(|v| v * 2.0).collect();
    let z = (0..N as usize)
        .map(|i| x[N as usize - 1 - i] + 1.0)
        .collect();
    check_threads(&c, &x, &[("Y", y), ("Z", z)]);
}

#[test]
fn writes_to_disjoint_halves_need_no_barrier_but_a_reader_of_both_does() {
    let mut p = with(&[
        ("X", DataKind::Input),
        ("A", DataKind::Transient),
        ("Y", DataKind::Output),
    ]);
    let half = N / 2;
    p.build(|b| {
        affine(
            b,
            "low",
            Schedule::Parallel,
            Range::upto(half),
            ("X", "A"),
            s("i"),
            2.0,
            0.0,
        );
        affine(
            b,
            "high",
            Schedule::Parallel,
            Range::new(half, N),
            ("X", "A"),
            s("i"),
            1.0,
            1.0,
        );
        affine(
            b,
            "read",
            Schedule::Parallel,
            Range::upto(N),
            ("A", "Y"),
            reversed(),
            1.0,
            0.0,
        );
    });
    let c = build(&p);
    assert_eq!(
        pragmas(&c),
        [
            "#pragma omp parallel",
            "#pragma omp for nowait",
            "#pragma omp for",
            "#pragma omp for nowait"
        ]
    );
    let x = values(N as usize, 3);
    let a: Vec<f32> = (0..N as usize)
        .map(|i| {
            if i < half as usize {
                x[i] * 2.0
            } else {
                x[i] + 1.0
            }
        })
        .collect();
    let y = (0..N as usize).map(|i| a[N as usize - 1 - i]).collect();
    check_threads(&c, &x, &[("Y", y)]);
}

#[test]
fn sequential_code_between_work_shared_maps_runs_once_behind_barriers() {
    let mut p = with(&[
        ("X", DataKind::Input),
        ("A", DataKind::Transient),
        ("B", DataKind::Transient),
        ("Y", DataKind::Output),
    ]);
    p.build(|b| {
        affine(
            b,
            "produce",
            Schedule::Parallel,
            Range::upto(N),
            ("X", "A"),
            s("i"),
            2.0,
            0.0,
        );
        affine(
            b,
            "serial",
            Schedule::Sequential,
            Range::upto(N),
            ("A", "B"),
            reversed(),
            1.0,
            3.0,
        );
        affine(
            b,
            "consume",
            Schedule::Parallel,
            Range::upto(N),
            ("B", "Y"),
            reversed(),
            0.5,
            0.0,
        );
    });
    let c = build(&p);
    assert_eq!(
        pragmas(&c),
        [
            "#pragma omp parallel",
            "#pragma omp for",
            "#pragma omp single",
            "#pragma omp for nowait"
        ]
    );
    let x = values(N as usize, 4);
    let y = x.iter().map(|v| (v * 2.0 + 3.0) * 0.5).collect();
    check_threads(&c, &x, &[("Y", y)]);
}

/// A 64-element map parallelized through the engine with `min_work` (or its default), after
/// tiling it by `tile` when given.
fn parallelized(min_work: Option<i64>, tile: Option<i64>) -> (Program, u64) {
    let mut p = with(&[("X", DataKind::Input), ("Y", DataKind::Output)]);
    let id = p.build(|b| {
        b.map(
            "double",
            vec![("i", Range::upto(N))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "f",
                    vec![In("x", "X", at(&[s("i")]))],
                    vec![Out(
                        "y",
                        "Y",
                        at(&[s("i")]),
                        None,
                        bin(BinOp::Mul, input("x"), TExpr::Const(2.0)),
                    )],
                );
            },
        )
    });
    if let Some(t) = tile {
        let tiles = Params::from([("tiles".to_string(), ParamValue::Ints(vec![t]))]);
        let tiling = lookup("MapTiling").expect("exists");
        apply(&mut p, tiling, &[id], &tiles, &Checks::default()).expect("tiles");
    }
    let params: Params = min_work
        .map(|w| ("min_work".to_string(), ParamValue::Int(w)))
        .into_iter()
        .collect();
    let step = apply(
        &mut p,
        lookup("Parallelize").expect("exists"),
        &[id],
        &params,
        &Checks::default(),
    )
    .expect("parallelizes");
    let recorded = match step.params.get("min_work") {
        Some(ParamValue::Int(w)) => *w,
        other => panic!("min_work is not recorded: {other:?}"),
    };
    let NodeKind::Map(m) = &p.node(id).expect("exists").kind else {
        panic!("not a map")
    };
    assert_eq!(m.schedule, Schedule::Parallel);
    assert_eq!(m.min_work, recorded as u64);
    let min_work = m.min_work;
    (p, min_work)
}

#[test]
fn a_map_below_min_work_runs_on_one_thread() {
    let (p, min_work) = parallelized(None, None);
    assert_eq!(min_work, 262_144, "the default threshold");
    let c = build(&p);
    assert!(pragmas(&c).is_empty(), "{:?}", pragmas(&c));
    assert!(c.source().contains("estimated work below min_work 262144"));
    let x = values(N as usize, 5);
    check_threads(&c, &x, &[("Y", x.iter().map(|v| v * 2.0).collect())]);

    // The same map at a threshold its 64 iterations reach is work-shared.
    let (p, _) = parallelized(Some(64), None);
    let c = build(&p);
    assert_eq!(
        pragmas(&c),
        ["#pragma omp parallel", "#pragma omp for nowait"]
    );
    check_threads(&c, &x, &[("Y", x.iter().map(|v| v * 2.0).collect())]);
    let (p, _) = parallelized(Some(65), None);
    assert!(pragmas(&build(&p)).is_empty());
}

#[test]
fn a_tiled_map_is_estimated_by_its_first_tile() {
    // 8 tiles of 8: 64 tasklets, whatever the `min(t + 8, 64)` bound of the tile loop.
    let (p, _) = parallelized(Some(64), Some(8));
    let c = build(&p);
    assert_eq!(
        pragmas(&c),
        ["#pragma omp parallel", "#pragma omp for nowait"]
    );
    let (p, _) = parallelized(Some(65), Some(8));
    let c = build(&p);
    assert!(pragmas(&c).is_empty(), "{:?}", pragmas(&c));
    let x = values(N as usize, 6);
    check_threads(&c, &x, &[("Y", x.iter().map(|v| v * 2.0).collect())]);
}

#[test]
fn a_transcendental_call_weighs_as_several_operations_in_the_estimated_work() {
    let t = |e: TExpr| dmove::ir::Tasklet {
        inputs: vec!["x".into()],
        outputs: vec![("y".into(), e)],
    };
    let x = || TExpr::input("x");
    assert_eq!(t(x()).work(), 1);
    assert_eq!(t(TExpr::unary(UnOp::Abs, x())).work(), 1);
    let exp = TExpr::unary(UnOp::Exp, x());
    assert_eq!(t(exp.clone()).work(), 1 + dmove::ir::CALL_WORK);
    let gelu_like = TExpr::binary(BinOp::Mul, x(), TExpr::unary(UnOp::Erf, exp));
    assert_eq!(t(gelu_like).work(), 1 + 2 * dmove::ir::CALL_WORK);
}

/// `Y = 2X` ("big", `min_work` 0) and `Z = X + 1` ("small", `min_work` 2²⁰) over 20000
/// elements, with only "small" when `alone`.
fn big_and_small(alone: bool) -> Program {
    const S: i64 = 20_000;
    let mut p = program(
        "awake",
        &[
            ("X", DataKind::Input, &[S]),
            ("Y", DataKind::Output, &[S]),
            ("Z", DataKind::Output, &[S]),
        ],
    );
    p.build(|b| {
        let all = || Range::upto(S);
        if !alone {
            affine(
                b,
                "big",
                Schedule::Parallel,
                all(),
                ("X", "Y"),
                s("i"),
                2.0,
                0.0,
            );
        }
        affine(
            b,
            "small",
            Schedule::Parallel,
            all(),
            ("X", "Z"),
            s("i"),
            1.0,
            1.0,
        );
    });
    if alone {
        p.outputs = vec!["Z".to_string()].into_iter().collect();
        p.data.remove("Y");
    }
    for n in p.graph.nodes_mut() {
        if let NodeKind::Map(m) = &mut n.kind {
            m.min_work = if n.label == "big" { 0 } else { 1 << 20 };
        }
    }
    p
}

#[test]
fn a_map_below_min_work_is_shared_in_a_region_other_maps_open() {
    // "small" (20000 tasklets, below its min_work) alone stays on one thread: sharing it would
    // wake the threads for it. Beside "big", which opens the region anyway, it is work-shared:
    // the threads are awake, and a shared loop costs the barrier its `single` would cost.
    let c = build(&big_and_small(true));
    assert!(pragmas(&c).is_empty(), "{:?}", pragmas(&c));
    let c = build(&big_and_small(false));
    assert_eq!(
        pragmas(&c),
        [
            "#pragma omp parallel",
            "#pragma omp for nowait",
            "#pragma omp for nowait"
        ]
    );
    let x = values(20_000, 4);
    let inputs = BTreeMap::from([("X".to_string(), Tensor::f32(vec![20_000], x.clone()))]);
    for threads in [1, 2] {
        let out = c.run_threads(&inputs, Some(threads)).expect("runs");
        assert_close(
            &out["Y"],
            &x.iter().map(|v| v * 2.0).collect::<Vec<_>>(),
            &[20_000],
        );
        assert_close(
            &out["Z"],
            &x.iter().map(|v| v + 1.0).collect::<Vec<_>>(),
            &[20_000],
        );
    }
}
