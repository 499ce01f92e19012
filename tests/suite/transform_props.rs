//! Property: any sequence of transformations, at any candidate site with any parameters, either
//! leaves a valid program computing the original's outputs, or is refused and leaves the
//! program byte-for-byte unchanged.
//!
//! Programs are random chains and diamonds of element-wise maps and small matmul-like
//! reductions with odd sizes. Half of the steps run with the engine's numerics layer lowered, so
//! the independent comparison here checks the transformations themselves, not just the engine.
//! Along the way, an incremental [`Matcher`] updated from each step's change must agree with a
//! full enumeration, and the program hash the engine keeps scope by scope must equal the hash of
//! a fresh parse (debug builds of the engine also compare its incremental validation, race check
//! and change list with full ones after every step).
//!
//! Second property: no transformation panics on *any* site (empty, stale, wrong-kind, too long)
//! or parameters (unknown keys, wrong types, out of domain), with legality lowered half the
//! time; each call is applied or refused, and a refusal leaves the program unchanged. Each case
//! makes [`CALLS`] calls, so `.ci/run`'s 1000 cases make 10,000; about half the cases run on
//! small operator-level programs so the library-node rewrites get real sites too.
//! `DMOVE_PROPTEST_CASES=2000 cargo test --test suite transform_props::` runs many more cases.
//!
//! Both properties are about dmove's built-in transformations ([`builtins`], not `all`): a
//! script loaded in the same process registers its transformations process-wide, and the
//! script tests load some that are wrong on purpose.

use crate::common::random::{op, program};
use dmove::check::{random_inputs, same_outputs};
use dmove::ir::text::{parse, print_exact};
use dmove::ir::validate::validate;
use dmove::ir::{NodeId, NodeKind, Program};
use dmove::pattern::library::builtin;
use dmove::pattern::{find_all, Matcher};
use dmove::transform::engine::{program_hash, Checks, Engine, Layer};
use dmove::transform::{builtins, ParamDecl, ParamKind, ParamValue, Params};
use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest, ProptestConfig, Strategy};

/// A parameter value for `decl` from random seeds: small integers, and integer lists that are
/// half the time a rotation of `0..len` (a permutation, as orders need). Lists mostly have one
/// entry per parameter of the site's map (`arity`), sometimes a random length. Named modes get
/// one of their names, containers one of the program's, map parameters a position.
fn param(decl: &ParamDecl, seed: u64, arity: Option<usize>, p: &Program) -> Option<ParamValue> {
    let small = |s: u64| (s % 5) as i64;
    match decl.kind {
        ParamKind::Int { .. } => Some(ParamValue::Int(small(seed))),
        ParamKind::Ints { .. } => {
            let len = match arity {
                Some(n) if !seed.is_multiple_of(4) => n as u64,
                _ => 1 + (seed >> 3) % 4,
            };
            let values = if seed & 4 == 0 {
                (0..len).map(|k| ((k + (seed >> 5)) % len) as i64).collect()
            } else {
                (0..len).map(|k| small(seed >> (8 + 3 * k))).collect()
            };
            Some(ParamValue::Ints(values))
        }
        ParamKind::Enum { values } => Some(ParamValue::Str(
            values[(seed % values.len() as u64) as usize].to_string(),
        )),
        ParamKind::Bool => Some(ParamValue::Bool(seed & 1 == 0)),
        ParamKind::Data => {
            let names: Vec<&String> = p.data.keys().collect();
            let pick = names.get((seed % names.len().max(1) as u64) as usize)?;
            Some(ParamValue::Str(pick.to_string()))
        }
        ParamKind::MapParam => Some(ParamValue::Int(
            (seed % arity.unwrap_or(1).max(1) as u64) as i64,
        )),
        ParamKind::Implementation => None,
    }
}

