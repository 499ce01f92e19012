//! LinearAttention: the four update rules by hand, the default scale, grouped query heads and a
//! past state, shape and attribute errors, and expansions on awkward configurations (every rule,
//! GQA and MQA, per-head and per-key decay, a shared β, a state type of its own, symbolic batch
//! and sequence).

use super::{
    assert_close, check_expansion, check_symbolic_expansion, eval, infer, infer_err, sym_ty, t, ty,
    Attrs,
};
use dmove::ir::{Attr, DType, Tensor};
use dmove::ops::TensorType;

const OP: &str = "LinearAttention";

fn heads(q: i64, kv: i64) -> Attrs<'static> {
    vec![
        ("q_num_heads", Attr::Int(q)),
        ("kv_num_heads", Attr::Int(kv)),
    ]
}

/// One head with `d_k = d_v = 1` and scale 1 under `rule`.
fn scalar_heads(rule: &str) -> Attrs<'_> {
    let mut a = heads(1, 1);
    a.extend([
        ("update_rule", Attr::Str(rule.into())),
        ("scale", Attr::Float(1.0)),
    ]);
    a
}

#[test]
fn the_four_rules_by_hand() {
    // Two tokens: q = 1, k = [1, 2], v = [3, 4]; decay ln ½ (a = ½), β = ½.
    let q = t(&[1, 2, 1], &[1.0, 1.0]);
    let k = t(&[1, 2, 1], &[1.0, 2.0]);
    let v = t(&[1, 2, 1], &[3.0, 4.0]);
    let g = t(&[1, 2, 1], &[0.5f32.ln(); 2]);
    let beta = t(&[1, 2, 1], &[0.5, 0.5]);
    let run = |rule: &str, decay: Option<&Tensor>, beta: Option<&Tensor>| {
        let inputs = [Some(&q), Some(&k), Some(&v), None, decay, beta];
        eval(OP, &scalar_heads(rule), &inputs)
    };
    // linear: S = 3, then 3 + 2·4 = 11.
    let out = run("linear", None, None);
    assert_close(&out[0], &[1, 2, 1], &[3.0, 11.0]);
    assert_close(&out[1], &[1, 1, 1, 1], &[11.0]);
    // gated: S = 3, then ½·3 + 8 = 9.5.
    let out = run("gated", Some(&g), None);
    assert_close(&out[0], &[1, 2, 1], &[3.0, 9.5]);
    // delta: u = ½(3 − 0) = 1.5, S = 1.5; u = ½(4 − 1.5·2) = 0.5, S = 1.5 + 2·0.5 = 2.5.
    let out = run("delta", None, Some(&beta));
    assert_close(&out[0], &[1, 2, 1], &[1.5, 2.5]);
    // gated_delta: S = 1.5; decayed 0.75, u = ½(4 − 0.75·2) = 1.25, S = 0.75 + 2.5 = 3.25.
    let out = run("gated_delta", Some(&g), Some(&beta));
    assert_close(&out[0], &[1, 2, 1], &[1.5, 3.25]);
    assert_close(&out[1], &[1, 1, 1, 1], &[3.25]);
}

