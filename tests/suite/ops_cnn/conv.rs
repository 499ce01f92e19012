//! Conv.

use super::{
    assert_close, attr_error, attrs, eval, expansion_agrees, infer, ints, random, s, shape_error,
    t, ty, Attrs,
};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, LibraryNode, SymExpr};
use dmove::ops::{lookup, TensorType};

#[test]
fn conv_valid_with_bias_by_hand() {
    let x = t(&[1, 1, 3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.]);
    let w = t(&[1, 1, 2, 2], &[1.; 4]);
    let b = t(&[1], &[1.]);
    let y = eval("Conv", &[], &[Some(&x), Some(&w), Some(&b)]);
    assert_close(&y, &[1, 1, 2, 2], &[13., 17., 25., 29.]);
}

#[test]
fn conv_zero_padding_by_hand() {
    let x = t(&[1, 1, 3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.]);
    let w = t(&[1, 1, 3, 3], &[1.; 9]);
    let y = eval(
        "Conv",
        &[("pads", ints(&[1, 1, 1, 1]))],
        &[Some(&x), Some(&w)],
    );
    assert_close(
        &y,
        &[1, 1, 3, 3],
        &[12., 21., 16., 27., 45., 33., 24., 39., 28.],
    );
}

#[test]
fn conv_depthwise_strided_dilated_and_same_by_hand() {
    // group == C: each channel has its own filter.
    let x = t(&[1, 2, 1, 3], &[1., 2., 3., 10., 20., 30.]);
    let w = t(&[2, 1, 1, 2], &[1., -1., 2., 0.5]);
    let y = eval("Conv", &[("group", Attr::Int(2))], &[Some(&x), Some(&w)]);
    assert_close(&y, &[1, 2, 1, 2], &[-1., -1., 30., 55.]);

    // 1-D, stride 2, dilation 2: taps (0, 2), (2, 4), (4, 6).
    let x = t(&[1, 1, 7], &[0., 1., 2., 3., 4., 5., 6.]);
    let w = t(&[1, 1, 2], &[1., 1.]);
    let a = [("strides", ints(&[2])), ("dilations", ints(&[2]))];
    assert_close(
        &eval("Conv", &a, &[Some(&x), Some(&w)]),
        &[1, 1, 3],
        &[2., 6., 10.],
    );

    // SAME_UPPER pads the end, SAME_LOWER the beginning.
    let x = t(&[1, 1, 4], &[1., 2., 3., 4.]);
    let upper = eval(
        "Conv",
        &[("auto_pad", s("SAME_UPPER"))],
        &[Some(&x), Some(&w)],
    );
    assert_close(&upper, &[1, 1, 4], &[3., 5., 7., 4.]);
    let lower = eval(
        "Conv",
        &[("auto_pad", s("SAME_LOWER"))],
        &[Some(&x), Some(&w)],
    );
    assert_close(&lower, &[1, 1, 4], &[1., 3., 5., 7.]);
}

#[test]
fn conv_1x1_is_a_channel_matmul() {
    let x = random(&[2, 3, 2, 2], 5, -1., 1.);
    let w = random(&[4, 3, 1, 1], 6, -1., 1.);
    let y = eval("Conv", &[], &[Some(&x), Some(&w)]);
    let mut want = Vec::new();
    for n in 0..2 {
        for m in 0..4 {
            for p in 0..4 {
                want.push(
                    (0..3)
                        .map(|c| w.get_f64(m * 3 + c) * x.get_f64(n * 12 + c * 4 + p))
                        .sum::<f64>(),
                );
            }
        }
    }
    assert_close(&y, &[2, 4, 2, 2], &want);
}

#[test]
fn conv_infers_shapes_and_rejects_mismatches() {
    let out = infer(
        "Conv",
        &[("strides", ints(&[2, 1])), ("pads", ints(&[1, 0, 1, 0]))],
        &[Some(ty(&[2, 3, 7, 5])), Some(ty(&[8, 3, 3, 2]))],
    )
    .expect("infers");
    assert_eq!(out, ty(&[2, 8, 4, 4]));
    // Symbolic batch and spatial extents with "same" padding keep their symbols.
    let sym = TensorType::new(
        DType::F32,
        vec![
            SymExpr::sym("N"),
            3.into(),
            SymExpr::sym("H"),
            SymExpr::sym("W"),
        ],
    );
    let out = infer(
        "Conv",
        &[("pads", ints(&[1, 1, 1, 1]))],
        &[Some(sym), Some(ty(&[4, 3, 3, 3]))],
    )
    .expect("infers");
    assert_eq!(
        out.shape,
        vec![
            SymExpr::sym("N"),
            4.into(),
            SymExpr::sym("H"),
            SymExpr::sym("W")
        ]
    );

    let x = || Some(ty(&[1, 4, 5, 5]));
    shape_error(
        infer("Conv", &[], &[x(), Some(ty(&[2, 3, 3, 3]))]),
        "4 channels",
    );
    shape_error(
        infer(
            "Conv",
            &[("group", Attr::Int(2))],
            &[x(), Some(ty(&[3, 2, 3, 3]))],
        ),
        "not divisible by group 2",
    );
    shape_error(
        infer("Conv", &[], &[Some(ty(&[4, 5])), Some(ty(&[2, 4]))]),
        "rank at least 3",
    );
    shape_error(
        infer("Conv", &[], &[x(), Some(ty(&[2, 4, 3]))]),
        "rank 3 but X has rank 4",
    );
    shape_error(
        infer("Conv", &[], &[x(), Some(ty(&[2, 4, 3, 3])), Some(ty(&[3]))]),
        "bias B",
    );
    shape_error(
        infer("Conv", &[], &[x(), Some(ty(&[2, 4, 6, 1]))]),
        "window spans 6",
    );
    attr_error(
        infer(
            "Conv",
            &[("kernel_shape", ints(&[3, 2]))],
            &[x(), Some(ty(&[2, 4, 3, 3]))],
        ),
        "kernel_shape",
    );
    attr_error(
        infer(
            "Conv",
            &[("strides", ints(&[1]))],
            &[x(), Some(ty(&[2, 4, 3, 3]))],
        ),
        "strides",
    );
    attr_error(
        infer(
            "Conv",
            &[("auto_pad", s("SAME"))],
            &[x(), Some(ty(&[2, 4, 3, 3]))],
        ),
        "auto_pad",
    );
    attr_error(
        infer(
            "Conv",
            &[("group", Attr::Int(0))],
            &[x(), Some(ty(&[2, 4, 3, 3]))],
        ),
        "group",
    );
}

