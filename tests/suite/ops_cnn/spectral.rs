//! DFT and STFT.

use super::{assert_close, attrs, eval, infer, infer_consts, t, ty};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::{OpError, TensorType};

fn scalar(v: i64) -> Tensor {
    Tensor::i64(vec![], vec![v])
}

fn i64_type() -> Option<TensorType> {
    Some(TensorType::new(DType::I64, vec![]))
}

/// Expansion against the reference; `consts[i]` is an integer constant input.
fn expands(op: &str, a: &[(&str, Attr)], inputs: &[Option<&[usize]>], consts: &[Option<Tensor>]) {
    let types: Vec<Option<TensorType>> = (inputs.iter().enumerate())
        .map(|(i, s)| match consts.get(i) {
            Some(Some(_)) => i64_type(),
            _ => s.map(ty),
        })
        .collect();
    let p = single_op_program(op, attrs(a), &types, consts).expect("infers");
    for seed in [1, 2] {
        if let Err(e) = expansion_matches(&p, seed) {
            panic!("{op} {a:?} on {inputs:?}: {e}");
        }
    }
}

const R3: f64 = 0.866_025_403_784_438_6;

#[test]
fn dft_forward_inverse_and_half_spectrum_by_hand() {
    let x = t(&[1, 4, 1], &[1., 2., 3., 4.]);
    let axis = [("axis", Attr::Int(1))];
    let y = eval("DFT", &axis, &[Some(&x)]);
    assert_close(&y, &[1, 4, 2], &[10., 0., -2., 2., -2., 0., -2., -2.]);
    // Zero-padded to 6.
    let six = scalar(6);
    let y = eval("DFT", &axis, &[Some(&x), Some(&six)]);
    let want = [
        10.,
        0.,
        -3.5,
        -5. * R3,
        2.5,
        R3,
        -2.,
        0.,
        2.5,
        -R3,
        -3.5,
        5. * R3,
    ];
    assert_close(&y, &[1, 6, 2], &want);
    // Onesided keeps 4/2 + 1 frequencies, and its real inverse gives the signal back.
    let half = eval(
        "DFT",
        &[("axis", Attr::Int(1)), ("onesided", Attr::Int(1))],
        &[Some(&x)],
    );
    assert_close(&half, &[1, 3, 2], &[10., 0., -2., 2., -2., 0.]);
    let a = [
        ("axis", Attr::Int(1)),
        ("onesided", Attr::Int(1)),
        ("inverse", Attr::Int(1)),
    ];
    assert_close(
        &eval("DFT", &a, &[Some(&half)]),
        &[1, 4, 1],
        &[1., 2., 3., 4.],
    );
    // An odd real inverse length (numpy's irfft(…, n=5)).
    let five = scalar(5);
    let y = eval("DFT", &a, &[Some(&half), Some(&five)]);
    let want = [0.4, 1.639_154_79, 1.929_771_8, 2.870_228_2, 3.160_845_21];
    assert_close(&y, &[1, 5, 1], &want);
}

#[test]
fn dft_complex_inverse_truncated_along_the_first_axis() {
    // x[2, 3] complex, inverse along axis 0 (given as an input, opset 20) with length 2.
    let x = t(
        &[2, 3, 2],
        &[1., 2., 0., -1., 3., 0., 2., -1., 1., 1., -1., 0.5],
    );
    let zero = Tensor::i64(vec![1], vec![0]);
    let two = scalar(2);
    let y = eval(
        "DFT",
        &[("inverse", Attr::Int(1))],
        &[Some(&x), Some(&two), Some(&zero)],
    );
    let want = [1.5, 0.5, 0.5, 0., 1., 0.25, -0.5, 1.5, -0.5, -1., 2., -0.25];
    assert_close(&y, &[2, 3, 2], &want);
}

