//! Typed tasklet compute and element reads at computed indices, end to end: validation, the
//! text format, the interpreter and the generated C, compared with values computed here.

use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp::{self, InterpError};
use dmove::ir::build::{In, Out};
use dmove::ir::text::{parse, print_exact};
use dmove::ir::validate::validate;
use dmove::ir::{
    BinOp, DType, DataDesc, DataKind, Dim, Program, Range, Schedule, Subset, SymExpr, TExpr,
    Tensor, Wcr,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn s(n: &str) -> SymExpr {
    SymExpr::sym(n)
}

fn bin(op: BinOp, a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(op, a, b)
}

fn declare(p: &mut Program, name: &str, dtype: DType, shape: &[i64], kind: DataKind) {
    let shape = shape.iter().map(|&d| SymExpr::Int(d)).collect();
    p.data
        .insert(name.into(), DataDesc::new(dtype, shape, kind));
    match kind {
        DataKind::Input => p.inputs.push(name.into()),
        DataKind::Output => p.outputs.push(name.into()),
        _ => {}
    }
}

/// Runs `p` in the interpreter and as compiled C on the same inputs.
fn both(p: &Program, inputs: &[(&str, Tensor)]) -> [BTreeMap<String, Tensor>; 2] {
    validate(p).expect("valid IR");
    let feed: BTreeMap<String, Tensor> = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    let interpreted = interp::run(p, &feed).expect("interprets");
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let compiled = Compiled::build_with(p, &config)
        .expect("builds")
        .run(&feed)
        .expect("runs");
    [interpreted, compiled]
}

/// One map over `i in 0..n` with a single tasklet.
fn one_map(p: &mut Program, n: i64, inputs: Vec<In>, out: Out) {
    p.build(|b| {
        b.map(
            "m",
            vec![("i", Range::upto(n))],
            Schedule::Sequential,
            |b| {
                b.tasklet("t", inputs, vec![out]);
            },
        );
    });
}

#[test]
fn i64_arithmetic_beyond_2_pow_24_is_exact_in_both_backends() {
    let mut p = Program::new("ints");
    declare(&mut p, "X", DType::I64, &[4], DataKind::Input);
    declare(&mut p, "Y", DType::I64, &[4], DataKind::Output);
    declare(&mut p, "S", DType::I64, &[], DataKind::Output);
    let x = || TExpr::input("x");
    // y = 3x + x - 7, then S = Σ y through a resolved write.
    let value = bin(
        BinOp::Sub,
        bin(BinOp::Add, bin(BinOp::Mul, x(), TExpr::Const(3.0)), x()),
        TExpr::Const(7.0),
    );
    p.build(|b| {
        b.map(
            "m",
            vec![("i", Range::upto(4))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "t",
                    vec![In("x", "X", Subset::element([s("i")]))],
                    vec![
                        Out("y", "Y", Subset::element([s("i")]), None, value.clone()),
                        Out("s", "S", Subset::element([]), Some(Wcr::Sum), value),
                    ],
                );
            },
        );
    });
    let xs = [(1i64 << 30) + 1, (1 << 40) + 3, -(1 << 35) - 1, 16_777_217];
    let want: Vec<i64> = xs.iter().map(|v| 4 * v - 7).collect();
    for out in both(&p, &[("X", Tensor::i64(vec![4], xs.to_vec()))]) {
        assert_eq!(out["Y"], Tensor::i64(vec![4], want.clone()));
        assert_eq!(out["S"], Tensor::i64(vec![], vec![want.iter().sum()]));
    }
}

#[test]
fn f32_tasklets_round_every_intermediate_and_wide_ones_do_not() {
    // (x + 1) - x: 2^24 + 1 is not an f32, so an f32 tasklet yields 0 and an f64 one 1.
    let mut p = Program::new("rounding");
    declare(&mut p, "X", DType::F32, &[3], DataKind::Input);
    declare(&mut p, "Y", DType::F32, &[3], DataKind::Output);
    declare(&mut p, "Z", DType::I64, &[3], DataKind::Output);
    let x = || TExpr::input("x");
    let value = bin(BinOp::Sub, bin(BinOp::Add, x(), TExpr::Const(1.0)), x());
    p.build(|b| {
        for (dst, conn) in [("Y", "y"), ("Z", "z")] {
            b.map(
                dst,
                vec![("i", Range::upto(3))],
                Schedule::Sequential,
                |b| {
                    b.tasklet(
                        "t",
                        vec![In("x", "X", Subset::element([s("i")]))],
                        vec![Out(
                            conn,
                            dst,
                            Subset::element([s("i")]),
                            None,
                            value.clone(),
                        )],
                    );
                },
            );
        }
    });
    let xs = vec![16_777_216.0, 1.0, -2.5];
    for out in both(&p, &[("X", Tensor::f32(vec![3], xs))]) {
        assert_eq!(out["Y"], Tensor::f32(vec![3], vec![0.0, 1.0, 1.0]));
        assert_eq!(out["Z"], Tensor::i64(vec![3], vec![1, 1, 1]));
    }
}