#[test]
fn default_scale_query_groups_and_past_state() {
    // d_k = 4, d_v = 1: scale ½. Two query heads read the one key/value head's state, which
    // starts from past_state = [1, 0, 0, 0]ᵀ; k = e₀, v = 2 makes it [3, 0, 0, 0]ᵀ.
    let mut a = heads(2, 1);
    a.push(("update_rule", Attr::Str("linear".into())));
    let q = t(&[1, 1, 8], &[1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0]);
    let k = t(&[1, 1, 4], &[1.0, 0.0, 0.0, 0.0]);
    let v = t(&[1, 1, 1], &[2.0]);
    let past = t(&[1, 1, 4, 1], &[1.0, 0.0, 0.0, 0.0]);
    let out = eval(OP, &a, &[Some(&q), Some(&k), Some(&v), Some(&past)]);
    assert_close(&out[0], &[1, 1, 2], &[1.5, 0.0]);
    assert_close(&out[1], &[1, 1, 4, 1], &[3.0, 0.0, 0.0, 0.0]);
    // Per-head decay scales the whole state; per-key decay each of its rows.
    let mut a = heads(1, 1);
    a.push(("update_rule", Attr::Str("gated".into())));
    let v0 = t(&[1, 1, 1], &[0.0]);
    let q = t(&[1, 1, 4], &[1.0, 1.0, 0.0, 0.0]);
    let past = t(&[1, 1, 4, 1], &[4.0, 8.0, 0.0, 0.0]);
    let per_head = t(&[1, 1, 1], &[0.5f32.ln()]);
    let out = eval(
        OP,
        &a,
        &[Some(&q), Some(&k), Some(&v0), Some(&past), Some(&per_head)],
    );
    assert_close(&out[1], &[1, 1, 4, 1], &[2.0, 4.0, 0.0, 0.0]);
    assert_close(&out[0], &[1, 1, 1], &[3.0]);
    let per_key = t(&[1, 1, 4], &[0.0, 0.25f32.ln(), 0.0, 0.0]);
    let out = eval(
        OP,
        &a,
        &[Some(&q), Some(&k), Some(&v0), Some(&past), Some(&per_key)],
    );
    assert_close(&out[1], &[1, 1, 4, 1], &[4.0, 2.0, 0.0, 0.0]);
}

#[test]
fn the_present_state_has_the_past_states_type() {
    let inputs = [
        Some(ty(&[2, 3, 4])),
        Some(ty(&[2, 3, 4])),
        Some(ty(&[2, 3, 6])),
        Some(TensorType::new(DType::F64, ty(&[2, 2, 2, 3]).shape)),
        None,
        Some(ty(&[2, 3, 1])),
    ];
    let mut a = heads(2, 2);
    a.push(("update_rule", Attr::Str("delta".into())));
    let out = infer(OP, &a, &inputs, &[]).expect("infers");
    assert_eq!(out[0], ty(&[2, 3, 6]));
    assert_eq!(out[1].dtype, DType::F64);
    assert_eq!(out[1].shape, ty(&[2, 2, 2, 3]).shape);
    check_expansion(OP, &a, &inputs, &[]);
}

#[test]
fn checks_rules_heads_and_shapes() {
    let qkv = || {
        vec![
            Some(ty(&[1, 2, 8])),
            Some(ty(&[1, 2, 4])),
            Some(ty(&[1, 2, 4])),
        ]
    };
    let with = |extra: [Option<TensorType>; 3]| {
        let mut v = qkv();
        v.extend(extra);
        v
    };
    let msg = infer_err(OP, &[], &qkv());
    assert!(
        msg.contains("q_num_heads") && msg.contains("required"),
        "{msg}"
    );
    let msg = infer_err(OP, &heads(3, 2), &qkv());
    assert!(msg.contains("not a multiple"), "{msg}");
    let mut bad_rule = heads(2, 1);
    bad_rule.push(("update_rule", Attr::Str("softmax".into())));
    let msg = infer_err(OP, &bad_rule, &qkv());
    assert!(
        msg.contains("update_rule") && msg.contains("softmax"),
        "{msg}"
    );
    // The default rule, gated_delta, needs decay and beta; linear takes neither.
    let msg = infer_err(OP, &heads(2, 1), &qkv());
    assert!(msg.contains("needs input 4 (decay)"), "{msg}");
    let mut linear = heads(2, 1);
    linear.push(("update_rule", Attr::Str("linear".into())));
    let msg = infer_err(OP, &linear, &with([None, None, Some(ty(&[1, 2, 1]))]));
    assert!(msg.contains("takes no input 5 (beta)"), "{msg}");
    // Decay is per key element (1 · 4) or per head (1); β per head or shared.
    let gates = |decay: &[i64], beta: &[i64]| with([None, Some(ty(decay)), Some(ty(beta))]);
    let msg = infer_err(OP, &heads(2, 1), &gates(&[1, 2, 3], &[1, 2, 1]));
    assert!(msg.contains("decay") && msg.contains("expected 4"), "{msg}");
    let msg = infer_err(OP, &heads(2, 1), &gates(&[1, 2, 4], &[1, 2, 4]));
    assert!(msg.contains("beta"), "{msg}");
    let msg = infer_err(OP, &heads(2, 1), &gates(&[1, 3, 4], &[1, 2, 1]));
    assert!(msg.contains("decay must have shape"), "{msg}");
    let past = with([
        Some(ty(&[1, 1, 4, 3])),
        Some(ty(&[1, 2, 1])),
        Some(ty(&[1, 2, 1])),
    ]);
    let msg = infer_err(OP, &heads(2, 1), &past);
    assert!(
        msg.contains("past_state must have shape [1, 1, 4, 4]"),
        "{msg}"
    );
    // Keys of another head size, a 4-D query, another sequence length.
    for (shapes, needle) in [
        ([&[1, 2, 8][..], &[1, 2, 2], &[1, 2, 4]], "key head size"),
        ([&[1, 2, 2, 4][..], &[1, 2, 4], &[1, 2, 4]], "rank 3"),
        ([&[1, 2, 8][..], &[1, 3, 4], &[1, 2, 4]], "extent 1"),
    ] {
        let inputs: Vec<_> = shapes.iter().map(|s| Some(ty(s))).collect();
        let msg = infer_err(OP, &linear, &inputs);
        assert!(msg.contains(needle), "{msg}");
    }
}

