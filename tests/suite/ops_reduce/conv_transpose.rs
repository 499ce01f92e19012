//! ConvTranspose.

use super::{
    assert_close, attr_error, eval, expansion_agrees, infer, ints, random, shape_error, t, ty,
};
use dmove::ir::{Attr, Tensor};

fn s(v: &str) -> Attr {
    Attr::Str(v.to_string())
}

/// X = [1, 2, 3] through the kernel `w` (one channel in, one out).
fn one_d(w: &[f32], a: &[(&str, Attr)], bias: Option<f32>) -> Tensor {
    let x = t(&[1, 1, 3], &[1., 2., 3.]);
    let w = t(&[1, 1, w.len()], w);
    let b = bias.map(|v| t(&[1], &[v]));
    eval("ConvTranspose", a, &[Some(&x), Some(&w), b.as_ref()])
}

#[test]
fn conv_transpose_1d_by_hand() {
    // Each input element adds a copy of the kernel at i·stride + k·dilation − pad.
    assert_close(&one_d(&[1., 1.], &[], None), &[1, 1, 4], &[1., 3., 5., 3.]);
    let stride = [("strides", ints(&[2]))];
    assert_close(
        &one_d(&[1., 1.], &stride, None),
        &[1, 1, 6],
        &[1., 1., 2., 2., 3., 3.],
    );
    let padded = [("strides", ints(&[2])), ("pads", ints(&[1, 1]))];
    assert_close(
        &one_d(&[1., 1.], &padded, None),
        &[1, 1, 4],
        &[1., 2., 2., 3.],
    );
    let extra = [("strides", ints(&[2])), ("output_padding", ints(&[1]))];
    assert_close(
        &one_d(&[1., 1.], &extra, Some(0.5)),
        &[1, 1, 7],
        &[1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 0.5],
    );
    let dilated = [("dilations", ints(&[2]))];
    assert_close(
        &one_d(&[1., 1.], &dilated, None),
        &[1, 1, 5],
        &[1., 2., 4., 2., 3.],
    );
    let shaped = [("strides", ints(&[2])), ("output_shape", ints(&[5]))];
    assert_close(
        &one_d(&[1., 1.], &shaped, None),
        &[1, 1, 5],
        &[1., 1., 2., 2., 3.],
    );
    // Kernel 3, stride 2: the full result [1, 1, 3, 2, 5, 3, 3] has 7 positions, SAME keeps 6.
    let upper = [("strides", ints(&[2])), ("auto_pad", s("SAME_UPPER"))];
    let full = [1., 1., 3., 2., 5., 3., 3.];
    assert_close(&one_d(&[1., 1., 1.], &upper, None), &[1, 1, 6], &full[..6]);
    let lower = [("strides", ints(&[2])), ("auto_pad", s("SAME_LOWER"))];
    assert_close(&one_d(&[1., 1., 1.], &lower, None), &[1, 1, 6], &full[1..]);
}

fn dot(a: &Tensor, b: &Tensor) -> f64 {
    a.to_f64_vec()
        .iter()
        .zip(b.to_f64_vec())
        .map(|(x, y)| x * y)
        .sum()
}

/// ConvTranspose is the adjoint of Conv with the same weights and window:
/// ⟨Conv(x), y⟩ = ⟨x, ConvTranspose(y)⟩, an independent check of strides, pads, dilations and
/// groups (output_shape makes the transpose land on x's shape).
#[test]
fn conv_transpose_is_the_adjoint_of_conv() {
    let window = vec![
        ("strides", ints(&[2, 1])),
        ("pads", ints(&[1, 0, 2, 1])),
        ("dilations", ints(&[1, 2])),
        ("group", Attr::Int(2)),
    ];
    let x = random(&[2, 4, 7, 6], 1, -1., 1.);
    let w = random(&[6, 2, 3, 2], 2, -1., 1.);
    let cx = eval("Conv", &window, &[Some(&x), Some(&w)]);
    let y = random(&cx.shape, 3, -1., 1.);
    let mut transposed = window.clone();
    transposed.push(("output_shape", ints(&[7, 6])));
    let ty_ = eval("ConvTranspose", &transposed, &[Some(&y), Some(&w)]);
    assert_eq!(ty_.shape, x.shape);
    let (lhs, rhs) = (dot(&cx, &y), dot(&x, &ty_));
    assert!(
        (lhs - rhs).abs() < 1e-4 * lhs.abs().max(1.0),
        "{lhs} vs {rhs}"
    );
}