fn cases() -> u32 {
    std::env::var("DMOVE_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn accepted_steps_keep_results_and_refused_steps_change_nothing(
        r in (0..4i64).prop_map(|k| 2 * k + 1),
        c in (0..4i64).prop_map(|k| 2 * k + 1),
        ops in proptest::collection::vec(op(), 1..6),
        steps in proptest::collection::vec(
            (any::<usize>(), any::<usize>(), any::<u64>(), any::<bool>()), 1..7),
    ) {
        let original = program(r, c, &ops);
        prop_assert!(validate(&original).is_ok(), "{:?}", validate(&original));
        let inputs = random_inputs(&original, 11).expect("static shapes");
        let mut p = original.clone();
        let transformations = builtins();
        let chain = builtin("elementwise_chain").expect("built-in");
        let mut matcher = Matcher::new(chain.clone(), &p);
        for (t_seed, site_seed, param_seed, lower) in steps {
            let t = transformations[t_seed % transformations.len()];
            let candidates = t.candidates(&p);
            if candidates.is_empty() {
                continue;
            }
            let site = &candidates[site_seed % candidates.len()];
            let arity = site.first().and_then(|id| match &p.node(*id)?.kind {
                NodeKind::Map(m) => Some(m.params.len()),
                _ => None,
            });
            let params: Params = t
                .schema()
                .params
                .iter()
                .enumerate()
                .filter_map(|(k, decl)| {
                    let v = param(decl, param_seed.rotate_left(13 * k as u32), arity, &p)?;
                    Some((decl.name.to_string(), v))
                })
                .collect();
            let checks = if lower {
                Checks::default().lower(Layer::Numerics, "checked independently by this test")
            } else {
                Checks::default()
            };
            let before = print_exact(&p);
            match Engine::new(checks).apply(&mut p, t, site, &params) {
                Ok(step) => {
                    prop_assert!(validate(&p).is_ok(), "{} left {:?}", t.name(), validate(&p));
                    let same = same_outputs(&original, &p, &inputs);
                    prop_assert!(same.is_ok(), "{} at {:?} {:?}: {:?}", t.name(), site, params, same);
                    prop_assert_eq!(&step.hash_after, &program_hash(&p));
                    // The hash kept scope by scope equals the hash of a fresh parse, which
                    // has no kept digests: the caches were forgotten wherever the step wrote.
                    let fresh = parse(&print_exact(&p)).expect("the exact form parses").program;
                    prop_assert_eq!(&step.hash_after, &program_hash(&fresh));
                    let fresh_before = parse(&before).expect("the exact form parses").program;
                    prop_assert_eq!(&step.hash_before, &program_hash(&fresh_before));
                    matcher.update(&p, &step.change());
                    prop_assert_eq!(matcher.matches(), find_all(&chain, &p));
                }
                Err(_) => prop_assert_eq!(print_exact(&p), before),
            }
        }
    }
}

/// Calls per generated program in the no-panic property (`.ci/run` runs 1000 programs).
const CALLS: usize = 10;

