//! MapSqueeze: parameters of extent 1 replaced by their value.

use super::{
    apply_checked, assert_values, compiled_matches_interpreter, map, map_id, matmul_by_hand,
    param_names, refused, run, values,
};
use crate::common;
use dmove::ir::build::{In, Out};
use dmove::ir::{BinOp, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Tensor, Wcr};
use dmove::transform::Params;

fn s(name: &str) -> SymExpr {
    SymExpr::sym(name)
}

/// `C[b] = A[b]·B` for a batch of one, the way an expanded exporter's MatMul looks: every map
/// carries the batch parameter `b = 0:1`, and the `init` map's columns start at 2 to check
/// that a range naming a dropped parameter is resolved.
fn batch_one_matmul(m: i64, k: i64, n: i64) -> Program {
    let mut p = Program::new("bmm");
    common::declare(&mut p, "A", &[1, m, k], DataKind::Input);
    common::declare(&mut p, "B", &[k, n], DataKind::Input);
    common::declare(&mut p, "C", &[1, m, n], DataKind::Output);
    let bij = || Subset::element([s("b"), s("i"), s("j")]);
    p.build(|b| {
        let rows = || {
            vec![
                ("b", Range::upto(1)),
                ("i", Range::upto(m)),
                ("j", Range::upto(n)),
            ]
        };
        b.map("init", rows(), Schedule::Sequential, |b| {
            b.tasklet(
                "zero",
                vec![],
                vec![Out("c", "C", bij(), None, TExpr::Const(0.0))],
            );
        });
        let mut space = rows();
        space.insert(2, ("z", Range::new(s("b") + 2, s("b") + 3)));
        space.push(("k", Range::upto(k)));
        b.map("acc", space, Schedule::Sequential, |b| {
            let product = TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::input("w"));
            b.tasklet(
                "fma",
                vec![
                    In("a", "A", Subset::element([s("b"), s("i"), s("k")])),
                    In("w", "B", Subset::element([s("k"), s("j") + s("z") - 2])),
                ],
                vec![Out("c", "C", bij(), Some(Wcr::Sum), product)],
            );
        });
    });
    p
}

#[test]
fn map_squeeze_drops_the_batch_of_one_and_keeps_the_product() {
    let (m, k, n) = (3, 5, 4);
    let mut p = batch_one_matmul(m, k, n);
    let acc = map_id(&p, "acc");
    let step = apply_checked(&mut p, "MapSqueeze", &[acc], &Params::new());
    assert_eq!(step.touched, [acc]);
    assert_eq!(param_names(map(&p, acc)), ["i", "j", "k"]);
    let text = dmove::ir::text::print(&p);
    assert!(text.contains("A[0, i, k]"), "{text}");
    assert!(text.contains("B[k, j]"), "{text}");
    assert!(text.contains("C[0, i, j] wcr sum"), "{text}");

    let init = map_id(&p, "init");
    apply_checked(&mut p, "MapSqueeze", &[init], &Params::new());
    assert_eq!(param_names(map(&p, init)), ["i", "j"]);

    let (a, b) = (values(3 * 5, 1), values(5 * 4, 2));
    let out = run(
        &p,
        &[
            ("A", Tensor::f32(vec![1, 3, 5], a.clone())),
            ("B", Tensor::f32(vec![5, 4], b.clone())),
        ],
    );
    assert_values(&out["C"], &matmul_by_hand(&a, &b, 3, 5, 4));
    compiled_matches_interpreter(&p);
}

#[test]
fn map_squeeze_refuses_maps_without_a_single_valued_parameter_or_with_only_those() {
    let mut p = common::elementwise_chain(4, 3);
    let id = map_id(&p, "double");
    let why = refused(&mut p, "MapSqueeze", &[id], &Params::new(), id);
    assert_eq!(why, "no parameter of the map has extent 1");

    let mut p = common::elementwise_chain(1, 1);
    let id = map_id(&p, "double");
    let why = refused(&mut p, "MapSqueeze", &[id], &Params::new(), id);
    assert_eq!(
        why,
        "every parameter has extent 1; a map keeps at least one (`i`)"
    );
}

#[test]
fn map_squeeze_candidates_are_the_maps_it_applies_to() {
    let p = batch_one_matmul(2, 3, 2);
    let t = dmove::transform::lookup("MapSqueeze").expect("registered");
    let sites = t.candidates(&p);
    assert_eq!(sites, [vec![map_id(&p, "init")], vec![map_id(&p, "acc")]]);
    assert!(t.candidates(&common::elementwise_chain(1, 1)).is_empty());
}
