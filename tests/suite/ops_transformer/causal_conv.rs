//! CausalConvWithState: the causal window over the carry and the input by hand, the carry of an
//! input shorter than it, SiLU, shape and attribute errors, and expansions on awkward shapes (a
//! kernel of one tap, bias and carry, symbolic batch and length).

use super::{
    assert_close, check_expansion, check_symbolic_expansion, eval, infer_err, sym_ty, t, ty,
};
use dmove::ir::Attr;

const OP: &str = "CausalConvWithState";

#[test]
fn convolves_the_carry_followed_by_the_input() {
    // One channel, k = 3: P = [0, 0, 1, 2, 3] without a carry, [5, 6, 1, 2, 3] with one.
    let x = t(&[1, 1, 3], &[1.0, 2.0, 3.0]);
    let w = t(&[1, 1, 3], &[1.0, 10.0, 100.0]);
    let out = eval(OP, &[], &[Some(&x), Some(&w)]);
    assert_close(&out[0], &[1, 1, 3], &[100.0, 210.0, 321.0]);
    assert_close(&out[1], &[1, 1, 2], &[2.0, 3.0]);
    let past = t(&[1, 1, 2], &[5.0, 6.0]);
    let bias = t(&[1], &[0.5]);
    let out = eval(OP, &[], &[Some(&x), Some(&w), Some(&bias), Some(&past)]);
    assert_close(&out[0], &[1, 1, 3], &[165.5, 216.5, 321.5]);
    // An input shorter than the carry keeps part of the carry: [6, 1] ++ … → present [6, 1].
    let short = t(&[1, 1, 1], &[1.0]);
    let out = eval(OP, &[], &[Some(&short), Some(&w), None, Some(&past)]);
    assert_close(&out[0], &[1, 1, 1], &[165.0]);
    assert_close(&out[1], &[1, 1, 2], &[6.0, 1.0]);
}

#[test]
fn silu_and_swish_apply_x_sigmoid_x_per_channel() {
    // Two channels, k = 1: Y = act(W[c] · X).
    let x = t(&[1, 2, 2], &[1.0, -2.0, 0.5, 3.0]);
    let w = t(&[2, 1, 1], &[2.0, -1.0]);
    let silu = |v: f64| v / (1.0 + (-v).exp());
    let want: Vec<f64> = [2.0, -4.0, -0.5, -3.0].into_iter().map(silu).collect();
    for act in ["silu", "swish"] {
        let a = [("activation", Attr::Str(act.into()))];
        let out = eval(OP, &a, &[Some(&x), Some(&w)]);
        assert_close(&out[0], &[1, 2, 2], &want);
        assert_eq!(out[1].shape, [1, 2, 0]);
    }
}

#[test]
fn checks_the_activation_and_shapes() {
    let base = || vec![Some(ty(&[2, 3, 5])), Some(ty(&[3, 1, 4]))];
    let msg = infer_err(OP, &[("activation", Attr::Str("relu".into()))], &base());
    assert!(msg.contains("activation") && msg.contains("relu"), "{msg}");
    let msg = infer_err(OP, &[], &[Some(ty(&[2, 3, 5])), Some(ty(&[3, 2, 4]))]);
    assert!(msg.contains("weight must have shape [3, 1, 4]"), "{msg}");
    let msg = infer_err(OP, &[], &[Some(ty(&[2, 3, 5])), Some(ty(&[2, 1, 4]))]);
    assert!(msg.contains("weight"), "{msg}");
    let msg = infer_err(OP, &[], &[Some(ty(&[2, 3, 5, 1])), Some(ty(&[3, 1, 4]))]);
    assert!(msg.contains("rank 3"), "{msg}");
    let mut with_past = base();
    with_past.extend([None, Some(ty(&[2, 3, 4]))]);
    let msg = infer_err(OP, &[], &with_past);
    assert!(
        msg.contains("past_state must have shape [2, 3, 3]"),
        "{msg}"
    );
    let mut with_bias = base();
    with_bias.push(Some(ty(&[4])));
    let msg = infer_err(OP, &[], &with_bias);
    assert!(msg.contains("bias must have shape [3]"), "{msg}");
}

#[test]
fn expansion_matches_on_awkward_shapes() {
    let silu = [("activation", Attr::Str("silu".into()))];
    for a in [&[][..], &silu[..]] {
        // Bias and carry; an input shorter than the carry; one tap (an empty carry).
        let full = [
            Some(ty(&[2, 3, 5])),
            Some(ty(&[3, 1, 4])),
            Some(ty(&[3])),
            Some(ty(&[2, 3, 3])),
        ];
        check_expansion(OP, a, &full, &[]);
        let short = [Some(ty(&[1, 2, 2])), Some(ty(&[2, 1, 5]))];
        check_expansion(OP, a, &short, &[]);
        let one_tap = [Some(ty(&[3, 1, 4])), Some(ty(&[1, 1, 1])), Some(ty(&[1]))];
        check_expansion(OP, a, &one_tap, &[]);
    }
    let inputs = [
        Some(sym_ty(&["B", "2", "L"])),
        Some(sym_ty(&["2", "1", "3"])),
        None,
        Some(sym_ty(&["B", "2", "2"])),
    ];
    check_symbolic_expansion(OP, &silu, &inputs, &[], &[("B", 2), ("L", 4)]);
}
