//! RotaryEmbedding: both pairings, partial rotation, position ids (negative ones too), the
//! packed 3-D layout, shape errors, and expansions on awkward shapes.

use super::{assert_close, check_expansion, eval, infer_err, t, ty};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::TensorType;

const OP: &str = "RotaryEmbedding";

fn ids_ty(shape: &[i64]) -> Option<TensorType> {
    let dims = shape.iter().map(|&d| SymExpr::Int(d)).collect();
    Some(TensorType::new(DType::I64, dims))
}

#[test]
fn rotates_halves_or_interleaved_pairs() {
    let x = t(&[1, 1, 1, 4], &[1.0, 2.0, 3.0, 4.0]);
    let (c, s) = ([0.5, -0.25], [0.75, 2.0]);
    let cos = t(&[1, 1, 2], &[c[0] as f32, c[1] as f32]);
    let sin = t(&[1, 1, 2], &[s[0] as f32, s[1] as f32]);
    let y = eval(OP, &[], &[Some(&x), Some(&cos), Some(&sin)]);
    let halves = [
        c[0] * 1.0 - s[0] * 3.0,
        c[1] * 2.0 - s[1] * 4.0,
        s[0] * 1.0 + c[0] * 3.0,
        s[1] * 2.0 + c[1] * 4.0,
    ];
    assert_close(&y[0], &[1, 1, 1, 4], &halves);
    let a = [("interleaved", Attr::Int(1))];
    let y = eval(OP, &a, &[Some(&x), Some(&cos), Some(&sin)]);
    let pairs = [
        c[0] * 1.0 - s[0] * 2.0,
        s[0] * 1.0 + c[0] * 2.0,
        c[1] * 3.0 - s[1] * 4.0,
        s[1] * 3.0 + c[1] * 4.0,
    ];
    assert_close(&y[0], &[1, 1, 1, 4], &pairs);
}

#[test]
fn reads_caches_at_position_ids_in_the_packed_layout() {
    // [batch 1, seq 2, 2 heads × head 4], rotating 2 of each head's 4 elements.
    let x = t(&[1, 2, 8], &(1..=16).map(|v| v as f32).collect::<Vec<_>>());
    let cos = t(&[3, 1], &[1.0, 0.0, 0.5]);
    let sin = t(&[3, 1], &[0.0, 1.0, 0.25]);
    let ids = Tensor::i64(vec![1, 2], vec![-2, 2]);
    let a = [
        ("num_heads", Attr::Int(2)),
        ("rotary_embedding_dim", Attr::Int(2)),
    ];
    let y = eval(OP, &a, &[Some(&x), Some(&cos), Some(&sin), Some(&ids)]);
    // Token 0 uses row 1 (cos 0, sin 1): (a, b) -> (-b, a); token 1 row 2.
    let r = |a: f64, b: f64| [0.5 * a - 0.25 * b, 0.25 * a + 0.5 * b];
    let (t0, t1) = (r(9.0, 10.0), r(13.0, 14.0));
    let want = [
        -2.0, 1.0, 3.0, 4.0, -6.0, 5.0, 7.0, 8.0, t0[0], t0[1], 11.0, 12.0, t1[0], t1[1], 15.0,
        16.0,
    ];
    assert_close(&y[0], &[1, 2, 8], &want);
    let bad = Tensor::i64(vec![1, 2], vec![0, 3]);
    let e = dmove::ops::lookup(OP).expect("exists").eval(
        &dmove::ir::LibraryNode {
            op: OP.into(),
            attrs: a.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        },
        &[Some(&x), Some(&cos), Some(&sin), Some(&bad)],
    );
    assert!(e.unwrap_err().to_string().contains("index 3"));
}

#[test]
fn checks_layouts_and_caches() {
    let msg = infer_err(
        OP,
        &[],
        &[
            Some(ty(&[1, 2, 8])),
            Some(ty(&[1, 2, 4])),
            Some(ty(&[1, 2, 4])),
        ],
    );
    assert!(msg.contains("num_heads"), "{msg}");
    let msg = infer_err(
        OP,
        &[],
        &[
            Some(ty(&[1, 2, 3, 8])),
            Some(ty(&[1, 3, 3])),
            Some(ty(&[1, 3, 3])),
        ],
    );
    assert!(msg.contains("expected"), "{msg}");
    let odd = [("rotary_embedding_dim", Attr::Int(3))];
    let msg = infer_err(
        OP,
        &odd,
        &[
            Some(ty(&[1, 2, 3, 8])),
            Some(ty(&[1, 3, 1])),
            Some(ty(&[1, 3, 1])),
        ],
    );
    assert!(msg.contains("even"), "{msg}");
    let msg = infer_err(
        OP,
        &[],
        &[
            Some(ty(&[1, 2, 3, 4])),
            Some(ty(&[5, 2])),
            Some(ty(&[5, 2])),
            Some(ty(&[1, 3])),
        ],
    );
    assert!(msg.contains("position_ids must be int64"), "{msg}");
}

#[test]
fn expansion_matches_on_awkward_shapes() {
    for interleaved in [0, 1] {
        let il = ("interleaved", Attr::Int(interleaved));
        check_expansion(
            OP,
            std::slice::from_ref(&il),
            &[
                Some(ty(&[2, 3, 5, 6])),
                Some(ty(&[2, 5, 3])),
                Some(ty(&[2, 5, 3])),
            ],
            &[],
        );
        // Position ids are random in [0, 4): the caches hold 5 positions.
        let partial = [il.clone(), ("rotary_embedding_dim", Attr::Int(4))];
        let inputs = [
            Some(ty(&[1, 2, 3, 10])),
            Some(ty(&[5, 2])),
            Some(ty(&[5, 2])),
            ids_ty(&[1, 3]),
        ];
        check_expansion(OP, &partial, &inputs, &[]);
        let packed = [il, ("num_heads", Attr::Int(3))];
        let inputs = [
            Some(ty(&[2, 1, 12])),
            Some(ty(&[5, 2])),
            Some(ty(&[5, 2])),
            ids_ty(&[2, 1]),
        ];
        check_expansion(OP, &packed, &inputs, &[]);
    }
}
