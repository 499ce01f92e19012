//! The Reduce* family.

use super::{
    assert_close, attr_error, c_matches_reference, eval, expansion_agrees, infer, infer_with, ints,
    shape_error, t, t64, ty, Case, Operand,
};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::{OpError, TensorType};
use std::collections::BTreeMap;

const ALL: [&str; 10] = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
];

#[test]
fn reductions_by_hand() {
    // [[1, 2, 3], [4, 5, 6]]
    let x = t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let ins = [Some(&x)];
    let row = [("axes", ints(&[1]))];
    assert_close(&eval("ReduceSum", &row, &ins), &[2, 1], &[6., 15.]);
    let col = [("axes", ints(&[0])), ("keepdims", Attr::Int(0))];
    assert_close(&eval("ReduceMean", &col, &ins), &[3], &[2.5, 3.5, 4.5]);
    assert_close(&eval("ReduceMax", &[], &ins), &[1, 1], &[6.]);
    let last = [("axes", ints(&[-1]))];
    assert_close(&eval("ReduceMin", &last, &ins), &[2, 1], &[1., 4.]);
    assert_close(&eval("ReduceProd", &row, &ins), &[2, 1], &[6., 120.]);
    let l2 = [14f64.sqrt(), 77f64.sqrt()];
    assert_close(&eval("ReduceL2", &row, &ins), &[2, 1], &l2);
    assert_close(&eval("ReduceSumSquare", &col, &ins), &[3], &[17., 29., 45.]);
    assert_close(
        &eval("ReduceLogSum", &row, &ins),
        &[2, 1],
        &[6f64.ln(), 15f64.ln()],
    );
    let lse = |v: &[f64]| v.iter().map(|x| x.exp()).sum::<f64>().ln();
    assert_close(
        &eval("ReduceLogSumExp", &row, &ins),
        &[2, 1],
        &[lse(&[1., 2., 3.]), lse(&[4., 5., 6.])],
    );
    let signed = t(&[2, 2], &[-1., 2., -3., -4.]);
    let l1 = eval("ReduceL1", &[("keepdims", Attr::Int(0))], &[Some(&signed)]);
    assert_close(&l1, &[], &[10.]);
}

#[test]
fn axes_from_input_empty_axes_and_noop() {
    let x = t(&[2, 3], &[1., -2., 3., 4., 5., -6.]);
    // Opset 13+ ReduceSum / 18+ others: axes as input 1.
    let axes = t64(&[0]);
    let got = eval(
        "ReduceSum",
        &[("keepdims", Attr::Int(0))],
        &[Some(&x), Some(&axes)],
    );
    assert_close(&got, &[3], &[5., 3., -3.]);
    // Empty axes reduce everything …
    let empty = t64(&[]);
    let got = eval("ReduceSum", &[], &[Some(&x), Some(&empty)]);
    assert_close(&got, &[1, 1], &[5.]);
    // … unless noop_with_empty_axes: each element is reduced alone.
    let noop = [("noop_with_empty_axes", Attr::Int(1))];
    let got = eval("ReduceSum", &noop, &[Some(&x), Some(&empty)]);
    assert_close(&got, &[2, 3], &[1., -2., 3., 4., 5., -6.]);
    let got = eval("ReduceSumSquare", &noop, &[Some(&x)]);
    assert_close(&got, &[2, 3], &[1., 4., 9., 16., 25., 36.]);
    let got = eval("ReduceL2", &noop, &[Some(&x)]);
    assert_close(&got, &[2, 3], &[1., 2., 3., 4., 5., 6.]);
    // Inference needs the constant to know the shape.
    let typed = [
        Some(ty(&[2, 3])),
        Some(TensorType::new(DType::I64, vec![SymExpr::Int(1)])),
    ];
    let got = infer_with("ReduceMax", &[], &typed, &[None, Some(&t64(&[-1]))]);
    assert_eq!(got.expect("infers"), ty(&[2, 1]));
    let dynamic = infer("ReduceMax", &[], &typed);
    assert!(
        matches!(dynamic, Err(OpError::Unsupported { .. })),
        "{dynamic:?}"
    );
}

#[test]
fn reductions_reject_bad_axes_and_types() {
    let x = || Some(ty(&[2, 3, 4]));
    attr_error(infer("ReduceSum", &[("axes", ints(&[3]))], &[x()]), "axes");
    attr_error(
        infer("ReduceMean", &[("axes", ints(&[-4]))], &[x()]),
        "axes",
    );
    attr_error(
        infer("ReduceMax", &[("axes", ints(&[1, -2]))], &[x()]),
        "axes",
    );
    attr_error(
        infer("ReduceMin", &[("keepdims", Attr::Int(2))], &[x()]),
        "keepdims",
    );
    let axes_ty = Some(TensorType::new(DType::I64, vec![SymExpr::Int(1)]));
    let both = infer_with(
        "ReduceSum",
        &[("axes", ints(&[0]))],
        &[x(), axes_ty],
        &[None, Some(&t64(&[1]))],
    );
    attr_error(both, "axes");
    let flags = TensorType::new(DType::Bool, vec![SymExpr::Int(2)]);
    shape_error(infer("ReduceProd", &[], &[Some(flags)]), "numeric");
    let float_axes = dmove::ir::Tensor::f32(vec![1], vec![0.0]);
    let f_ty = Some(ty(&[1]));
    shape_error(
        infer_with("ReduceL2", &[], &[x(), f_ty], &[None, Some(&float_axes)]),
        "integer",
    );
}

