//! GatherND, ScatterElements (and Scatter) and ScatterND: the ONNX examples, duplicates under
//! every reduction, negative indices, shape errors, and expansions on awkward shapes.

use super::{check_expansion, eval, eval1, f32s, i64s, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType};

fn red(name: &str) -> (&'static str, Attr) {
    ("reduction", Attr::Str(name.to_string()))
}

#[test]
fn gather_nd_follows_the_onnx_examples() {
    let data = i64s(&[2, 2], &[0, 1, 2, 3]);
    let y = eval1("GatherND", &[], &[&data, &i64s(&[2, 2], &[0, 0, 1, 1])]);
    assert_eq!((y.shape.clone(), y.to_i64_vec()), (vec![2], vec![0, 3]));
    let y = eval1("GatherND", &[], &[&data, &i64s(&[2, 1], &[1, 0])]);
    assert_eq!(
        (y.shape.clone(), y.to_i64_vec()),
        (vec![2, 2], vec![2, 3, 0, 1])
    );
    let cube = f32s(&[2, 2, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let batched = [("batch_dims", Attr::Int(1))];
    let idx = i64s(&[2, 1], &[1, 0]);
    let y = eval1("GatherND", &batched, &[&cube, &idx]);
    assert_eq!(y.shape, vec![2, 2]);
    assert_eq!(y.to_f64_vec(), vec![2.0, 3.0, 4.0, 5.0]);
    // Negative components count from the end, in the expansion too.
    let neg = i64s(&[2, 1, 2], &[-1, 0, 0, -1]);
    let want = eval1("GatherND", &batched, &[&cube, &neg]);
    assert_eq!(want.to_f64_vec(), vec![2.0, 5.0]);
    let got = run_expanded("GatherND", &batched, &[&cube], &[None, Some(neg)]);
    assert_eq!(got[0].to_f64_vec(), want.to_f64_vec());
    let e = eval("GatherND", &[], &[&data, &i64s(&[1, 2], &[0, 2])]).unwrap_err();
    assert!(e.to_string().contains("index 2"), "{e}");
}

#[test]
fn gather_nd_checks_shapes_and_expands() {
    let (f, i) = (DType::F32, DType::I64);
    let msg = infer_err("GatherND", &[], &[ty(f, &[3, 2]), ty(i, &[2, 3])], &[]);
    assert!(msg.contains("length 3"), "{msg}");
    let msg = infer_err(
        "GatherND",
        &[],
        &[ty(f, &[3, 2]), ty(DType::I32, &[2, 1])],
        &[],
    );
    assert!(msg.contains("int64"), "{msg}");
    let b2 = [("batch_dims", Attr::Int(2))];
    let msg = infer_err("GatherND", &b2, &[ty(f, &[3, 2]), ty(i, &[3, 1])], &[]);
    assert!(msg.contains("batch_dims"), "{msg}");
    let b1 = [("batch_dims", Attr::Int(1))];
    let msg = infer_err("GatherND", &b1, &[ty(f, &[3, 4]), ty(i, &[2, 1])], &[]);
    assert!(msg.contains("batch dimension 0"), "{msg}");
    // Random indices lie in [0, 4): indexed dimensions have at least 4 elements.
    check_expansion(
        "GatherND",
        &[],
        &[ty(f, &[4, 5, 3]), ty(i, &[3, 1, 2])],
        &[],
    );
    check_expansion("GatherND", &[], &[ty(i, &[5, 4]), ty(i, &[2])], &[]);
    check_expansion(
        "GatherND",
        &b1,
        &[ty(f, &[3, 4, 1, 2]), ty(i, &[3, 2, 1])],
        &[],
    );
    let b2 = [("batch_dims", Attr::Int(2))];
    check_expansion(
        "GatherND",
        &b2,
        &[ty(f, &[2, 3, 4, 5]), ty(i, &[2, 3, 2])],
        &[],
    );
}

#[test]
fn scatter_elements_follows_the_onnx_examples() {
    let data = f32s(&[3, 3], &[0.0; 9]);
    let idx = i64s(&[2, 3], &[1, 0, 2, 0, 2, 1]);
    let upd = f32s(&[2, 3], &[1.0, 1.1, 1.2, 2.0, 2.1, 2.2]);
    let want = [2.0, 1.1, 0.0, 1.0, 0.0, 2.2, 0.0, 2.1, 1.2];
    for op in ["ScatterElements", "Scatter"] {
        let y = eval1(op, &[], &[&data, &idx, &upd]);
        let got: Vec<f32> = y.to_f64_vec().iter().map(|&v| v as f32).collect();
        assert_eq!(got, want, "{op}");
    }
    let data = f32s(&[1, 5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
    let upd = f32s(&[1, 2], &[1.1, 2.1]);
    let axis = [("axis", Attr::Int(1))];
    let neg = i64s(&[1, 2], &[1, -2]);
    let y = eval1("ScatterElements", &axis, &[&data, &neg, &upd]);
    let want: Vec<f64> = [1.0f32, 1.1, 3.0, 2.1, 5.0]
        .iter()
        .map(|&v| f64::from(v))
        .collect();
    assert_eq!(y.to_f64_vec(), want);
    let got = run_expanded("ScatterElements", &axis, &[&data, &neg, &upd], &[]);
    assert_eq!(got[0].to_f64_vec(), want);
}

#[test]
fn scatter_elements_combines_duplicates_under_every_reduction() {
    let data = f32s(&[1, 5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
    let idx = i64s(&[1, 3], &[1, 1, -1]);
    let upd = f32s(&[1, 3], &[1.5, -3.0, 0.5]);
    let cases = [
        ("none", [1.0, -3.0, 3.0, 4.0, 0.5]),
        ("add", [1.0, 0.5, 3.0, 4.0, 5.5]),
        ("mul", [1.0, -9.0, 3.0, 4.0, 2.5]),
        ("max", [1.0, 2.0, 3.0, 4.0, 5.0]),
        ("min", [1.0, -3.0, 3.0, 4.0, 0.5]),
    ];
    for (name, want) in cases {
        let a = [("axis", Attr::Int(1)), red(name)];
        let y = eval1("ScatterElements", &a, &[&data, &idx, &upd]);
        assert_eq!(y.to_f64_vec(), want, "{name}");
        let got = run_expanded("ScatterElements", &a, &[&data, &idx, &upd], &[]);
        assert_eq!(got[0].to_f64_vec(), want, "{name} expanded");
    }
}

#[test]
fn scatter_elements_checks_shapes_and_expands() {
    let (f, i) = (DType::F32, DType::I64);
    let msg = infer_err(
        "ScatterElements",
        &[],
        &[ty(f, &[3, 2]), ty(i, &[2, 2]), ty(f, &[2, 1])],
        &[],
    );
    assert!(msg.contains("updates have shape"), "{msg}");
    let msg = infer_err(
        "ScatterElements",
        &[red("sum")],
        &[ty(f, &[3, 2]), ty(i, &[2, 2]), ty(f, &[2, 2])],
        &[],
    );
    assert!(msg.contains("reduction"), "{msg}");
    let msg = infer_err(
        "ScatterElements",
        &[],
        &[ty(f, &[3, 2]), ty(i, &[2, 2]), ty(DType::F64, &[2, 2])],
        &[],
    );
    assert!(msg.contains("input 2 has type f64"), "{msg}");
    let data = f32s(&[2], &[0.0, 0.0]);
    let e = eval(
        "ScatterElements",
        &[],
        &[&data, &i64s(&[1], &[2]), &f32s(&[1], &[1.0])],
    );
    assert!(e.unwrap_err().to_string().contains("index 2"));
    // Random indices in [0, 4) repeat: duplicates are exercised under every reduction.
    for name in ["none", "add", "mul", "max", "min"] {
        check_expansion(
            "ScatterElements",
            &[("axis", Attr::Int(1)), red(name)],
            &[ty(f, &[3, 5, 2]), ty(i, &[2, 7, 1]), ty(f, &[2, 7, 1])],
            &[],
        );
    }
    check_expansion(
        "ScatterElements",
        &[("axis", Attr::Int(-1)), red("add")],
        &[ty(i, &[2, 4]), ty(DType::I32, &[1, 3]), ty(i, &[1, 3])],
        &[],
    );
    check_expansion(
        "Scatter",
        &[],
        &[ty(f, &[4]), ty(i, &[6]), ty(f, &[6])],
        &[],
    );
}

#[test]
fn scatter_nd_follows_the_onnx_examples() {
    let data = f32s(&[8], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let idx = i64s(&[4, 1], &[4, 3, 1, 7]);
    let upd = f32s(&[4], &[9.0, 10.0, 11.0, 12.0]);
    let want = vec![1.0, 11.0, 3.0, 10.0, 9.0, 6.0, 7.0, 12.0];
    assert_eq!(
        eval1("ScatterND", &[], &[&data, &idx, &upd]).to_f64_vec(),
        want
    );
    let got = run_expanded("ScatterND", &[], &[&data, &idx, &upd], &[]);
    assert_eq!(got[0].to_f64_vec(), want);
    // Slices of a 2×2×2 cube; the duplicate tuple (0) and -2 (= 0) combine in order.
    let cube = f32s(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let idx = i64s(&[3, 1], &[0, -2, 1]);
    let upd = f32s(
        &[3, 2, 2],
        &[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0],
    );
    let cases = [
        ("none", [2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0]),
        ("add", [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]),
        ("mul", [2.0, 4.0, 6.0, 8.0, 15.0, 18.0, 21.0, 24.0]),
        ("max", [2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]),
        ("min", [1.0, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 3.0]),
    ];
    for (name, want) in cases {
        let a = [red(name)];
        let y = eval1("ScatterND", &a, &[&cube, &idx, &upd]);
        assert_eq!(y.to_f64_vec(), want, "{name}");
        let got = run_expanded("ScatterND", &a, &[&cube, &idx, &upd], &[]);
        assert_eq!(got[0].to_f64_vec(), want, "{name} expanded");
    }
}

#[test]
fn scatter_nd_checks_shapes_and_expands() {
    let (f, i) = (DType::F32, DType::I64);
    let msg = infer_err(
        "ScatterND",
        &[],
        &[ty(f, &[4, 4]), ty(i, &[2, 3]), ty(f, &[2])],
        &[],
    );
    assert!(msg.contains("length 3"), "{msg}");
    let msg = infer_err(
        "ScatterND",
        &[],
        &[ty(f, &[4, 4]), ty(i, &[2, 1]), ty(f, &[2, 3])],
        &[],
    );
    assert!(msg.contains("expected"), "{msg}");
    for name in ["none", "add", "mul", "max", "min"] {
        check_expansion(
            "ScatterND",
            &[red(name)],
            &[ty(f, &[4, 5, 3]), ty(i, &[3, 2, 2]), ty(f, &[3, 2, 3])],
            &[],
        );
    }
    check_expansion(
        "ScatterND",
        &[],
        &[ty(i, &[4, 5]), ty(i, &[2]), ty(i, &[])],
        &[],
    );
    check_expansion(
        "ScatterND",
        &[red("add")],
        &[ty(f, &[5]), ty(i, &[7, 1]), ty(f, &[7])],
        &[],
    );
}
