//! The C backend end to end: hand-built lowered programs are emitted, compiled, run, and their
//! outputs compared with values computed directly in Rust.

mod errors;
mod math;
mod region;
mod support;

use dmove::codegen::{emit, Compiled};
use dmove::ir::build::{In, Out};
use dmove::ir::{
    BinOp, DType, DataDesc, DataKind, Memlet, Node, NodeKind, Program, Range, Schedule, Storage,
    Subset, SymExpr, TExpr, Tensor, UnOp, Wcr,
};
use std::collections::BTreeMap;
use support::{
    assert_close, at, bin, build, check_matmul, config, input, matmul, program, run, s,
    symbolic_scale, values,
};

#[test]
fn elementwise_parallel_map_with_many_operators() {
    let mut p = program(
        "ew",
        &[
            ("X", DataKind::Input, &[3, 5]),
            ("Y", DataKind::Output, &[3, 5]),
        ],
    );
    let x = || input("x");
    let e = bin(
        BinOp::Add,
        bin(
            BinOp::Mul,
            TExpr::unary(UnOp::Sigmoid, x()),
            TExpr::unary(UnOp::Tanh, x()),
        ),
        bin(
            BinOp::Add,
            TExpr::select(
                bin(BinOp::Gt, x(), TExpr::Const(0.0)),
                x(),
                TExpr::Const(-0.5),
            ),
            bin(
                BinOp::Max,
                TExpr::unary(UnOp::Erf, x()),
                bin(BinOp::Pow, TExpr::unary(UnOp::Abs, x()), TExpr::Const(1.5)),
            ),
        ),
    );
    p.build(|b| {
        b.map(
            "ew",
            vec![("i", Range::upto(3)), ("j", Range::upto(5))],
            Schedule::Parallel,
            |b| {
                b.tasklet(
                    "f",
                    vec![In("x", "X", at(&[s("i"), s("j")]))],
                    vec![Out("y", "Y", at(&[s("i"), s("j")]), None, e.clone())],
                );
            },
        );
    });
    let c = build(&p);
    assert!(c.source().contains("#pragma omp for collapse(2) nowait"));
    let xs = values(15, 1);
    let out = run(&c, &[("X", Tensor::f32(vec![3, 5], xs.clone()))]);
    let expected: Vec<f32> = xs
        .iter()
        .map(|&x| {
            let sig = 1.0 / (1.0 + (-x).exp());
            let sel = if x > 0.0 { x } else { -0.5 };
            sig * x.tanh() + (sel + libm::erff(x).max(x.abs().powf(1.5)))
        })
        .collect();
    assert_close(&out["Y"], &expected, &[3, 5]);
}

#[test]
fn matmul_sequential() {
    let c = build(&matmul(Schedule::Sequential, Schedule::Sequential));
    assert!(!c.source().contains("#pragma omp"));
    check_matmul(&c);
}

#[test]
fn matmul_with_parallel_rows_needs_no_atomics() {
    let c = build(&matmul(Schedule::Parallel, Schedule::Sequential));
    // The init map runs once, behind a barrier, before the rows are shared out.
    assert!(c.source().contains("#pragma omp single\n"));
    assert!(c.source().contains("#pragma omp for collapse(2) nowait"));
    assert!(!c.source().contains("omp atomic"));
    check_matmul(&c);
}

#[test]
fn matmul_with_parallel_reduction_uses_atomics() {
    let c = build(&matmul(Schedule::Sequential, Schedule::Parallel));
    assert!(c.source().contains("#pragma omp atomic"));
    check_matmul(&c);
}

#[test]
fn parallel_map_over_reduction_parameter_keeps_it_sequential() {
    let mut p = program(
        "rowsum",
        &[
            ("X", DataKind::Input, &[4, 6]),
            ("Y", DataKind::Output, &[4]),
        ],
    );
    p.build(|b| {
        b.map(
            "sum",
            vec![("i", Range::upto(4)), ("k", Range::upto(6))],
            Schedule::Parallel,
            |b| {
                b.tasklet(
                    "acc",
                    vec![In("x", "X", at(&[s("i"), s("k")]))],
                    vec![Out("y", "Y", at(&[s("i")]), Some(Wcr::Sum), input("x"))],
                );
            },
        );
    });
    let c = build(&p);
    assert!(c.source().contains("#pragma omp for nowait\n"));
    assert!(!c.source().contains("collapse") && !c.source().contains("omp atomic"));
    let xs = values(24, 3);
    let out = run(&c, &[("X", Tensor::f32(vec![4, 6], xs.clone()))]);
    let expected: Vec<f32> = (0..4).map(|i| xs[i * 6..i * 6 + 6].iter().sum()).collect();
    assert_close(&out["Y"], &expected, &[4]);
}

