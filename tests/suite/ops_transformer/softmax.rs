use super::{assert_close, check_expansion, eval1, infer_err, t, ty, Attrs};
use dmove::ir::{Attr, DType, SymExpr};
use dmove::ops::TensorType;

/// Softmax of one group, computed directly from the definition.
fn softmax(xs: &[f64]) -> Vec<f64> {
    let z: f64 = xs.iter().map(|x| x.exp()).sum();
    xs.iter().map(|x| x.exp() / z).collect()
}

#[test]
fn softmax_along_last_axis_by_default() {
    let x = t(&[2, 3], &[1.0, 2.0, 3.0, 0.0, 0.0, 0.0]);
    let got = eval1("Softmax", &[], &[&x]);
    let e = std::f64::consts::E;
    let z = 1.0 + e + e * e;
    let third = 1.0 / 3.0;
    assert_close(
        &got,
        &[2, 3],
        &[1.0 / z, e / z, e * e / z, third, third, third],
    );
    let log = eval1("LogSoftmax", &[], &[&x]);
    let want: Vec<f64> = [1.0 / z, e / z, e * e / z, third, third, third]
        .iter()
        .map(|p: &f64| p.ln())
        .collect();
    assert_close(&log, &[2, 3], &want);
}

#[test]
fn softmax_along_axis_zero_and_with_large_values() {
    let x = t(&[2, 2], &[1000.0, 0.0, 1001.0, 1.0]);
    let got = eval1("Softmax", &[("axis", Attr::Int(0))], &[&x]);
    let col = softmax(&[0.0, 1.0]);
    assert_close(&got, &[2, 2], &[col[0], col[0], col[1], col[1]]);
}

#[test]
fn legacy_opsets_normalise_over_the_flattened_tail() {
    let xs: Vec<f32> = (0..8).map(|i| i as f32 * 0.3 - 1.0).collect();
    let x = t(&[2, 2, 2], &xs);
    let legacy = [("opset", Attr::Int(11))];
    let got = eval1("Softmax", &legacy, &[&x]);
    let as_f64: Vec<f64> = xs.iter().map(|&v| f64::from(v)).collect();
    let mut want = softmax(&as_f64[..4]);
    want.extend(softmax(&as_f64[4..]));
    assert_close(&got, &[2, 2, 2], &want);
    // Explicit axis 2 in the old semantics is a per-row softmax, like axis −1 today.
    let got = eval1(
        "Softmax",
        &[("opset", Attr::Int(11)), ("axis", Attr::Int(2))],
        &[&x],
    );
    let want: Vec<f64> = as_f64.chunks(2).flat_map(softmax).collect();
    assert_close(&got, &[2, 2, 2], &want);
    // From opset 13 the default is the last axis only.
    let got = eval1("Softmax", &[("opset", Attr::Int(13))], &[&x]);
    assert_close(&got, &[2, 2, 2], &want);
}

#[test]
fn softmax_rejects_bad_axes_and_types() {
    let msg = infer_err("Softmax", &[("axis", Attr::Int(2))], &[Some(ty(&[3, 4]))]);
    assert!(msg.contains("axis 2 is outside"), "{msg}");
    let msg = infer_err(
        "LogSoftmax",
        &[("axis", Attr::Int(-3))],
        &[Some(ty(&[3, 4]))],
    );
    assert!(msg.contains("axis -3"), "{msg}");
    let msg = infer_err("Softmax", &[], &[Some(ty(&[]))]);
    assert!(msg.contains("rank"), "{msg}");
    let int = TensorType::new(DType::I64, vec![SymExpr::Int(3)]);
    let msg = infer_err("Softmax", &[], &[Some(int)]);
    assert!(msg.contains("floating-point"), "{msg}");
}

#[test]
fn softmax_expansions_match_reference() {
    let cases: [(&[i64], Attrs); 7] = [
        (&[3, 5], vec![]),
        (&[1], vec![]),
        (&[2, 3, 4], vec![("axis", Attr::Int(1))]),
        (&[2, 3, 1], vec![("axis", Attr::Int(-1))]),
        (&[4, 1, 3], vec![("axis", Attr::Int(0))]),
        (&[2, 3, 2], vec![("opset", Attr::Int(11))]),
        (
            &[3, 2, 5],
            vec![("opset", Attr::Int(1)), ("axis", Attr::Int(0))],
        ),
    ];
    for op in ["Softmax", "LogSoftmax"] {
        for (shape, a) in &cases {
            check_expansion(op, a, &[Some(ty(shape))], &[]);
        }
    }
}

#[test]
fn hardmax_marks_the_first_largest_element_of_each_group() {
    let x = t(&[2, 3], &[1.0, 3.0, 3.0, -1.0, -2.0, -5.0]);
    assert_close(
        &eval1("Hardmax", &[], &[&x]),
        &[2, 3],
        &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0],
    );
    let down = [("axis", Attr::Int(0))];
    assert_close(
        &eval1("Hardmax", &down, &[&x]),
        &[2, 3],
        &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
    );
    // Before opset 13 the group is every axis from `axis` (default 1) on.
    let cube = t(&[2, 2, 2], &[0.0, 1.0, 5.0, 2.0, 7.0, 7.0, 0.0, 9.0]);
    let legacy = [("opset", Attr::Int(11))];
    assert_close(
        &eval1("Hardmax", &legacy, &[&cube]),
        &[2, 2, 2],
        &[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    );
    let msg = infer_err("Hardmax", &[("axis", Attr::Int(2))], &[Some(ty(&[2, 3]))]);
    assert!(msg.contains("axis"), "{msg}");
    check_expansion("Hardmax", &[], &[Some(ty(&[3, 1, 5]))], &[]);
    check_expansion(
        "Hardmax",
        &[("axis", Attr::Int(-2))],
        &[Some(ty(&[2, 4, 3]))],
        &[],
    );
    check_expansion("Hardmax", &legacy, &[Some(ty(&[2, 3, 2]))], &[]);
}