/// Small operator-level programs (library nodes, as an exporter writes them) so that the
/// operator-level transformations get real sites too: MatMul → Add, Conv → BatchNormalization,
/// Pad → Conv, Transpose → Transpose → MatMul, Reshape → Reshape → Relu, and a constant
/// subgraph. `k` picks one.
fn library_program(k: usize) -> Program {
    use dmove::onnx::{import, AttrValue, ImportOptions, ModelBuilder};
    let w = |n: usize| {
        (0..n)
            .map(|i| ((i * 7 + 3) % 11) as f32 * 0.2 - 1.0)
            .collect::<Vec<_>>()
    };
    let b = ModelBuilder::new("ops", 17);
    let b = match k % 6 {
        0 => b
            .input("X", [3, 4])
            .initializer("W", &[4, 5], w(20))
            .initializer("B", &[5], w(5))
            .node("MatMul", &["X", "W"], &["T"], vec![])
            .node("Add", &["T", "B"], &["Y"], vec![])
            .output("Y", [3, 5]),
        1 => b
            .input("X", [1, 2, 4, 4])
            .initializer("W", &[3, 2, 3, 3], w(54))
            .initializer("s", &[3], w(3))
            .initializer("beta", &[3], w(3))
            .initializer("mean", &[3], w(3))
            .initializer("var", &[3], vec![1.0, 2.0, 0.5])
            .node("Conv", &["X", "W"], &["T"], vec![])
            .node(
                "BatchNormalization",
                &["T", "s", "beta", "mean", "var"],
                &["Y"],
                vec![],
            )
            .output("Y", [1, 3, 2, 2]),
        2 => b
            .input("X", [1, 1, 3, 3])
            .initializer_i64("pads", &[8], vec![0, 0, 1, 1, 0, 0, 1, 1])
            .initializer("W", &[2, 1, 3, 3], w(18))
            .node("Pad", &["X", "pads"], &["P"], vec![])
            .node("Conv", &["P", "W"], &["Y"], vec![])
            .output("Y", [1, 2, 3, 3]),
        3 => b
            .input("X", [3, 4])
            .initializer("W", &[3, 5], w(15))
            .node(
                "Transpose",
                &["X"],
                &["T"],
                vec![("perm", AttrValue::Ints(vec![1, 0]))],
            )
            .node(
                "Transpose",
                &["T"],
                &["U"],
                vec![("perm", AttrValue::Ints(vec![1, 0]))],
            )
            .node(
                "Transpose",
                &["U"],
                &["V"],
                vec![("perm", AttrValue::Ints(vec![1, 0]))],
            )
            .node("MatMul", &["V", "W"], &["Y"], vec![])
            .output("Y", [4, 5]),
        4 => b
            .input("X", [2, 6])
            .initializer_i64("s1", &[2], vec![3, 4])
            .initializer_i64("s2", &[1], vec![12])
            .node("Reshape", &["X", "s1"], &["R"], vec![])
            .node("Reshape", &["R", "s2"], &["S"], vec![])
            .node("Relu", &["S"], &["Y"], vec![])
            .output("Y", [12]),
        _ => b
            .input("X", [4])
            .initializer("A", &[4], w(4))
            .initializer("B", &[4], w(4))
            .node("Add", &["A", "B"], &["C"], vec![])
            .node("Mul", &["X", "C"], &["Y"], vec![])
            .output("Y", [4]),
    };
    let opts = ImportOptions {
        as_written: true,
        ..ImportOptions::default()
    };
    import(&b.build(), &opts).expect("the operator-level program imports")
}

/// A site of any shape: a real candidate, empty, random or stale ids (removed by an earlier
/// call, or never allocated), nodes of any kind, a candidate with an extra node or reversed.
fn any_site(t: &dyn dmove::transform::Transformation, p: &Program, seed: u64) -> Vec<NodeId> {
    let candidates = t.candidates(p);
    let mut nodes = Vec::new();
    p.graph.walk(&mut |n| nodes.push(n.id));
    let pick = |s: u64, v: &[NodeId]| v[(s % v.len().max(1) as u64) as usize % v.len().max(1)];
    let candidate = || {
        candidates
            .get((seed >> 8) as usize % candidates.len().max(1))
            .cloned()
    };
    // Half the calls get a real candidate (so the transformations themselves run, with the
    // parameters below), the rest a site of some wrong shape.
    match seed % 10 {
        0..=4 => candidate().unwrap_or_default(),
        5 => Vec::new(),
        6 => vec![NodeId(((seed >> 8) % (u64::from(p.next_id()) + 5)) as u32)],
        7 => (0..1 + (seed >> 4) % 3)
            .filter(|_| !nodes.is_empty())
            .map(|k| pick(seed >> (8 + 5 * k), &nodes))
            .collect(),
        8 => {
            let mut s = candidate().unwrap_or_default();
            if !nodes.is_empty() {
                s.push(pick(seed >> 20, &nodes));
            }
            s
        }
        _ => candidate()
            .map(|s| s.into_iter().rev().collect())
            .unwrap_or_default(),
    }
}