#[test]
fn max_reduction_under_parallelism_is_atomic() {
    let mut p = program(
        "gmax",
        &[
            ("X", DataKind::Input, &[8, 9]),
            ("M", DataKind::Output, &[]),
        ],
    );
    p.build(|b| {
        b.map("init", vec![], Schedule::Sequential, |b| {
            b.tasklet(
                "ninf",
                vec![],
                vec![Out(
                    "m",
                    "M",
                    Subset::default(),
                    None,
                    TExpr::Const(f64::NEG_INFINITY),
                )],
            );
        });
        b.map(
            "max",
            vec![("i", Range::upto(8)), ("j", Range::upto(9))],
            Schedule::Parallel,
            |b| {
                b.tasklet(
                    "pick",
                    vec![In("x", "X", at(&[s("i"), s("j")]))],
                    vec![Out("m", "M", Subset::default(), Some(Wcr::Max), input("x"))],
                );
            },
        );
    });
    let c = build(&p);
    assert!(c.source().contains("dm_atomic_max_f32(&d_M[0]"));
    let mut xs = values(72, 4);
    xs[41] = 7.25;
    let out = run(&c, &[("X", Tensor::f32(vec![8, 9], xs))]);
    assert_close(&out["M"], &[7.25], &[]);
}

#[test]
fn nested_maps_with_index_values() {
    let mut p = program(
        "nest",
        &[
            ("X", DataKind::Input, &[3, 4]),
            ("Y", DataKind::Output, &[3, 4]),
        ],
    );
    p.build(|b| {
        b.map(
            "outer",
            vec![("i", Range::upto(3))],
            Schedule::Parallel,
            |b| {
                b.map(
                    "inner",
                    vec![("j", Range::upto(4))],
                    Schedule::Vector,
                    |b| {
                        let pos = TExpr::Index(s("i") * 10 + s("j"));
                        b.tasklet(
                            "add",
                            vec![In("x", "X", at(&[s("i"), s("j")]))],
                            vec![Out(
                                "y",
                                "Y",
                                at(&[s("i"), s("j")]),
                                None,
                                bin(BinOp::Add, input("x"), pos),
                            )],
                        );
                    },
                );
            },
        );
    });
    let c = build(&p);
    assert!(c.source().contains("#pragma omp simd"));
    let xs = values(12, 6);
    let out = run(&c, &[("X", Tensor::f32(vec![3, 4], xs.clone()))]);
    let expected: Vec<f32> = (0..12)
        .map(|f| xs[f] + ((f / 4) * 10 + f % 4) as f32)
        .collect();
    assert_close(&out["Y"], &expected, &[3, 4]);
}

#[test]
fn strided_range_touches_only_its_points() {
    let mut p = program(
        "stride",
        &[
            ("X", DataKind::Input, &[10]),
            ("Y", DataKind::Output, &[10]),
        ],
    );
    let range = Range {
        start: 1.into(),
        end: 10.into(),
        step: 3.into(),
    };
    p.build(|b| {
        b.map("every3", vec![("i", range)], Schedule::Unrolled, |b| {
            b.tasklet(
                "dbl",
                vec![In("x", "X", at(&[s("i")]))],
                vec![Out(
                    "y",
                    "Y",
                    at(&[s("i")]),
                    None,
                    bin(BinOp::Mul, input("x"), TExpr::Const(2.0)),
                )],
            );
        });
    });
    let c = build(&p);
    assert!(c.source().contains("#pragma GCC unroll"));
    let xs = values(10, 7);
    let out = run(&c, &[("X", Tensor::f32(vec![10], xs.clone()))]);
    let expected: Vec<f32> = (0..10)
        .map(|i| if i % 3 == 1 { 2.0 * xs[i] } else { 0.0 })
        .collect();
    assert_close(&out["Y"], &expected, &[10]);
}

