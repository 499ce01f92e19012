//! Recipe parameters and `choose`: domains, `--set`, constraints, and searches scored by DMD,
//! driven through `decide` with a closure that applies MapTiling through the engine (so these
//! tests do not depend on the interpreter).

// Every recipe finding is a `Diagnostic` value (the shared contract); boxing it in each `Result`
// would buy nothing on these cold paths.
#![allow(clippy::result_large_err)]

use dmove::check::fixtures::matmul;
use dmove::ir::{NodeId, NodeKind, Program, Schedule, SymExpr};
use dmove::recipe::modules::{load_file, load_source, Loaded};
use dmove::recipe::run::choose::{decide, Decision, MAX_COMBINATIONS};
use dmove::recipe::run::measure;
use dmove::recipe::run::params::{resolve_params, ParamSpace};
use dmove::recipe::run::value::ParamValue;
use dmove::recipe::run::RunOptions;
use dmove::recipe::Diagnostic;
use dmove::transform::engine::{Checks, Engine, Layer};
use dmove::transform::{lookup, ParamValue as TParam, Params};
use std::collections::BTreeMap;

type Values = BTreeMap<String, ParamValue>;

fn load(text: &str) -> Loaded {
    let l = load_source("test.recipe", text, None);
    assert!(
        !l.has_errors(),
        "{}",
        l.sources.render_plain(&l.diagnostics)
    );
    l
}

fn resolve(l: &Loaded, set: &[(&str, &str)]) -> Result<(ParamSpace, Values), Vec<Diagnostic>> {
    let set = set
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    resolve_params(l, &set, &BTreeMap::new())
}

fn resolved(text: &str) -> (Loaded, ParamSpace, Values) {
    let l = load(text);
    let (space, values) =
        resolve(&l, &[]).unwrap_or_else(|d| panic!("{}", l.sources.render_plain(&d)));
    (l, space, values)
}

fn domain(space: &ParamSpace, key: &str) -> Vec<ParamValue> {
    space
        .get(key)
        .and_then(|p| p.domain.clone())
        .expect("a domain")
}

fn ints(v: &[i64]) -> Vec<ParamValue> {
    v.iter().map(|&i| ParamValue::Int(i)).collect()
}

/// The one error of a failed resolution, rendered.
fn one_error(l: &Loaded, r: Result<(ParamSpace, Values), Vec<Diagnostic>>) -> (Diagnostic, String) {
    let diags = r.expect_err("an error");
    assert_eq!(diags.len(), 1, "{}", l.sources.render_plain(&diags));
    let text = l.sources.render_plain(&diags);
    (diags.into_iter().next().expect("one"), text)
}

fn opts(set: &[(&str, &str)], fixed: Values, measure: bool) -> RunOptions {
    RunOptions {
        checks: Checks::default(),
        set: set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        fixed,
        measure,
        seed: 1,
        ..RunOptions::default()
    }
}

#[test]
fn every_domain_form_enumerates_in_order() {
    let (_, space, values) = resolved(
        r#"
param tile: int in pow2(8..64) = 16
param odd: int in pow2(3..40) = 4
param rows: int in [16, 32, 48] = 32
param unroll: int in 1..4 = 1
param alpha: float in [0.25, 0.5] = 0.5
param fuse: bool = true
param impl: enum("pure", "im2col") = "pure"
param free: int = 7
"#,
    );
    assert_eq!(domain(&space, "tile"), ints(&[8, 16, 32, 64]));
    assert_eq!(domain(&space, "odd"), ints(&[4, 8, 16, 32]));
    assert_eq!(domain(&space, "rows"), ints(&[16, 32, 48]));
    assert_eq!(domain(&space, "unroll"), ints(&[1, 2, 3, 4]));
    assert_eq!(
        domain(&space, "alpha"),
        vec![ParamValue::Float(0.25), ParamValue::Float(0.5)]
    );
    assert_eq!(
        domain(&space, "fuse"),
        vec![ParamValue::Bool(false), ParamValue::Bool(true)]
    );
    assert_eq!(
        domain(&space, "impl"),
        vec![
            ParamValue::Str("pure".into()),
            ParamValue::Str("im2col".into())
        ]
    );
    assert_eq!(space.get("free").expect("declared").domain, None);
    assert_eq!(values["tile"], ParamValue::Int(16));
    assert_eq!(values["impl"], ParamValue::Str("pure".into()));
    assert_eq!(values["free"], ParamValue::Int(7));
}

