//! InstanceNormalization and GroupNormalization.

use super::{assert_close, attr_error, eval, expansion_agrees, infer, shape_error, t, ty};
use dmove::ir::Attr;

#[test]
fn instance_norm_by_hand() {
    // Channel 0: [1, 3] → mean 2, var 1; channel 1: [2, 6] → mean 4, var 4.
    let x = t(&[1, 2, 2], &[1., 3., 2., 6.]);
    let (scale, b) = (t(&[2], &[1., 2.]), t(&[2], &[0., 1.]));
    let ins = [Some(&x), Some(&scale), Some(&b)];
    let y = eval(
        "InstanceNormalization",
        &[("epsilon", Attr::Float(0.0))],
        &ins,
    );
    assert_close(&y, &[1, 2, 2], &[-1., 1., -1., 3.]);
    // Default epsilon 1e-5.
    let y = eval("InstanceNormalization", &[], &ins);
    let (s0, s1) = (1.0 / (1.0f64 + 1e-5).sqrt(), 2.0 / (4.0f64 + 1e-5).sqrt());
    assert_close(&y, &[1, 2, 2], &[-s0, s0, -2. * s1 + 1., 2. * s1 + 1.]);
}

#[test]
fn group_norm_by_hand_per_group_and_per_channel() {
    // Groups of two channels: [1, 3] and [2, 6], one spatial element each.
    let x = t(&[1, 4, 1], &[1., 3., 2., 6.]);
    let a = [("num_groups", Attr::Int(2)), ("epsilon", Attr::Float(0.0))];
    // Opset 18: scale and bias per group.
    let (scale, b) = (t(&[2], &[1., 2.]), t(&[2], &[0., 1.]));
    let y = eval(
        "GroupNormalization",
        &a,
        &[Some(&x), Some(&scale), Some(&b)],
    );
    assert_close(&y, &[1, 4, 1], &[-1., 1., -1., 3.]);
    // Opset 21: per channel.
    let (scale, b) = (t(&[4], &[1., 2., 3., 4.]), t(&[4], &[0., 0., 0., 1.]));
    let y = eval(
        "GroupNormalization",
        &a,
        &[Some(&x), Some(&scale), Some(&b)],
    );
    assert_close(&y, &[1, 4, 1], &[-1., 2., -3., 5.]);
}

#[test]
fn normalizations_reject_bad_shapes() {
    let c = |n: usize| Some(ty(&[n]));
    let ok = infer(
        "InstanceNormalization",
        &[],
        &[Some(ty(&[2, 3, 4])), c(3), c(3)],
    );
    assert_eq!(ok.expect("infers"), ty(&[2, 3, 4]));
    shape_error(
        infer(
            "InstanceNormalization",
            &[],
            &[Some(ty(&[2, 3, 4])), c(2), c(3)],
        ),
        "scale has shape [2]",
    );
    shape_error(
        infer(
            "InstanceNormalization",
            &[],
            &[Some(ty(&[2, 3])), c(3), c(3)],
        ),
        "rank at least 3",
    );
    let g = |n: i64| vec![("num_groups", Attr::Int(n))];
    let x = || Some(ty(&[1, 6, 2]));
    assert!(infer("GroupNormalization", &g(3), &[x(), c(3), c(6)]).is_ok());
    attr_error(
        infer("GroupNormalization", &g(4), &[x(), c(4), c(4)]),
        "num_groups",
    );
    attr_error(
        infer("GroupNormalization", &[], &[x(), c(3), c(3)]),
        "num_groups",
    );
    shape_error(
        infer("GroupNormalization", &g(3), &[x(), c(3), c(2)]),
        "bias has shape [2]",
    );
    let stash = [("num_groups", Attr::Int(3)), ("stash_type", Attr::Int(10))];
    attr_error(
        infer("GroupNormalization", &stash, &[x(), c(3), c(3)]),
        "stash_type",
    );
}

#[test]
fn normalization_expansions_match_reference() {
    for shape in [&[2, 3, 5][..], &[1, 1, 1], &[2, 2, 3, 1]] {
        let c = [shape[1]];
        expansion_agrees(
            "InstanceNormalization",
            &[],
            &[Some(shape), Some(&c), Some(&c)],
            &[],
        );
    }
    let cases: [(&[usize], i64, usize); 5] = [
        (&[2, 4, 3], 2, 2),
        (&[1, 6, 2, 3], 3, 6),
        (&[2, 3, 5], 1, 1),
        (&[1, 4, 1, 1], 4, 4),
        (&[3, 6, 7], 2, 6),
    ];
    for (shape, groups, params) in cases {
        let p = [params];
        let a = [
            ("num_groups", Attr::Int(groups)),
            ("epsilon", Attr::Float(1e-3)),
        ];
        expansion_agrees(
            "GroupNormalization",
            &a,
            &[Some(shape), Some(&p), Some(&p)],
            &[],
        );
    }
}
