//! ReductionFusion's welford mode: layer normalization's mean and variance passes merged into
//! one pass with Welford's update.

use super::online::{assert_parallelize_refused, compiled_agrees_on, mode, row_passes};
use super::{apply_checked, compiled_matches_interpreter, expanded, refused, run, values};
use dmove::check::same_outputs;
use dmove::ir::{Attr, DType, DataKind, Program, Schedule, Tensor};
use dmove::numerics::compare;
use dmove::transform::lookup;
use std::collections::BTreeMap;

const EPSILON: f64 = 1e-5;

fn layer_norm(shapes: &[&[i64]], axis: i64) -> Program {
    expanded(
        "LayerNormalization",
        &[("epsilon", Attr::Float(EPSILON)), ("axis", Attr::Int(axis))],
        shapes,
    )
}

/// `1e4` plus noise, multiples of 4 in [-64, 64] (exact in f32): the variance (~1500) is small
/// next to the square of the mean (1e8, where one f32 step is 8, and their sum over a row
/// rounds in steps of 256). The noise is wide enough that the f32 rounding of the mean itself
/// (half a step at 1e4, ~5e-4, per update) stays within tolerance of the normalized output.
fn offset_rows(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| 1e4 + (((i * 29 + 7) % 33) as f32 - 16.0) * 4.0)
        .collect()
}

/// Layer normalization of each group of `n` values with per-element scale `g` and bias `b`,
/// the statistics from `stats` (mean, variance) of the group.
fn normalized(
    x: &[f32],
    n: usize,
    g: &[f32],
    b: &[f32],
    stats: fn(&[f32]) -> (f64, f64),
) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|row| {
            let (mean, var) = stats(row);
            let inv = 1.0 / (var + EPSILON).sqrt();
            row.iter()
                .zip(g.iter().zip(b))
                .map(move |(&v, (&g, &b))| {
                    (f64::from(v) - mean) * inv * f64::from(g) + f64::from(b)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Mean and variance in f64 (the reference).
fn exact(row: &[f32]) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = row
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    (mean, var)
}

/// The naive one-pass statistics in f32: `E[x²] − E[x]²`, which cancels far from zero.
fn sum_of_squares(row: &[f32]) -> (f64, f64) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let square = row.iter().map(|v| v * v).sum::<f32>() / n;
    (f64::from(mean), f64::from(square - mean * mean))
}

#[test]
fn welford_layer_norm_reads_each_row_twice_and_keeps_digits_far_from_zero() {
    let (rows, n) = (6usize, 40usize);
    let mut p = layer_norm(&[&[rows as i64, n as i64], &[n as i64], &[n as i64]], -1);
    let original = p.clone();
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    apply_checked(&mut p, "ReductionFusion", &site, &mode("welford"));
    let passes = row_passes(&p);
    let full: Vec<_> = passes
        .iter()
        .filter(|(_, trips, _)| *trips == n as i64)
        .collect();
    assert_eq!(full.len(), 2, "statistics and normalization: {passes:?}");
    assert_eq!(
        full[0].2,
        Schedule::Sequential,
        "Welford's pass carries m and v"
    );
    let label = |id| p.node(id).expect("exists").label.clone();
    assert!(label(full[0].0).ends_with("_var"), "{}", label(full[0].0));
    assert!(
        !passes
            .iter()
            .any(|(id, _, _)| label(*id).ends_with("_mean")),
        "the mean pass is merged away: {passes:?}"
    );

    let x = offset_rows(rows * n);
    let (g, b) = (values(n, 1), values(n, 2));
    let inputs = BTreeMap::from([
        ("x0".to_string(), Tensor::f32(vec![rows, n], x.clone())),
        ("x1".to_string(), Tensor::f32(vec![n], g.clone())),
        ("x2".to_string(), Tensor::f32(vec![n], b.clone())),
    ]);
    let want =
        |stats| Tensor::from_f64(DType::F32, vec![rows, n], &normalized(&x, n, &g, &b, stats));
    let out = run(
        &p,
        &inputs
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect::<Vec<_>>(),
    );
    let welford = compare(&out["y0"], &want(exact));
    assert!(welford.within_tolerance, "{welford:?}");
    // The inputs discriminate: the one-pass sum-of-squares formula loses the variance entirely.
    let naive = compare(
        &Tensor::from_f64(
            DType::F32,
            vec![rows, n],
            &normalized(&x, n, &g, &b, sum_of_squares),
        ),
        &want(exact),
    );
    assert!(!naive.within_tolerance, "{naive:?}");
    same_outputs(&original, &p, &inputs).expect("same as the two-pass original");
    let compiled = compiled_agrees_on(&p, &inputs);
    let c = compare(&compiled["y0"], &want(exact));
    assert!(c.within_tolerance, "{c:?}");

    // Welford's pass carries the running mean and variance from one element to the next:
    // running its iterations in parallel would race on them.
    assert_parallelize_refused(&mut p, full[0].0);
}

#[test]
fn welford_counts_across_several_normalized_axes() {
    // axis = 1 of [2, 3, 5]: each group is 3 × 5 elements over two inner parameters, so the
    // running count is their linearised position. Only `Y` is an output, so the mean and the
    // inverse deviation are per-row registers too (not elements of memory as above).
    let mut p = layer_norm(&[&[2, 3, 5], &[3, 5], &[3, 5]], 1);
    p.outputs.retain(|o| o == "y0");
    for stat in ["y1", "y2"] {
        p.data.get_mut(stat).expect("declared").kind = DataKind::Transient;
    }
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    apply_checked(&mut p, "ReductionFusion", &site, &mode("welford"));
    assert!(
        !p.data.contains_key("y1"),
        "the mean became a register: {:?}",
        p.data.keys()
    );
    let passes = row_passes(&p);
    let full = passes.iter().filter(|(_, trips, _)| *trips == 15).count();
    assert_eq!(full, 2, "statistics and normalization: {passes:?}");
    let x = offset_rows(30);
    let (g, b) = (values(15, 3), values(15, 4));
    let out = run(
        &p,
        &[
            ("x0", Tensor::f32(vec![2, 3, 5], x.clone())),
            ("x1", Tensor::f32(vec![3, 5], g.clone())),
            ("x2", Tensor::f32(vec![3, 5], b.clone())),
        ],
    );
    let want = Tensor::from_f64(
        DType::F32,
        vec![2, 3, 5],
        &normalized(&x, 15, &g, &b, exact),
    );
    let got = compare(&out["y0"], &want);
    assert!(got.within_tolerance, "{got:?}");
    compiled_matches_interpreter(&p);
}

#[test]
fn welford_mode_refuses_softmax() {
    let mut p = expanded("Softmax", &[], &[&[2, 8]]);
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    let why = refused(&mut p, "ReductionFusion", &site, &mode("welford"), site[0]);
    assert!(
        why.starts_with("no pass sums a value divided by its count"),
        "{why}"
    );
}
