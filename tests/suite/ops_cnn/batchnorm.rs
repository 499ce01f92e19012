//! BatchNormalization (inference and training mode).

use super::{assert_close, eval, expansion_agrees, infer, random, shape_error, t, ty};
use dmove::ir::{Attr, LibraryNode, Tensor};
use dmove::ops::{lookup, OpError};
use std::collections::BTreeMap;

/// Constant statistics for `c` channels with a positive variance (random inputs in [−2, 2)
/// would make the square root NaN and the comparison vacuous).
fn bn_stats(c: usize, seed: u64) -> Vec<Option<Tensor>> {
    vec![
        None,
        Some(random(&[c], seed, -2., 2.)),
        Some(random(&[c], seed + 1, -2., 2.)),
        Some(random(&[c], seed + 2, -2., 2.)),
        Some(random(&[c], seed + 3, 0.1, 3.)),
    ]
}

#[test]
fn batchnorm_by_hand() {
    let x = t(&[1, 2, 1, 2], &[1., 2., 3., 4.]);
    let (scale, b) = (t(&[2], &[1., 2.]), t(&[2], &[0., 1.]));
    let (mean, var) = (t(&[2], &[1., 3.]), t(&[2], &[4., 1.]));
    let ins = [Some(&x), Some(&scale), Some(&b), Some(&mean), Some(&var)];
    let y = eval("BatchNormalization", &[("epsilon", Attr::Float(0.0))], &ins);
    assert_close(&y, &[1, 2, 1, 2], &[0., 0.5, 1., 3.]);
    // Default epsilon 1e-5.
    let y = eval("BatchNormalization", &[], &ins);
    let want: Vec<f64> = [(1., 0), (2., 0), (3., 1), (4., 1)]
        .iter()
        .map(|&(v, c)| {
            let (sc, bb, m, va) = ([1., 2.][c], [0., 1.][c], [1., 3.][c], [4., 1.][c]);
            (v - m) / f64::sqrt(va + 1e-5) * sc + bb
        })
        .collect();
    assert_close(&y, &[1, 2, 1, 2], &want);
}

#[test]
fn batchnorm_rejects_bad_shapes_and_modes() {
    let c = |n: usize| Some(ty(&[n]));
    let ok = infer(
        "BatchNormalization",
        &[],
        &[Some(ty(&[2, 3, 4])), c(3), c(3), c(3), c(3)],
    );
    assert_eq!(ok.expect("infers"), ty(&[2, 3, 4]));
    shape_error(
        infer(
            "BatchNormalization",
            &[],
            &[Some(ty(&[2, 3, 4])), c(3), c(3), c(2), c(3)],
        ),
        "mean has shape",
    );
    shape_error(
        infer(
            "BatchNormalization",
            &[],
            &[Some(ty(&[3])), c(3), c(3), c(3), c(3)],
        ),
        "rank at least 2",
    );
    let bad_mode = infer(
        "BatchNormalization",
        &[("training_mode", Attr::Int(2))],
        &[Some(ty(&[2, 3])), c(3), c(3), c(3), c(3)],
    );
    assert!(
        matches!(bad_mode, Err(OpError::Attr { .. })),
        "{bad_mode:?}"
    );
}

/// Training mode normalises with the batch's population statistics and outputs the running
/// statistics moved towards them by `1 − momentum`.
#[test]
fn batchnorm_training_mode_by_hand() {
    // Channel 0 holds {1, 3} (mean 2, variance 1), channel 1 holds {2, 6} (mean 4, variance 4).
    let x = t(&[2, 2, 1], &[1., 2., 3., 6.]);
    let (scale, b) = (t(&[2], &[1., 2.]), t(&[2], &[0., 1.]));
    let (mean, var) = (t(&[2], &[0., 0.]), t(&[2], &[1., 1.]));
    let ins = [Some(&x), Some(&scale), Some(&b), Some(&mean), Some(&var)];
    let node = LibraryNode {
        op: "BatchNormalization".into(),
        attrs: super::attrs(&[
            ("epsilon", Attr::Float(0.0)),
            ("momentum", Attr::Float(0.5)),
            ("training_mode", Attr::Int(1)),
        ]),
    };
    let bn = lookup("BatchNormalization").expect("op");
    let out = bn.eval(&node, &ins).expect("evaluates");
    assert_eq!(out.len(), 3);
    assert_close(&out[0], &[2, 2, 1], &[-1., -1., 1., 3.]);
    assert_close(&out[1], &[2], &[1., 2.]);
    assert_close(&out[2], &[2], &[1., 2.5]);
    let types = bn
        .infer(
            &node,
            &[
                Some(ty(&[2, 2, 1])),
                Some(ty(&[2])),
                Some(ty(&[2])),
                Some(ty(&[2])),
                Some(ty(&[2])),
            ],
            &[None; 5],
        )
        .expect("infers");
    assert_eq!(types, vec![ty(&[2, 2, 1]), ty(&[2]), ty(&[2])]);
}

#[test]
fn batchnorm_expansion_matches_reference() {
    for shape in [&[2, 3, 4, 1][..], &[1, 1], &[3, 2, 5]] {
        let c = [shape[1]];
        let mut inputs: Vec<Option<&[usize]>> = vec![Some(shape)];
        inputs.extend([Some(&c[..]); 4]);
        expansion_agrees(
            "BatchNormalization",
            &[("epsilon", Attr::Float(1e-3))],
            &inputs,
            &bn_stats(c[0], c[0] as u64),
        );
    }
}

#[test]
fn batchnorm_training_expansion_matches_reference() {
    for (shape, momentum) in [(&[2, 3, 4, 1][..], 0.9), (&[3, 2][..], 0.25)] {
        let c = [shape[1]];
        let mut inputs: Vec<Option<&[usize]>> = vec![Some(shape)];
        inputs.extend([Some(&c[..]); 4]);
        let a = [
            ("training_mode", Attr::Int(1)),
            ("momentum", Attr::Float(momentum)),
        ];
        expansion_agrees("BatchNormalization", &a, &inputs, &[]);
    }
}

#[test]
fn batchnorm_flops_fold_statistics_per_channel() {
    let node = LibraryNode {
        op: "BatchNormalization".into(),
        attrs: BTreeMap::new(),
    };
    let ins = [
        Some(ty(&[2, 3, 4])),
        Some(ty(&[3])),
        Some(ty(&[3])),
        Some(ty(&[3])),
        Some(ty(&[3])),
    ];
    let bn = lookup("BatchNormalization").expect("op");
    assert_eq!(bn.flops(&node, &ins, &[ty(&[2, 3, 4])]), 2 * 24 + 5 * 3);
}
