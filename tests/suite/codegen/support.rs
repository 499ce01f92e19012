//! Shared helpers for the C backend tests: building programs, running them, comparing.

use dmove::codegen::{BuildConfig, Compiled};
use dmove::ir::build::{In, Out};
use dmove::ir::validate::validate;
use dmove::ir::{
    BinOp, DType, DataDesc, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Tensor, Wcr,
};
use dmove::numerics::compare;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub fn s(n: &str) -> SymExpr {
    SymExpr::sym(n)
}

pub fn at(idx: &[SymExpr]) -> Subset {
    Subset::element(idx.iter().cloned())
}

pub fn input(c: &str) -> TExpr {
    TExpr::input(c)
}

pub fn bin(op: BinOp, a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(op, a, b)
}

/// A program with `f32` containers of static shape.
pub fn program(name: &str, data: &[(&str, DataKind, &[i64])]) -> Program {
    let mut p = Program::new(name);
    for (n, kind, shape) in data {
        let shape = shape.iter().map(|d| SymExpr::Int(*d)).collect();
        p.data
            .insert(n.to_string(), DataDesc::new(DType::F32, shape, *kind));
        match kind {
            DataKind::Input => p.inputs.push(n.to_string()),
            DataKind::Output => p.outputs.push(n.to_string()),
            _ => {}
        }
    }
    p
}

/// Builds in a cache under the test target directory, whatever `$DMOVE_CACHE` says.
pub fn config() -> BuildConfig {
    let mut c = BuildConfig::from_env();
    c.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    c
}

pub fn build(p: &Program) -> Compiled {
    validate(p).expect("the test program is valid IR");
    Compiled::build_with(p, &config()).expect("builds")
}

pub fn run(c: &Compiled, inputs: &[(&str, Tensor)]) -> BTreeMap<String, Tensor> {
    let map = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    c.run(&map).expect("runs")
}

/// Deterministic, varied test values in [-1.5, 1.5].
pub fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + seed * 3) % 13) as f32 * 0.25 - 1.5)
        .collect()
}

pub fn assert_close(actual: &Tensor, expected: &[f32], shape: &[usize]) {
    let want = Tensor::f32(shape.to_vec(), expected.to_vec());
    let c = compare(actual, &want);
    assert!(
        c.within_tolerance,
        "mismatch {c:?}\nactual   {:?}\nexpected {expected:?}",
        actual.to_f64_vec()
    );
}

/// C[i, j] = Σ_k A[i, k] · B[k, j] as an init map plus an accumulation; `outer` schedules the
/// (i, j) map and `inner` the k map nested in it.
pub fn matmul(outer: Schedule, inner: Schedule) -> Program {
    let (m, k, n) = (5, 7, 3);
    let mut p = program(
        "mm",
        &[
            ("A", DataKind::Input, &[m, k]),
            ("B", DataKind::Input, &[k, n]),
            ("C", DataKind::Output, &[m, n]),
        ],
    );
    p.build(|b| {
        b.map(
            "init",
            vec![("i", Range::upto(m)), ("j", Range::upto(n))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "zero",
                    vec![],
                    vec![Out(
                        "c",
                        "C",
                        at(&[s("i"), s("j")]),
                        None,
                        TExpr::Const(0.0),
                    )],
                );
            },
        );
        b.map(
            "rows",
            vec![("i", Range::upto(m)), ("j", Range::upto(n))],
            outer,
            |b| {
                b.map("red", vec![("k", Range::upto(k))], inner, |b| {
                    b.tasklet(
                        "fma",
                        vec![
                            In("a", "A", at(&[s("i"), s("k")])),
                            In("b", "B", at(&[s("k"), s("j")])),
                        ],
                        vec![Out(
                            "c",
                            "C",
                            at(&[s("i"), s("j")]),
                            Some(Wcr::Sum),
                            bin(BinOp::Mul, input("a"), input("b")),
                        )],
                    );
                });
            },
        );
    });
    p
}

pub fn check_matmul(c: &Compiled) {
    let (a, b) = (values(35, 2), values(21, 5));
    let out = run(
        c,
        &[
            ("A", Tensor::f32(vec![5, 7], a.clone())),
            ("B", Tensor::f32(vec![7, 3], b.clone())),
        ],
    );
    let mut expected = vec![0.0f32; 15];
    for i in 0..5 {
        for j in 0..3 {
            expected[i * 3 + j] = (0..7).map(|k| a[i * 7 + k] * b[k * 3 + j]).sum();
        }
    }
    assert_close(&out["C"], &expected, &[5, 3]);
}

pub fn symbolic_scale() -> Program {
    let mut p = Program::new("sym");
    p.symbols.insert("N".into(), None);
    for (n, kind) in [("X", DataKind::Input), ("Y", DataKind::Output)] {
        p.data
            .insert(n.into(), DataDesc::new(DType::F32, vec![s("N")], kind));
    }
    p.inputs.push("X".into());
    p.outputs.push("Y".into());
    p.build(|b| {
        b.map(
            "half",
            vec![("i", Range::upto(s("N")))],
            Schedule::Parallel,
            |b| {
                b.tasklet(
                    "f",
                    vec![In("x", "X", at(&[s("i")]))],
                    vec![Out(
                        "y",
                        "Y",
                        at(&[s("N") - 1 - s("i")]),
                        None,
                        bin(BinOp::Mul, input("x"), TExpr::Const(0.5)),
                    )],
                );
            },
        );
    });
    p
}
