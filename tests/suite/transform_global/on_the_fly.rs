//! OnTheFlyFusion.

use super::*;
use crate::common::declare;
use dmove::ir::build::Out;
use dmove::ir::{BinOp, DType, DataDesc, DataKind, Subset, TExpr, UnOp, Wcr};
use dmove::transform::ParamValue;

fn transient(p: &mut Program, name: &str, shape: &[i64]) {
    let shape = shape.iter().map(|&d| d.into()).collect();
    p.data.insert(
        name.into(),
        DataDesc::new(DType::F32, shape, DataKind::Transient),
    );
}

/// `T[i] = exp(X[i]) · 0.5` over 0:10, then the 3-point stencil `Y[i] = T[i] + T[i+1] + T[i+2]`.
fn stencil() -> (Program, NodeId, NodeId) {
    let mut p = Program::new("stencil");
    declare(&mut p, "X", &[10], DataKind::Input);
    declare(&mut p, "Y", &[8], DataKind::Output);
    transient(&mut p, "T", &[10]);
    let f = TExpr::binary(
        BinOp::Mul,
        TExpr::unary(UnOp::Exp, TExpr::input("x")),
        TExpr::Const(0.5),
    );
    let producer = map1(
        &mut p,
        "f",
        &[("i", 10)],
        vec![read("x", "X", vec![s("i")])],
        ("T", Subset::element([s("i")])),
        f,
    );
    let reads = (0..3)
        .map(|k| read(["a", "b", "c"][k], "T", vec![s("i") + k as i64]))
        .collect();
    let sum = TExpr::binary(
        BinOp::Add,
        TExpr::binary(BinOp::Add, TExpr::input("a"), TExpr::input("b")),
        TExpr::input("c"),
    );
    let consumer = map1(
        &mut p,
        "stencil",
        &[("i", 8)],
        reads,
        ("Y", Subset::element([s("i")])),
        sum,
    );
    (p, producer, consumer)
}

#[test]
fn inlines_the_producer_at_each_stencil_read() {
    let (mut p, producer, consumer) = stencil();
    apply_checked(
        &mut p,
        "OnTheFlyFusion",
        &[producer, consumer],
        &Params::new(),
    );
    assert!(!p.data.contains_key("T"), "T disappears");
    assert!(p.node(producer).is_none());
    assert!(p.node(consumer).is_some(), "the consumer keeps its id");
    let x = values(10, 4);
    let out = run(&p, &[("X", Tensor::f32(vec![10], x.clone()))]);
    let t = |k: usize| f64::from(x[k]).exp() * 0.5;
    let want: Vec<f64> = (0..8).map(|i| t(i) + t(i + 1) + t(i + 2)).collect();
    assert_values(&out["Y"], &want);
}

#[test]
fn refuses_a_recomputation_factor_above_the_limit() {
    let (mut p, producer, consumer) = stencil();
    let ps: Params = [("max_recompute".to_string(), ParamValue::Int(2))].into();
    let why = refused(
        &mut p,
        "OnTheFlyFusion",
        &[producer, consumer],
        &ps,
        consumer,
    );
    // 8 iterations × 3 reads of a 10-element T.
    assert!(
        why.contains("recomputation factor 2.4 exceeds max_recompute=2"),
        "{why}"
    );
}

