//! Resize.

use super::{
    agrees_const, assert_close, assert_err, eval, floats, infer, infer_const, ints, s, t, ty,
    type_of,
};
use dmove::ir::{Attr, Tensor};

/// `[1, 1, h, w]` with the given row-major values.
fn image(h: usize, w: usize, v: &[f32]) -> Tensor {
    t(&[1, 1, h, w], v)
}

fn resize_scales(a: &[(&str, Attr)], x: &Tensor, scales: &[f32]) -> Tensor {
    eval(
        "Resize",
        a,
        &[Some(x), Some(&floats(&[])), Some(&floats(scales))],
    )
}

fn resize_sizes(a: &[(&str, Attr)], x: &Tensor, sizes: &[i64]) -> Tensor {
    eval("Resize", a, &[Some(x), None, None, Some(&ints(sizes))])
}

/// Expected outputs of the ONNX backend tests of the same names.
#[test]
fn resize_matches_the_onnx_node_tests() {
    let x = image(2, 2, &[1.0, 2.0, 3.0, 4.0]);
    let nearest = [("mode", s("nearest"))];
    let y = resize_scales(&nearest, &x, &[1.0, 1.0, 2.0, 3.0]);
    let (a, b) = (
        [1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
        [3.0, 3.0, 3.0, 4.0, 4.0, 4.0],
    );
    assert_close(&y, &[1, 1, 4, 6], &[a, a, b, b].concat());

    let y = resize_scales(&[("mode", s("linear"))], &x, &[1.0, 1.0, 2.0, 2.0]);
    let want = [
        1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0,
    ];
    assert_close(&y, &[1, 1, 4, 4], &want);

    let corners = [
        ("mode", s("linear")),
        ("coordinate_transformation_mode", s("align_corners")),
    ];
    let y = resize_scales(&corners, &x, &[1.0, 1.0, 2.0, 2.0]);
    let third = 1.0 / 3.0;
    let want: Vec<f64> = (0..4)
        .flat_map(|r| (0..4).map(move |c| 1.0 + f64::from(r) * 2.0 * third + f64::from(c) * third))
        .collect();
    assert_close(&y, &[1, 1, 4, 4], &want);

    let x = image(2, 4, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    assert_close(
        &resize_scales(&nearest, &x, &[1.0, 1.0, 0.6, 0.6]),
        &[1, 1, 1, 2],
        &[1.0, 3.0],
    );
    let y = resize_scales(&[("mode", s("linear"))], &x, &[1.0, 1.0, 0.6, 0.6]);
    assert_close(&y, &[1, 1, 1, 2], &[2.6666666, 4.3333333]);
    assert_close(
        &resize_sizes(&nearest, &x, &[1, 1, 1, 3]),
        &[1, 1, 1, 3],
        &[1.0, 2.0, 4.0],
    );
}

/// Cubic convolution. By hand: align_corners 4 → 3 samples 1.5 from `[1, 2, 4, 8]` with
/// weights (−3/32, 19/32, 19/32, −3/32) for A = −0.75: 2.71875. With A = −0.5 (Keys' choice)
/// the kernel reproduces linear and quadratic data exactly away from the edges. The other values
/// are those of ONNX's reference implementation (onnx 1.17) on the same cases.
#[test]
fn cubic_by_hand_and_against_the_onnx_reference() {
    let x = t(&[1, 1, 1, 4], &[1.0, 2.0, 4.0, 8.0]);
    let cubic = |extra: &[(&'static str, Attr)]| {
        let mut a = vec![("mode", s("cubic"))];
        a.extend_from_slice(extra);
        a
    };
    let corners = cubic(&[("coordinate_transformation_mode", s("align_corners"))]);
    let y = resize_sizes(&corners, &x, &[1, 1, 1, 3]);
    assert_close(&y, &[1, 1, 1, 3], &[1.0, 2.71875, 8.0]);
    let y = resize_sizes(&cubic(&[]), &x, &[1, 1, 1, 6]);
    let want = [
        0.913194418,
        1.3125,
        2.30439806,
        3.38310194,
        6.1875,
        8.34722233,
    ];
    assert_close(&y, &[1, 1, 1, 6], &want);
    let pytorch = cubic(&[
        ("cubic_coeff_a", Attr::Float(-0.5)),
        ("exclude_outside", Attr::Int(1)),
    ]);
    let y = resize_sizes(&pytorch, &x, &[1, 1, 1, 6]);
    let want = [
        0.934210539,
        1.35294116,
        2.25231481,
        3.53935194,
        6.23529434,
        8.26315784,
    ];
    assert_close(&y, &[1, 1, 1, 6], &want);

    // 0..8 → 16 (half_pixel, x = o/2 − 1/4): outputs 4..=11 have all taps inside.
    let line: Vec<f32> = (0..8).map(|v| v as f32).collect();
    let squares: Vec<f32> = line.iter().map(|v| v * v).collect();
    let keys = cubic(&[("cubic_coeff_a", Attr::Float(-0.5))]);
    for (data, power) in [(&line, 1), (&squares, 2)] {
        let y = resize_sizes(&keys, &t(&[8], data), &[16]).to_f64_vec();
        for (o, v) in y.iter().enumerate().take(12).skip(4) {
            let at = o as f64 / 2.0 - 0.25;
            let want = at.powi(power);
            assert!((v - want).abs() < 1e-5, "output {o}: {v} vs {want}");
        }
    }
}

/// Antialiasing stretches the kernel by `1 / scale` when downsampling. By hand: `[1, 2, 4, 8]`
/// → 2 (half_pixel, coordinates 0.5 and 2.5) weighs four positions each with the triangle at
/// ±0.25, ±0.75, normalised: (1, 3, 3, 1) / 8 over positions −1‥2 (edge-repeated) and 1‥4:
/// 1.75 and 5.75. The others are ONNX's reference values (onnx 1.17).
#[test]
fn antialias_by_hand_and_against_the_onnx_reference() {
    let anti = |mode: &str, exclude: i64| {
        [
            ("mode", s(mode)),
            ("antialias", Attr::Int(1)),
            ("exclude_outside", Attr::Int(exclude)),
        ]
    };
    let x = t(&[1, 1, 1, 4], &[1.0, 2.0, 4.0, 8.0]);
    let y = resize_sizes(&anti("linear", 0), &x, &[1, 1, 1, 2]);
    assert_close(&y, &[1, 1, 1, 2], &[1.75, 5.75]);
    let x = t(&[1, 1, 1, 7], &[1.0, 2.0, 4.0, 8.0, 3.0, 5.0, 7.0]);
    let y = resize_sizes(&anti("cubic", 0), &x, &[1, 1, 1, 3]);
    assert_close(&y, &[1, 1, 1, 3], &[1.93878829, 5.36374998, 5.48782015]);
    let y = resize_sizes(&anti("linear", 1), &x, &[1, 1, 1, 3]);
    assert_close(&y, &[1, 1, 1, 3], &[2.07142854, 5.35294104, 5.28571415]);
    for mode in ["linear", "cubic"] {
        for exclude in [0, 1] {
            let sizes = Some(ints(&[1, 2, 2, 5]));
            agrees_const(
                "Resize",
                &anti(mode, exclude),
                &[1, 2, 5, 3],
                &[None, None, sizes],
            );
        }
    }
    let nearest = [("antialias", Attr::Int(1))];
    let e = infer_const(
        "Resize",
        &nearest,
        ty(&[4]),
        &[None, None, Some(&ints(&[2]))],
    );
    assert_err(e, "attr", "antialias");
}

#[test]
fn cubic_expansion_matches_reference() {
    let coords = [
        "half_pixel",
        "half_pixel_symmetric",
        "pytorch_half_pixel",
        "asymmetric",
        "align_corners",
    ];
    for coord in coords {
        for exclude in [0, 1] {
            let a = [
                ("mode", s("cubic")),
                ("coordinate_transformation_mode", s(coord)),
                ("exclude_outside", Attr::Int(exclude)),
                ("cubic_coeff_a", Attr::Float(-0.6)),
            ];
            let scales = Some(floats(&[1.0, 1.0, 1.5, 0.5]));
            agrees_const("Resize", &a, &[2, 1, 3, 4], &[None, scales]);
            let sizes = Some(ints(&[1, 1, 7, 2]));
            agrees_const("Resize", &a, &[1, 1, 3, 5], &[None, None, sizes]);
        }
    }
    let e = infer_const(
        "Resize",
        &[("mode", s("cubic")), ("exclude_outside", Attr::Int(3))],
        ty(&[4]),
        &[None, None, Some(&ints(&[2]))],
    );
    assert_err(e, "attr", "exclude_outside");
}

/// `keep_aspect_ratio_policy` resizes every listed axis by one scale, the smallest or largest
/// `size / extent`, and rounds the extents half up (the ONNX node tests'
/// `*_sizes_nearest_not_larger` / `not_smaller` on a 2×4 image to sizes 1×3).
#[test]
fn keep_aspect_ratio_policy_uses_one_scale() {
    let x = image(2, 4, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let sizes = |policy: &str| {
        let a = [
            ("keep_aspect_ratio_policy", s(policy)),
            ("axes", super::int_list(&[2, 3])),
        ];
        resize_sizes(&a, &x, &[1, 3])
    };
    // Scale min(1/2, 3/4) = 1/2: 1×2, reading columns 0 and 2.
    assert_close(&sizes("not_larger"), &[1, 1, 1, 2], &[1.0, 3.0]);
    // Scale 3/4: 2×3 (1.5 rounds up to 2); columns at 1/6, 3/2, 17/6 → 0, 1, 3.
    let want = [1.0, 2.0, 4.0, 5.0, 6.0, 8.0];
    assert_close(&sizes("not_smaller"), &[1, 1, 2, 3], &want);
    for policy in ["not_larger", "not_smaller"] {
        let a = [
            ("keep_aspect_ratio_policy", s(policy)),
            ("mode", s("linear")),
        ];
        let sizes = Some(ints(&[1, 2, 5, 4]));
        agrees_const("Resize", &a, &[1, 2, 3, 7], &[None, None, sizes]);
    }
    let bad = [("keep_aspect_ratio_policy", s("fit"))];
    let e = infer_const(
        "Resize",
        &bad,
        ty(&[1, 4]),
        &[None, None, Some(&ints(&[2, 2]))],
    );
    assert_err(e, "attr", "unknown value");
}

/// `half_pixel_symmetric` splits the rounding of the output extent between both ends: 5 → 2
/// at scale ½ (2.5 rounds down to 2) samples 1 and 3 (`half_pixel` samples 1.5 and 3.5).
#[test]
fn half_pixel_symmetric_centres_the_rounding() {
    let x = t(&[1, 1, 1, 5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
    let a = |mode: &str| {
        [
            ("mode", s(mode)),
            ("coordinate_transformation_mode", s("half_pixel_symmetric")),
        ]
    };
    let y = resize_scales(&a("linear"), &x, &[1.0, 1.0, 1.0, 0.5]);
    assert_close(&y, &[1, 1, 1, 2], &[2.0, 4.0]);
    // 5 → 7 at scale 1.5: offset 5/2·(1 − 7/7.5) = 1/6.
    let y = resize_scales(&a("nearest"), &x, &[1.0, 1.0, 1.0, 1.5]);
    assert_close(&y, &[1, 1, 1, 7], &[1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0]);
    for mode in ["nearest", "linear"] {
        let scales = Some(floats(&[1.0, 0.7, 2.5]));
        agrees_const("Resize", &a(mode), &[2, 3, 2], &[Some(floats(&[])), scales]);
        let sizes = Some(ints(&[1, 2, 7, 3]));
        agrees_const("Resize", &a(mode), &[1, 2, 3, 5], &[None, None, sizes]);
    }
}

/// 1-D nearest on `[10, 20, 30, 40]`, coordinates worked out by hand.
#[test]
fn nearest_modes_round_as_specified() {
    let x = t(&[4], &[10.0, 20.0, 30.0, 40.0]);
    let run = |coord: &str, rounding: &str, size: i64| {
        let a = [
            ("coordinate_transformation_mode", s(coord)),
            ("nearest_mode", s(rounding)),
        ];
        resize_sizes(&a, &x, &[size]).to_f64_vec()
    };
    // half_pixel ×2: coordinates −0.25, 0.25, 0.75, …, 3.25.
    assert_eq!(
        run("half_pixel", "round_prefer_floor", 8),
        [10., 10., 20., 20., 30., 30., 40., 40.]
    );
    assert_eq!(
        run("half_pixel", "ceil", 8),
        [10., 20., 20., 30., 30., 40., 40., 40.]
    );
    assert_eq!(
        run("half_pixel", "floor", 8),
        [10., 10., 10., 20., 20., 30., 30., 40.]
    );
    // asymmetric ×2: coordinates 0, 0.5, 1, …, 3.5 (ties).
    assert_eq!(
        run("asymmetric", "round_prefer_floor", 8),
        [10., 10., 20., 20., 30., 30., 40., 40.]
    );
    assert_eq!(
        run("asymmetric", "round_prefer_ceil", 8),
        [10., 20., 20., 30., 30., 40., 40., 40.]
    );
    // asymmetric ×1.5: coordinates 0, 0.67, 1.33, 2, 2.67, 3.33.
    assert_eq!(
        run("asymmetric", "round_prefer_ceil", 6),
        [10., 20., 20., 30., 40., 40.]
    );
    // pytorch_half_pixel to one element samples coordinate −0.5; align_corners samples 0.
    assert_eq!(run("pytorch_half_pixel", "round_prefer_ceil", 1), [10.]);
    assert_eq!(
        run("align_corners", "round_prefer_ceil", 3),
        [10., 30., 40.]
    );
}

#[test]
fn linear_1d_and_the_opset_10_form() {
    let x = t(&[4], &[10.0, 20.0, 30.0, 40.0]);
    let a = [
        ("mode", s("linear")),
        ("coordinate_transformation_mode", s("pytorch_half_pixel")),
    ];
    // Coordinates (o + 0.5) · 2 − 0.5 = 0.5, 2.5.
    assert_close(&resize_sizes(&a, &x, &[2]), &[2], &[15.0, 35.0]);
    // Opset 10: X and scales only; asymmetric coordinates o / 2.
    let x = image(2, 2, &[1.0, 2.0, 3.0, 4.0]);
    let scales = floats(&[1.0, 1.0, 2.0, 2.0]);
    let y = eval(
        "Resize",
        &[("mode", s("linear"))],
        &[Some(&x), Some(&scales)],
    );
    let rows = [
        [1.0, 1.5, 2.0, 2.0],
        [2.0, 2.5, 3.0, 3.0],
        [3.0, 3.5, 4.0, 4.0],
        [3.0, 3.5, 4.0, 4.0],
    ];
    assert_close(&y, &[1, 1, 4, 4], &rows.concat());
    let y = eval("Resize", &[], &[Some(&x), Some(&scales)]);
    let rows = [
        [1.0, 1.0, 2.0, 2.0],
        [1.0, 1.0, 2.0, 2.0],
        [3.0, 3.0, 4.0, 4.0],
        [3.0, 3.0, 4.0, 4.0],
    ];
    assert_close(&y, &[1, 1, 4, 4], &rows.concat());
}

#[test]
fn resize_shape_rules() {
    let x = ty(&[1, 3, 5, 7]);
    let e = floats(&[]);
    let with = |a: &[(&str, Attr)], scales: Option<&Tensor>, sizes: Option<&Tensor>| {
        infer_const("Resize", a, x.clone(), &[Some(&e), scales, sizes])
    };
    let out = with(&[], Some(&floats(&[1.0, 1.0, 0.5, 1.7])), None).expect("infers");
    assert_eq!(out[0], ty(&[1, 3, 2, 11]));
    let out = with(&[("axes", super::int_list(&[-1]))], None, Some(&ints(&[4]))).expect("infers");
    assert_eq!(out[0], ty(&[1, 3, 5, 4]));
    let sizes = ints(&[1, 3, 2, 2]);
    assert_err(
        with(&[], Some(&floats(&[1.0; 4])), Some(&sizes)),
        "shape",
        "not both",
    );
    assert_err(with(&[], None, None), "shape", "needs");
    assert_err(
        with(&[], None, Some(&ints(&[2, 2]))),
        "shape",
        "2 entries for 4 axes",
    );
    assert_err(
        with(&[], Some(&floats(&[1.0, 1.0, 0.0, 1.0])), None),
        "shape",
        "not positive",
    );
    let crop = [("coordinate_transformation_mode", s("tf_crop_and_resize"))];
    assert_err(
        with(&crop, None, Some(&sizes)),
        "unsupported",
        "tf_crop_and_resize",
    );
    assert_err(
        with(&[("mode", s("bilinear"))], None, Some(&sizes)),
        "attr",
        "unknown value",
    );
    let dynamic = infer(
        "Resize",
        &[],
        &[Some(x.clone()), None, None, Some(type_of(&sizes))],
        &[],
    );
    assert_err(dynamic, "unsupported", "constant");
}

#[test]
fn nearest_expansion_matches_reference() {
    let coords = [
        "half_pixel",
        "pytorch_half_pixel",
        "asymmetric",
        "align_corners",
    ];
    let roundings = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"];
    for coord in coords {
        for rounding in roundings {
            let a = [
                ("coordinate_transformation_mode", s(coord)),
                ("nearest_mode", s(rounding)),
            ];
            agrees_const(
                "Resize",
                &a,
                &[1, 2, 3, 5],
                &[None, None, Some(ints(&[1, 2, 7, 3]))],
            );
        }
        let a = [("coordinate_transformation_mode", s(coord))];
        let scales = floats(&[1.0, 0.7, 2.5]);
        agrees_const("Resize", &a, &[2, 3, 2], &[Some(floats(&[])), Some(scales)]);
    }
    agrees_const("Resize", &[], &[2, 1, 3], &[Some(floats(&[1.0, 1.0, 3.0]))]);
}

#[test]
fn linear_expansion_matches_reference() {
    let coords = [
        "half_pixel",
        "pytorch_half_pixel",
        "asymmetric",
        "align_corners",
    ];
    for coord in coords {
        let a = [
            ("mode", s("linear")),
            ("coordinate_transformation_mode", s(coord)),
        ];
        agrees_const(
            "Resize",
            &a,
            &[2, 1, 3, 4],
            &[None, Some(floats(&[1.0, 1.0, 1.5, 0.5]))],
        );
        agrees_const("Resize", &a, &[5], &[None, None, Some(ints(&[1]))]);
        agrees_const(
            "Resize",
            &a,
            &[1, 3, 2, 3],
            &[None, None, Some(ints(&[1, 5, 3, 2]))],
        );
        agrees_const(
            "Resize",
            &a,
            &[1, 1, 3, 5],
            &[None, None, Some(ints(&[1, 1, 7, 2]))],
        );
    }
    agrees_const(
        "Resize",
        &[("mode", s("linear"))],
        &[1, 1, 2, 3],
        &[Some(floats(&[1.0, 1.0, 2.0, 2.0]))],
    );
}

#[test]
fn resize_flops_count_blends_only() {
    let op = dmove::ops::lookup("Resize").expect("known");
    let node = |mode: &str| dmove::ir::LibraryNode {
        op: "Resize".into(),
        attrs: super::attrs(&[("mode", s(mode))]),
    };
    let (x, y) = (ty(&[1, 1, 2, 2]), ty(&[1, 1, 4, 4]));
    // 16 outputs, 4 corners each, a multiply and an add per corner.
    assert_eq!(
        op.flops(
            &node("linear"),
            &[Some(x.clone())],
            std::slice::from_ref(&y)
        ),
        128
    );
    assert_eq!(op.flops(&node("nearest"), &[Some(x)], &[y]), 0);
}