#[test]
fn floor_division_and_modulo_follow_the_ir() {
    let mut p = program(
        "reshape",
        &[
            ("X", DataKind::Input, &[12]),
            ("Y", DataKind::Output, &[3, 4]),
            ("Q", DataKind::Output, &[12]),
        ],
    );
    p.build(|b| {
        b.map(
            "copy",
            vec![("i", Range::upto(12))],
            Schedule::Parallel,
            |b| {
                let shifted = s("i") - 5;
                b.tasklet(
                    "mv",
                    vec![In("x", "X", at(&[s("i")]))],
                    vec![
                        Out(
                            "y",
                            "Y",
                            at(&[s("i").floor_div(4.into()), s("i").modulo(4.into())]),
                            None,
                            input("x"),
                        ),
                        Out(
                            "q",
                            "Q",
                            at(&[s("i")]),
                            None,
                            bin(
                                BinOp::Add,
                                bin(
                                    BinOp::Mul,
                                    TExpr::Index(shifted.clone().floor_div(4.into())),
                                    TExpr::Const(10.0),
                                ),
                                TExpr::Index(shifted.modulo(4.into())),
                            ),
                        ),
                    ],
                );
            },
        );
    });
    let c = build(&p);
    assert!(c.source().contains("dm_floordiv") && c.source().contains("dm_mod"));
    let xs = values(12, 8);
    let out = run(&c, &[("X", Tensor::f32(vec![12], xs.clone()))]);
    assert_close(&out["Y"], &xs, &[3, 4]);
    let expected: Vec<f32> = (0..12i64)
        .map(|i| ((i - 5).div_euclid(4) * 10 + (i - 5).rem_euclid(4)) as f32)
        .collect();
    assert_close(&out["Q"], &expected, &[12]);
}

#[test]
fn local_and_register_storage() {
    let mut p = program(
        "local",
        &[
            ("X", DataKind::Input, &[3, 4]),
            ("Y", DataKind::Output, &[3, 4]),
        ],
    );
    p.build(|b| {
        b.map(
            "rows",
            vec![("i", Range::upto(3))],
            Schedule::Parallel,
            |b| {
                let tmp = b.declare(
                    "tmp",
                    DType::F32,
                    vec![4.into()],
                    DataKind::Transient,
                    Storage::Local,
                );
                let acc = b.declare(
                    "acc",
                    DType::F32,
                    vec![],
                    DataKind::Transient,
                    Storage::Register,
                );
                b.map(
                    "stage",
                    vec![("j", Range::upto(4))],
                    Schedule::Sequential,
                    |b| {
                        b.tasklet(
                            "ld",
                            vec![In("x", "X", at(&[s("i"), s("j")]))],
                            vec![
                                Out("t", &tmp, at(&[s("j")]), None, input("x")),
                                Out("a", &acc, Subset::default(), Some(Wcr::Sum), input("x")),
                            ],
                        );
                    },
                );
                b.map(
                    "rev",
                    vec![("j", Range::upto(4))],
                    Schedule::Sequential,
                    |b| {
                        b.tasklet(
                            "st",
                            vec![
                                In("t", &tmp, at(&[SymExpr::Int(3) - s("j")])),
                                In("a", &acc, Subset::default()),
                            ],
                            vec![Out(
                                "y",
                                "Y",
                                at(&[s("i"), s("j")]),
                                None,
                                bin(BinOp::Add, input("t"), input("a")),
                            )],
                        );
                    },
                );
            },
        );
    });
    let c = build(&p);
    assert!(c.source().contains("float d_tmp[4] = {0};"));
    assert!(c.source().contains("float d_acc = 0;"));
    assert!(
        !c.source().contains("omp atomic"),
        "locals are private to each thread"
    );
    let xs = values(12, 9);
    let out = run(&c, &[("X", Tensor::f32(vec![3, 4], xs.clone()))]);
    let expected: Vec<f32> = (0..12)
        .map(|f| {
            let (i, j) = (f / 4, f % 4);
            xs[i * 4 + 3 - j] + xs[i * 4..i * 4 + 4].iter().sum::<f32>()
        })
        .collect();
    assert_close(&out["Y"], &expected, &[3, 4]);
}

