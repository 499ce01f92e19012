//! Concat and Split.

use super::{
    agrees, agrees_const, assert_close, assert_err, eval, eval_all, infer, infer_const, int_list,
    ints, iota, sym_ty, t, ty,
};
use dmove::ir::{Attr, SymExpr, Tensor};

#[test]
fn concat_joins_along_the_axis() {
    let a = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let b = t(&[2, 1], &[5.0, 6.0]);
    let y = eval("Concat", &[("axis", Attr::Int(-1))], &[Some(&a), Some(&b)]);
    assert_close(&y, &[2, 3], &[1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
    let c = t(&[1, 2], &[7.0, 8.0]);
    let y = eval(
        "Concat",
        &[("axis", Attr::Int(0))],
        &[Some(&a), Some(&c), Some(&a)],
    );
    let want = [1.0, 2.0, 3.0, 4.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0];
    assert_close(&y, &[5, 2], &want);
}

/// Shape vectors are i64 and must come through unrounded (2⁶⁰ + 1 is not an f64 integer).
#[test]
fn concat_copies_integers_exactly() {
    let big = (1i64 << 60) + 1;
    let y = eval(
        "Concat",
        &[("axis", Attr::Int(0))],
        &[Some(&ints(&[big])), Some(&ints(&[-1, 3]))],
    );
    assert_eq!(y, Tensor::i64(vec![3], vec![big, -1, 3]));
}

#[test]
fn concat_shape_rules() {
    let axis = |a: i64| vec![("axis", Attr::Int(a))];
    let out = infer(
        "Concat",
        &axis(1),
        &[Some(sym_ty(&["B", "3"])), Some(sym_ty(&["B", "5"]))],
        &[],
    )
    .expect("infers");
    assert_eq!(out[0], sym_ty(&["B", "8"]));
    let out = infer(
        "Concat",
        &axis(0),
        &[Some(sym_ty(&["B", "3"])), Some(sym_ty(&["C", "3"]))],
        &[],
    )
    .expect("infers");
    assert_eq!(
        out[0].shape[0],
        (SymExpr::sym("B") + SymExpr::sym("C")).simplify()
    );
    let two = |a: &[i64], b: &[i64]| vec![Some(ty(a)), Some(ty(b))];
    assert_err(
        infer("Concat", &axis(1), &two(&[2, 3], &[4, 3]), &[]),
        "shape",
        "input 1 has extent 4 in dimension 0",
    );
    assert_err(
        infer("Concat", &axis(0), &two(&[2, 3], &[3]), &[]),
        "shape",
        "rank",
    );
    assert_err(
        infer("Concat", &axis(2), &two(&[2, 3], &[2, 3]), &[]),
        "attr",
        "outside",
    );
    assert_err(
        infer("Concat", &[], &two(&[2, 3], &[2, 3]), &[]),
        "attr",
        "required",
    );
    let mixed = vec![
        Some(ty(&[2])),
        Some(dmove::ops::TensorType::new(
            dmove::ir::DType::I64,
            vec![SymExpr::Int(2)],
        )),
    ];
    assert_err(infer("Concat", &axis(0), &mixed, &[]), "shape", "type");
}

#[test]
fn concat_expansion_matches_reference() {
    let cases: [(i64, &[&[i64]]); 4] = [
        (1, &[&[2, 1, 3], &[2, 4, 3], &[2, 0, 3]]),
        (-1, &[&[1, 3], &[1, 1]]),
        (0, &[&[5]]),
        (2, &[&[1, 2, 1], &[1, 2, 2], &[1, 2, 3], &[1, 2, 1]]),
    ];
    for (axis, shapes) in cases {
        let inputs: Vec<_> = shapes.iter().map(|s| Some(ty(s))).collect();
        agrees("Concat", &[("axis", Attr::Int(axis))], &inputs, &[]);
    }
}

#[test]
fn split_cuts_slabs() {
    let x = iota(&[6]);
    let parts = eval_all("Split", &[("split", int_list(&[2, 4]))], &[Some(&x)]).expect("splits");
    assert_close(&parts[0], &[2], &[0.0, 1.0]);
    assert_close(&parts[1], &[4], &[2.0, 3.0, 4.0, 5.0]);
    // Opset 13: the sizes as input 1; along axis 1 of a 2×3 matrix.
    let x = iota(&[2, 3]);
    let parts = eval_all(
        "Split",
        &[("axis", Attr::Int(-1))],
        &[Some(&x), Some(&ints(&[1, 2]))],
    )
    .expect("splits");
    assert_close(&parts[0], &[2, 1], &[0.0, 3.0]);
    assert_close(&parts[1], &[2, 2], &[1.0, 2.0, 4.0, 5.0]);
    // Opset 18: 7 into 4 parts is 2, 2, 2, 1.
    let x = iota(&[7]);
    let parts = eval_all("Split", &[("num_outputs", Attr::Int(4))], &[Some(&x)]).expect("splits");
    let lens: Vec<usize> = parts.iter().map(|p| p.shape[0]).collect();
    assert_eq!(lens, [2, 2, 2, 1]);
    assert_close(&parts[3], &[1], &[6.0]);
}

#[test]
fn split_shape_rules() {
    let x = ty(&[2, 6]);
    let out = infer_const(
        "Split",
        &[("axis", Attr::Int(1)), ("num_outputs", Attr::Int(3))],
        x.clone(),
        &[],
    )
    .expect("infers");
    assert_eq!(out, vec![ty(&[2, 2]); 3]);
    let out =
        infer_const("Split", &[("split", int_list(&[0, 6]))], ty(&[6, 1]), &[]).expect("infers");
    assert_eq!(out, vec![ty(&[0, 1]), ty(&[6, 1])]);
    let sized = |v: &[i64]| {
        infer_const(
            "Split",
            &[("axis", Attr::Int(1))],
            x.clone(),
            &[Some(&ints(v))],
        )
    };
    assert_err(sized(&[2, 3]), "shape", "add up to 5");
    assert_err(sized(&[-1, 7]), "attr", "negative");
    assert_err(
        infer_const("Split", &[], x.clone(), &[]),
        "attr",
        "num_outputs",
    );
    assert_err(
        infer_const("Split", &[("num_outputs", Attr::Int(4))], ty(&[5]), &[]),
        "shape",
        "cannot be cut into 4",
    );
    assert_err(
        infer_const(
            "Split",
            &[("split", int_list(&[1, 1]))],
            ty(&[2]),
            &[Some(&ints(&[1, 1]))],
        ),
        "attr",
        "both",
    );
    // Sizes that are not a constant cannot give static shapes.
    let dynamic = infer(
        "Split",
        &[],
        &[Some(ty(&[4])), Some(super::type_of(&ints(&[2, 2])))],
        &[],
    );
    assert_err(dynamic, "unsupported", "constant");
}

#[test]
fn split_expansion_matches_reference() {
    agrees_const(
        "Split",
        &[("axis", Attr::Int(1))],
        &[3, 7, 2],
        &[Some(ints(&[1, 0, 6]))],
    );
    agrees_const(
        "Split",
        &[("axis", Attr::Int(-1)), ("num_outputs", Attr::Int(3))],
        &[2, 5],
        &[],
    );
    agrees_const("Split", &[("split", int_list(&[1, 1, 1]))], &[3, 1], &[]);
    agrees(
        "Split",
        &[("num_outputs", Attr::Int(2))],
        &[Some(ty(&[1, 4, 1]))],
        &[],
    );
}

/// An ONNX Split without sizes splits into as many parts as the node lists outputs (the importer
/// passes that count on as `num_outputs`).
#[test]
fn imported_split_divides_among_its_outputs() {
    use dmove::onnx::{import, load_model, AttrValue, ImportOptions, ModelBuilder};
    let model = ModelBuilder::new("split", 13)
        .input("x", [2, 6])
        .node(
            "Split",
            &["x"],
            &["a", "b", "c"],
            vec![("axis", AttrValue::Int(1))],
        )
        .output("a", [2, 2])
        .output("b", [2, 2])
        .output("c", [2, 2])
        .encode();
    let p = import(
        &load_model(&model).expect("loads"),
        &ImportOptions::default(),
    )
    .expect("imports");
    for name in ["a", "b", "c"] {
        assert_eq!(p.data[name].shape, ty(&[2, 2]).shape);
    }
    let x = iota(&[2, 6]);
    let out = dmove::interp::run(&p, &[("x".to_string(), x)].into()).expect("runs");
    assert_close(&out["c"], &[2, 2], &[4.0, 5.0, 10.0, 11.0]);
}
