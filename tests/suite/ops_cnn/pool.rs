//! MaxPool, AveragePool, LpPool, GlobalMaxPool, GlobalAveragePool, GlobalLpPool.

use super::{
    assert_close, attr_error, attrs, eval, expansion_agrees, infer, ints, s, shape_error, t, ty,
    Attrs,
};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, LibraryNode, SymExpr};
use dmove::ops::{lookup, TensorType};
use std::collections::BTreeMap;

#[test]
fn maxpool_by_hand() {
    let x = t(
        &[1, 1, 4, 4],
        &(0..16).map(|v| v as f32).collect::<Vec<_>>(),
    );
    let a = [("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))];
    assert_close(
        &eval("MaxPool", &a, &[Some(&x)]),
        &[1, 1, 2, 2],
        &[5., 7., 13., 15.],
    );
    // Padding is ignored, not zero: all-negative input stays negative.
    let x = t(&[1, 1, 3], &[-1., -2., -3.]);
    let a = [("kernel_shape", ints(&[3])), ("pads", ints(&[1, 1]))];
    assert_close(
        &eval("MaxPool", &a, &[Some(&x)]),
        &[1, 1, 3],
        &[-1., -1., -2.],
    );
    // Dilation 3: taps (0, 3), (1, 4), (2, 5), (3, 6).
    let x = t(&[1, 1, 7], &[3., 1., 4., 1., 5., 9., 2.]);
    let a = [("kernel_shape", ints(&[2])), ("dilations", ints(&[3]))];
    assert_close(
        &eval("MaxPool", &a, &[Some(&x)]),
        &[1, 1, 4],
        &[3., 5., 9., 2.],
    );
}

/// The channels-last pools: the same windows over `N, H, W, C`, worked out by hand on two
/// channels that differ (channel 1 is channel 0 negated), and their shapes and expansions.
#[test]
fn channels_last_pools_by_hand() {
    // X[0, h, w, 0] = 4h + w, X[0, h, w, 1] = -(4h + w): a 4×4 image of two channels.
    let values: Vec<f32> = (0..16).flat_map(|v| [v as f32, -(v as f32)]).collect();
    let x = t(&[1, 4, 4, 2], &values);
    let a = [("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))];
    assert_close(
        &eval("NhwcMaxPool", &a, &[Some(&x)]),
        &[1, 2, 2, 2],
        &[5., 0., 7., -2., 13., -8., 15., -10.],
    );
    // A 3×3 average with padding 1, divisor counting only positions inside: the corner
    // window (0, 0) averages {0, 1, 4, 5}.
    let a = [
        ("kernel_shape", ints(&[3, 3])),
        ("pads", ints(&[1, 1, 1, 1])),
        ("strides", ints(&[3, 3])),
    ];
    assert_close(
        &eval("NhwcAveragePool", &a, &[Some(&x)]),
        &[1, 2, 2, 2],
        &[2.5, -2.5, 4.5, -4.5, 10.5, -10.5, 12.5, -12.5],
    );
    // No Indices output channels-last, and the layout is named in rank errors.
    assert_eq!(lookup("NhwcMaxPool").expect("known").output_count(), 1);
    shape_error(
        infer(
            "NhwcMaxPool",
            &[("kernel_shape", ints(&[2]))],
            &[Some(ty(&[2, 7]))],
        ),
        "N, spatial…, C",
    );
    let a = [
        ("kernel_shape", ints(&[3, 2])),
        ("strides", ints(&[2, 1])),
        ("pads", ints(&[1, 0, 1, 1])),
    ];
    let got = infer("NhwcAveragePool", &a, &[Some(ty(&[2, 7, 5, 3]))]).expect("infers");
    let dims: Vec<SymExpr> = [2, 4, 5, 3].into_iter().map(SymExpr::from).collect();
    assert_eq!(got.shape, dims);
    for op in ["NhwcMaxPool", "NhwcAveragePool"] {
        expansion_agrees(op, &a, &[Some(&[2, 7, 5, 3])], &[]);
    }
}

/// MaxPool's Indices: flat positions over the whole input, `(n·C + c)·H·W + spatial offset`
/// (ONNX's definition), row-major or with `storage_order = 1` column-major, of the first
/// maximum in window order. Worked out by hand.
#[test]
fn maxpool_indices_by_hand() {
    // Channel 0: [[1, 5, 2], [5, 0, 6]]; channel 1: [[0, -1, 3], [3, 3, -2]]. Window (0, 0) of
    // channel 0 holds 5 twice, at (0, 1) first and at (1, 0): the first wins although its
    // column-major offset (2) is the larger.
    let x = t(
        &[1, 2, 2, 3],
        &[1., 5., 2., 5., 0., 6., 0., -1., 3., 3., 3., -2.],
    );
    let pool = lookup("MaxPool").expect("op");
    for (order, want) in [(0, [1., 5., 9., 8.]), (1, [2., 5., 7., 10.])] {
        let a = [
            ("kernel_shape", ints(&[2, 2])),
            ("storage_order", Attr::Int(order)),
        ];
        let node = LibraryNode {
            op: "MaxPool".into(),
            attrs: attrs(&a),
        };
        let out = pool.eval(&node, &[Some(&x)]).expect("evaluates");
        assert_close(&out[0], &[1, 2, 1, 2], &[5., 6., 3., 3.]);
        assert_eq!(out[1].dtype(), DType::I64);
        assert_close(&out[1], &[1, 2, 1, 2], &want);
        // The expansion on this very input (ties included), and on random ones.
        expansion_agrees("MaxPool", &a, &[Some(&[1, 2, 2, 3])], &[Some(x.clone())]);
        let padded = [
            ("kernel_shape", ints(&[3, 2])),
            ("pads", ints(&[1, 1, 1, 0])),
            ("strides", ints(&[2, 1])),
            ("storage_order", Attr::Int(order)),
        ];
        expansion_agrees("MaxPool", &padded, &[Some(&[2, 3, 4, 3])], &[]);
    }
    let types = pool
        .infer(
            &LibraryNode {
                op: "MaxPool".into(),
                attrs: attrs(&[("kernel_shape", ints(&[2, 2]))]),
            },
            &[Some(ty(&[1, 2, 2, 3]))],
            &[None],
        )
        .expect("infers");
    assert_eq!(
        types[1],
        TensorType::new(DType::I64, ty(&[1, 2, 1, 2]).shape)
    );
    attr_error(
        infer(
            "MaxPool",
            &[
                ("kernel_shape", ints(&[2, 2])),
                ("storage_order", Attr::Int(2)),
            ],
            &[Some(ty(&[1, 2, 2, 3]))],
        ),
        "storage_order",
    );
}

#[test]
fn averagepool_by_hand() {
    let x = t(&[1, 1, 4], &[1., 2., 3., 4.]);
    let a = |include: i64| {
        [
            ("kernel_shape", ints(&[3])),
            ("pads", ints(&[1, 1])),
            ("count_include_pad", Attr::Int(include)),
        ]
    };
    assert_close(
        &eval("AveragePool", &a(0), &[Some(&x)]),
        &[1, 1, 4],
        &[1.5, 2., 3., 3.5],
    );
    assert_close(
        &eval("AveragePool", &a(1), &[Some(&x)]),
        &[1, 1, 4],
        &[1., 2., 3., 7. / 3.],
    );
    // ceil_mode keeps a last, partial window 4..6. Without padding counted it averages what
    // is inside; with it, ONNX pads the overhang with a zero that counts (its reference pads
    // the input to the windows' full extent): (5 + 0) / 2.
    let x = t(&[1, 1, 5], &[1., 2., 3., 4., 5.]);
    for (include, last) in [(0, 5.), (1, 2.5)] {
        let a = [
            ("kernel_shape", ints(&[2])),
            ("strides", ints(&[2])),
            ("ceil_mode", Attr::Int(1)),
            ("count_include_pad", Attr::Int(include)),
        ];
        assert_close(
            &eval("AveragePool", &a, &[Some(&x)]),
            &[1, 1, 3],
            &[1.5, 3.5, last],
        );
        expansion_agrees("AveragePool", &a, &[Some(&[1, 1, 5])], &[]);
    }
}

/// LpPool: `(Σ |x|^p)^(1/p)` over each window; padding adds nothing (it is not averaged in).
#[test]
fn lppool_by_hand() {
    let x = t(&[1, 1, 4], &[3., -4., 0., 1.]);
    let a = |p: i64| vec![("kernel_shape", ints(&[2])), ("p", Attr::Int(p))];
    assert_close(
        &eval("LpPool", &a(2), &[Some(&x)]),
        &[1, 1, 3],
        &[5., 4., 1.],
    );
    assert_close(
        &eval("LpPool", &a(1), &[Some(&x)]),
        &[1, 1, 3],
        &[7., 4., 1.],
    );
    let cube = 9f64.cbrt();
    assert_close(
        &eval("LpPool", &a(3), &[Some(&t(&[1, 1, 2], &[1., 2.]))]),
        &[1, 1, 1],
        &[cube],
    );
    // Default p = 2, a padded border and a stride.
    let padded = [
        ("kernel_shape", ints(&[3])),
        ("pads", ints(&[1, 1])),
        ("strides", ints(&[2])),
    ];
    assert_close(
        &eval("LpPool", &padded, &[Some(&x)]),
        &[1, 1, 2],
        &[5., (16f64 + 1.).sqrt()],
    );
    attr_error(
        infer(
            "LpPool",
            &[("kernel_shape", ints(&[2])), ("p", Attr::Int(0))],
            &[Some(ty(&[1, 1, 4]))],
        ),
        "p",
    );
    for p in [1, 2, 3] {
        let mut a = a(p);
        a.push(("pads", ints(&[1, 0])));
        expansion_agrees("LpPool", &a, &[Some(&[2, 3, 5])], &[]);
    }
    let a = [
        ("kernel_shape", ints(&[2, 3])),
        ("dilations", ints(&[2, 1])),
        ("auto_pad", s("SAME_UPPER")),
    ];
    expansion_agrees("LpPool", &a, &[Some(&[1, 2, 5, 4])], &[]);
}

#[test]
fn global_pools_by_hand() {
    let x = t(&[1, 2, 2, 2], &[1., 2., 3., 6., -1., -2., -3., -6.]);
    assert_close(
        &eval("GlobalAveragePool", &[], &[Some(&x)]),
        &[1, 2, 1, 1],
        &[3., -3.],
    );
    assert_close(
        &eval("GlobalMaxPool", &[], &[Some(&x)]),
        &[1, 2, 1, 1],
        &[6., -1.],
    );
    // ‖(1, 2, 3, 6)‖₂ = √50; ‖·‖₁ = 12; ‖·‖₃ = ∛252.
    for (p, want) in [(2, 50f64.sqrt()), (1, 12.), (3, 252f64.cbrt())] {
        assert_close(
            &eval("GlobalLpPool", &[("p", Attr::Int(p))], &[Some(&x)]),
            &[1, 2, 1, 1],
            &[want, want],
        );
    }
    // Default p = 2 over a 1-D spatial axis of odd length.
    let x = t(&[1, 1, 3], &[2., -3., 6.]);
    assert_close(&eval("GlobalLpPool", &[], &[Some(&x)]), &[1, 1, 1], &[7.]);
    attr_error(
        infer(
            "GlobalLpPool",
            &[("p", Attr::Int(0))],
            &[Some(ty(&[1, 2, 3]))],
        ),
        "p",
    );
    shape_error(
        infer("GlobalLpPool", &[], &[Some(ty(&[2, 3]))]),
        "rank at least 3",
    );
}

#[test]
fn pools_infer_shapes_and_reject_bad_attributes() {
    let x = || Some(ty(&[1, 2, 5, 6]));
    let out = infer(
        "MaxPool",
        &[
            ("kernel_shape", ints(&[2, 3])),
            ("strides", ints(&[2, 2])),
            ("ceil_mode", Attr::Int(1)),
        ],
        &[x()],
    );
    // H: ceil((5 − 2) / 2) + 1 = 3; W: ceil((6 − 3) / 2) + 1 = 3, the last window starting at
    // 4, inside the input.
    assert_eq!(out.expect("infers"), ty(&[1, 2, 3, 3]));
    assert_eq!(
        infer("GlobalAveragePool", &[], &[x()]).expect("infers"),
        ty(&[1, 2, 1, 1])
    );
    attr_error(infer("MaxPool", &[], &[x()]), "kernel_shape");
    attr_error(
        infer("AveragePool", &[("kernel_shape", ints(&[2]))], &[x()]),
        "kernel_shape",
    );
    attr_error(
        infer(
            "AveragePool",
            &[
                ("kernel_shape", ints(&[2, 2])),
                ("count_include_pad", Attr::Int(2)),
            ],
            &[x()],
        ),
        "count_include_pad",
    );
    attr_error(
        infer(
            "MaxPool",
            &[
                ("kernel_shape", ints(&[2, 2])),
                ("pads", ints(&[1, 1, -1, 1])),
            ],
            &[x()],
        ),
        "pads",
    );
    shape_error(
        infer("GlobalMaxPool", &[], &[Some(ty(&[2, 3]))]),
        "rank at least 3",
    );
    shape_error(
        infer("MaxPool", &[("kernel_shape", ints(&[6, 2]))], &[x()]),
        "window spans 6",
    );
}

#[test]
fn pool_expansions_match_reference() {
    let windowed: Vec<(&str, Attrs, &[usize])> = vec![
        (
            "MaxPool",
            vec![
                ("kernel_shape", ints(&[3, 2])),
                ("strides", ints(&[2, 1])),
                ("pads", ints(&[1, 0, 1, 1])),
            ],
            &[1, 2, 5, 4],
        ),
        (
            "MaxPool",
            vec![
                ("kernel_shape", ints(&[2, 2])),
                ("strides", ints(&[2, 2])),
                ("ceil_mode", Attr::Int(1)),
            ],
            &[2, 1, 5, 5],
        ),
        (
            "MaxPool",
            vec![
                ("kernel_shape", ints(&[2])),
                ("dilations", ints(&[2])),
                ("auto_pad", s("SAME_UPPER")),
            ],
            &[1, 3, 6],
        ),
        (
            "AveragePool",
            vec![
                ("kernel_shape", ints(&[3, 3])),
                ("pads", ints(&[1, 2, 1, 0])),
            ],
            &[1, 2, 4, 5],
        ),
        (
            "AveragePool",
            vec![
                ("kernel_shape", ints(&[3, 2])),
                ("pads", ints(&[1, 1, 1, 1])),
                ("strides", ints(&[2, 3])),
                ("count_include_pad", Attr::Int(1)),
                ("ceil_mode", Attr::Int(1)),
            ],
            &[1, 1, 6, 7],
        ),
        (
            "AveragePool",
            vec![
                ("kernel_shape", ints(&[2])),
                ("strides", ints(&[2])),
                ("ceil_mode", Attr::Int(1)),
            ],
            &[2, 2, 5],
        ),
        (
            "AveragePool",
            vec![
                ("kernel_shape", ints(&[2, 2, 2])),
                ("pads", ints(&[1, 0, 0, 0, 1, 1])),
            ],
            &[1, 1, 3, 4, 3],
        ),
        (
            "AveragePool",
            vec![("kernel_shape", ints(&[1, 1]))],
            &[1, 1, 1, 1],
        ),
    ];
    for (op, a, shape) in &windowed {
        expansion_agrees(op, a, &[Some(shape)], &[]);
    }
    let three = vec![("p", Attr::Int(3))];
    let globals: [(&str, Attrs); 4] = [
        ("GlobalMaxPool", vec![]),
        ("GlobalAveragePool", vec![]),
        ("GlobalLpPool", vec![]),
        ("GlobalLpPool", three),
    ];
    for (op, a) in &globals {
        for shape in [
            &[2, 3, 1, 5][..],
            &[1, 1, 1, 1],
            &[2, 2, 5],
            &[1, 2, 2, 3, 2],
        ] {
            expansion_agrees(op, a, &[Some(shape)], &[]);
        }
    }
}

#[test]
fn pool_expansion_with_symbolic_extents() {
    let x = TensorType::new(
        DType::F32,
        vec![SymExpr::sym("N"), 2.into(), SymExpr::sym("L")],
    );
    for (op, a) in [
        (
            "AveragePool",
            attrs(&[("kernel_shape", ints(&[3])), ("auto_pad", s("SAME_LOWER"))]),
        ),
        ("GlobalAveragePool", BTreeMap::new()),
        (
            "MaxPool",
            attrs(&[("kernel_shape", ints(&[2])), ("pads", ints(&[1, 1]))]),
        ),
    ] {
        let mut p = single_op_program(op, a, &[Some(x.clone())], &[]).expect("infers");
        p.symbols.insert("N".into(), Some(2));
        p.symbols.insert("L".into(), Some(5));
        if let Err(e) = expansion_matches(&p, 4) {
            panic!("{op}: {e}");
        }
    }
}

#[test]
fn pool_flops_count_window_elements() {
    let node = LibraryNode {
        op: "AveragePool".into(),
        attrs: attrs(&[("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))]),
    };
    let ins = [Some(ty(&[1, 3, 4, 4]))];
    let pool = lookup("AveragePool").expect("op");
    let out = pool.infer(&node, &ins, &[None]).expect("infers");
    // 12 outputs, each summing 4 elements and dividing once.
    assert_eq!(pool.flops(&node, &ins, &out), 12 * 5);
}
