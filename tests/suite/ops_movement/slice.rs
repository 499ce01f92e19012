//! Slice.

use super::{
    agrees, agrees_const, assert_close, assert_err, eval, infer, infer_const, int_list, ints, iota,
    sym_ty, ty, type_of,
};
use dmove::ir::Tensor;

/// Python's `range(n)[start:end:step]`, by CPython's `slice.indices` algorithm.
fn py_slice(n: i64, start: i64, end: i64, step: i64) -> Vec<i64> {
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let bound = |v: i64| {
        if v < 0 {
            (v.saturating_add(n)).max(lower)
        } else {
            v.min(upper)
        }
    };
    let (mut i, stop) = (bound(start), bound(end));
    let mut out = Vec::new();
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(i);
        i = i.saturating_add(step);
    }
    out
}

fn slice_1d(x: &Tensor, start: i64, end: i64, step: i64) -> Vec<f64> {
    let inputs = [ints(&[start]), ints(&[end]), ints(&[0]), ints(&[step])];
    let y = eval(
        "Slice",
        &[],
        &[
            Some(x),
            Some(&inputs[0]),
            Some(&inputs[1]),
            Some(&inputs[2]),
            Some(&inputs[3]),
        ],
    );
    y.to_f64_vec()
}

#[test]
fn slice_bounds_match_python() {
    let x = iota(&[6]);
    let bounds = [-9, -6, -2, -1, 0, 1, 3, 5, 6, 9, i64::MIN, i64::MAX];
    for &start in &bounds {
        for &end in &bounds {
            for step in [1, 2, 4, -1, -2, -5, i64::MAX, i64::MIN] {
                let want: Vec<f64> = py_slice(6, start, end, step)
                    .iter()
                    .map(|&v| v as f64)
                    .collect();
                assert_eq!(
                    slice_1d(&x, start, end, step),
                    want,
                    "[{start}:{end}:{step}]"
                );
            }
        }
    }
}

#[test]
fn slice_picks_strided_windows() {
    let x = iota(&[4, 5]);
    let (starts, ends, steps) = (ints(&[1, 0]), ints(&[3, -1]), ints(&[1, 2]));
    let y = eval(
        "Slice",
        &[],
        &[Some(&x), Some(&starts), Some(&ends), None, Some(&steps)],
    );
    assert_close(&y, &[2, 2], &[5.0, 7.0, 10.0, 12.0]);
    // Rows reversed through a negative step on axis 0 only.
    let (starts, ends, axes, steps) = (ints(&[-1]), ints(&[i64::MIN]), ints(&[-2]), ints(&[-1]));
    let y = eval(
        "Slice",
        &[],
        &[
            Some(&x),
            Some(&starts),
            Some(&ends),
            Some(&axes),
            Some(&steps),
        ],
    );
    let want: Vec<f64> = (0..4)
        .rev()
        .flat_map(|r| (0..5).map(move |c| (r * 5 + c) as f64))
        .collect();
    assert_close(&y, &[4, 5], &want);
    // Opset < 10: attributes.
    let a = [
        ("starts", int_list(&[2])),
        ("ends", int_list(&[100])),
        ("axes", int_list(&[1])),
    ];
    let y = eval("Slice", &a, &[Some(&x)]);
    let want: Vec<f64> = (0..4)
        .flat_map(|r| (2..5).map(move |c| (r * 5 + c) as f64))
        .collect();
    assert_close(&y, &[4, 3], &want);
    // An empty window is a zero-size tensor.
    let y = eval(
        "Slice",
        &[],
        &[
            Some(&x),
            Some(&ints(&[3])),
            Some(&ints(&[1])),
            Some(&ints(&[1])),
        ],
    );
    assert_eq!(y.shape, [4, 0]);
}

#[test]
fn slice_shape_rules() {
    let x = ty(&[4, 5]);
    let run = |p: &[&Tensor]| {
        infer_const(
            "Slice",
            &[],
            x.clone(),
            &p.iter().map(|t| Some(*t)).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        run(&[&ints(&[0]), &ints(&[-1])]).expect("infers")[0],
        ty(&[3, 5])
    );
    assert_err(
        run(&[&ints(&[0]), &ints(&[1]), &ints(&[0]), &ints(&[0])]),
        "attr",
        "step is 0",
    );
    assert_err(run(&[&ints(&[0, 0]), &ints(&[1])]), "attr", "has 1 entries");
    assert_err(
        run(&[&ints(&[0, 0]), &ints(&[1, 1]), &ints(&[1, -1])]),
        "attr",
        "twice",
    );
    assert_err(
        run(&[&ints(&[0]), &ints(&[1]), &ints(&[2])]),
        "attr",
        "outside",
    );
    assert_err(
        infer_const("Slice", &[], x.clone(), &[]),
        "attr",
        "required",
    );
    let both = [("starts", int_list(&[0])), ("ends", int_list(&[1]))];
    assert_err(
        infer_const("Slice", &both, x.clone(), &[Some(&ints(&[0]))]),
        "attr",
        "both",
    );
    let dynamic = infer(
        "Slice",
        &[],
        &[
            Some(x.clone()),
            Some(type_of(&ints(&[0]))),
            Some(type_of(&ints(&[1]))),
        ],
        &[],
    );
    assert_err(dynamic, "unsupported", "constant");
    // A symbolic axis may be kept whole, not cut.
    let b = sym_ty(&["B", "5"]);
    let kept = infer_const(
        "Slice",
        &[],
        b.clone(),
        &[Some(&ints(&[0, 1])), Some(&ints(&[i64::MAX, 4]))],
    );
    assert_eq!(kept.expect("infers")[0], sym_ty(&["B", "3"]));
    let cut = infer_const("Slice", &[], b, &[Some(&ints(&[1])), Some(&ints(&[2]))]);
    assert_err(cut, "symbolic", "symbolic extent");
}

#[test]
fn slice_expansion_matches_reference() {
    let c = |v: &[i64]| Some(ints(v));
    agrees_const(
        "Slice",
        &[],
        &[3, 4, 5],
        &[c(&[-1, 1]), c(&[-100, 100]), c(&[0, 2]), c(&[-1, 2])],
    );
    agrees_const(
        "Slice",
        &[],
        &[3, 4, 5],
        &[c(&[4, 2]), c(&[0, -100]), c(&[-1, -3]), c(&[-2, -1])],
    );
    agrees_const("Slice", &[], &[7], &[c(&[1]), c(&[6]), None, c(&[3])]);
    agrees_const("Slice", &[], &[2, 3], &[c(&[2]), c(&[0]), c(&[1])]);
    let a = [("starts", int_list(&[0, 1])), ("ends", int_list(&[1, 3]))];
    agrees("Slice", &a, &[Some(ty(&[1, 3, 1]))], &[]);
}
