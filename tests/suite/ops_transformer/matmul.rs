use super::{assert_close, check_expansion, eval, eval1, infer, infer_err, sym_ty, t, ty};
use dmove::ir::{Attr, DType, LibraryNode, SymExpr, Tensor};
use dmove::ops::{lookup, TensorType};

/// Naive product of row-major `a` (m×k) and `b` (k×n).
fn product(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                out[i * n + j] += f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
            }
        }
    }
    out
}

fn seq(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (i as f32 - 2.0) * scale).collect()
}

#[test]
fn matmul_of_matrices_and_vectors() {
    let a = t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = t(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
    // [1 2 3; 4 5 6]·[7 8; 9 10; 11 12] = [58 64; 139 154].
    assert_close(
        &eval1("MatMul", &[], &[&a, &b]),
        &[2, 2],
        &[58.0, 64.0, 139.0, 154.0],
    );
    let v = t(&[3], &[1.0, 0.0, -1.0]);
    // A·v removes the promoted column: [1 − 3, 4 − 6].
    assert_close(&eval1("MatMul", &[], &[&a, &v]), &[2], &[-2.0, -2.0]);
    // w·B removes the promoted row: [7 − 11, 8 − 12].
    assert_close(&eval1("MatMul", &[], &[&v, &b]), &[2], &[-4.0, -4.0]);
    assert_close(&eval1("MatMul", &[], &[&v, &v]), &[], &[2.0]);
}

#[test]
fn batched_matmul_broadcasts_batch_dimensions() {
    let (m, k, n) = (2, 3, 2);
    let a = seq(2 * m * k, 0.5);
    let b = seq(3 * k * n, 0.25);
    let at = t(&[2, 1, m, k], &a);
    let bt = t(&[3, k, n], &b);
    let got = eval1("MatMul", &[], &[&at, &bt]);
    let mut want = Vec::new();
    for i in 0..2 {
        for j in 0..3 {
            let am = &a[i * m * k..(i + 1) * m * k];
            let bm = &b[j * k * n..(j + 1) * k * n];
            want.extend(product(am, bm, m, k, n));
        }
    }
    assert_close(&got, &[2, 3, m, n], &want);
    let out = infer(
        "MatMul",
        &[],
        &[Some(sym_ty(&["B", "S", "8"])), Some(sym_ty(&["8", "4"]))],
        &[],
    )
    .expect("infers");
    assert_eq!(out[0], sym_ty(&["B", "S", "4"]));
}

#[test]
fn matmul_shape_errors() {
    let msg = infer_err("MatMul", &[], &[Some(ty(&[5, 64])), Some(ty(&[32, 4]))]);
    assert_eq!(msg, "MatMul: inner dimensions 64 and 32 differ");
    let msg = infer_err("MatMul", &[], &[Some(ty(&[])), Some(ty(&[3]))]);
    assert!(msg.contains("scalar"), "{msg}");
    let msg = infer_err("MatMul", &[], &[Some(ty(&[2, 3, 4])), Some(ty(&[3, 4, 5]))]);
    assert!(msg.contains("2 and 3"), "{msg}");
    let msg = infer_err(
        "MatMul",
        &[],
        &[Some(sym_ty(&["M", "K"])), Some(sym_ty(&["L", "N"]))],
    );
    assert!(msg.contains("K and L"), "{msg}");
}

#[test]
fn matmul_flops_count_multiply_adds() {
    let op = lookup("MatMul").expect("exists");
    let node = LibraryNode {
        op: "MatMul".into(),
        attrs: Default::default(),
    };
    let ins = [Some(ty(&[4, 2, 3, 5])), Some(ty(&[5, 7]))];
    let outs = op.infer(&node, &ins, &[None, None]).expect("infers");
    assert_eq!(op.flops(&node, &ins, &outs), 2 * 4 * 2 * 3 * 7 * 5);
}

#[test]
fn gemm_transposes_scales_and_adds_bias() {
    let a = t(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]); // Aᵀ = [1 2 3; 4 5 6]
    let b = t(&[2, 3], &[7.0, 9.0, 11.0, 8.0, 10.0, 12.0]); // Bᵀ = [7 8; 9 10; 11 12]
    let c = t(&[2], &[1.0, -1.0]);
    let a_attrs = [
        ("transA", Attr::Int(1)),
        ("transB", Attr::Int(1)),
        ("alpha", Attr::Float(0.5)),
        ("beta", Attr::Float(2.0)),
    ];
    let got = eval("Gemm", &a_attrs, &[Some(&a), Some(&b), Some(&c)]).remove(0);
    // 0.5·[58 64; 139 154] + 2·[1 −1].
    assert_close(&got, &[2, 2], &[31.0, 30.0, 71.5, 75.0]);
    let plain = eval(
        "Gemm",
        &[],
        &[
            Some(&t(&[1, 2], &[1.0, 2.0])),
            Some(&t(&[2, 1], &[3.0, 4.0])),
            None,
        ],
    );
    assert_close(&plain[0], &[1, 1], &[11.0]);
}

