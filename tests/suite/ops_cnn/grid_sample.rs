//! GridSample.

use super::{assert_close, attr_error, attrs, random, s, shape_error, t, ty};
use dmove::check::{expansion_matches, single_op_program};
use dmove::ir::{Attr, DType, SymExpr, Tensor};
use dmove::ops::{OpError, TensorType};

const MODES: [&str; 3] = ["linear", "nearest", "cubic"];
const PADDINGS: [&str; 3] = ["zeros", "border", "reflection"];

fn opts(mode: &str, padding: &str, align: i64) -> Vec<(&'static str, Attr)> {
    vec![
        ("mode", s(mode)),
        ("padding_mode", s(padding)),
        ("align_corners", Attr::Int(align)),
    ]
}

fn sample(a: &[(&str, Attr)], x: &Tensor, grid: &Tensor) -> Tensor {
    super::eval("GridSample", a, &[Some(x), Some(grid)])
}

fn infer(a: &[(&str, Attr)], x: TensorType, grid: TensorType) -> Result<TensorType, OpError> {
    super::infer("GridSample", a, &[Some(x), Some(grid)])
}

fn typed(dtype: DType, shape: &[usize]) -> TensorType {
    TensorType::new(dtype, shape.iter().map(|&d| SymExpr::from(d)).collect())
}

/// `X [1, 1, 2, 3] = [[0, 1, 2], [3, 4, 5]]` sampled at one grid point `(x, y)`.
fn at(mode: &str, padding: &str, align: i64, x: f32, y: f32) -> f64 {
    let data = t(&[1, 1, 2, 3], &[0., 1., 2., 3., 4., 5.]);
    let grid = t(&[1, 1, 1, 2], &[x, y]);
    sample(&opts(mode, padding, align), &data, &grid).to_f64_vec()[0]
}

#[test]
fn grid_sample_2d_by_hand() {
    // align_corners: columns at x = −1, 0, 1, rows at y = −1, 1.
    assert_eq!(at("linear", "zeros", 1, -0.5, 0.), 2.0);
    // Nearest rounds half to even: column 0.5 → 0, column 1.5 → 2.
    assert_eq!(at("nearest", "zeros", 1, -0.5, -1.), 0.0);
    assert_eq!(at("nearest", "zeros", 1, 0.5, -1.), 2.0);
    // Column 2.5: half of column 2, half of a zero outside.
    assert_eq!(at("linear", "zeros", 1, 1.5, -1.), 1.0);
    // Border clamps the position to column 2.
    assert_eq!(at("linear", "border", 1, 1.5, -1.), 2.0);
    // Reflection at column 2 gives column 1.5.
    assert_eq!(at("linear", "reflection", 1, 1.5, -1.), 1.5);
    // Without align_corners: x = 1.5 is column 3.25, reflected at 2.5 to 1.75; y = −1 is row
    // −0.5, whose taps −1 and 0 both reflect to row 0.
    assert!((at("linear", "reflection", 0, 1.5, -1.) - 1.75).abs() < 1e-6);
    // Far outside, zeros padding reads nothing.
    assert_eq!(at("cubic", "zeros", 0, 5., 5.), 0.0);
}

#[test]
fn grid_sample_1d_cubic_by_hand() {
    // X = [0, 1, 4, 9]; g = 0 with align_corners is position 1.5, whose taps 0 … 3 weigh
    // K(1.5), K(0.5), K(0.5), K(1.5) = −0.09375, 0.59375, 0.59375, −0.09375 (a = −0.75).
    let x = t(&[1, 1, 4], &[0., 1., 4., 9.]);
    let grid = t(&[1, 1, 1], &[0.]);
    let y = sample(&opts("cubic", "zeros", 1), &x, &grid);
    assert_close(&y, &[1, 1, 1], &[2.125]);
    // The opset-16 names mean the same.
    let old = sample(&opts("bicubic", "zeros", 1), &x, &grid);
    assert_eq!(old.to_f64_vec(), y.to_f64_vec());
}