#[test]
fn stft_frames_windows_and_onesided_by_hand() {
    let x = t(&[1, 5, 1], &[1., 2., 3., 4., 5.]);
    let (step, three) = (scalar(2), scalar(3));
    // Frames [1, 2, 3] and [3, 4, 5]; onesided (the default) keeps 3/2 + 1 = 2 bins.
    let y = eval("STFT", &[], &[Some(&x), Some(&step), None, Some(&three)]);
    assert_close(&y, &[1, 2, 2, 2], &[6., 0., -1.5, R3, 12., 0., -1.5, R3]);
    let w = t(&[3], &[0.5, 1., 0.5]);
    let a = [("onesided", Attr::Int(0))];
    let y = eval("STFT", &a, &[Some(&x), Some(&step), Some(&w)]);
    let want = [
        4.,
        0.,
        -1.25,
        -0.5 * R3,
        -1.25,
        0.5 * R3,
        8.,
        0.,
        -1.75,
        -1.5 * R3,
        -1.75,
        1.5 * R3,
    ];
    assert_close(&y, &[1, 2, 3, 2], &want);
}

#[test]
fn spectral_shapes_and_errors() {
    let err = |r: Result<TensorType, OpError>| r.expect_err("refused").to_string();
    let msg = err(infer("DFT", &[], &[Some(ty(&[2, 5, 3]))]));
    assert!(msg.contains("1 (real) or 2 (complex)"), "{msg}");
    let msg = err(infer(
        "DFT",
        &[("axis", Attr::Int(-1))],
        &[Some(ty(&[2, 5, 2]))],
    ));
    assert!(msg.contains("cannot be transformed"), "{msg}");
    let msg = err(infer("DFT", &[], &[Some(ty(&[2, 5, 2])), i64_type()]));
    assert!(msg.contains("`dft_length` must be a constant"), "{msg}");
    let sym = TensorType::new(DType::F32, vec![SymExpr::sym("n"), SymExpr::Int(1)]);
    let msg = err(infer("DFT", &[("axis", Attr::Int(0))], &[Some(sym)]));
    assert!(msg.contains("symbolic"), "{msg}");
    // Default axis −2; a onesided inverse defaults to 2·(n − 1) real samples.
    let a = [("inverse", Attr::Int(1)), ("onesided", Attr::Int(1))];
    let y = infer("DFT", &a, &[Some(ty(&[3, 5, 2]))]).expect("infers");
    assert_eq!(y, ty(&[3, 8, 1]));

    let step = scalar(3);
    let inputs = [
        Some(ty(&[2, 10, 1])),
        i64_type(),
        Some(ty(&[4])),
        i64_type(),
    ];
    let five = scalar(5);
    let msg = err(infer_consts(
        "STFT",
        &[],
        &inputs,
        &[None, Some(&step), None, Some(&five)],
    ));
    assert!(msg.contains("differs from the window"), "{msg}");
    let msg = err(infer_consts(
        "STFT",
        &[],
        &inputs,
        &[None, Some(&step), None, None],
    ));
    assert!(msg.contains("`frame_length` must be a constant"), "{msg}");
    let y = infer_consts("STFT", &[], &inputs[..3], &[None, Some(&step), None]).expect("infers");
    assert_eq!(y, ty(&[2, 3, 3, 2]));
    let msg = err(infer_consts("STFT", &[], &inputs[..3], &[None, None, None]));
    assert!(msg.contains("`frame_step` must be a constant"), "{msg}");
}

#[test]
fn spectral_expansions_match_the_reference() {
    let axis = |a: i64| ("axis", Attr::Int(a));
    let flag = |n: &'static str| (n, Attr::Int(1));
    expands("DFT", &[axis(1)], &[Some(&[2, 7, 3, 1])], &[]);
    expands(
        "DFT",
        &[axis(2), flag("onesided")],
        &[Some(&[2, 3, 9, 1])],
        &[],
    );
    expands(
        "DFT",
        &[axis(0), flag("inverse")],
        &[Some(&[5, 3, 2]), Some(&[])],
        &[None, Some(scalar(7))],
    );
    expands(
        "DFT",
        &[axis(1), flag("inverse"), flag("onesided")],
        &[Some(&[2, 4, 2]), Some(&[])],
        &[None, Some(scalar(5))],
    );
    expands(
        "DFT",
        &[axis(1)],
        &[Some(&[1, 9, 2]), Some(&[])],
        &[None, Some(scalar(4))],
    );
    expands(
        "STFT",
        &[],
        &[Some(&[2, 11, 1]), Some(&[]), Some(&[4])],
        &[None, Some(scalar(3))],
    );
    expands(
        "STFT",
        &[("onesided", Attr::Int(0))],
        &[Some(&[1, 9, 2]), Some(&[]), None, Some(&[])],
        &[None, Some(scalar(2)), None, Some(scalar(5))],
    );
}