#[test]
fn conv_expansion_matches_reference() {
    let cases: Vec<(Attrs, Vec<&[usize]>)> = vec![
        (
            vec![("pads", ints(&[1, 0, 2, 1])), ("strides", ints(&[2, 1]))],
            vec![&[1, 3, 5, 4], &[2, 3, 3, 2], &[2]],
        ),
        (
            vec![("group", Attr::Int(4)), ("pads", ints(&[1, 1, 1, 1]))],
            vec![&[2, 4, 5, 5], &[4, 1, 3, 3]],
        ),
        (
            vec![
                ("group", Attr::Int(2)),
                ("dilations", ints(&[2, 1])),
                ("auto_pad", s("SAME_LOWER")),
            ],
            vec![&[1, 4, 4, 3], &[6, 2, 2, 2], &[6]],
        ),
        (
            vec![("strides", ints(&[2])), ("auto_pad", s("SAME_UPPER"))],
            vec![&[2, 3, 7], &[4, 3, 3], &[4]],
        ),
        (vec![], vec![&[1, 1, 1, 1], &[1, 1, 1, 1]]),
        (
            vec![("pads", ints(&[1, 0, 1, 0, 1, 1]))],
            vec![&[1, 2, 3, 3, 2], &[2, 2, 2, 2, 2]],
        ),
        (
            vec![("auto_pad", s("VALID")), ("strides", ints(&[3, 2]))],
            vec![&[1, 2, 7, 6], &[3, 2, 2, 3], &[3]],
        ),
    ];
    for (a, shapes) in &cases {
        let inputs: Vec<Option<&[usize]>> = shapes.iter().map(|s| Some(*s)).collect();
        expansion_agrees("Conv", a, &inputs, &[]);
    }
    // Constant weights (as imported models have) and an odd kernel.
    let w = random(&[3, 2, 3, 1], 9, -1., 1.);
    expansion_agrees(
        "Conv",
        &[("pads", ints(&[2, 0, 0, 0]))],
        &[Some(&[1, 2, 4, 3]), Some(&[3, 2, 3, 1])],
        &[None, Some(w)],
    );
}

#[test]
fn nhwc_conv_is_conv_with_channels_last() {
    // Same geometry as a Conv case, channels moved last in X and Y; W and B unchanged.
    let a = [
        ("strides", ints(&[2, 1])),
        ("pads", ints(&[1, 0, 1, 1])),
        ("group", Attr::Int(2)),
    ];
    let got = infer(
        "NhwcConv",
        &a,
        &[
            Some(ty(&[2, 7, 6, 4])),
            Some(ty(&[6, 2, 3, 2])),
            Some(ty(&[6])),
        ],
    );
    let want = infer(
        "Conv",
        &a,
        &[
            Some(ty(&[2, 4, 7, 6])),
            Some(ty(&[6, 2, 3, 2])),
            Some(ty(&[6])),
        ],
    );
    let last = |s: &[SymExpr]| vec![s[0].clone(), s[2].clone(), s[3].clone(), s[1].clone()];
    assert_eq!(
        got.expect("infers").shape,
        last(&want.expect("infers").shape)
    );
    expansion_agrees(
        "NhwcConv",
        &a,
        &[Some(&[2, 7, 6, 4]), Some(&[6, 2, 3, 2]), Some(&[6])],
        &[],
    );
    shape_error(
        infer("NhwcConv", &[], &[Some(ty(&[2, 7])), Some(ty(&[6, 2]))]),
        "rank at least 3",
    );
}

#[test]
fn conv_expansion_with_symbolic_extents() {
    let x = TensorType::new(
        DType::F32,
        vec![1.into(), 2.into(), SymExpr::sym("H"), SymExpr::sym("H")],
    );
    let mut p = single_op_program(
        "Conv",
        attrs(&[("pads", ints(&[1, 1, 1, 1]))]),
        &[Some(x), Some(ty(&[3, 2, 3, 3]))],
        &[],
    )
    .expect("infers");
    p.symbols.insert("H".into(), Some(4));
    expansion_matches(&p, 3).expect("matches");
}

#[test]
fn conv_flops_count_multiply_adds() {
    let node = LibraryNode {
        op: "Conv".into(),
        attrs: attrs(&[("group", Attr::Int(2))]),
    };
    let ins = [Some(ty(&[2, 4, 5, 5])), Some(ty(&[6, 2, 3, 3]))];
    let conv = lookup("Conv").expect("Conv");
    let out = conv.infer(&node, &ins, &[None, None]).expect("infers");
    // 2 · N · M · OH · OW · C/group · KH · KW
    assert_eq!(conv.flops(&node, &ins, &out), 2 * 2 * 6 * 3 * 3 * 2 * 3 * 3);
}