/// `T = 2·B` (4×5) element-wise, then `C = A·T` with `A` 3×4 (init map + accumulation map
/// reading each `T[k, j]` three times).
fn scaled_matmul() -> (Program, NodeId, NodeId) {
    let mut p = Program::new("scaled_matmul");
    declare(&mut p, "A", &[3, 4], DataKind::Input);
    declare(&mut p, "B", &[4, 5], DataKind::Input);
    declare(&mut p, "C", &[3, 5], DataKind::Output);
    transient(&mut p, "T", &[4, 5]);
    let producer = map1(
        &mut p,
        "scale",
        &[("k", 4), ("j", 5)],
        vec![read("b", "B", vec![s("k"), s("j")])],
        ("T", Subset::element([s("k"), s("j")])),
        TExpr::binary(BinOp::Mul, TExpr::input("b"), TExpr::Const(2.0)),
    );
    map1(
        &mut p,
        "init",
        &[("i", 3), ("j", 5)],
        vec![],
        ("C", Subset::element([s("i"), s("j")])),
        TExpr::Const(0.0),
    );
    let consumer = p.build(|b| {
        let params = vec![
            ("i", Range::upto(3)),
            ("j", Range::upto(5)),
            ("k", Range::upto(4)),
        ];
        b.map("acc", params, Schedule::Sequential, |b| {
            b.tasklet(
                "fma",
                vec![
                    read("a", "A", vec![s("i"), s("k")]),
                    read("t", "T", vec![s("k"), s("j")]),
                ],
                vec![Out(
                    "c",
                    "C",
                    Subset::element([s("i"), s("j")]),
                    Some(Wcr::Sum),
                    TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::input("t")),
                )],
            );
        })
    });
    (p, producer, consumer)
}

#[test]
fn inlines_an_element_wise_producer_into_a_matmul() {
    let (mut p, producer, consumer) = scaled_matmul();
    apply_checked(
        &mut p,
        "OnTheFlyFusion",
        &[producer, consumer],
        &Params::new(),
    );
    assert!(!p.data.contains_key("T"));
    let (a, b) = (values(12, 1), values(20, 2));
    let out = run(
        &p,
        &[
            ("A", Tensor::f32(vec![3, 4], a.clone())),
            ("B", Tensor::f32(vec![4, 5], b.clone())),
        ],
    );
    let mut want = vec![0.0; 15];
    for i in 0..3 {
        for j in 0..5 {
            want[i * 5 + j] = (0..4)
                .map(|k| f64::from(a[i * 4 + k]) * 2.0 * f64::from(b[k * 5 + j]))
                .sum();
        }
    }
    assert_values(&out["C"], &want);
}

#[test]
fn refuses_a_reduction_producer() {
    let mut p = Program::new("rowsum");
    declare(&mut p, "X", &[4, 6], DataKind::Input);
    declare(&mut p, "Y", &[4], DataKind::Output);
    transient(&mut p, "T", &[4]);
    let producer = p.build(|b| {
        let params = vec![("i", Range::upto(4)), ("k", Range::upto(6))];
        b.map("sum", params, Schedule::Sequential, |b| {
            b.tasklet(
                "add",
                vec![read("x", "X", vec![s("i"), s("k")])],
                vec![Out(
                    "o",
                    "T",
                    Subset::element([s("i")]),
                    Some(Wcr::Sum),
                    TExpr::input("x"),
                )],
            );
        })
    });
    let consumer = map1(
        &mut p,
        "half",
        &[("i", 4)],
        vec![read("t", "T", vec![s("i")])],
        ("Y", Subset::element([s("i")])),
        TExpr::binary(BinOp::Mul, TExpr::input("t"), TExpr::Const(0.5)),
    );
    let why = refused(
        &mut p,
        "OnTheFlyFusion",
        &[producer, consumer],
        &Params::new(),
        producer,
    );
    assert!(
        why.contains("producer is not element-wise: it is a reduction (writes `T` with wcr sum)"),
        "{why}"
    );
}

#[test]
fn on_the_fly_fusions_compile_and_match_the_interpreter() {
    let (mut p, producer, consumer) = stencil();
    apply_checked(
        &mut p,
        "OnTheFlyFusion",
        &[producer, consumer],
        &Params::new(),
    );
    compiled_matches_interpreter(&p);
    let (mut p, producer, consumer) = scaled_matmul();
    apply_checked(
        &mut p,
        "OnTheFlyFusion",
        &[producer, consumer],
        &Params::new(),
    );
    compiled_matches_interpreter(&p);
}
