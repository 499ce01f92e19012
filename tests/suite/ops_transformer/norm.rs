use super::{
    assert_close, attrs, check_expansion, check_symbolic_expansion, eval, eval1, infer, infer_err,
    sym_ty, t, ty, Attrs,
};
use dmove::check::expansion_matches;
use dmove::ir::{Attr, DType, DataDesc, DataKind, Program, SymExpr};

const OP: &str = "LayerNormalization";

#[test]
fn normalises_the_last_axis() {
    let x = t(&[2, 4], &[1.0, 2.0, 3.0, 4.0, 2.0, 2.0, 2.0, 2.0]);
    let scale = t(&[4], &[1.0, 2.0, 1.0, 1.0]);
    let bias = t(&[4], &[0.0, 0.0, 0.0, 10.0]);
    let out = eval(OP, &[], &[Some(&x), Some(&scale), Some(&bias)]);
    // Row 0: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
    let inv = 1.0 / (1.25f64 + 1e-5).sqrt();
    // Row 1 is constant: variance 0, so invstd = 1/√ε and the centred values are 0.
    let inv1 = 1.0 / 1e-5f64.sqrt();
    assert_close(
        &out[0],
        &[2, 4],
        &[
            -1.5 * inv,
            -0.5 * inv * 2.0,
            0.5 * inv,
            1.5 * inv + 10.0,
            0.0,
            0.0,
            0.0,
            10.0,
        ],
    );
    assert_close(&out[1], &[2, 1], &[2.5, 2.0]);
    assert_close(&out[2], &[2, 1], &[inv, inv1]);
}

#[test]
fn normalises_trailing_axes_from_axis() {
    let xs: Vec<f32> = (0..12).map(|i| (i * i) as f32 * 0.1).collect();
    let x = t(&[2, 2, 3], &xs);
    let scale = t(&[1], &[0.5]);
    let a = [("axis", Attr::Int(1)), ("epsilon", Attr::Float(0.01))];
    let out = eval(OP, &a, &[Some(&x), Some(&scale), None]);
    let mut want = Vec::new();
    for row in xs.chunks(6) {
        let v: Vec<f64> = row.iter().map(|&x| f64::from(x)).collect();
        let mean = v.iter().sum::<f64>() / 6.0;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 6.0;
        want.extend(v.iter().map(|x| 0.5 * (x - mean) / (var + 0.01).sqrt()));
    }
    assert_close(&out[0], &[2, 2, 3], &want);
    assert_eq!(out[1].shape, vec![2, 1, 1]);
}

#[test]
fn infers_outputs_and_rejects_bad_inputs() {
    let out = infer(
        OP,
        &[],
        &[Some(sym_ty(&["B", "S", "8"])), Some(sym_ty(&["8"])), None],
        &[],
    )
    .expect("infers");
    assert_eq!(out[0], sym_ty(&["B", "S", "8"]));
    assert_eq!(out[1], sym_ty(&["B", "S", "1"]));
    assert_eq!(out[2].dtype, DType::F32);
    let msg = infer_err(OP, &[], &[Some(ty(&[2, 4])), Some(ty(&[3]))]);
    assert!(
        msg.contains("Scale of shape [3] does not broadcast to [2, 4]"),
        "{msg}"
    );
    let msg = infer_err(
        OP,
        &[],
        &[Some(ty(&[2, 4])), Some(ty(&[4])), Some(ty(&[2]))],
    );
    assert!(msg.contains("B of shape [2]"), "{msg}");
    let msg = infer_err(
        OP,
        &[("axis", Attr::Int(2))],
        &[Some(ty(&[2, 4])), Some(ty(&[4]))],
    );
    assert!(msg.contains("axis 2 is outside"), "{msg}");
    let msg = infer_err(
        OP,
        &[("stash_type", Attr::Int(11))],
        &[Some(ty(&[2, 4])), Some(ty(&[4]))],
    );
    assert!(msg.contains("stash_type"), "{msg}");
    let msg = infer_err(OP, &[], &[Some(ty(&[2, 4]))]);
    assert!(msg.contains("expected 2 to 3 input(s), got 1"), "{msg}");
}

/// Checks the expansion of `LayerNormalization(x, scale, bias?)`.
fn check(x: &[i64], scale: &[i64], bias: Option<&[i64]>, a: Attrs) {
    check_expansion(OP, &a, &[Some(ty(x)), Some(ty(scale)), bias.map(ty)], &[]);
}

#[test]
fn expansions_match_reference_with_all_outputs() {
    check(&[3, 5], &[5], Some(&[5]), vec![]);
    check(&[2, 3, 4], &[3, 4], None, vec![("axis", Attr::Int(1))]);
    check(&[1, 1], &[1], Some(&[1]), vec![]);
    check(
        &[2, 1, 3],
        &[1, 1, 3],
        Some(&[2, 1, 3]),
        vec![("axis", Attr::Int(-2))],
    );
    let a = vec![("axis", Attr::Int(0)), ("epsilon", Attr::Float(0.1))];
    check(&[4, 3], &[1], None, a);
}

