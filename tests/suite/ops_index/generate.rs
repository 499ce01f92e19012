use super::{check_expansion, eval, eval1, f32s, i64s, infer, infer_err, run_expanded, ty};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::TensorType;
use std::collections::BTreeMap;

#[test]
fn shape_and_size_report_dimensions() {
    let x = Tensor::zeros(DType::F32, vec![2, 3, 5]);
    assert_eq!(eval1("Shape", &[], &[&x]), i64s(&[3], &[2, 3, 5]));
    let tail = [("start", Attr::Int(-2))];
    assert_eq!(eval1("Shape", &tail, &[&x]), i64s(&[2], &[3, 5]));
    let clamped = [("start", Attr::Int(-9)), ("end", Attr::Int(1))];
    assert_eq!(eval1("Shape", &clamped, &[&x]), i64s(&[1], &[2]));
    let empty = [("start", Attr::Int(2)), ("end", Attr::Int(1))];
    assert_eq!(eval1("Shape", &empty, &[&x]), i64s(&[0], &[]));
    assert_eq!(eval1("Size", &[], &[&x]), i64s(&[], &[30]));
    assert_eq!(run_expanded("Size", &[], &[&x], &[])[0], i64s(&[], &[30]));
    assert_eq!(
        run_expanded("Shape", &tail, &[&x], &[])[0],
        i64s(&[2], &[3, 5])
    );
    check_expansion("Shape", &[], &[ty(DType::I64, &[1, 4, 1])], &[]);
    check_expansion(
        "Shape",
        &[("end", Attr::Int(-1))],
        &[ty(DType::F32, &[3, 2])],
        &[],
    );
    check_expansion("Size", &[], &[ty(DType::Bool, &[])], &[]);
}

#[test]
fn shape_and_size_of_symbolic_inputs_are_index_expressions() {
    let n = 5i64;
    let x = TensorType::new(DType::F32, vec![SymExpr::sym("N"), SymExpr::Int(2)]);
    for (op, want) in [("Shape", vec![n, 2]), ("Size", vec![2 * n])] {
        let mut p =
            single_op_program(op, BTreeMap::new(), &[Some(x.clone())], &[]).expect("builds");
        p.symbols.insert("N".into(), Some(n));
        dmove::ops::expand::expand_all(&mut p).expect("expands");
        let feed = BTreeMap::from([(
            "x0".to_string(),
            Tensor::zeros(DType::F32, vec![usize::try_from(n).expect("fits"), 2]),
        )]);
        let out = dmove::interp::run(&p, &feed).expect("runs");
        assert_eq!(out["y0"].to_i64_vec(), want, "{op}");
    }
}

#[test]
fn constant_of_shape_fills_with_the_typed_value() {
    let shape = i64s(&[2], &[2, 3]);
    let y = eval1("ConstantOfShape", &[], &[&shape]);
    assert_eq!(y, Tensor::zeros(DType::F32, vec![2, 3]));
    let typed = [
        ("value", Attr::Int(7)),
        ("value_type", Attr::Str("i64".into())),
    ];
    let y = eval1("ConstantOfShape", &typed, &[&shape]);
    assert_eq!(y, i64s(&[2, 3], &[7; 6]));
    let scalar = i64s(&[0], &[]);
    let y = eval1(
        "ConstantOfShape",
        &[("value", Attr::Float(0.5))],
        &[&scalar],
    );
    assert_eq!(y, f32s(&[], &[0.5]));
    let got = run_expanded("ConstantOfShape", &typed, &[], &[Some(shape.clone())]);
    assert_eq!(got[0], i64s(&[2, 3], &[7; 6]));
    let shape_ty = ty(DType::I64, &[2]);
    let msg = infer_err("ConstantOfShape", &[], std::slice::from_ref(&shape_ty), &[]);
    assert!(msg.contains("must be a constant"), "{msg}");
    let neg = i64s(&[2], &[2, -1]);
    let msg = infer_err(
        "ConstantOfShape",
        &[],
        std::slice::from_ref(&shape_ty),
        &[Some(&neg)],
    );
    assert!(msg.contains("negative dimension -1"), "{msg}");
    let bad_type = [("value_type", Attr::Str("f128".into()))];
    let msg = infer_err("ConstantOfShape", &bad_type, &[shape_ty], &[Some(&shape)]);
    assert!(msg.contains("value_type"), "{msg}");
    for (attrs, dims) in [
        (
            vec![
                ("value", Attr::Float(1.0)),
                ("value_type", Attr::Str("bool".into())),
            ],
            vec![1, 4, 1],
        ),
        (vec![("value", Attr::Float(-2.25))], vec![3]),
    ] {
        let s = i64s(&[dims.len()], &dims);
        check_expansion(
            "ConstantOfShape",
            &attrs,
            &[ty(DType::I64, &[dims.len() as i64])],
            &[Some(s)],
        );
    }
}

#[test]
fn range_counts_up_and_down() {
    let r = |s: i64, l: i64, d: i64| {
        let [s, l, d] = [s, l, d].map(|v| i64s(&[], &[v]));
        eval1("Range", &[], &[&s, &l, &d])
    };
    assert_eq!(r(3, 9, 3), i64s(&[2], &[3, 6]));
    assert_eq!(r(10, 4, -3), i64s(&[2], &[10, 7]));
    assert_eq!(r(0, 0, 1), i64s(&[0], &[]));
    let f = |v: f32| f32s(&[], &[v]);
    let y = eval1("Range", &[], &[&f(1.0), &f(2.0), &f(0.25)]);
    assert_eq!(y.to_f64_vec(), vec![1.0, 1.25, 1.5, 1.75]);
    let zero = eval("Range", &[], &[&f(1.0), &f(2.0), &f(0.0)]).unwrap_err();
    assert!(zero.to_string().contains("steps of 0"), "{zero}");
    let scalar = ty(DType::I64, &[]);
    let msg = infer_err(
        "Range",
        &[],
        &[scalar.clone(), scalar.clone(), scalar.clone()],
        &[],
    );
    assert!(msg.contains("must be constants"), "{msg}");
    let msg = infer_err(
        "Range",
        &[],
        &[scalar.clone(), ty(DType::F32, &[]), scalar.clone()],
        &[],
    );
    assert!(msg.contains("input 1 has type f32"), "{msg}");
    let big = (1i64 << 40) + 5;
    let consts = [
        Some(i64s(&[], &[big])),
        Some(i64s(&[], &[big + 14])),
        Some(i64s(&[], &[3])),
    ];
    let types = [scalar.clone(), scalar.clone(), scalar];
    let inferred = infer(
        "Range",
        &[],
        &types,
        &[consts[0].as_ref(), consts[1].as_ref(), consts[2].as_ref()],
    )
    .expect("infers");
    assert_eq!(inferred[0], ty(DType::I64, &[5]));
    let got = run_expanded("Range", &[], &[], &consts);
    let want: Vec<i64> = (0..5).map(|i| big + 3 * i).collect();
    assert_eq!(got[0], i64s(&[5], &want));
    let fc = [Some(f(-1.5)), Some(f(2.0)), Some(f(0.75))];
    let p = single_op_program(
        "Range",
        BTreeMap::new(),
        &[
            Some(ty(DType::F32, &[])),
            Some(ty(DType::F32, &[])),
            Some(ty(DType::F32, &[])),
        ],
        &fc,
    )
    .expect("builds");
    expansion_matches(&p, 3).expect("matches");
}
