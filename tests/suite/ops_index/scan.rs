use super::{
    check_expansion, eval, eval1, f32s, i64s, infer, infer_err, run_expanded, ty, type_of,
};
use dmove::ir::{Attr, DType, Tensor};

fn axis(a: i64) -> Tensor {
    i64s(&[], &[a])
}

/// The reference scan `op` of `[1, 2, 3, 4]` with the given flags.
fn scan_of_1234(op: &str, exclusive: i64, reverse: i64) -> Vec<f64> {
    let x = f32s(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let a = [
        ("exclusive", Attr::Int(exclusive)),
        ("reverse", Attr::Int(reverse)),
    ];
    eval1(op, &a, &[&x, &axis(0)]).to_f64_vec()
}

#[test]
fn cumsum_all_four_directions() {
    let run = |exclusive, reverse| scan_of_1234("CumSum", exclusive, reverse);
    assert_eq!(run(0, 0), vec![1.0, 3.0, 6.0, 10.0]);
    assert_eq!(run(1, 0), vec![0.0, 1.0, 3.0, 6.0]);
    assert_eq!(run(0, 1), vec![10.0, 9.0, 7.0, 4.0]);
    assert_eq!(run(1, 1), vec![9.0, 7.0, 4.0, 0.0]);
    // Along the last axis of a 2×3, with i64 values past 2^40 kept exact by the expansion.
    let big = 1i64 << 40;
    let m = i64s(&[2, 3], &[big, 1, 2, 3, big, 5]);
    let want = i64s(&[2, 3], &[big, big + 1, big + 3, 3, big + 3, big + 8]);
    assert_eq!(eval1("CumSum", &[], &[&m, &axis(-1)]), want);
    let got = run_expanded("CumSum", &[], &[&m], &[None, Some(axis(-1))]);
    assert_eq!(got[0], want);
}

#[test]
fn cumsum_checks_inputs_and_expands() {
    let msg = infer_err(
        "CumSum",
        &[],
        &[ty(DType::Bool, &[3]), ty(DType::I64, &[])],
        &[],
    );
    assert!(msg.contains("numeric"), "{msg}");
    let msg = infer_err(
        "CumSum",
        &[],
        &[ty(DType::F32, &[3]), ty(DType::F32, &[])],
        &[],
    );
    assert!(msg.contains("int32 or int64"), "{msg}");
    let two = axis(2);
    let msg = infer_err(
        "CumSum",
        &[],
        &[ty(DType::F32, &[3, 2]), type_of(&two)],
        &[None, Some(&two)],
    );
    assert!(msg.contains("axis 2"), "{msg}");
    for (shape, a, flags) in [
        (vec![5], 0, (0, 0)),
        (vec![3, 1, 4], 2, (1, 0)),
        (vec![3, 1, 4], -3, (0, 1)),
        (vec![2, 5], 1, (1, 1)),
        (vec![1, 1], 0, (1, 1)),
    ] {
        let attrs = [
            ("exclusive", Attr::Int(flags.0)),
            ("reverse", Attr::Int(flags.1)),
        ];
        let ax = Tensor::from_f64(DType::I32, vec![], &[a as f64]);
        for dtype in [DType::F32, DType::I64] {
            check_expansion(
                "CumSum",
                &attrs,
                &[ty(dtype, &shape), type_of(&ax)],
                &[None, Some(ax.clone())],
            );
        }
    }
}

#[test]
fn argmax_and_argmin_pick_first_or_last_ties() {
    let x = f32s(&[2, 3], &[2.0, 5.0, 5.0, 7.0, 1.0, 7.0]);
    let along_rows = [("axis", Attr::Int(1))];
    let y = eval1("ArgMax", &along_rows, &[&x]);
    assert_eq!(y, i64s(&[2, 1], &[1, 0]));
    let last = [("axis", Attr::Int(1)), ("select_last_index", Attr::Int(1))];
    assert_eq!(eval1("ArgMax", &last, &[&x]), i64s(&[2, 1], &[2, 2]));
    let flat = [("keepdims", Attr::Int(0))];
    assert_eq!(eval1("ArgMin", &flat, &[&x]), i64s(&[3], &[0, 1, 0]));
    assert_eq!(
        run_expanded("ArgMax", &last, &[&x], &[])[0],
        i64s(&[2, 1], &[2, 2])
    );
    assert_eq!(
        run_expanded("ArgMin", &flat, &[&x], &[])[0],
        i64s(&[3], &[0, 1, 0])
    );
    let msg = infer_err("ArgMax", &[], &[ty(DType::Bool, &[3])], &[]);
    assert!(msg.contains("numeric"), "{msg}");
    let msg = infer_err(
        "ArgMin",
        &[("axis", Attr::Int(-3))],
        &[ty(DType::F32, &[3, 2])],
        &[],
    );
    assert!(msg.contains("axis -3"), "{msg}");
    let msg = infer_err("ArgMax", &[], &[ty(DType::F32, &[0, 2])], &[]);
    assert!(msg.contains("empty axis"), "{msg}");
    let t = infer("ArgMin", &flat, &[ty(DType::F64, &[4, 2])], &[]).expect("infers");
    assert_eq!(t[0], ty(DType::I64, &[2]));
}

#[test]
fn arg_reductions_expand_on_awkward_shapes() {
    for op in ["ArgMax", "ArgMin"] {
        for (shape, a, keep, last) in [
            (vec![5], 0, 1, 0),
            (vec![3, 1, 4], -1, 0, 1),
            (vec![3, 1, 4], 1, 1, 0),
            (vec![2, 7], 0, 0, 0),
        ] {
            let attrs = [
                ("axis", Attr::Int(a)),
                ("keepdims", Attr::Int(keep)),
                ("select_last_index", Attr::Int(last)),
            ];
            // Integer inputs in [0, 4) are full of ties, which exercises the tie rules.
            for dtype in [DType::F32, DType::I64, DType::I32] {
                check_expansion(op, &attrs, &[ty(dtype, &shape)], &[]);
            }
        }
    }
}

#[test]
fn topk_sorts_and_breaks_ties_by_position() {
    let x = f32s(&[5], &[3.0, 1.0, 4.0, 1.0, 5.0]);
    let k = i64s(&[1], &[3]);
    let out = eval("TopK", &[], &[&x, &k]).expect("runs");
    assert_eq!(out[0].to_f64_vec(), vec![5.0, 4.0, 3.0]);
    assert_eq!(out[1], i64s(&[3], &[4, 2, 0]));
    let small = [("largest", Attr::Int(0))];
    let out = eval("TopK", &small, &[&x, &k]).expect("runs");
    assert_eq!(out[0].to_f64_vec(), vec![1.0, 1.0, 3.0]);
    assert_eq!(out[1], i64s(&[3], &[1, 3, 0]));
    let got = run_expanded("TopK", &small, &[&x], &[None, Some(k.clone())]);
    assert_eq!(got[0].to_f64_vec(), vec![1.0, 1.0, 3.0]);
    assert_eq!(got[1], i64s(&[3], &[1, 3, 0]));
    // Along axis 0 of a 3×2: column maxima first.
    let m = f32s(&[3, 2], &[1.0, 9.0, 8.0, 2.0, 5.0, 6.0]);
    let k2 = i64s(&[1], &[2]);
    let out = eval("TopK", &[("axis", Attr::Int(0))], &[&m, &k2]).expect("runs");
    assert_eq!(out[0].to_f64_vec(), vec![8.0, 9.0, 5.0, 6.0]);
    assert_eq!(out[1], i64s(&[2, 2], &[1, 0, 2, 2]));
}

#[test]
fn topk_checks_k_and_expands() {
    let x = ty(DType::F32, &[4]);
    let k_ty = ty(DType::I64, &[1]);
    let msg = infer_err("TopK", &[], &[x.clone(), k_ty.clone()], &[]);
    assert!(msg.contains("must be a constant"), "{msg}");
    let five = i64s(&[1], &[5]);
    let msg = infer_err(
        "TopK",
        &[],
        &[x.clone(), k_ty.clone()],
        &[None, Some(&five)],
    );
    assert!(msg.contains("K = 5"), "{msg}");
    let msg = infer_err("TopK", &[], &[x, ty(DType::I32, &[1])], &[]);
    assert!(msg.contains("int64"), "{msg}");
    for (shape, a, k, largest) in [
        (vec![5], -1, 5, 1),
        (vec![3, 1, 4], 2, 2, 0),
        (vec![3, 1, 4], 0, 1, 1),
        (vec![2, 6], 1, 0, 1),
    ] {
        let attrs = [("axis", Attr::Int(a)), ("largest", Attr::Int(largest))];
        let kt = i64s(&[1], &[k]);
        for dtype in [DType::F32, DType::I64] {
            check_expansion(
                "TopK",
                &attrs,
                &[ty(dtype, &shape), type_of(&kt)],
                &[None, Some(kt.clone())],
            );
        }
    }
}

#[test]
fn cumprod_all_four_directions_and_expands() {
    let run = |exclusive, reverse| scan_of_1234("CumProd", exclusive, reverse);
    assert_eq!(run(0, 0), vec![1.0, 2.0, 6.0, 24.0]);
    assert_eq!(run(1, 0), vec![1.0, 1.0, 2.0, 6.0]);
    assert_eq!(run(0, 1), vec![24.0, 24.0, 12.0, 4.0]);
    assert_eq!(run(1, 1), vec![24.0, 12.0, 4.0, 1.0]);
    let m = i64s(&[2, 3], &[-2, 3, 5, 1 << 20, 1 << 21, 3]);
    let want = i64s(&[2, 3], &[-2, -6, -30, 1 << 20, 1 << 41, 3 << 41]);
    assert_eq!(eval1("CumProd", &[], &[&m, &axis(1)]), want);
    assert_eq!(
        run_expanded("CumProd", &[], &[&m], &[None, Some(axis(1))])[0],
        want
    );
    let msg = infer_err(
        "CumProd",
        &[],
        &[ty(DType::Bool, &[3]), ty(DType::I64, &[])],
        &[],
    );
    assert!(msg.contains("CumProd") && msg.contains("numeric"), "{msg}");
    for (shape, a, flags) in [
        (vec![5], 0, (0, 0)),
        (vec![3, 1, 4], 2, (1, 0)),
        (vec![3, 1, 4], -3, (0, 1)),
        (vec![2, 5], 1, (1, 1)),
    ] {
        let attrs = [
            ("exclusive", Attr::Int(flags.0)),
            ("reverse", Attr::Int(flags.1)),
        ];
        for dtype in [DType::F32, DType::I64] {
            check_expansion(
                "CumProd",
                &attrs,
                &[ty(dtype, &shape), type_of(&axis(a))],
                &[None, Some(axis(a))],
            );
        }
    }
}
