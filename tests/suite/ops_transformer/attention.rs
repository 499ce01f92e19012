//! Attention: hand-checked values (softmax weights, causal frontier, cache, fully masked rows),
//! shape errors, and expansions on awkward configurations (GQA, 3-D layouts, caches, masks,
//! softcap, every `qk_matmul_output_mode`).

use super::{assert_close, check_expansion, eval, infer_err, t, ty, Attrs};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::TensorType;

const OP: &str = "Attention";

fn bool_ty(shape: &[i64]) -> Option<TensorType> {
    let dims = shape.iter().map(|&d| SymExpr::Int(d)).collect();
    Some(TensorType::new(DType::Bool, dims))
}

#[test]
fn weights_values_by_the_softmax_of_scaled_scores() {
    // One head of size 1, two keys: scores q·k = [1, 2] (scale 1/√1).
    let q = t(&[1, 1, 1, 1], &[1.0]);
    let k = t(&[1, 1, 2, 1], &[1.0, 2.0]);
    let v = t(&[1, 1, 2, 1], &[10.0, 20.0]);
    let out = eval(OP, &[], &[Some(&q), Some(&k), Some(&v)]);
    let e = std::f64::consts::E;
    let (p0, p1) = (1.0 / (1.0 + e), e / (1.0 + e));
    assert_close(&out[0], &[1, 1, 1, 1], &[10.0 * p0 + 20.0 * p1]);
    assert_close(&out[3], &[1, 1, 1, 2], &[1.0, 2.0]);
    // Softcap 1 and mode 3 (the probabilities of the capped scores).
    let a = [
        ("softcap", Attr::Float(1.0)),
        ("qk_matmul_output_mode", Attr::Int(3)),
    ];
    let out = eval(OP, &a, &[Some(&q), Some(&k), Some(&v)]);
    let (c0, c1) = (1f64.tanh(), 2f64.tanh());
    let w0 = 1.0 / (1.0 + (c1 - c0).exp());
    assert_close(&out[3], &[1, 1, 1, 2], &[w0, 1.0 - w0]);
}