#[test]
fn gemm_shape_errors() {
    let msg = infer_err("Gemm", &[], &[Some(ty(&[2, 3])), Some(ty(&[2, 3]))]);
    assert_eq!(msg, "Gemm: inner dimensions 3 and 2 differ");
    let msg = infer_err("Gemm", &[], &[Some(ty(&[2, 3, 1])), Some(ty(&[3, 2]))]);
    assert!(msg.contains("2-D"), "{msg}");
    let msg = infer_err(
        "Gemm",
        &[],
        &[Some(ty(&[2, 3])), Some(ty(&[3, 4])), Some(ty(&[3]))],
    );
    assert!(
        msg.contains("C of shape [3] does not broadcast to [2, 4]"),
        "{msg}"
    );
    let int = dmove::ops::TensorType::new(DType::I64, vec![SymExpr::Int(3), SymExpr::Int(4)]);
    let msg = infer_err("Gemm", &[], &[Some(ty(&[2, 3])), Some(int)]);
    assert!(msg.contains("type"), "{msg}");
}

#[test]
fn matmul_expansions_match_reference() {
    let cases: [(&[i64], &[i64]); 7] = [
        (&[3, 5], &[5, 2]),
        (&[3], &[3]),
        (&[4], &[2, 4, 3]),
        (&[2, 1, 3, 4], &[5, 4, 1]),
        (&[1, 3], &[3, 1]),
        (&[2, 3, 1], &[1]),
        (&[1, 2, 3], &[3, 3, 2]),
    ];
    for (a, b) in cases {
        check_expansion("MatMul", &[], &[Some(ty(a)), Some(ty(b))], &[]);
    }
}

#[test]
fn gemm_expansions_match_reference() {
    let flags = [(0, 0), (1, 0), (0, 1), (1, 1)];
    for (ta, tb) in flags {
        let (m, k, n) = (3, 5, 2);
        let a = if ta == 1 { [k, m] } else { [m, k] };
        let b = if tb == 1 { [n, k] } else { [k, n] };
        let attrs = [
            ("transA", Attr::Int(ta)),
            ("transB", Attr::Int(tb)),
            ("alpha", Attr::Float(0.75)),
            ("beta", Attr::Float(-1.5)),
        ];
        for c in [
            None,
            Some(ty(&[n])),
            Some(ty(&[m, 1])),
            Some(ty(&[m, n])),
            Some(ty(&[])),
        ] {
            check_expansion("Gemm", &attrs, &[Some(ty(&a)), Some(ty(&b)), c], &[]);
        }
    }
    check_expansion("Gemm", &[], &[Some(ty(&[1, 1])), Some(ty(&[1, 7]))], &[]);
    let weights = Tensor::f32(vec![4, 3], (0..12).map(|i| i as f32 * 0.1).collect());
    check_expansion(
        "Gemm",
        &[("transB", Attr::Int(1))],
        &[Some(ty(&[2, 3])), Some(ty(&[4, 3])), Some(ty(&[4]))],
        &[None, Some(weights)],
    );
}