#[test]
fn expansion_matches_on_awkward_configurations() {
    let rule = |q: i64, kv: i64, rule: &'static str| {
        let mut a = heads(q, kv);
        a.push(("update_rule", Attr::Str(rule.into())));
        a
    };
    // Every rule with GQA (3 query heads per key/value head), d_k 2, d_v 3, three tokens.
    let qkv = [
        Some(ty(&[2, 3, 12])),
        Some(ty(&[2, 3, 4])),
        Some(ty(&[2, 3, 6])),
    ];
    let gates = |decay: i64, beta: i64| [Some(ty(&[2, 3, decay])), Some(ty(&[2, 3, beta]))];
    let past = Some(ty(&[2, 2, 2, 3]));
    for (r, decay, beta) in [
        ("linear", None, None),
        ("gated", Some(4), None),
        ("gated", Some(2), None),
        ("delta", None, Some(2)),
        ("gated_delta", Some(4), Some(1)),
        ("gated_delta", Some(2), Some(2)),
    ] {
        let [d, b] = gates(decay.unwrap_or(0), beta.unwrap_or(0));
        let mut inputs = qkv.to_vec();
        inputs.extend([past.clone(), decay.and(d), beta.and(b)]);
        check_expansion(OP, &rule(6, 2, r), &inputs, &[]);
    }
    // MQA with a default scale, one token, no past state.
    let mut a = rule(4, 1, "gated_delta");
    a.push(("chunk_size", Attr::Int(16)));
    let inputs = [
        Some(ty(&[1, 1, 12])),
        Some(ty(&[1, 1, 3])),
        Some(ty(&[1, 1, 5])),
        None,
        Some(ty(&[1, 1, 3])),
        Some(ty(&[1, 1, 1])),
    ];
    check_expansion(OP, &a, &inputs, &[]);
    // Symbolic batch and sequence.
    let inputs = [
        Some(sym_ty(&["B", "T", "4"])),
        Some(sym_ty(&["B", "T", "4"])),
        Some(sym_ty(&["B", "T", "2"])),
        Some(sym_ty(&["B", "2", "2", "1"])),
        Some(sym_ty(&["B", "T", "2"])),
        Some(sym_ty(&["B", "T", "2"])),
    ];
    check_symbolic_expansion(OP, &heads(2, 2), &inputs, &[], &[("B", 2), ("T", 3)]);
}