#[test]
fn grid_sample_opset16_names_and_defaults() {
    let x = random(&[2, 3, 4, 5], 1, -1., 1.);
    let grid = random(&[2, 3, 2, 2], 2, -1.5, 1.5);
    let linear = sample(&[("mode", s("linear"))], &x, &grid);
    let bilinear = sample(&[("mode", s("bilinear"))], &x, &grid);
    let default = sample(&[], &x, &grid);
    assert_eq!(linear.to_f64_vec(), bilinear.to_f64_vec());
    assert_eq!(linear.to_f64_vec(), default.to_f64_vec());
    let zeros = sample(&opts("linear", "zeros", 0), &x, &grid);
    assert_eq!(zeros.to_f64_vec(), default.to_f64_vec());
}

/// An identity AffineGrid puts every sample on a pixel centre: each mode reproduces X.
#[test]
fn grid_sample_of_an_identity_affine_grid_is_x() {
    let theta = t(&[1, 2, 3], &[1., 0., 0., 0., 1., 0.]);
    let size = Tensor::i64(vec![4], vec![1, 2, 3, 4]);
    let x = random(&[1, 2, 3, 4], 3, -1., 1.);
    let want = x.to_f64_vec();
    for align in [0, 1] {
        let a = [("align_corners", Attr::Int(align))];
        let grid = super::eval("AffineGrid", &a, &[Some(&theta), Some(&size)]);
        for mode in MODES {
            let y = sample(&opts(mode, "zeros", align), &x, &grid);
            assert_close(&y, &[1, 2, 3, 4], &want);
        }
    }
}

#[test]
fn grid_sample_shapes_and_errors() {
    let y = infer(&[], ty(&[2, 3, 5, 4]), ty(&[2, 6, 7, 2])).expect("infers");
    assert_eq!(y, ty(&[2, 3, 6, 7]));
    let y = infer(&[], ty(&[1, 2, 5, 4, 3]), ty(&[1, 6, 7, 8, 3])).expect("infers");
    assert_eq!(y, ty(&[1, 2, 6, 7, 8]));
    let y = infer(&[], ty(&[1, 2, 5]), ty(&[1, 9, 1])).expect("infers");
    assert_eq!(y, ty(&[1, 2, 9]));
    // Nearest moves elements of any type; interpolation needs floats.
    let ints = typed(DType::I64, &[1, 2, 5, 4]);
    let nearest = [("mode", s("nearest"))];
    let y = infer(&nearest, ints.clone(), ty(&[1, 3, 3, 2])).expect("infers");
    assert_eq!(y, typed(DType::I64, &[1, 2, 3, 3]));
    match infer(&[], ints, ty(&[1, 3, 3, 2])) {
        Err(OpError::Unsupported { message, .. }) => {
            assert!(message.contains("floating-point X"), "{message}")
        }
        other => panic!("integer X interpolated: {other:?}"),
    }
    shape_error(
        infer(&[], ty(&[2, 3, 5, 4]), ty(&[2, 6, 7, 3])),
        "needs [N, H1 … H2, 2]",
    );
    shape_error(
        infer(&[], ty(&[2, 3, 5, 4]), ty(&[2, 6, 2])),
        "needs [N, H1 … H2, 2]",
    );
    shape_error(infer(&[], ty(&[2, 3]), ty(&[2, 3])), "rank 2");
    shape_error(
        infer(&[], ty(&[2, 3, 5, 4]), ty(&[3, 6, 7, 2])),
        "batch 3 but X has 2",
    );
    shape_error(
        infer(&[], ty(&[2, 3, 5, 4]), typed(DType::I64, &[2, 6, 7, 2])),
        "grid must be floating-point",
    );
    shape_error(
        infer(&[], ty(&[2, 3, 0, 4]), ty(&[2, 6, 7, 2])),
        "no element to sample",
    );
    // An empty output needs no element.
    let y = infer(&[], ty(&[2, 3, 0, 4]), ty(&[2, 0, 7, 2])).expect("infers");
    assert_eq!(y, ty(&[2, 3, 0, 7]));
    let grid = || ty(&[2, 6, 7, 2]);
    let x = || ty(&[2, 3, 5, 4]);
    attr_error(infer(&[("mode", s("area"))], x(), grid()), "mode");
    attr_error(
        infer(&[("padding_mode", s("wrap"))], x(), grid()),
        "padding_mode",
    );
    attr_error(
        infer(&[("align_corners", Attr::Int(2))], x(), grid()),
        "align_corners",
    );
}