#[test]
fn conv_transpose_rejects_bad_shapes_and_attributes() {
    let x = || Some(ty(&[1, 4, 5]));
    let ok = infer(
        "ConvTranspose",
        &[("group", Attr::Int(2))],
        &[x(), Some(ty(&[4, 3, 2])), Some(ty(&[6]))],
    );
    assert_eq!(ok.expect("infers"), ty(&[1, 6, 6]));
    shape_error(
        infer("ConvTranspose", &[], &[x(), Some(ty(&[3, 3, 2]))]),
        "input channels",
    );
    shape_error(
        infer(
            "ConvTranspose",
            &[],
            &[x(), Some(ty(&[4, 3, 2])), Some(ty(&[4]))],
        ),
        "bias B",
    );
    shape_error(
        infer(
            "ConvTranspose",
            &[],
            &[Some(ty(&[4, 5])), Some(ty(&[4, 3]))],
        ),
        "rank at least 3",
    );
    let w = || Some(ty(&[4, 3, 2]));
    attr_error(
        infer(
            "ConvTranspose",
            &[("output_padding", ints(&[1]))],
            &[x(), w()],
        ),
        "output_padding",
    );
    attr_error(
        infer(
            "ConvTranspose",
            &[("output_shape", ints(&[1, 2]))],
            &[x(), w()],
        ),
        "output_shape",
    );
    shape_error(
        infer("ConvTranspose", &[("group", Attr::Int(3))], &[x(), w()]),
        "not divisible by group 3",
    );
    attr_error(
        infer("ConvTranspose", &[("group", Attr::Int(0))], &[x(), w()]),
        "group",
    );
    attr_error(
        infer(
            "ConvTranspose",
            &[("auto_pad", s("SAME_UPPER")), ("pads", ints(&[1, 0]))],
            &[x(), w()],
        ),
        "pads",
    );
}

#[test]
fn conv_transpose_expansion_matches_reference() {
    type Case<'a> = (
        Vec<(&'a str, Attr)>,
        &'a [usize],
        &'a [usize],
        Option<&'a [usize]>,
    );
    let cases: Vec<Case> = vec![
        (
            vec![("strides", ints(&[2])), ("pads", ints(&[1, 2]))],
            &[2, 3, 5],
            &[3, 2, 3],
            Some(&[2]),
        ),
        (vec![], &[1, 1, 1], &[1, 1, 1], None),
        (
            vec![
                ("strides", ints(&[2, 3])),
                ("dilations", ints(&[2, 1])),
                ("group", Attr::Int(2)),
            ],
            &[1, 4, 3, 2],
            &[4, 1, 2, 3],
            Some(&[2]),
        ),
        (
            vec![
                ("strides", ints(&[2, 2])),
                ("output_padding", ints(&[1, 0])),
                ("pads", ints(&[0, 1, 1, 0])),
            ],
            &[1, 2, 3, 3],
            &[2, 3, 3, 2],
            None,
        ),
        (
            vec![("strides", ints(&[3])), ("auto_pad", s("SAME_LOWER"))],
            &[1, 2, 4],
            &[2, 1, 2],
            Some(&[1]),
        ),
        (
            vec![("strides", ints(&[2])), ("output_shape", ints(&[4]))],
            &[1, 1, 4],
            &[1, 2, 3],
            None,
        ),
        (
            vec![("output_shape", ints(&[9]))],
            &[1, 2, 3],
            &[2, 1, 2],
            None,
        ),
        (
            vec![("strides", ints(&[1, 2, 1]))],
            &[1, 1, 2, 2, 1],
            &[1, 2, 2, 1, 2],
            None,
        ),
    ];
    for (a, x, w, b) in &cases {
        expansion_agrees("ConvTranspose", a, &[Some(x), Some(w), *b], &[]);
    }
}
