//! The backend's own math: `dm_expf` (Exp and Sigmoid in single precision) against `exp` in
//! double precision, edge cases included.

use super::support::{build, input, program, run, s};
use dmove::ir::build::{In, Out};
use dmove::ir::{DataKind, Range, Schedule, Subset, TExpr, Tensor, UnOp};

/// Distance in units in the last place of `want` (rounded to f32) between two floats.
fn ulps(got: f32, want: f64) -> f64 {
    let w = want as f32;
    let ulp = (f32::from_bits(w.to_bits() + 1) - w).abs() as f64;
    (got as f64 - want).abs() / ulp
}

#[test]
fn exp_is_within_two_ulp_of_double_precision_and_keeps_the_edges() {
    // Every 4099th float from −104 to 89 (the whole finite range), then the edges.
    let mut xs: Vec<f32> = Vec::new();
    let mut x = -104.0f32;
    while x < 89.0 {
        xs.push(x);
        let step = 4099;
        x = f32::from_bits(if x < 0.0 {
            x.to_bits() - step
        } else {
            x.to_bits() + step
        });
        if x < 0.0 && x > -1e-30 {
            x = 0.0;
        }
    }
    let edges = [0.0, -0.0, 88.72, 88.73, -87.3, -103.9, -200.0, 200.0];
    let specials = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    xs.extend(edges.iter().chain(&specials));
    let n = xs.len() as i64;
    let mut p = program(
        "exp",
        &[("X", DataKind::Input, &[n]), ("Y", DataKind::Output, &[n])],
    );
    p.build(|b| {
        b.map("exp", vec![("i", Range::upto(n))], Schedule::Vector, |b| {
            b.tasklet(
                "exp",
                vec![In("x", "X", Subset::element([s("i")]))],
                vec![Out(
                    "y",
                    "Y",
                    Subset::element([s("i")]),
                    None,
                    TExpr::unary(UnOp::Exp, input("x")),
                )],
            );
        });
    });
    let c = build(&p);
    assert!(c.source().contains("dm_expf("), "{}", c.source());
    let out = run(&c, &[("X", Tensor::f32(vec![xs.len()], xs.clone()))]);
    let ys = out["Y"].to_f64_vec();
    let mut worst = (0.0, 0.0f32);
    for (&x, &y) in xs.iter().zip(&ys) {
        let want = (x as f64).exp();
        let y = y as f32;
        if x.is_nan() {
            assert!(y.is_nan(), "exp(NaN) = {y}");
        } else if want > f32::MAX as f64 {
            assert_eq!(y, f32::INFINITY, "exp({x}) overflows");
        } else if want < f32::MIN_POSITIVE as f64 {
            // Subnormal results: within one subnormal step (the product of two scales may round
            // twice).
            assert!(
                (y as f64 - want).abs() <= 2.0 * 1.4e-45,
                "exp({x}) = {y}, want {want}"
            );
        } else {
            let u = ulps(y, want);
            if u > worst.0 {
                worst = (u, x);
            }
        }
    }
    assert!(worst.0 <= 2.0, "exp({}) is {} ulp off", worst.1, worst.0);
}