/// `Y[i, d] = T[window][I[i], d]` with the table window `rows` (start, end, step) on dim 0.
fn lookup(rows: (i64, i64, i64)) -> Program {
    let mut p = Program::new("lookup");
    declare(&mut p, "T", DType::F32, &[6, 3], DataKind::Input);
    declare(&mut p, "I", DType::I64, &[4], DataKind::Input);
    declare(&mut p, "Y", DType::F32, &[4, 3], DataKind::Output);
    let window = Subset(vec![
        Dim::Range(Range {
            start: rows.0.into(),
            end: rows.1.into(),
            step: rows.2.into(),
        }),
        Dim::Index(s("d")),
    ]);
    let value = TExpr::element("t", vec![TExpr::input("k"), TExpr::Const(0.0)]);
    p.build(|b| {
        b.map(
            "gather",
            vec![("i", Range::upto(4)), ("d", Range::upto(3))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "pick",
                    vec![
                        In("k", "I", Subset::element([s("i")])),
                        In("t", "T", window),
                    ],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([s("i"), s("d")]),
                        None,
                        value,
                    )],
                );
            },
        );
    });
    p
}

fn table() -> Tensor {
    Tensor::f32(vec![6, 3], (0..18).map(|v| v as f32 * 0.5).collect())
}

#[test]
fn element_reads_are_relative_to_the_window_in_both_backends() {
    let idx = vec![2, 0, 1, 2];
    for rows in [(0, 6, 1), (1, 6, 1), (1, 6, 2)] {
        let p = lookup(rows);
        let t = table();
        let want: Vec<f32> = idx
            .iter()
            .flat_map(|&k| {
                let row = (rows.0 + k * rows.2) as usize;
                (0..3).map(move |d| (row * 3 + d) as f32 * 0.5)
            })
            .collect();
        for out in both(
            &p,
            &[("T", t.clone()), ("I", Tensor::i64(vec![4], idx.clone()))],
        ) {
            assert_eq!(out["Y"], Tensor::f32(vec![4, 3], want.clone()), "{rows:?}");
        }
    }
}

#[test]
fn out_of_window_reads_are_errors_in_the_interpreter_and_clamped_in_c() {
    // Rows 1, 3, 5: relative index 3 is outside the three-row window.
    let p = lookup((1, 6, 2));
    let feed = BTreeMap::from([
        ("T".to_string(), table()),
        ("I".to_string(), Tensor::i64(vec![4], vec![0, 3, 1, -1])),
    ]);
    match interp::run(&p, &feed) {
        Err(InterpError::Index { message, .. }) => {
            assert!(message.contains("t[3, 0]"), "{message}");
            assert!(message.contains("outside 0..3"), "{message}");
        }
        other => panic!("expected an index error, got {other:?}"),
    }
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let out = Compiled::build_with(&p, &config)
        .expect("builds")
        .run(&feed)
        .expect("runs");
    // Clamped: 3 → 2 (row 5) and -1 → 0 (row 1).
    let rows = [1usize, 5, 3, 1];
    let want: Vec<f32> = rows
        .iter()
        .flat_map(|&r| (0..3).map(move |d| (r * 3 + d) as f32 * 0.5))
        .collect();
    assert_eq!(out["Y"], Tensor::f32(vec![4, 3], want));
}

#[test]
fn validation_checks_element_reads_against_their_memlets() {
    let ok = lookup((0, 6, 1));
    validate(&ok).expect("valid");
    // A plain read of a range memlet, and an element read with the wrong number of indices.
    let mut p = Program::new("bad");
    declare(&mut p, "T", DType::F32, &[6, 3], DataKind::Input);
    declare(&mut p, "Y", DType::F32, &[4], DataKind::Output);
    let whole = || Subset::full(&[SymExpr::Int(6), SymExpr::Int(3)]);
    one_map(
        &mut p,
        4,
        vec![In("t", "T", whole()), In("u", "T", whole())],
        Out(
            "y",
            "Y",
            Subset::element([s("i")]),
            None,
            bin(
                BinOp::Add,
                TExpr::input("t"),
                TExpr::element("u", vec![TExpr::Index(s("i"))]),
            ),
        ),
    );
    let err = validate(&p).unwrap_err().to_string();
    assert!(
        err.contains("tasklet input T[0:6, 0:3] is not one element"),
        "{err}"
    );
    assert!(
        err.contains("element read of `u` gives 1 index(es)"),
        "{err}"
    );
}

#[test]
fn element_reads_round_trip_through_the_text_format() {
    let p = lookup((1, 6, 2));
    let text = print_exact(&p);
    assert!(text.contains("y = t[k, 0.0]"), "{text}");
    assert!(text.contains("T[1:6:2, d] -> t"), "{text}");
    let back = parse(&text).expect("parses").program;
    assert_eq!(print_exact(&back), text);
    validate(&back).expect("valid");
}