#[test]
fn bad_domains_and_defaults_are_param_errors() {
    for (text, says) in [
        ("param a: float in 1..4 = 1.0", "is a domain of integers"),
        ("param a: int in pow2(0..8) = 1", "at least 1"),
        ("param a: int in pow2(9..15) = 9", "no power of two"),
        ("param a: int in 4..1 = 1", "is empty"),
        ("param a: int in 0..5000 = 0", "more than 4096"),
        ("param a: int in [1, 2, 1] = 1", "listed twice"),
        ("param a: int in [8, 16] = 12", "not in its domain"),
        ("param a: int in [8, 16] = 1.5", "cannot be a float"),
        ("param a: enum(\"x\", \"y\") = \"z\"", "is not one of"),
        ("param a: int in [8, 16]", "has no value"),
    ] {
        let l = load(text);
        let (d, rendered) = one_error(&l, resolve(&l, &[]));
        assert_eq!(d.code, "dmove::recipe::param", "{text}: {rendered}");
        assert!(rendered.contains(says), "{text}: {rendered}");
    }
}

#[test]
fn set_values_are_parsed_by_type() {
    let l = load(
        r#"
param tile: int in pow2(8..64) = 16
param alpha: float in [0.25, 0.5] = 0.5
param fuse: bool = true
param impl: enum("pure", "im2col") = "pure"
"#,
    );
    let (_, v) = resolve(
        &l,
        &[
            ("tile", "32"),
            ("alpha", "0.25"),
            ("fuse", "false"),
            ("impl", "im2col"),
        ],
    )
    .expect("valid");
    assert_eq!(v["tile"], ParamValue::Int(32));
    assert_eq!(v["alpha"], ParamValue::Float(0.25));
    assert_eq!(v["fuse"], ParamValue::Bool(false));
    assert_eq!(v["impl"], ParamValue::Str("im2col".into()));
    let (_, v) = resolve(&l, &[("impl", "\"im2col\"")]).expect("quotes are accepted");
    assert_eq!(v["impl"], ParamValue::Str("im2col".into()));
}

#[test]
fn set_errors_name_the_set_and_point_at_the_declaration() {
    let l = load("param tile: int in pow2(8..64) = 16\nparam fuse: bool = true\n");
    let (d, text) = one_error(&l, resolve(&l, &[("tiel", "32")]));
    assert_eq!(d.code, "dmove::recipe::param");
    assert!(text.contains("did you mean `tile`?"), "{text}");

    let (d, text) = one_error(&l, resolve(&l, &[("tile", "12")]));
    assert_eq!((d.span.start, d.code), (0, "dmove::recipe::param"));
    assert!(d.span.end > 20, "the declaration's span");
    assert!(
        text.contains("12 is not in the domain [8, 16, 32, 64]"),
        "{text}"
    );
    assert!(text.contains("--set tile=12"), "{text}");

    let (_, text) = one_error(&l, resolve(&l, &[("tile", "big")]));
    assert!(text.contains("`big` is not an int value"), "{text}");
    let (_, text) = one_error(&l, resolve(&l, &[("fuse", "1")]));
    assert!(text.contains("not `true` or `false`"), "{text}");
}

