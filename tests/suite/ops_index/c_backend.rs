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
fn bitwise_operators_compile_exactly() {
    use super::bitwise::ints;
    use dmove::ir::DType;
    let a = ints(DType::I8, &[2, 3], &[-128, -1, 5, 100, -100, 0]);
    let b = ints(DType::I8, &[3], &[-6, 127, 3]);
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"] {
        c_matches(op, &[], &[Some(&a), Some(&b)], &[]);
    }
    c_matches("BitwiseNot", &[], &[Some(&a)], &[]);
    let u = ints(DType::U64, &[3], &[0, 7, 1 << 40]);
    c_matches("BitwiseNot", &[], &[Some(&u)], &[]);
    let n = ints(DType::I8, &[2, 3], &[1, 9, -1, 7, 1, 0]);
    let w = i64s(&[4], &[3, -1, 1, -5]);
    let k = i64s(&[4], &[62, 63, 64, 1]);
    for dir in ["LEFT", "RIGHT"] {
        let d = [("direction", Attr::Str(dir.into()))];
        c_matches("BitShift", &d, &[Some(&a), Some(&n)], &[]);
        c_matches("BitShift", &d, &[Some(&w), Some(&k)], &[]);
    }
}

#[test]
fn diagonals_casts_and_products_compile_exactly() {
    use dmove::ir::DType;
    let x = f32s(
        &[2, 3, 4],
        &(0..24).map(|i| i as f32 - 7.5).collect::<Vec<_>>(),
    );
    c_matches("Trilu", &[], &[Some(&x), Some(&i64s(&[], &[1]))], &[]);
    c_matches(
        "Trilu",
        &[("upper", Attr::Int(0))],
        &[Some(&x), None],
        &[None, Some(i64s(&[], &[-1]))],
    );
    let m = f32s(&[3, 4], &[0.0; 12]);
    c_matches(
        "EyeLike",
        &[("k", Attr::Int(1)), ("dtype", Attr::Int(7))],
        &[Some(&m)],
        &[],
    );
    let like = Tensor::from_f64(DType::U8, vec![1], &[0.0]);
    let v = f32s(&[4], &[-2.7, 0.5, 300.0, 1e9]);
    c_matches("CastLike", &[], &[Some(&v), Some(&like)], &[]);
    let big = i64s(&[2, 3], &[-2, 3, 5, 1 << 20, 1 << 21, 3]);
    c_matches(
        "CumProd",
        &[("exclusive", Attr::Int(1))],
        &[Some(&big), None],
        &[None, Some(i64s(&[], &[1]))],
    );
}

#[test]
fn math_predicates_and_rounding_compile_on_special_values() {
    let x = f32s(
        &[8],
        &[
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            2.5,
            -1.5,
            0.49999997,
            3.0,
        ],
    );
    for op in ["IsNaN", "IsInf", "Sign", "Round"] {
        c_matches(op, &[], &[Some(&x)], &[]);
    }
    c_matches(
        "IsInf",
        &[("detect_positive", Attr::Int(0))],
        &[Some(&x)],
        &[],
    );
    let unit = f32s(&[5], &[-1.0, -0.5, 0.0, 0.75, 1.0]);
    for op in ["Asin", "Acos", "Atanh"] {
        c_matches(op, &[], &[Some(&unit)], &[]);
    }
    let wide = f32s(&[4], &[1.0, 1.5, 10.0, 1e4]);
    c_matches("Acosh", &[], &[Some(&wide)], &[]);
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
