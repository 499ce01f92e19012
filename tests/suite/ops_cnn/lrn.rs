//! LRN: hand-computed windows over odd channel counts, even and odd sizes, attribute errors,
//! expansions against the reference.

use super::{assert_close, attr_error, eval, expansion_agrees, infer, shape_error, t, ty, Attrs};
use dmove::ir::Attr;

/// Channels (c0, c1, c2) = ([1, 2], [3, 0], [-1, 1]) at two positions.
fn three_channels() -> dmove::ir::Tensor {
    t(&[1, 3, 1, 2], &[1., 2., 3., 0., -1., 1.])
}

#[test]
fn lrn_by_hand() {
    let x = three_channels();
    // size 2: channels c ..= c + 1 (the larger half after c); alpha / size = 1.5.
    let a = [
        ("size", Attr::Int(2)),
        ("alpha", Attr::Float(3.0)),
        ("beta", Attr::Float(1.0)),
    ];
    assert_close(
        &eval("LRN", &a, &[Some(&x)]),
        &[1, 3, 1, 2],
        &[1. / 16., 2. / 7., 3. / 16., 0., -0.4, 0.4],
    );
    // size 3: c − 1 ..= c + 1; alpha / size = 1, bias 2, beta 0.5.
    let a = [
        ("size", Attr::Int(3)),
        ("alpha", Attr::Float(3.0)),
        ("beta", Attr::Float(0.5)),
        ("bias", Attr::Float(2.0)),
    ];
    let r = |v: f64| v.sqrt().recip();
    assert_close(
        &eval("LRN", &a, &[Some(&x)]),
        &[1, 3, 1, 2],
        &[r(12.), 2. * r(6.), 3. * r(13.), 0., -r(12.), r(3.)],
    );
}

#[test]
fn lrn_rejects_bad_inputs() {
    let size = [("size", Attr::Int(3))];
    shape_error(infer("LRN", &size, &[Some(ty(&[4]))]), "rank at least 2");
    attr_error(infer("LRN", &[], &[Some(ty(&[1, 3, 2]))]), "size");
    let zero = [("size", Attr::Int(0))];
    attr_error(infer("LRN", &zero, &[Some(ty(&[1, 3, 2]))]), "size");
    assert_eq!(
        infer("LRN", &size, &[Some(ty(&[2, 5, 3]))]).expect("infers"),
        ty(&[2, 5, 3])
    );
}

#[test]
fn lrn_expansion_matches_reference() {
    let cases: [(Attrs, &[usize]); 4] = [
        (vec![("size", Attr::Int(3))], &[2, 5, 3, 2]),
        (
            vec![
                ("size", Attr::Int(4)),
                ("alpha", Attr::Float(0.5)),
                ("beta", Attr::Float(1.5)),
                ("bias", Attr::Float(2.0)),
            ],
            &[1, 4, 3],
        ),
        // A window wider than the channels.
        (vec![("size", Attr::Int(5))], &[2, 3]),
        (vec![("size", Attr::Int(1))], &[1, 1, 2, 3]),
    ];
    for (a, shape) in cases {
        expansion_agrees("LRN", &a, &[Some(shape)], &[None]);
    }
}
