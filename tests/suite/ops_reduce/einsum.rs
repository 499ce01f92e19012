//! Einsum.

use super::{assert_close, attr_error, eval, expansion_agrees, infer, random, shape_error, t, ty};
use dmove::ir::{Attr, Tensor};

fn eq(e: &str) -> [(&'static str, Attr); 1] {
    [("equation", Attr::Str(e.to_string()))]
}

#[test]
fn einsum_by_hand() {
    let a = t(&[2, 2], &[1., 2., 3., 4.]);
    let b = t(&[2, 2], &[5., 6., 7., 8.]);
    // Matrix product, explicit and implicit.
    let want = [19., 22., 43., 50.];
    assert_close(
        &eval("Einsum", &eq("ij,jk->ik"), &[Some(&a), Some(&b)]),
        &[2, 2],
        &want,
    );
    assert_close(
        &eval("Einsum", &eq("ij,jk"), &[Some(&a), Some(&b)]),
        &[2, 2],
        &want,
    );
    // Implicit output sorts the free letters: `ji` is a transpose.
    assert_close(
        &eval("Einsum", &eq("ji"), &[Some(&a)]),
        &[2, 2],
        &[1., 3., 2., 4.],
    );
    // Diagonal, trace, sum over everything.
    assert_close(&eval("Einsum", &eq("ii->i"), &[Some(&a)]), &[2], &[1., 4.]);
    assert_close(&eval("Einsum", &eq("ii"), &[Some(&a)]), &[], &[5.]);
    assert_close(&eval("Einsum", &eq("ij->"), &[Some(&a)]), &[], &[10.]);
    // Outer product and element-wise product.
    let u = t(&[2], &[1., 2.]);
    let v = t(&[3], &[1., 10., 100.]);
    let outer = eval("Einsum", &eq("i, j -> ij"), &[Some(&u), Some(&v)]);
    assert_close(&outer, &[2, 3], &[1., 10., 100., 2., 20., 200.]);
    assert_close(
        &eval("Einsum", &eq("ij,ij->ij"), &[Some(&a), Some(&b)]),
        &[2, 2],
        &[5., 12., 21., 32.],
    );
}

/// Batched matmul with broadcast ellipsis against an explicit loop.
#[test]
fn einsum_ellipsis_broadcasts_like_numpy() {
    let a = random(&[2, 1, 3, 4], 1, -1., 1.);
    let b = random(&[3, 4, 2], 2, -1., 1.);
    let got = eval("Einsum", &eq("...ij,...jk->...ik"), &[Some(&a), Some(&b)]);
    assert_eq!(got.shape, vec![2, 3, 3, 2]);
    let mut want = Vec::new();
    for p in 0..2 {
        for q in 0..3 {
            for i in 0..3 {
                for k in 0..2 {
                    let s: f64 = (0..4)
                        .map(|j| a.get_f64(p * 12 + i * 4 + j) * b.get_f64(q * 8 + j * 2 + k))
                        .sum();
                    want.push(s);
                }
            }
        }
    }
    assert_close(&got, &[2, 3, 3, 2], &want);
    // Implicit form keeps the ellipsis first.
    let implicit: Tensor = eval("Einsum", &eq("...ij,...jk"), &[Some(&a), Some(&b)]);
    assert_close(&implicit, &[2, 3, 3, 2], &want);
}

#[test]
fn einsum_rejects_bad_equations_and_shapes() {
    let m = |r, c| Some(ty(&[r, c]));
    assert_eq!(
        infer("Einsum", &eq("ij,jk->ik"), &[m(2, 3), m(3, 4)]).expect("infers"),
        ty(&[2, 4])
    );
    shape_error(
        infer("Einsum", &eq("ij,jk->ik"), &[m(2, 3), m(4, 4)]),
        "label `j`",
    );
    shape_error(infer("Einsum", &eq("ijk->i"), &[m(2, 3)]), "rank 2");
    attr_error(infer("Einsum", &eq("ij,jk"), &[m(2, 3)]), "equation");
    attr_error(infer("Einsum", &eq("ij->q"), &[m(2, 3)]), "equation");
    attr_error(infer("Einsum", &eq("i-j"), &[m(2, 3)]), "equation");
    attr_error(infer("Einsum", &[], &[m(2, 3)]), "equation");
    shape_error(
        infer(
            "Einsum",
            &eq("...i,...i"),
            &[Some(ty(&[2, 3])), Some(ty(&[4, 3]))],
        ),
        "broadcast",
    );
}

#[test]
fn einsum_expansion_matches_reference() {
    let cases: Vec<(&str, Vec<&[usize]>)> = vec![
        ("ij,jk->ik", vec![&[3, 5], &[5, 1]]),
        ("bhqd,bhkd->bhqk", vec![&[1, 2, 3, 4], &[1, 2, 5, 4]]),
        ("ii->i", vec![&[3, 3]]),
        ("iij->j", vec![&[2, 2, 3]]),
        ("ij->", vec![&[3, 1]]),
        ("...ij,...jk", vec![&[2, 1, 3, 2], &[3, 2, 1]]),
        ("i,j,k->kji", vec![&[2], &[1], &[3]]),
        ("b...d,d->b...", vec![&[2, 3, 1, 4], &[4]]),
    ];
    for (e, shapes) in cases {
        let inputs: Vec<Option<&[usize]>> = shapes.into_iter().map(Some).collect();
        expansion_agrees("Einsum", &eq(e), &inputs, &[]);
    }
}