/// Parameters of any shape: declared keys with values of the declared kind or of any other,
/// sometimes an undeclared key.
fn any_params(
    t: &dyn dmove::transform::Transformation,
    p: &Program,
    seed: u64,
    arity: Option<usize>,
) -> Params {
    let mut params = Params::new();
    for (k, decl) in t.schema().params.iter().enumerate() {
        let s = seed.rotate_left(11 * k as u32 + 3);
        let value = match s % 7 {
            0 => None,
            1 => Some(ParamValue::Int((s >> 8) as i64 % 40 - 20)),
            2 => Some(ParamValue::Ints(vec![
                (s >> 8) as i64 % 9 - 2;
                1 + (s >> 16) as usize % 4
            ])),
            3 => Some(ParamValue::Str(
                ["i", "x", "nhwc", "X", ""][(s >> 8) as usize % 5].into(),
            )),
            4 => Some(ParamValue::Bool(s & 256 == 0)),
            _ => param(decl, s >> 3, arity, p),
        };
        if let Some(v) = value {
            params.insert(decl.name.to_string(), v);
        }
    }
    if seed.is_multiple_of(9) {
        params.insert("bogus".into(), ParamValue::Int(3));
    }
    params
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// No transformation panics on any site or parameters: every call is applied (leaving a
    /// valid program) or refused with a reason (leaving the program byte for byte unchanged),
    /// with the legality layer lowered half the time so that waived preconditions reach the
    /// rewrites themselves.
    #[test]
    fn no_transformation_panics_on_any_site_or_parameters(
        r in (1..4i64).prop_map(|k| 2 * k + 1),
        c in (1..4i64).prop_map(|k| 2 * k),
        ops in proptest::collection::vec(op(), 1..6),
        library in proptest::option::of(0..6usize),
        calls in proptest::collection::vec((any::<usize>(), any::<u64>(), any::<u64>(), any::<bool>()), CALLS),
    ) {
        let mut p = match library {
            Some(k) => library_program(k),
            None => program(r, c, &ops),
        };
        let transformations = builtins();
        for (t_seed, site_seed, param_seed, lower_legality) in calls {
            // Half the calls pick among the transformations that have a candidate here, so
            // most rewrites are really attempted; the rest pick any.
            let applicable: Vec<_> = (transformations.iter().copied())
                .filter(|t| t_seed % 2 == 0 && !t.candidates(&p).is_empty())
                .collect();
            let pool = if applicable.is_empty() { &transformations } else { &applicable };
            let t = pool[(t_seed / 2) % pool.len()];
            let site = any_site(t, &p, site_seed);
            let arity = site.first().and_then(|id| match &p.node(*id)?.kind {
                NodeKind::Map(m) => Some(m.params.len()),
                _ => None,
            });
            let params = any_params(t, &p, param_seed, arity);
            let mut checks = Checks::default().lower(Layer::Numerics, "property test: no panics");
            if lower_legality {
                checks = checks.lower(Layer::Legality, "property test: waived preconditions");
            }
            let before = print_exact(&p);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Engine::new(checks).apply(&mut p, t, &site, &params)
            }));
            match outcome {
                Err(_) => prop_assert!(false, "{} panicked at {:?} with {:?}", t.name(), site, params),
                Ok(Ok(_)) => prop_assert!(validate(&p).is_ok(), "{} left {:?}", t.name(), validate(&p)),
                Ok(Err(refusal)) => {
                    prop_assert!(!refusal.to_string().is_empty());
                    prop_assert_eq!(print_exact(&p), before, "{} refused but changed the program", t.name());
                }
            }
        }
    }
}