#[test]
fn long_domains_are_shortened_in_messages() {
    let l = load("param n: int in 1..100 = 1");
    let (_, text) = one_error(&l, resolve(&l, &[("n", "0")]));
    assert!(
        text.contains("[1, 2, 3, 4, 5, 6, …, 100 (100 values)]"),
        "{text}"
    );
}

#[test]
fn a_set_that_breaks_a_constraint_names_the_values() {
    let l = load(
        "param tile: int in pow2(8..64) = 16\nparam cols: int in pow2(16..256) = 64 where tile * cols <= 2048\n",
    );
    let (d, text) = one_error(&l, resolve(&l, &[("tile", "64")]));
    assert_eq!(d.code, "dmove::recipe::param");
    assert!(text.contains("cols = 64, tile = 64"), "{text}");
}

#[test]
fn module_params_are_named_by_their_alias_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write =
        |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write("inner.recipe", "param x: int in [1, 2] = 1\n");
    write(
        "common.recipe",
        "use \"./inner.recipe\" as inner\nparam tile: int in [8, 16] = 8 where tile > inner::x\n",
    );
    write(
        "root.recipe",
        "recipe \"r\" version \"1.0.0\"\nuse \"./common.recipe\" as common\nparam tile: int = 3\n",
    );
    let l = load_file(&dir.path().join("root.recipe"));
    assert!(
        !l.has_errors(),
        "{}",
        l.sources.render_plain(&l.diagnostics)
    );
    let set = BTreeMap::from([("common::tile".to_string(), "16".to_string())]);
    let (space, values) = resolve_params(&l, &set, &BTreeMap::new()).expect("valid");
    let keys: Vec<&str> = space.params().iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.contains(&"common::inner::x"), "{keys:?}");
    assert_eq!(values["tile"], ParamValue::Int(3));
    assert_eq!(values["common::tile"], ParamValue::Int(16));
    assert_eq!(values["common::inner::x"], ParamValue::Int(1));
}

/// The `acc` map of the matmul fixture.
fn acc(p: &Program) -> NodeId {
    let mut id = None;
    p.graph.walk(&mut |n| {
        if n.label == "acc" && matches!(n.kind, NodeKind::Map(_)) {
            id = Some(n.id);
        }
    });
    id.expect("the fixture has an acc map")
}

fn fixture() -> Program {
    let n = || SymExpr::from(16);
    matmul(n(), n(), n(), Schedule::Sequential)
}

/// A `main` that tiles the acc map's first two parameters by `tile` (0 = untiled), recording
/// the checks it was given.
fn tiling_main(
    seen: &mut Vec<Checks>,
) -> impl FnMut(&mut Program, &Values, &Checks) -> Result<(), Diagnostic> + '_ {
    move |p, values, checks| {
        seen.push(checks.clone());
        let ParamValue::Int(t) = values["tile"] else {
            panic!("an int")
        };
        if t == 0 {
            return Ok(());
        }
        let params = Params::from([("tiles".to_string(), TParam::Ints(vec![t, t, 0]))]);
        let site = [acc(p)];
        Engine::new(checks.clone())
            .apply(p, lookup("MapTiling").expect("registered"), &site, &params)
            .map(|_| ())
            .map_err(|r| {
                Diagnostic::error("dmove::recipe::rejected", Default::default(), r.to_string())
            })
    }
}

/// The decisions of `recipe` over the tile sizes of the fixture `p`, the values after them, and
/// the checks each candidate ran with.
fn tile_search(recipe: &str, p: &Program) -> (Vec<Decision>, Values, Vec<Checks>) {
    let (l, space, mut values) = resolved(recipe);
    let mut seen = Vec::new();
    let decisions = decide(
        &l,
        &space,
        &mut values,
        p,
        &opts(&[], Values::new(), false),
        &mut tiling_main(&mut seen),
    )
    .expect("decides");
    (decisions, values, seen)
}

