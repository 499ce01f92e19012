//! ReductionFusion's online mode: softmax's max and sum passes merged into one pass with the
//! online rescaling.

use super::{
    apply_checked, assert_values, compiled_matches_interpreter, expanded, refused, rejected, run,
    top_maps,
};
use dmove::check::{compare_outputs, same_outputs};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::ir::{NodeId, NodeKind, Program, Schedule, Tensor};
use dmove::transform::{lookup, ParamValue, Params};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub(crate) fn mode(m: &str) -> Params {
    Params::from([("mode".to_string(), ParamValue::Str(m.into()))])
}

/// The passes of the fused map over rows: (id, inner iterations per row, schedule).
pub(crate) fn row_passes(p: &Program) -> Vec<(NodeId, i64, Schedule)> {
    let maps = top_maps(p);
    assert_eq!(maps.len(), 1, "one map over the rows");
    let NodeKind::Map(outer) = &p.node(maps[0].0).expect("exists").kind else {
        panic!("not a map");
    };
    outer
        .body
        .ordered()
        .into_iter()
        .map(|i| outer.body.node(i))
        .filter_map(|n| match &n.kind {
            NodeKind::Map(m) => {
                let trips = m
                    .params
                    .iter()
                    .map(|q| q.range.len().as_int().expect("static"));
                Some((n.id, trips.product(), m.schedule))
            }
            _ => None,
        })
        .collect()
}

/// Values in [-100, 100] (rows mix large positive and negative magnitudes).
fn large(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 + 11) % 201) as f32 - 100.0)
        .collect()
}

/// Softmax (or log-softmax) of each row of `n` values, in f64.
fn by_hand(x: &[f32], n: usize, log: bool) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|row| {
            let max = row.iter().map(|&v| f64::from(v)).fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|&v| (f64::from(v) - max).exp()).sum();
            row.iter()
                .map(move |&v| match log {
                    true => f64::from(v) - max - sum.ln(),
                    false => (f64::from(v) - max).exp() / sum,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs the compiled program on `inputs` and compares with the interpreter.
pub(crate) fn compiled_agrees_on(
    p: &Program,
    inputs: &BTreeMap<String, Tensor>,
) -> BTreeMap<String, Tensor> {
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let got = Compiled::build_with(p, &config)
        .expect("compiles")
        .run(inputs)
        .expect("runs");
    let want = dmove::interp::run(p, inputs).expect("interprets");
    compare_outputs(&got, &want).expect("C matches the interpreter");
    got
}

#[test]
fn online_softmax_reads_each_row_twice_and_survives_large_inputs() {
    let (rows, n) = (6, 40);
    let mut p = expanded("Softmax", &[], &[&[rows, n]]);
    let original = p.clone();
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    let step = apply_checked(&mut p, "ReductionFusion", &site, &mode("online"));
    let passes = row_passes(&p);
    let full: Vec<_> = passes.iter().filter(|(_, trips, _)| *trips == n).collect();
    assert_eq!(full.len(), 2, "statistics and normalization: {passes:?}");
    assert_eq!(
        full[0].2,
        Schedule::Sequential,
        "the online pass carries m and s"
    );
    assert_eq!(
        full[0].0, site[3],
        "the merged pass keeps the sum pass's id"
    );
    assert!(!step.touched.is_empty());
    // Inputs up to ±100: exp(100) overflows f32, so any unshifted exponent would give inf/NaN.
    let x = large(rows as usize * n as usize);
    let inputs = BTreeMap::from([("x0".to_string(), Tensor::f32(vec![6, 40], x.clone()))]);
    let out = run(&p, &[("x0", inputs["x0"].clone())]);
    assert_values(&out["y0"], &by_hand(&x, n as usize, false));
    same_outputs(&original, &p, &inputs).expect("same as the three-pass original");
    let compiled = compiled_agrees_on(&p, &inputs);
    assert!(compiled["y0"].to_f64_vec().iter().all(|v| v.is_finite()));
    compiled_matches_interpreter(&p);
    // The merged pass carries the running max and sum from one element to the next: running
    // its iterations in parallel would race on them, and Parallelize must say so (the
    // interpreter runs maps in order, so numerics alone would not catch it).
    assert_parallelize_refused(&mut p, full[0].0);
}

/// Parallelize refuses map `id` because its iterations carry state (a race on shared registers).
pub(crate) fn assert_parallelize_refused(p: &mut Program, id: NodeId) {
    let why = refused(p, "Parallelize", &[id], &Params::new(), id);
    assert!(
        why.contains("same body") || why.contains("write the same elements"),
        "{why}"
    );
}

#[test]
fn online_log_softmax_matches_the_original() {
    let mut p = expanded("LogSoftmax", &[], &[&[2, 3, 9]]);
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    apply_checked(&mut p, "ReductionFusion", &site, &mode("online"));
    let x = large(54);
    let out = run(&p, &[("x0", Tensor::f32(vec![2, 3, 9], x.clone()))]);
    assert_values(&out["y0"], &by_hand(&x, 9, true));
    compiled_matches_interpreter(&p);
}

#[test]
fn online_mode_refuses_passes_without_a_max_and_bad_modes() {
    let mut p = expanded(
        "LayerNormalization",
        &[("epsilon", dmove::ir::Attr::Float(1e-5))],
        &[&[2, 4], &[4], &[4]],
    );
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    let why = refused(&mut p, "ReductionFusion", &site, &mode("online"), site[0]);
    assert!(why.starts_with("no pass reduces with max"), "{why}");
    let mut p = expanded("Softmax", &[], &[&[2, 8]]);
    let site = lookup("ReductionFusion")
        .expect("registered")
        .candidates(&p)[0]
        .clone();
    let why = rejected(&mut p, "ReductionFusion", &site, &mode("fast"));
    assert_eq!(
        why,
        "ReductionFusion: parameter `mode` expects one of passes, online, welford, found the name `fast`"
    );
}