#[test]
fn constants_travel_in_the_weights_file() {
    let mut p = program(
        "affine",
        &[
            ("X", DataKind::Input, &[2, 3]),
            ("W", DataKind::Constant, &[2, 3]),
            ("B", DataKind::Constant, &[3]),
            ("Y", DataKind::Output, &[2, 3]),
        ],
    );
    let (w, bias) = (values(6, 10), vec![0.5f32, -1.0, 2.0]);
    p.constants
        .insert("W".into(), Tensor::f32(vec![2, 3], w.clone()).into());
    p.constants
        .insert("B".into(), Tensor::f32(vec![3], bias.clone()).into());
    p.build(|b| {
        b.map(
            "aff",
            vec![("i", Range::upto(2)), ("j", Range::upto(3))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "f",
                    vec![
                        In("x", "X", at(&[s("i"), s("j")])),
                        In("w", "W", at(&[s("i"), s("j")])),
                        In("b", "B", at(&[s("j")])),
                    ],
                    vec![Out(
                        "y",
                        "Y",
                        at(&[s("i"), s("j")]),
                        None,
                        bin(
                            BinOp::Add,
                            bin(BinOp::Mul, input("x"), input("w")),
                            input("b"),
                        ),
                    )],
                );
            },
        );
    });
    let cp = emit(&p).expect("emits");
    assert_eq!(
        cp.weights.len(),
        64 + 24,
        "B at 0, W at the next 64-byte boundary"
    );
    assert_eq!(&cp.weights[0..4], &0.5f32.to_le_bytes());
    assert_eq!(&cp.weights[64..68], &w[0].to_le_bytes());
    assert!(
        !cp.source.contains("0.5f"),
        "values are not baked into the source"
    );
    let c = build(&p);
    let xs = values(6, 11);
    let out = run(&c, &[("X", Tensor::f32(vec![2, 3], xs.clone()))]);
    let expected: Vec<f32> = (0..6).map(|f| xs[f] * w[f] + bias[f % 3]).collect();
    assert_close(&out["Y"], &expected, &[2, 3]);
}

#[test]
fn symbols_are_bound_from_the_program() {
    let mut p = symbolic_scale();
    p.symbols.insert("N".into(), Some(6));
    let c = build(&p);
    assert_eq!(c.program().inputs[0].shape, vec![6]);
    let xs = values(6, 12);
    let out = run(&c, &[("X", Tensor::f32(vec![6], xs.clone()))]);
    let expected: Vec<f32> = (0..6).map(|i| 0.5 * xs[5 - i]).collect();
    assert_close(&out["Y"], &expected, &[6]);
}

#[test]
fn hostile_names_cannot_inject_code() {
    let names = ["x; system(\"rm -rf /\")", "a*/ int evil; /*", "名前"];
    let mut p = program(
        "evil */ #include <stdio.h>",
        &[
            (names[0], DataKind::Input, &[4]),
            (names[1], DataKind::Constant, &[4]),
            (names[2], DataKind::Output, &[4]),
        ],
    );
    let w = vec![1.0f32, 2.0, 3.0, 4.0];
    p.constants
        .insert(names[1].into(), Tensor::f32(vec![4], w.clone()).into());
    p.build(|b| {
        b.map(
            "*/ evil(); /*",
            vec![("i\n#define", Range::upto(4))],
            Schedule::Parallel,
            |b| {
                b.tasklet(
                    "\n#include </etc/passwd>",
                    vec![
                        In("x */", names[0], at(&[s("i\n#define")])),
                        In("w;", names[1], at(&[s("i\n#define")])),
                    ],
                    vec![Out(
                        "out)",
                        names[2],
                        at(&[s("i\n#define")]),
                        None,
                        bin(BinOp::Sub, input("x */"), input("w;")),
                    )],
                );
            },
        );
    });
    let src = emit(&p).expect("emits").source;
    for bad in names.iter().chain(&[
        "system(",
        "rm -rf",
        "*/ int",
        "i\n#define",
        "#include </etc",
        "名",
    ]) {
        assert!(!src.contains(bad), "source contains `{bad}`");
    }
    let c = build(&p);
    let xs = values(4, 13);
    let out = run(&c, &[(names[0], Tensor::f32(vec![4], xs.clone()))]);
    let expected: Vec<f32> = (0..4).map(|i| xs[i] - w[i]).collect();
    assert_close(&out[names[2]], &expected, &[4]);
}