#[test]
fn a_dmd_search_over_tile_sizes_picks_the_lowest_and_records_every_candidate() {
    let p = fixture();
    let (decisions, values, seen) = tile_search(
        "param tile: int in [0, 2, 4, 8, 16] = 4\nchoose tile by dmd\n",
        &p,
    );
    assert_eq!(decisions.len(), 1);
    let d = &decisions[0];
    assert_eq!(
        (d.params.as_slice(), d.by.as_str()),
        (&["tile".to_string()][..], "dmd")
    );
    assert_eq!(d.candidates.len(), 5);
    let scores: Vec<f64> = d
        .candidates
        .iter()
        .map(|c| c.score.expect("scored"))
        .collect();
    let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
    let winner = scores.iter().position(|&s| s == min).expect("a minimum");
    assert_eq!(d.chosen, d.candidates[winner].values);
    assert_eq!(values["tile"], d.chosen["tile"]);
    // Independently: the untiled program's score is its DMD.
    assert_eq!(scores[0], measure::dmd(&p).expect("measures"));
    assert!(
        scores.windows(2).any(|w| w[0] != w[1]),
        "tiling changes DMD: {scores:?}"
    );
    // Candidates ran with numerics lowered, the structural and legality layers intact.
    assert_eq!(seen.len(), 5);
    assert!(seen
        .iter()
        .all(|c| c.is_lowered(Layer::Numerics) && !c.is_lowered(Layer::Legality)));
}

/// `by estimate` scores each candidate with the cost model (calibrated on first use: this test
/// may take twenty seconds on a machine that has none kept).
#[test]
fn an_estimate_search_scores_candidates_by_the_cost_model() {
    let p = fixture();
    let recipe = "param tile: int in [0, 4, 8] = 4\nchoose tile by estimate\n";
    let (decisions, _, _) = tile_search(recipe, &p);
    let d = &decisions[0];
    assert_eq!(d.by, "estimate");
    assert_eq!(d.candidates.len(), 3);
    let scores: Vec<f64> = (d.candidates.iter())
        .map(|c| c.score.expect("scored"))
        .collect();
    assert!(
        scores.iter().all(|s| s.is_finite() && *s > 0.0),
        "{scores:?}"
    );
    assert_eq!(scores[0], measure::estimate_ms(&p).expect("estimates"));
    let best = scores.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(
        d.candidates
            .iter()
            .find(|c| c.score == Some(best))
            .map(|c| &c.values),
        Some(&d.chosen)
    );
}

#[test]
fn ties_go_to_the_first_combination_and_constraints_prune() {
    let (l, space, mut values) = resolved(
        "param a: int in [1, 2, 4] = 1\nparam b: int in [1, 2, 4] = 1 where a * b <= 4\nchoose b, a by dmd\n",
    );
    let decisions = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], Values::new(), false),
        &mut |_, _, _| Ok(()),
    )
    .expect("decides");
    let d = &decisions[0];
    // b outermost: (b, a) = (1,1) (1,2) (1,4) (2,1) (2,2) (4,1); (2,4) (4,2) (4,4) are pruned.
    let tried: Vec<(i64, i64)> = (d.candidates.iter())
        .map(|c| match (&c.values["b"], &c.values["a"]) {
            (ParamValue::Int(b), ParamValue::Int(a)) => (*b, *a),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(tried, [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1)]);
    assert_eq!(
        d.chosen, d.candidates[0].values,
        "equal scores: the first wins"
    );
}

#[test]
fn a_search_larger_than_the_cap_is_an_error_at_the_choose() {
    let text = "param a: int in 1..17 = 1\nparam b: int in 1..16 = 1\nchoose a, b by dmd\n";
    let (l, space, mut values) = resolved(text);
    let err = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], Values::new(), false),
        &mut |_, _, _| Ok(()),
    )
    .expect_err("too large");
    assert_eq!(err.code, "dmove::recipe::param");
    assert_eq!(&text[err.span.start..err.span.end], "choose a, b by dmd");
    assert!(err.message.contains(&MAX_COMBINATIONS.to_string()));
    assert!(err.label.contains("272"), "{}", err.label);
}

