use super::{assert_close, check_expansion, eval1, infer, infer_err, sym_ty, t, ty};
use dmove::ir::{DType, SymExpr, Tensor};
use dmove::ops::TensorType;

/// The reference semantics of a binary operator, written in the test.
type Reference = fn(f64, f64) -> f64;

#[test]
fn arithmetic_broadcasts_rows_and_columns() {
    let col = t(&[2, 1], &[10.0, 20.0]);
    let row = t(&[3], &[1.0, 2.0, 4.0]);
    let cases: [(&str, Reference); 5] = [
        ("Add", |a, b| a + b),
        ("Sub", |a, b| a - b),
        ("Mul", |a, b| a * b),
        ("Div", |a, b| a / b),
        ("Pow", f64::powf),
    ];
    for (op, f) in cases {
        let got = eval1(op, &[], &[&col, &row]);
        let mut want = Vec::new();
        for a in [10.0, 20.0] {
            for b in [1.0, 2.0, 4.0] {
                want.push(f(a, b));
            }
        }
        assert_close(&got, &[2, 3], &want);
    }
    // Spot values by hand: 20 - 4, 10 / 4, 20 ^ 2.
    assert_eq!(eval1("Sub", &[], &[&col, &row]).get_f64(5), 16.0);
    assert_eq!(eval1("Div", &[], &[&col, &row]).get_f64(2), 2.5);
    assert_eq!(eval1("Pow", &[], &[&col, &row]).get_f64(4), 400.0);
}

#[test]
fn variadic_max_min_sum_fold_all_inputs() {
    let a = t(&[3], &[1.0, -5.0, 2.0]);
    let b = t(&[1], &[0.0]);
    let c = t(&[2, 1], &[3.0, -1.0]);
    assert_close(
        &eval1("Max", &[], &[&a, &b, &c]),
        &[2, 3],
        &[3.0, 3.0, 3.0, 1.0, 0.0, 2.0],
    );
    assert_close(
        &eval1("Min", &[], &[&a, &b, &c]),
        &[2, 3],
        &[0.0, -5.0, 0.0, -1.0, -5.0, -1.0],
    );
    assert_close(
        &eval1("Sum", &[], &[&a, &b, &c]),
        &[2, 3],
        &[4.0, -2.0, 5.0, 0.0, -6.0, 1.0],
    );
    assert_close(&eval1("Max", &[], &[&a]), &[3], &[1.0, -5.0, 2.0]);
}

#[test]
fn comparisons_produce_booleans() {
    let a = t(&[3], &[1.0, 2.0, 3.0]);
    let b = t(&[], &[2.0]);
    let expect = [
        ("Less", [1.0, 0.0, 0.0]),
        ("LessOrEqual", [1.0, 1.0, 0.0]),
        ("Greater", [0.0, 0.0, 1.0]),
        ("GreaterOrEqual", [0.0, 1.0, 1.0]),
        ("Equal", [0.0, 1.0, 0.0]),
    ];
    for (op, want) in expect {
        let got = eval1(op, &[], &[&a, &b]);
        assert_eq!(got.dtype(), DType::Bool, "{op}");
        assert_close(&got, &[3], &want);
        let inferred = infer(op, &[], &[Some(ty(&[3])), Some(ty(&[]))], &[]).expect("infers");
        assert_eq!(inferred[0].dtype, DType::Bool);
    }
}

#[test]
fn integer_division_truncates_like_onnx() {
    let a = Tensor::i64(vec![2], vec![7, -7]);
    let b = Tensor::i64(vec![1], vec![2]);
    assert_eq!(eval1("Div", &[], &[&a, &b]).to_i64_vec(), vec![3, -3]);
}

#[test]
fn infers_symbolic_broadcasts() {
    let out = infer(
        "Add",
        &[],
        &[Some(sym_ty(&["B", "S", "8"])), Some(sym_ty(&["8"]))],
        &[],
    )
    .expect("infers");
    assert_eq!(out[0], sym_ty(&["B", "S", "8"]));
    let out = infer(
        "Mul",
        &[],
        &[Some(sym_ty(&["B", "1"])), Some(sym_ty(&["1", "N"]))],
        &[],
    )
    .expect("infers");
    assert_eq!(out[0].shape, vec![SymExpr::sym("B"), SymExpr::sym("N")]);
}

#[test]
fn rejects_bad_shapes_types_and_arity() {
    let msg = infer_err("Add", &[], &[Some(ty(&[2, 3])), Some(ty(&[4]))]);
    assert!(msg.contains("3 and 4"), "{msg}");
    let msg = infer_err("Sub", &[], &[Some(sym_ty(&["N"])), Some(sym_ty(&["M"]))]);
    assert!(msg.contains("N and M"), "{msg}");
    let int = TensorType::new(DType::I64, vec![SymExpr::Int(3)]);
    let msg = infer_err("Mul", &[], &[Some(ty(&[3])), Some(int.clone())]);
    assert!(msg.contains("type i64"), "{msg}");
    // Pow's exponent may have another type.
    assert!(infer("Pow", &[], &[Some(ty(&[3])), Some(int)], &[]).is_ok());
    let msg = infer_err("Add", &[], &[Some(ty(&[3]))]);
    assert!(msg.contains("expected 2 input(s), got 1"), "{msg}");
    let msg = infer_err("Max", &[], &[]);
    assert!(msg.contains("got 0"), "{msg}");
}

#[test]
fn expansions_match_reference_on_awkward_shapes() {
    let pairs: [(&[i64], &[i64]); 5] = [
        (&[2, 1, 3], &[4, 3]),
        (&[1], &[5]),
        (&[3], &[]),
        (&[1, 1], &[1, 1]),
        (&[3, 1, 2], &[3, 5, 1]),
    ];
    let ops = [
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Max",
        "Min",
        "Sum",
        "Less",
        "GreaterOrEqual",
        "Equal",
    ];
    for op in ops {
        for (a, b) in pairs {
            check_expansion(op, &[], &[Some(ty(a)), Some(ty(b))], &[]);
        }
    }
    for op in ["Max", "Min", "Sum"] {
        check_expansion(op, &[], &[Some(ty(&[3, 1]))], &[]);
        check_expansion(
            op,
            &[],
            &[Some(ty(&[2, 1, 3])), Some(ty(&[1])), Some(ty(&[4, 1]))],
            &[],
        );
    }
}