/// A LayerNormalization node with only its first output, as transformer models use it.
#[test]
fn expansion_with_only_the_normalised_output() {
    let mut p = Program::new("ln");
    let decl = [
        ("x", vec![3, 4], DataKind::Input),
        ("scale", vec![4], DataKind::Input),
        ("bias", vec![4], DataKind::Input),
        ("y", vec![3, 4], DataKind::Output),
    ];
    for (name, shape, kind) in decl {
        let shape = shape.into_iter().map(SymExpr::Int).collect();
        p.data
            .insert(name.into(), DataDesc::new(DType::F32, shape, kind));
    }
    p.inputs = vec!["x".into(), "scale".into(), "bias".into()].into();
    p.outputs = vec!["y".into()].into();
    p.build(|b| {
        b.library(
            "ln",
            OP,
            attrs(&[]),
            &[Some("x"), Some("scale"), Some("bias")],
            &["y"],
        );
    });
    let lowered = expansion_matches(&p, 3).expect("matches");
    assert!(lowered.data.contains_key("ln_mean"));
    assert!(lowered.data.contains_key("ln_invstd"));
}

#[test]
fn rms_normalization_scales_by_the_root_mean_square() {
    let x = t(&[2, 3], &[1.0, 2.0, 2.0, -3.0, 0.0, 4.0]);
    let scale = t(&[3], &[1.0, 0.5, 2.0]);
    let y = eval1("RMSNormalization", &[], &[&x, &scale]);
    // Row 0: mean square 3; row 1: 25 / 3.
    let (r0, r1) = ((3.0f64 + 1e-5).sqrt(), (25.0f64 / 3.0 + 1e-5).sqrt());
    let want = [1.0 / r0, 1.0 / r0, 4.0 / r0, -3.0 / r1, 0.0, 8.0 / r1];
    assert_close(&y, &[2, 3], &want);
    // From axis 0 the whole tensor is one group.
    let a = [("axis", Attr::Int(0)), ("epsilon", Attr::Float(0.5))];
    let one = t(&[1], &[1.0]);
    let y = eval1("RMSNormalization", &a, &[&x, &one]);
    let r = (34.0f64 / 6.0 + 0.5).sqrt();
    let want: Vec<f64> = [1.0, 2.0, 2.0, -3.0, 0.0, 4.0]
        .iter()
        .map(|v| v / r)
        .collect();
    assert_close(&y, &[2, 3], &want);
}

#[test]
fn rms_normalization_checks_and_expands() {
    let op = "RMSNormalization";
    let msg = infer_err(
        op,
        &[("axis", Attr::Int(2))],
        &[Some(ty(&[2, 3])), Some(ty(&[3]))],
    );
    assert!(msg.contains("axis 2"), "{msg}");
    let msg = infer_err(op, &[], &[Some(ty(&[2, 3])), Some(ty(&[2]))]);
    assert!(msg.contains("scale"), "{msg}");
    let msg = infer_err(
        op,
        &[("stash_type", Attr::Int(11))],
        &[Some(ty(&[3])), Some(ty(&[3]))],
    );
    assert!(msg.contains("stash_type"), "{msg}");
    let cases: Vec<(Attrs, Vec<i64>, Vec<i64>)> = vec![
        (vec![], vec![3, 1, 5], vec![5]),
        (vec![("axis", Attr::Int(1))], vec![2, 3, 5], vec![3, 1]),
        (
            vec![("axis", Attr::Int(-3)), ("epsilon", Attr::Float(0.1))],
            vec![1, 4, 3],
            vec![4, 3],
        ),
    ];
    for (a, x, s) in cases {
        check_expansion(op, &a, &[Some(ty(&x)), Some(ty(&s))], &[]);
    }
    check_symbolic_expansion(
        op,
        &[],
        &[Some(sym_ty(&["B", "7"])), Some(ty(&[7]))],
        &[],
        &[("B", 3)],
    );
}

#[test]
fn lp_normalization_divides_by_the_l1_or_l2_norm() {
    let x = t(&[2, 2], &[3.0, -4.0, 0.0, 0.0]);
    // The default is p = 2 along the last axis; a zero norm gives zeros, not NaN.
    assert_close(
        &eval1("LpNormalization", &[], &[&x]),
        &[2, 2],
        &[0.6, -0.8, 0.0, 0.0],
    );
    let l1 = [("p", Attr::Int(1)), ("axis", Attr::Int(0))];
    assert_close(
        &eval1("LpNormalization", &l1, &[&x]),
        &[2, 2],
        &[1.0, -1.0, 0.0, 0.0],
    );
    let msg = infer_err("LpNormalization", &[("p", Attr::Int(3))], &[Some(ty(&[2]))]);
    assert!(msg.contains("1 or 2"), "{msg}");
    for p in [1, 2] {
        for axis in [0, -2] {
            let a = [("p", Attr::Int(p)), ("axis", Attr::Int(axis))];
            check_expansion("LpNormalization", &a, &[Some(ty(&[3, 4, 1]))], &[]);
        }
    }
}