#[test]
fn set_locked_and_fixed_params_are_recorded_not_searched() {
    let (l, _, _) = resolved(
        "param a: int in [1, 2] = 1\nparam b: int in [1, 2] = 1\nparam c: int in [1, 2] = 2\nchoose a, b by dmd\nchoose c fixed\n",
    );
    let fixed = Values::from([("b".to_string(), ParamValue::Int(2))]);
    let set = [("a", "2")];
    let setmap = set
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (space, mut values) = resolve_params(&l, &setmap, &fixed).expect("valid");
    let mut runs = 0;
    let decisions = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&set, fixed, false),
        &mut |_, _, _| {
            runs += 1;
            Ok(())
        },
    )
    .expect("decides");
    assert_eq!(runs, 0, "nothing is searched");
    let by: Vec<(&str, Vec<&str>)> = (decisions.iter())
        .map(|d: &Decision| (d.by.as_str(), d.params.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        by,
        [
            ("set", vec!["a"]),
            ("locked", vec!["b"]),
            ("fixed", vec!["c"])
        ]
    );
    assert_eq!(decisions[0].chosen["a"], ParamValue::Int(2));
    assert_eq!(decisions[1].chosen["b"], ParamValue::Int(2));
}

#[test]
fn bench_without_measurements_needs_a_lock() {
    let (l, space, mut values) =
        resolved("param u: int in 1..4 = 1\nchoose u by bench(reps = 3)\n");
    let err = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], Values::new(), false),
        &mut |_, _, _| Ok(()),
    )
    .expect_err("needs measurements");
    assert!(
        err.message.contains("needs measurements"),
        "{}",
        err.message
    );
    // Replayed from a lock, it decides without measuring.
    let fixed = Values::from([("u".to_string(), ParamValue::Int(3))]);
    let decisions = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], fixed, false),
        &mut |_, _, _| Ok(()),
    )
    .expect("locked");
    assert_eq!(decisions[0].by, "locked");
}

#[test]
fn a_search_where_every_candidate_fails_lists_the_failures() {
    let (l, space, mut values) = resolved("param t: int in [1, 2] = 1\nchoose t by dmd\n");
    let err = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], Values::new(), false),
        &mut |_, v, _| {
            Err(Diagnostic::error(
                "dmove::recipe::runtime",
                Default::default(),
                format!("broke at {}", v["t"]),
            ))
        },
    )
    .expect_err("nothing scored");
    let note = err.note.expect("a note");
    assert!(
        note.contains("t = 1: broke at 1") && note.contains("t = 2: broke at 2"),
        "{note}"
    );
}

#[test]
fn a_search_over_a_param_without_a_domain_says_so() {
    let (l, space, mut values) = resolved("param n: int = 3\nchoose n by dmd\n");
    let err = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], Values::new(), false),
        &mut |_, _, _| Ok(()),
    )
    .expect_err("nothing to search");
    assert!(
        err.message.contains("`n` has no domain to search"),
        "{}",
        err.message
    );
    assert!(err.help.is_some_and(|h| h.contains("param n: int in pow2")));
}

#[test]
fn a_bench_search_times_each_candidate_and_records_the_reps() {
    let (l, space, mut values) =
        resolved("param tile: int in [0, 4] = 0\nchoose tile by bench(reps = 2)\n");
    let mut seen = Vec::new();
    let decisions = decide(
        &l,
        &space,
        &mut values,
        &fixture(),
        &opts(&[], Values::new(), true),
        &mut tiling_main(&mut seen),
    )
    .expect("decides");
    let d = &decisions[0];
    assert_eq!(d.by, "bench(reps = 2)");
    assert_eq!(d.candidates.len(), 2);
    assert!(
        d.candidates
            .iter()
            .all(|c| c.score.is_some_and(|s| s >= 0.0)),
        "{d:?}"
    );
}