#[test]
fn reduction_expansions_match_reference() {
    type Case<'a> = (Vec<(&'a str, Attr)>, &'a [usize]);
    let cases: Vec<Case> = vec![
        (vec![("axes", ints(&[0, 2]))], &[1, 3, 1, 5]),
        (vec![], &[5]),
        (
            vec![("axes", ints(&[-1])), ("keepdims", Attr::Int(0))],
            &[2, 3, 4],
        ),
        (vec![("keepdims", Attr::Int(0))], &[3, 1, 2]),
        (vec![("noop_with_empty_axes", Attr::Int(1))], &[2, 3]),
        (vec![("axes", ints(&[1]))], &[3, 7]),
    ];
    for op in ALL {
        for (a, shape) in &cases {
            expansion_agrees(op, a, &[Some(shape)], &[]);
        }
    }
}

#[test]
fn reduction_expansions_with_constant_axes() {
    for op in ["ReduceSum", "ReduceMean", "ReduceL2"] {
        let consts = vec![None, Some(t64(&[2, 0]))];
        expansion_agrees(op, &[], &[Some(&[3, 2, 5]), None], &consts);
        let consts = vec![None, Some(t64(&[]))];
        let noop = [("noop_with_empty_axes", Attr::Int(1))];
        expansion_agrees(op, &noop, &[Some(&[2, 3]), None], &consts);
    }
}

#[test]
fn mean_over_a_symbolic_axis_divides_by_its_value() {
    let x = TensorType::new(DType::F32, vec![SymExpr::Int(3), SymExpr::sym("S")]);
    let a: BTreeMap<String, Attr> = [("axes".to_string(), ints(&[1]))].into();
    let mut p = single_op_program("ReduceMean", a, &[Some(x)], &[]).expect("builds");
    p.symbols.insert("S".into(), Some(5));
    expansion_matches(&p, 3).expect("matches");
}

/// Opset 20 allows booleans in ReduceMax (any) and ReduceMin (all).
#[test]
fn boolean_max_is_any_and_min_is_all() {
    let flags = Tensor::from_f64(DType::Bool, vec![2, 3], &[0., 1., 0., 0., 0., 0.]);
    let row = [("axes", ints(&[1])), ("keepdims", Attr::Int(0))];
    let any = eval("ReduceMax", &row, &[Some(&flags)]);
    assert_eq!((any.dtype(), any.to_f64_vec()), (DType::Bool, vec![1., 0.]));
    let all = eval("ReduceMin", &[("axes", ints(&[0]))], &[Some(&flags)]);
    assert_eq!(all.to_f64_vec(), vec![0., 0., 0.]);
    let ty = TensorType::new(DType::Bool, vec![SymExpr::Int(3), SymExpr::Int(4)]);
    for op in ["ReduceMax", "ReduceMin"] {
        let a: BTreeMap<String, Attr> = [("axes".to_string(), ints(&[1]))].into();
        let p = single_op_program(op, a, &[Some(ty.clone())], &[]).expect("builds");
        expansion_matches(&p, 4).expect("matches");
    }
}

/// ReduceL1, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare on several shapes, axes (attribute, constant
/// input, negative, empty with and without `noop_with_empty_axes`, all) and `keepdims`. The
/// logarithm's inputs are positive, so its sums are too.
pub fn l1_logsum_sumsquare_cases() -> Vec<Case> {
    type Config = (
        Vec<(&'static str, Attr)>,
        &'static [usize],
        Option<Vec<i64>>,
    );
    let configs: Vec<Config> = vec![
        (vec![("axes", ints(&[1]))], &[2, 3, 4], None),
        (
            vec![("axes", ints(&[0, 2])), ("keepdims", Attr::Int(0))],
            &[3, 1, 5],
            None,
        ),
        (vec![("axes", ints(&[-1]))], &[5, 7], None),
        (vec![("keepdims", Attr::Int(0))], &[4, 3], None),
        (vec![], &[9], None),
        (
            vec![("keepdims", Attr::Int(0))],
            &[3, 2, 5],
            Some(vec![2, 0]),
        ),
        (vec![], &[2, 3], Some(vec![])),
        (
            vec![("noop_with_empty_axes", Attr::Int(1))],
            &[2, 3],
            Some(vec![]),
        ),
    ];
    let mut cases = Vec::new();
    for op in [
        "ReduceL1",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceSumSquare",
    ] {
        for (attrs, shape, axes) in &configs {
            let x = if op == "ReduceLogSum" {
                Operand::Positive(shape.to_vec())
            } else {
                Operand::Random(DType::F32, shape.to_vec())
            };
            let mut inputs = vec![x];
            inputs.extend(axes.as_deref().map(|a| Operand::Constant(t64(a))));
            cases.push(Case {
                op,
                attrs: attrs.clone(),
                inputs,
                outputs: 1,
            });
        }
    }
    cases
}

/// The three reductions lowered fully, compiled to one C program, run and compared with the
/// reference interpreter.
#[test]
fn l1_logsum_and_sumsquare_compile_to_c_and_match_the_reference() {
    c_matches_reference(&l1_logsum_sumsquare_cases(), 7);
}