/// X and grid shapes: 2-D, 3-D, 1-D, single-element axes (a zero span to reflect in with
/// `align_corners`) and a grid that samples X coarser than it is.
fn shapes() -> Vec<(Vec<usize>, Vec<usize>)> {
    vec![
        (vec![2, 3, 4, 5], vec![2, 3, 2, 2]),
        (vec![1, 2, 3, 1, 4], vec![1, 2, 1, 3, 3]),
        (vec![2, 1, 5], vec![2, 3, 1]),
        (vec![1, 1, 1, 1], vec![1, 2, 3, 2]),
    ]
}

#[test]
fn grid_sample_expansions_match_the_reference() {
    // Random grids in [−2, 2) put many positions outside, so every padding is exercised.
    for (x, grid) in shapes() {
        for mode in MODES {
            for padding in PADDINGS {
                for align in [0, 1] {
                    let a = attrs(&opts(mode, padding, align));
                    let types = [Some(ty(&x)), Some(ty(&grid))];
                    let p = single_op_program("GridSample", a, &types, &[]).expect("infers");
                    for seed in [1, 2] {
                        expansion_matches(&p, seed).unwrap_or_else(|e| {
                            panic!("{x:?} {grid:?} {mode} {padding} {align}: {e}")
                        });
                    }
                }
            }
        }
    }
}

#[test]
fn grid_sample_expansions_of_other_types_match_the_reference() {
    let cases = [
        ("cubic", DType::F64, DType::F32),
        ("linear", DType::F32, DType::F64),
        ("nearest", DType::I64, DType::F32),
        ("nearest", DType::F16, DType::F16),
    ];
    for (mode, x, grid) in cases {
        for padding in PADDINGS {
            let a = attrs(&opts(mode, padding, 0));
            let types = [
                Some(typed(x, &[2, 2, 3, 4])),
                Some(typed(grid, &[2, 3, 2, 2])),
            ];
            let p = single_op_program("GridSample", a, &types, &[]).expect("infers");
            expansion_matches(&p, 5).unwrap_or_else(|e| panic!("{mode} {x} {grid}: {e}"));
        }
    }
}

/// Symbolic extents reach the tasklets as values; bound to 1, `H` leaves no span to reflect in.
#[test]
fn grid_sample_expansion_with_symbolic_extents() {
    let sym = |d: &str| SymExpr::sym(d);
    let x = TensorType::new(DType::F32, vec![sym("N"), 2.into(), sym("H"), sym("W")]);
    let grid = TensorType::new(DType::F32, vec![sym("N"), 3.into(), 4.into(), 2.into()]);
    for padding in PADDINGS {
        for mode in ["cubic", "nearest"] {
            let a = attrs(&opts(mode, padding, 1));
            let types = [Some(x.clone()), Some(grid.clone())];
            let mut p = single_op_program("GridSample", a, &types, &[]).expect("infers");
            for h in [1, 3] {
                p.symbols.insert("N".into(), Some(2));
                p.symbols.insert("H".into(), Some(h));
                p.symbols.insert("W".into(), Some(5));
                expansion_matches(&p, 4).unwrap_or_else(|e| panic!("{mode} {padding} {h}: {e}"));
            }
        }
    }
}
