use super::{check_expansion, eval, eval1, infer, infer_err, ints, sym_ty, t, ty};
use dmove::ir::{Attr, SymExpr, Tensor};
use dmove::ops::TensorType;

fn seq(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    t(shape, &(0..n).map(|i| i as f32).collect::<Vec<_>>())
}

fn infer_with(op: &str, a: &[(&str, Attr)], x: TensorType, c: &Tensor) -> Vec<SymExpr> {
    let c_type = TensorType::new(
        c.dtype(),
        c.shape.iter().map(|&d| SymExpr::from(d)).collect(),
    );
    infer(op, a, &[Some(x), Some(c_type)], &[None, Some(c)])
        .unwrap_or_else(|e| panic!("{op}: {e}"))
        .remove(0)
        .shape
}

fn err_with(op: &str, a: &[(&str, Attr)], x: TensorType, c: &Tensor) -> String {
    let c_type = TensorType::new(
        c.dtype(),
        c.shape.iter().map(|&d| SymExpr::from(d)).collect(),
    );
    match infer(op, a, &[Some(x), Some(c_type)], &[None, Some(c)]) {
        Ok(t) => panic!("{op}: expected an error, got {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn transpose_permutes_elements() {
    let x = seq(&[2, 3]);
    let y = eval1("Transpose", &[], &[&x]);
    assert_eq!(y.shape, vec![3, 2]);
    assert_eq!(y.to_f64_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let x = seq(&[2, 3, 4]);
    let y = eval1("Transpose", &[("perm", Attr::Ints(vec![1, 2, 0]))], &[&x]);
    assert_eq!(y.shape, vec![3, 4, 2]);
    // y[c, d, a] = x[a, c, d] = 12a + 4c + d.
    for (c, d, a) in [(0, 0, 1), (2, 3, 0), (1, 2, 1)] {
        assert_eq!(y.get_f64(c * 8 + d * 2 + a), (12 * a + 4 * c + d) as f64);
    }
    let msg = infer_err(
        "Transpose",
        &[("perm", Attr::Ints(vec![0, 0]))],
        &[Some(ty(&[2, 3]))],
    );
    assert!(msg.contains("not a permutation"), "{msg}");
    let msg = infer_err(
        "Transpose",
        &[("perm", Attr::Ints(vec![0, 2]))],
        &[Some(ty(&[2, 3]))],
    );
    assert!(msg.contains("perm"), "{msg}");
}

#[test]
fn reshape_copies_zeros_and_infers_minus_one() {
    let x = seq(&[2, 3, 4]);
    let y = eval("Reshape", &[], &[Some(&x), Some(&ints(&[0, -1]))]).remove(0);
    assert_eq!(y.shape, vec![2, 12]);
    assert_eq!(y.to_f64_vec(), x.to_f64_vec());
    let shape = infer_with(
        "Reshape",
        &[],
        sym_ty(&["B", "S", "768"]),
        &ints(&[0, 0, 12, 64]),
    );
    assert_eq!(shape, sym_ty(&["B", "S", "12", "64"]).shape);
    let shape = infer_with(
        "Reshape",
        &[],
        sym_ty(&["B", "S", "768"]),
        &ints(&[-1, 768]),
    );
    assert_eq!(
        shape,
        vec![SymExpr::sym("B") * SymExpr::sym("S"), SymExpr::Int(768)]
    );
    let shape = infer_with(
        "Reshape",
        &[("allowzero", Attr::Int(1))],
        ty(&[0, 3]),
        &ints(&[3, 0]),
    );
    assert_eq!(shape, ty(&[3, 0]).shape);
}

#[test]
fn reshape_errors() {
    let msg = err_with("Reshape", &[], ty(&[2, 3]), &ints(&[-1, -1]));
    assert!(msg.contains("more than one -1"), "{msg}");
    let msg = err_with("Reshape", &[], ty(&[2, 3]), &ints(&[4, 2]));
    assert!(msg.contains("element counts differ"), "{msg}");
    let msg = err_with("Reshape", &[], ty(&[2, 3]), &ints(&[4, -1]));
    assert!(msg.contains("cannot infer -1"), "{msg}");
    let msg = err_with(
        "Reshape",
        &[("allowzero", Attr::Int(1))],
        ty(&[2, 3]),
        &ints(&[0, -1]),
    );
    assert!(msg.contains("allowzero"), "{msg}");
    let msg = infer_err("Reshape", &[], &[Some(ty(&[2, 3])), Some(ty(&[2]))]);
    assert!(msg.contains("must be a constant"), "{msg}");
}

#[test]
fn flatten_splits_at_axis() {
    let x = seq(&[2, 3, 4]);
    for (axis, want) in [(0, [1, 24]), (1, [2, 12]), (-1, [6, 4]), (3, [24, 1])] {
        let y = eval1("Flatten", &[("axis", Attr::Int(axis))], &[&x]);
        assert_eq!(y.shape, want, "axis {axis}");
        assert_eq!(y.to_f64_vec(), x.to_f64_vec());
    }
    let out = infer("Flatten", &[], &[Some(sym_ty(&["B", "3", "4"]))], &[]).expect("infers");
    assert_eq!(out[0].shape, vec![SymExpr::sym("B"), SymExpr::Int(12)]);
    let msg = infer_err(
        "Flatten",
        &[("axis", Attr::Int(4))],
        &[Some(ty(&[2, 3, 4]))],
    );
    assert!(msg.contains("axis 4 is outside [-3, 3]"), "{msg}");
}

#[test]
fn squeeze_axes_from_attribute_input_or_all() {
    let x = seq(&[1, 3, 1, 2]);
    let legacy = [("opset", Attr::Int(11)), ("axes", Attr::Ints(vec![0]))];
    assert_eq!(eval1("Squeeze", &legacy, &[&x]).shape, vec![3, 1, 2]);
    let y = eval("Squeeze", &[], &[Some(&x), Some(&ints(&[-2]))]).remove(0);
    assert_eq!(y.shape, vec![1, 3, 2]);
    assert_eq!(y.to_f64_vec(), x.to_f64_vec());
    assert_eq!(eval1("Squeeze", &[], &[&x]).shape, vec![3, 2]);
    let shape = infer_with(
        "Squeeze",
        &[("opset", Attr::Int(13))],
        sym_ty(&["B", "1", "8"]),
        &ints(&[1]),
    );
    assert_eq!(shape, sym_ty(&["B", "8"]).shape);
    let msg = err_with("Squeeze", &[], ty(&[1, 3]), &ints(&[1]));
    assert!(msg.contains("dimension 1 has size 3"), "{msg}");
    let msg = err_with(
        "Squeeze",
        &[("opset", Attr::Int(11))],
        ty(&[1, 3]),
        &ints(&[0]),
    );
    assert!(msg.contains("attribute"), "{msg}");
    let msg = err_with("Squeeze", &[], ty(&[1, 1]), &ints(&[0, -2]));
    assert!(msg.contains("twice"), "{msg}");
}

#[test]
fn unsqueeze_inserts_unit_dimensions() {
    let x = seq(&[3, 2]);
    let y = eval("Unsqueeze", &[], &[Some(&x), Some(&ints(&[0, -1]))]).remove(0);
    assert_eq!(y.shape, vec![1, 3, 2, 1]);
    let legacy = [("opset", Attr::Int(11)), ("axes", Attr::Ints(vec![1]))];
    assert_eq!(eval1("Unsqueeze", &legacy, &[&x]).shape, vec![3, 1, 2]);
    let shape = infer_with("Unsqueeze", &[], sym_ty(&["B", "S"]), &ints(&[1, 2]));
    assert_eq!(shape, sym_ty(&["B", "1", "1", "S"]).shape);
    let msg = infer_err("Unsqueeze", &[], &[Some(ty(&[3]))]);
    assert!(msg.contains("axes"), "{msg}");
    let msg = err_with("Unsqueeze", &[], ty(&[3]), &ints(&[2]));
    assert!(msg.contains("axis 2 is outside"), "{msg}");
    let msg = infer_err("Unsqueeze", &[], &[Some(ty(&[3])), Some(ty(&[1]))]);
    assert!(msg.contains("must be a constant"), "{msg}");
}

#[test]
fn shape_op_expansions_match_reference() {
    for (shape, perm) in [
        (vec![2, 3], None),
        (vec![2, 1, 3], Some(vec![2, 0, 1])),
        (vec![1, 4, 1, 3], Some(vec![3, 1, 0, 2])),
        (vec![5], None),
    ] {
        let a: Vec<(&str, Attr)> = perm
            .map(|p| vec![("perm", Attr::Ints(p))])
            .unwrap_or_default();
        check_expansion("Transpose", &a, &[Some(ty(&shape))], &[]);
    }
    for (shape, spec) in [
        (vec![2, 3, 4], vec![4, -1]),
        (vec![2, 3, 4], vec![0, 4, 3]),
        (vec![6], vec![1, 3, 1, 2]),
        (vec![3, 5], vec![5, 3]),
        (vec![1, 7], vec![7]),
    ] {
        let c = ints(&spec);
        check_expansion(
            "Reshape",
            &[],
            &[Some(ty(&shape)), Some(ty(&[spec.len() as i64]).with_i64())],
            &[None, Some(c)],
        );
    }
    for axis in [0, 1, 2, -1, 3] {
        check_expansion(
            "Flatten",
            &[("axis", Attr::Int(axis))],
            &[Some(ty(&[2, 3, 5]))],
            &[],
        );
    }
    check_expansion(
        "Squeeze",
        &[],
        &[Some(ty(&[1, 3, 1, 2])), Some(ty(&[1]).with_i64())],
        &[None, Some(ints(&[2]))],
    );
    check_expansion("Squeeze", &[], &[Some(ty(&[1, 3, 1]))], &[]);
    check_expansion(
        "Squeeze",
        &[("axes", Attr::Ints(vec![0, 3]))],
        &[Some(ty(&[1, 2, 3, 1]))],
        &[],
    );
    check_expansion(
        "Unsqueeze",
        &[],
        &[Some(ty(&[3, 2])), Some(ty(&[2]).with_i64())],
        &[None, Some(ints(&[0, 3]))],
    );
    check_expansion(
        "Unsqueeze",
        &[("axes", Attr::Ints(vec![-1]))],
        &[Some(ty(&[]))],
        &[],
    );
}

/// The same shape with 64-bit integer elements (shape and axes inputs).
trait WithI64 {
    fn with_i64(self) -> TensorType;
}

impl WithI64 for TensorType {
    fn with_i64(self) -> TensorType {
        TensorType::new(dmove::ir::DType::I64, self.shape)
    }
}