#[test]
fn causal_frontier_counts_the_cache_and_masked_rows_are_zero() {
    // Two queries, one cached key and one new key per query position: query s sees keys ≤ s + 1.
    let q = t(&[1, 1, 2, 1], &[0.0, 0.0]);
    let k = t(&[1, 1, 2, 1], &[0.0, 0.0]);
    let v = t(&[1, 1, 2, 1], &[2.0, 4.0]);
    let past_k = t(&[1, 1, 1, 1], &[0.0]);
    let past_v = t(&[1, 1, 1, 1], &[6.0]);
    let a = [("is_causal", Attr::Int(1))];
    let inputs = [
        Some(&q),
        Some(&k),
        Some(&v),
        None,
        Some(&past_k),
        Some(&past_v),
    ];
    let out = eval(OP, &a, &inputs);
    // Query 0 averages the cached 6 and the first new 2; query 1 all three.
    assert_close(&out[0], &[1, 1, 2, 1], &[4.0, 4.0]);
    assert_close(&out[1], &[1, 1, 3, 1], &[0.0, 0.0, 0.0]);
    assert_close(&out[2], &[1, 1, 3, 1], &[6.0, 2.0, 4.0]);
    // A boolean mask that hides every key of query 1 gives it a zero row.
    let mask = Tensor::from_f64(DType::Bool, vec![2, 3], &[1.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
    let inputs = [
        Some(&q),
        Some(&k),
        Some(&v),
        Some(&mask),
        Some(&past_k),
        Some(&past_v),
    ];
    let out = eval(OP, &[], &inputs);
    assert_close(&out[0], &[1, 1, 2, 1], &[5.0, 0.0]);
}

#[test]
fn padding_short_masks_and_windows_hide_keys() {
    // Four keys with values 1, 2, 4, 8 and equal scores: the output averages the visible ones.
    let q = t(&[1, 1, 2, 1], &[0.0, 0.0]);
    let k = t(&[1, 1, 4, 1], &[0.0; 4]);
    let v = t(&[1, 1, 4, 1], &[1.0, 2.0, 4.0, 8.0]);
    let run = |a: &[(&str, Attr)], mask: Option<&Tensor>, nonpad: Option<&Tensor>| {
        eval(
            OP,
            a,
            &[Some(&q), Some(&k), Some(&v), mask, None, None, nonpad],
        )
        .remove(0)
    };
    // nonpad 3 with is_causal: offset 3 - 2 = 1, so query 0 sees keys 0..=1, query 1 keys 0..=2.
    let three = Tensor::i64(vec![1], vec![3]);
    let causal = [("is_causal", Attr::Int(1))];
    assert_close(
        &run(&causal, None, Some(&three)),
        &[1, 1, 2, 1],
        &[1.5, 7.0 / 3.0],
    );
    // A mask over two keys hides the other two.
    let short = t(&[2], &[0.0, 0.0]);
    assert_close(&run(&[], Some(&short), None), &[1, 1, 2, 1], &[1.5, 1.5]);
    // A window of one key to the left and none to the right: query s sees s - 1 ..= s.
    let window = [
        ("left_window_size", Attr::Int(1)),
        ("right_window_size", Attr::Int(0)),
    ];
    assert_close(&run(&window, None, None), &[1, 1, 2, 1], &[1.0, 1.5]);
    // A negative offset (nonpad 1 < 2 queries) with is_causal leaves query 0 no key: zeros.
    let one = Tensor::i64(vec![1], vec![1]);
    assert_close(&run(&causal, None, Some(&one)), &[1, 1, 2, 1], &[0.0, 1.0]);
}

#[test]
fn checks_heads_caches_and_masks() {
    let msg = infer_err(
        OP,
        &[],
        &[
            Some(ty(&[1, 4, 6])),
            Some(ty(&[1, 4, 6])),
            Some(ty(&[1, 4, 6])),
        ],
    );
    assert!(msg.contains("q_num_heads"), "{msg}");
    let msg = infer_err(
        OP,
        &[],
        &[
            Some(ty(&[1, 4, 2, 8])),
            Some(ty(&[1, 3, 2, 8])),
            Some(ty(&[1, 3, 2, 8])),
        ],
    );
    assert!(msg.contains("not a multiple"), "{msg}");
    let msg = infer_err(
        OP,
        &[],
        &[
            Some(ty(&[1, 2, 2, 8])),
            Some(ty(&[1, 2, 2, 4])),
            Some(ty(&[1, 2, 2, 8])),
        ],
    );
    assert!(msg.contains("head sizes"), "{msg}");
    let base = [
        Some(ty(&[1, 2, 3, 4])),
        Some(ty(&[1, 2, 5, 4])),
        Some(ty(&[1, 2, 5, 4])),
    ];
    let mut with_mask = base.to_vec();
    with_mask.push(Some(ty(&[2, 5])));
    let msg = infer_err(OP, &[], &with_mask);
    assert!(msg.contains("attn_mask"), "{msg}");
    let mut half_cache = base.to_vec();
    half_cache.extend([None, Some(ty(&[1, 2, 1, 4]))]);
    let msg = infer_err(OP, &[], &half_cache);
    assert!(msg.contains("together"), "{msg}");
    let msg = infer_err(OP, &[("qk_matmul_output_mode", Attr::Int(4))], &base);
    assert!(msg.contains("qk_matmul_output_mode"), "{msg}");
}

#[test]
fn expansion_matches_on_awkward_configurations() {
    let heads = |q: i64, kv: i64| -> Attrs<'static> {
        vec![
            ("q_num_heads", Attr::Int(q)),
            ("kv_num_heads", Attr::Int(kv)),
        ]
    };
    // Multi-head, 4-D, different query and key lengths and value head size.
    check_expansion(
        OP,
        &[],
        &[
            Some(ty(&[2, 2, 3, 4])),
            Some(ty(&[2, 2, 5, 4])),
            Some(ty(&[2, 2, 5, 3])),
        ],
        &[],
    );
    // GQA in the packed 3-D layout, causal, scaled.
    let mut a = heads(4, 2);
    a.extend([("is_causal", Attr::Int(1)), ("scale", Attr::Float(0.3))]);
    check_expansion(
        OP,
        &a,
        &[
            Some(ty(&[1, 3, 12])),
            Some(ty(&[1, 3, 6])),
            Some(ty(&[1, 3, 4])),
        ],
        &[],
    );
    // A cache with present outputs, a float mask broadcast over heads, softcap, each qk mode.
    for mode in 0..4 {
        let a = [
            ("softcap", Attr::Float(1.5)),
            ("qk_matmul_output_mode", Attr::Int(mode)),
            ("is_causal", Attr::Int(mode % 2)),
        ];
        let inputs = [
            Some(ty(&[1, 3, 2, 4])),
            Some(ty(&[1, 1, 2, 4])),
            Some(ty(&[1, 1, 2, 5])),
            Some(ty(&[2, 5])),
            Some(ty(&[1, 1, 3, 4])),
            Some(ty(&[1, 1, 3, 5])),
        ];
        check_expansion(OP, &a, &inputs, &[]);
    }
    // A boolean mask (random values include false, so some rows are fully masked).
    let inputs = [
        Some(ty(&[2, 1, 3, 2])),
        Some(ty(&[2, 1, 2, 2])),
        Some(ty(&[2, 1, 2, 2])),
        bool_ty(&[2, 1, 3, 2]),
    ];
    check_expansion(OP, &[], &inputs, &[]);
}