/// A tensor of integers of `dtype`.
fn q(dtype: DType, shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_f64(dtype, shape.to_vec(), values)
}

#[test]
fn matmul_integer_subtracts_zero_points_exactly() {
    use DType::U8;
    let a = q(
        U8,
        &[4, 3],
        &[11., 7., 3., 10., 6., 2., 9., 5., 1., 8., 4., 0.],
    );
    let b = q(U8, &[3, 2], &[1., 4., 2., 5., 3., 6.]);
    let (a0, b0) = (q(U8, &[1], &[12.]), q(U8, &[1], &[0.]));
    let y = eval(
        "MatMulInteger",
        &[],
        &[Some(&a), Some(&b), Some(&a0), Some(&b0)],
    )
    .remove(0);
    assert_eq!(y.dtype(), DType::I32);
    let want = [-38., -83., -44., -98., -50., -113., -56., -128.];
    assert_eq!(y.to_f64_vec(), want);
    // Without zero points it is the plain product.
    let y = eval1("MatMulInteger", &[], &[&a, &b]);
    assert_eq!(y.to_f64_vec()[..2], [34., 97.]);
}

#[test]
fn qlinear_matmul_requantizes_like_onnx() {
    use DType::{F32, U8};
    let a = q(U8, &[2, 4], &[208., 236., 0., 238., 3., 214., 255., 29.]);
    let b = q(
        U8,
        &[4, 3],
        &[
            152., 51., 244., 60., 26., 255., 0., 127., 246., 127., 254., 247.,
        ],
    );
    let s = |v: f64| q(F32, &[1], &[v]);
    let z = |v: f64| q(U8, &[1], &[v]);
    let inputs = [
        a,
        s(0.0066),
        z(113.),
        b,
        s(0.00705),
        z(114.),
        s(0.0107),
        z(118.),
    ];
    let refs: Vec<Option<&Tensor>> = inputs.iter().map(Some).collect();
    let y = eval("QLinearMatMul", &[], &refs).remove(0);
    assert_eq!(y.dtype(), U8);
    assert_eq!(y.to_f64_vec(), vec![168., 115., 255., 1., 66., 151.]);
}

#[test]
fn quantized_products_check_operands_and_expand() {
    use DType::{F32, I8, U8};
    let typed = |d, s: &[i64]| {
        Some(TensorType::new(
            d,
            s.iter().map(|&v| SymExpr::Int(v)).collect(),
        ))
    };
    let msg = infer_err(
        "MatMulInteger",
        &[],
        &[typed(F32, &[2, 3]), typed(U8, &[3, 2])],
    );
    assert!(msg.contains("int8 or uint8"), "{msg}");
    let msg = infer_err(
        "MatMulInteger",
        &[],
        &[typed(U8, &[2, 3]), typed(U8, &[3, 2]), typed(U8, &[2])],
    );
    assert!(msg.contains("per-row"), "{msg}");
    let msg = infer_err(
        "MatMulInteger",
        &[],
        &[typed(U8, &[2, 3]), typed(U8, &[3, 2]), typed(I8, &[1])],
    );
    assert!(msg.contains("a_zero_point has type"), "{msg}");
    let zp = typed(I8, &[1]);
    check_expansion(
        "MatMulInteger",
        &[],
        &[
            typed(I8, &[2, 3, 5]),
            typed(I8, &[5, 4]),
            zp.clone(),
            zp.clone(),
        ],
        &[],
    );
    check_expansion(
        "MatMulInteger",
        &[],
        &[typed(U8, &[7]), typed(U8, &[3, 7, 2])],
        &[],
    );
    let s = typed(F32, &[]);
    check_expansion(
        "QLinearMatMul",
        &[],
        &[
            typed(I8, &[2, 1, 3, 4]),
            s.clone(),
            zp.clone(),
            typed(I8, &[5, 4, 2]),
            s.clone(),
            zp.clone(),
            s,
            typed(U8, &[1]),
        ],
        &[],
    );
}
