//! Expansions compiled to C: integer outputs must equal the reference exactly, float outputs
//! within the tolerances of `dmove::numerics`.

use super::{bools, check_expansion, eval, f32s, i64s, type_of};
use dmove::codegen::{BuildConfig, Compiled};
use dmove::ir::{Attr, Tensor};
use dmove::numerics::compare;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Lowers `op`, compiles it, runs it on `inputs` (constants given in `consts`) and compares
/// every output with the reference implementation.
fn c_matches(op: &str, a: &[(&str, Attr)], inputs: &[Option<&Tensor>], consts: &[Option<Tensor>]) {
    let all: Vec<&Tensor> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.or_else(|| consts.get(i).and_then(|c| c.as_ref()))
                .expect("each input is given or constant")
        })
        .collect();
    let types: Vec<_> = all.iter().map(|t| type_of(t)).collect();
    let lowered = check_expansion(op, a, &types, consts);
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let compiled = Compiled::build_with(&lowered, &config).unwrap_or_else(|e| panic!("{op}: {e}"));
    let feed: BTreeMap<String, Tensor> = lowered
        .inputs
        .iter()
        .map(|n| {
            let i: usize = n[1..].parse().expect("inputs are x<i>");
            (n.clone(), all[i].clone())
        })
        .collect();
    let got = compiled.run(&feed).unwrap_or_else(|e| panic!("{op}: {e}"));
    let want = eval(op, a, &all).expect("reference runs");
    for (i, w) in want.iter().enumerate() {
        let g = &got[&format!("y{i}")];
        let c = compare(g, w);
        assert!(
            c.within_tolerance,
            "{op} output {i}: {c:?}\n got  {:?}\n want {:?}",
            g.to_f64_vec(),
            w.to_f64_vec()
        );
        assert_eq!(g.dtype(), w.dtype(), "{op} output {i}");
    }
}

#[test]
fn gathers_compile_and_wrap_negative_indices() {
    let data = f32s(
        &[3, 4],
        &(0..12).map(|i| i as f32 * 1.5).collect::<Vec<_>>(),
    );
    let idx = i64s(&[2, 2], &[-1, 0, 2, -3]);
    c_matches(
        "Gather",
        &[("axis", Attr::Int(1))],
        &[Some(&data), Some(&idx)],
        &[],
    );
    let big = i64s(&[4], &[(1 << 50) + 1, 2, -(1 << 45), 7]);
    let pick = i64s(&[3], &[3, 0, -2]);
    c_matches("Gather", &[], &[Some(&big), Some(&pick)], &[]);
    let ge = i64s(&[3, 2], &[0, -1, 2, 1, -3, 3]);
    c_matches(
        "GatherElements",
        &[("axis", Attr::Int(1))],
        &[Some(&data), Some(&ge)],
        &[],
    );
}

#[test]
fn casts_and_logic_compile_exactly() {
    let x = f32s(&[6], &[-2.7, -0.5, 0.0, 1.9, 3.0, 1e9]);
    for code in [6, 7, 9, 11] {
        c_matches("Cast", &[("to", Attr::Int(code))], &[Some(&x)], &[]);
    }
    let big = i64s(&[2], &[(1 << 40) + 1, -(1 << 35) - 3]);
    c_matches("Cast", &[("to", Attr::Int(11))], &[Some(&big)], &[]);
    let c = bools(&[2, 1], &[true, false]);
    c_matches(
        "Where",
        &[],
        &[Some(&c), Some(&big), Some(&i64s(&[1], &[-4]))],
        &[],
    );
    let b = bools(&[3], &[true, false, true]);
    c_matches("And", &[], &[Some(&c), Some(&b)], &[]);
    c_matches("Not", &[], &[Some(&b)], &[]);
}

#[test]
fn generators_and_scans_compile_exactly() {
    let x = f32s(&[2, 5], &[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0]);
    c_matches("Shape", &[], &[Some(&x)], &[]);
    c_matches("Size", &[], &[Some(&x)], &[]);
    let start = (1i64 << 40) + 5;
    let range = [
        Some(i64s(&[], &[start])),
        Some(i64s(&[], &[start - 10])),
        Some(i64s(&[], &[-3])),
    ];
    c_matches("Range", &[], &[None, None, None], &range);
    let m = i64s(&[2, 3], &[1 << 40, 1, 2, 3, 1 << 41, 5]);
    let flags = [("exclusive", Attr::Int(1)), ("reverse", Attr::Int(1))];
    c_matches(
        "CumSum",
        &flags,
        &[Some(&m), None],
        &[None, Some(i64s(&[], &[1]))],
    );
    c_matches("ArgMax", &[("axis", Attr::Int(1))], &[Some(&x)], &[]);
    c_matches(
        "ArgMin",
        &[("select_last_index", Attr::Int(1))],
        &[Some(&m)],
        &[],
    );
    c_matches(
        "TopK",
        &[],
        &[Some(&x), None],
        &[None, Some(i64s(&[1], &[3]))],
    );
}

#[test]
fn gathers_and_scatters_by_tuples_compile() {
    let data = f32s(
        &[3, 4, 2],
        &(0..24).map(|i| i as f32 * 0.5).collect::<Vec<_>>(),
    );
    let tuples = i64s(&[2, 2], &[2, -1, 0, 1]);
    c_matches("GatherND", &[], &[Some(&data), Some(&tuples)], &[]);
    let batched = i64s(&[3, 1], &[3, -4, 1]);
    let b1 = [("batch_dims", Attr::Int(1))];
    c_matches("GatherND", &b1, &[Some(&data), Some(&batched)], &[]);
    let upd = f32s(&[2, 2], &[1.5, -2.0, 3.0, 0.25]);
    let dup = i64s(&[2, 2], &[2, -1, 2, 3]);
    let ints = i64s(&[3, 4], &(0..12).map(|i| (i << 20) + i).collect::<Vec<_>>());
    let int_upd = i64s(&[2], &[-(1 << 25), 7]);
    for name in ["none", "add", "mul", "max", "min"] {
        let a = [("reduction", Attr::Str(name.into()))];
        c_matches("ScatterND", &a, &[Some(&data), Some(&dup), Some(&upd)], &[]);
        c_matches(
            "ScatterND",
            &a,
            &[Some(&ints), Some(&dup), Some(&int_upd)],
            &[],
        );
        let along = [("axis", Attr::Int(1)), a[0].clone()];
        let idx = i64s(&[2, 2], &[3, 3, -1, 0]);
        let upd = f32s(&[2, 2], &[1.0, 2.0, -3.0, 4.0]);
        let data = f32s(&[3, 4], &(0..12).map(|i| i as f32).collect::<Vec<_>>());
        c_matches(
            "ScatterElements",
            &along,
            &[Some(&data), Some(&idx), Some(&upd)],
            &[],
        );
    }
    let idx = i64s(&[1, 2], &[-1, 2]);
    let row = i64s(&[1, 2], &[-(1 << 25), 7]);
    c_matches("Scatter", &[], &[Some(&ints), Some(&idx), Some(&row)], &[]);
}