#[test]
fn bench_reports_one_time_per_repetition() {
    let c = build(&matmul(Schedule::Parallel, Schedule::Sequential));
    let inputs = BTreeMap::from([
        ("A".to_string(), Tensor::f32(vec![5, 7], values(35, 1))),
        ("B".to_string(), Tensor::f32(vec![7, 3], values(21, 2))),
    ]);
    let times = c.bench(&inputs, 2, 5).expect("benchmarks");
    assert_eq!(times.len(), 5);
    assert!(times.iter().all(|t| t.is_finite() && *t >= 0.0));
}

#[test]
fn access_to_access_edge_is_a_copy_loop() {
    let mut p = program(
        "cp",
        &[
            ("X", DataKind::Input, &[2, 3]),
            ("Y", DataKind::Output, &[2, 3]),
        ],
    );
    let (x, y) = (p.fresh_id(), p.fresh_id());
    let access = |id, d: &str| Node {
        id,
        label: d.to_string(),
        kind: NodeKind::Access(d.to_string()),
    };
    let xi = p.graph.add_node(access(x, "X"));
    let yi = p.graph.add_node(access(y, "Y"));
    let cols = Subset(vec![
        dmove::ir::Dim::Range(Range::upto(2)),
        dmove::ir::Dim::Range(Range::new(1, 3)),
    ]);
    p.graph.add_edge(xi, yi, Memlet::new("X", cols));
    let c = Compiled::build_with(&p, &config()).expect("builds");
    let xs = values(6, 14);
    let out = run(&c, &[("X", Tensor::f32(vec![2, 3], xs.clone()))]);
    let expected: Vec<f32> = (0..6)
        .map(|f| if f % 3 == 0 { 0.0 } else { xs[f] })
        .collect();
    assert_close(&out["Y"], &expected, &[2, 3]);
}

#[test]
fn integer_containers_keep_their_values() {
    let mut p = Program::new("ints");
    for (n, dtype, kind) in [
        ("I", DType::I64, DataKind::Input),
        ("J", DType::I64, DataKind::Output),
        ("F", DType::F32, DataKind::Output),
    ] {
        p.data
            .insert(n.into(), DataDesc::new(dtype, vec![3.into()], kind));
    }
    p.inputs.push("I".into());
    p.outputs.extend(["J".to_string(), "F".to_string()]);
    p.build(|b| {
        b.map(
            "cast",
            vec![("i", Range::upto(3))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "cv",
                    vec![In("v", "I", at(&[s("i")]))],
                    vec![
                        Out("j", "J", at(&[s("i")]), None, input("v")),
                        Out(
                            "f",
                            "F",
                            at(&[s("i")]),
                            None,
                            bin(BinOp::Mul, input("v"), TExpr::Const(0.5)),
                        ),
                    ],
                );
            },
        );
    });
    let c = build(&p);
    let big = (1i64 << 40) + 3;
    let out = run(&c, &[("I", Tensor::i64(vec![3], vec![big, -7, 4]))]);
    assert_eq!(
        out["J"],
        Tensor::i64(vec![3], vec![big, -7, 4]),
        "copies are exact"
    );
    assert_close(&out["F"], &[big as f32 * 0.5, -3.5, 2.0], &[3]);
}

/// Every helper the generated C defines is called: the MLP's C has no float8 or atomic helper
/// (it has neither), and none of the integer helpers it does not use.
#[test]
fn only_helpers_the_code_calls_are_emitted() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlp.onnx");
    let mut p = dmove::import_file(&path, &dmove::ImportOptions::default()).expect("imports");
    dmove::expand_all(&mut p).expect("expands");
    let source = emit(&p).expect("emits").source;
    assert!(
        !source.contains("dm_atomic") && !source.contains("dm_fdec"),
        "{source}"
    );
    let defined: Vec<&str> = source
        .lines()
        .filter(|l| l.starts_with("static") && l.contains('('))
        .filter_map(|l| l.split('(').next()?.rsplit([' ', '*']).next())
        .filter(|name| name.starts_with("dm_"))
        .collect();
    assert!(defined.contains(&"dm_alloc"), "{defined:?}");
    for name in defined {
        let whole_word = |(at, _): &(usize, &str)| {
            let next = source[at + name.len()..].chars().next();
            !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let uses = source.match_indices(name).filter(whole_word).count();
        assert!(uses >= 2, "{name} is defined but never used");
    }
}
