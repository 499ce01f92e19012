//! Does the data-movement model rank program variants the way their run times do?
//!
//! `cargo bench --bench dmd_vs_time` builds families of variants of real kernels — matmul tile
//! sizes (two loops, three loops) and loop orders at two sizes, the three Conv expansions at
//! three layer shapes, element-wise fusion on and off, transposition loop orders and tiling —
//! scores each by DMD (elements, and 64-byte lines) and by the cost model's time estimate
//! (`analysis::cost`, calibrated for this machine), compiles it, checks its outputs against the
//! family's first variant, and times it on one thread (median of `STUDY_REPS` runs after one
//! warm-up). It prints a table per family, Spearman's rank correlation of each score with time
//! per family and overall, and how often choosing by each score lands within 10% of the fastest
//! variant of the family. `STUDY_FAMILIES=matmul,conv` keeps the families whose name contains
//! one of the words.

use dmove::analysis::caches::Caches;
use dmove::analysis::cost::CostModel;
use dmove::analysis::trace::IrTrace;
use dmove::analysis::{analyze, Options};
use dmove::bench::calibrate::cost_model;
use dmove::bench::Stats;
use dmove::check::random_inputs;
use dmove::codegen::Compiled;
use dmove::ir::text::parse;
use dmove::ir::{NodeId, NodeKind, Program};
use dmove::ops::expand::expand_all;
use dmove::transform::engine::{apply, apply_repeatedly, work, Budget, Checks, Layer};
use dmove::transform::{find, ParamValue, Params};

/// Above this many tasklet executions a variant's DMD is sampled (a power-of-two rate).
const EXACT_WORK: u64 = 1 << 22;

/// One program variant of a family.
struct Variant {
    name: String,
    program: Program,
}

/// What the study measured of one variant.
struct Scored {
    name: String,
    dmd_elements: f64,
    dmd_lines: f64,
    estimate_ms: f64,
    time_ms: f64,
}

fn checks() -> Checks {
    Checks::default().lower(
        Layer::Numerics,
        "the study compares each variant's compiled outputs with its family's first variant",
    )
}

fn ints(v: &[i64]) -> ParamValue {
    ParamValue::Ints(v.to_vec())
}

/// The first map labelled `label`.
fn map(p: &Program, label: &str) -> NodeId {
    let mut found = None;
    p.graph.walk(&mut |n| {
        if n.label == label && matches!(n.kind, NodeKind::Map(_)) {
            found.get_or_insert(n.id);
        }
    });
    found.unwrap_or_else(|| panic!("no map {label}"))
}

/// `p` after `transformation` at the map labelled `label` with `params`.
fn with(p: &Program, transformation: &str, label: &str, params: &[(&str, ParamValue)]) -> Program {
    let mut q = p.clone();
    let params: Params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let t = find(transformation).expect("built in");
    let site = map(&q, label);
    apply(&mut q, t, &[site], &params, &checks())
        .unwrap_or_else(|e| panic!("{transformation} at {label}: {e}"));
    q
}

fn lowered(src: &str) -> Program {
    let mut p = parse(src).expect("parses").program;
    expand_all(&mut p).expect("lowers");
    p
}

fn matmul(n: i64) -> Program {
    let src = include_str!("../docs/examples/matmul.ir").replace("n = 256", &format!("n = {n}"));
    lowered(&src)
}

/// MapTiling of the accumulation with `tiles(t)` for each size.
fn matmul_tiles(n: i64, sizes: &[i64], tiles: fn(i64) -> Vec<i64>) -> Vec<Variant> {
    let p = matmul(n);
    (sizes.iter())
        .map(|&t| Variant {
            name: format!("tiles {:?}", tiles(t)),
            program: with(&p, "MapTiling", "mm_acc", &[("tiles", ints(&tiles(t)))]),
        })
        .collect()
}

/// Every order of the accumulation's three loops.
fn matmul_orders(n: i64) -> Vec<Variant> {
    let p = matmul(n);
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    (orders.iter())
        .map(|o| Variant {
            name: format!("order {o:?}"),
            program: with(&p, "MapInterchange", "mm_acc", &[("order", ints(o))]),
        })
        .collect()
}

/// A 3×3 convolution, padding 1, expanded each way.
fn conv(c: i64, m: i64, hw: i64) -> Vec<Variant> {
    let src = format!(
        r#"program "conv"
data X: f32[1, {c}, {hw}, {hw}] input
data W: f32[{m}, {c}, 3, 3] input
data Y: f32[1, {m}, {hw}, {hw}] output
signature (X, W) -> (Y)
graph {{
  n0 access X
  n1 access W
  n2 library "conv" Conv {{ pads = [1, 1, 1, 1] }}
  n3 access Y
  n0 -> n2 X[0:1, 0:{c}, 0:{hw}, 0:{hw}] -> in0
  n1 -> n2 W[0:{m}, 0:{c}, 0:3, 0:3] -> in1
  n2 -> n3 out0 -> Y[0:1, 0:{m}, 0:{hw}, 0:{hw}]
}}
"#
    );
    let p = parse(&src).expect("parses").program;
    ["pure", "padded", "im2col"]
        .iter()
        .map(|&how| {
            let mut q = p.clone();
            let params = Params::from([("impl".to_string(), ParamValue::Str(how.into()))]);
            apply(
                &mut q,
                find("Expand").expect("built in"),
                &[NodeId(2)],
                &params,
                &checks(),
            )
            .expect("expands");
            expand_all(&mut q).expect("lowers");
            Variant {
                name: how.to_string(),
                program: q,
            }
        })
        .collect()
}

/// `Y = relu(A + B) · C`, as three maps or fused into one.
fn fusion(n: i64) -> Vec<Variant> {
    let src = format!(
        r#"program "chain"
data A: f32[{n}] input
data B: f32[{n}] input
data C: f32[{n}] input
data S: f32[{n}] transient
data R: f32[{n}] transient
data Y: f32[{n}] output
signature (A, B, C) -> (Y)
graph {{
  n0 access A
  n1 access B
  n2 access C
  n3 library "add" Add
  n4 access S
  n5 library "relu" Relu
  n6 access R
  n7 library "mul" Mul
  n8 access Y
  n0 -> n3 A[0:{n}] -> in0
  n1 -> n3 B[0:{n}] -> in1
  n3 -> n4 out0 -> S[0:{n}]
  n4 -> n5 S[0:{n}] -> in0
  n5 -> n6 out0 -> R[0:{n}]
  n6 -> n7 R[0:{n}] -> in0
  n2 -> n7 C[0:{n}] -> in1
  n7 -> n8 out0 -> Y[0:{n}]
}}
"#
    );
    let p = lowered(&src);
    let mut fused = p.clone();
    let t = find("MapFusion").expect("built in");
    apply_repeatedly(&mut fused, t, &Params::new(), &checks(), &Budget::steps(8));
    vec![
        Variant {
            name: "three maps".into(),
            program: p,
        },
        Variant {
            name: "fused".into(),
            program: fused,
        },
    ]
}

/// `Y = Xᵀ` row by row, column by column, and in 32×32 tiles.
fn transpose(n: i64) -> Vec<Variant> {
    let src = format!(
        r#"program "transpose"
data X: f32[{n}, {n}] input
data Y: f32[{n}, {n}] output
signature (X) -> (Y)
graph {{
  n0 access X
  n1 library "t" Transpose {{ perm = [1, 0] }}
  n2 access Y
  n0 -> n1 X[0:{n}, 0:{n}] -> in0
  n1 -> n2 out0 -> Y[0:{n}, 0:{n}]
}}
"#
    );
    let p = lowered(&src);
    let label = {
        let mut l = String::new();
        p.graph.each(&mut |n| {
            if matches!(n.kind, NodeKind::Map(_)) {
                l = n.label.clone();
            }
        });
        l
    };
    vec![
        Variant {
            name: "as expanded".into(),
            program: p.clone(),
        },
        Variant {
            name: "interchanged".into(),
            program: with(&p, "MapInterchange", &label, &[("order", ints(&[1, 0]))]),
        },
        Variant {
            name: "tiles 32×32".into(),
            program: with(&p, "MapTiling", &label, &[("tiles", ints(&[32, 32]))]),
        },
    ]
}

/// A family's name and how to build its variants (on demand: only the kept families are built).
type Family = (String, Box<dyn Fn() -> Vec<Variant>>);

fn families() -> Vec<Family> {
    let sizes = [4, 8, 16, 32, 64, 128];
    let mut f: Vec<Family> = Vec::new();
    for n in [256, 512] {
        f.push((
            format!("matmul {n} tiles (i, j)"),
            Box::new(move || matmul_tiles(n, &sizes, |t| vec![t, t, 0])),
        ));
        f.push((
            format!("matmul {n} tiles (i, j, k)"),
            Box::new(move || matmul_tiles(n, &sizes, |t| vec![t, t, t])),
        ));
        f.push((
            format!("matmul {n} loop order"),
            Box::new(move || matmul_orders(n)),
        ));
    }
    for (c, m, hw) in [(16, 32, 56), (32, 64, 28), (64, 64, 14)] {
        f.push((
            format!("conv {c}→{m} {hw}² expansion"),
            Box::new(move || conv(c, m, hw)),
        ));
    }
    for n in [1 << 16, 1 << 20, 1 << 23] {
        f.push((
            format!("elementwise {n} fusion"),
            Box::new(move || fusion(n)),
        ));
    }
    for n in [512, 2048, 4096] {
        f.push((format!("transpose {n}"), Box::new(move || transpose(n))));
    }
    f
}

fn score(v: Variant, caches: &Caches, model: &CostModel, reps: usize) -> (Scored, Program) {
    let p = v.program;
    let sample = work(&p).and_then(|w| {
        let mut rate = 1.0;
        let mut w = w;
        while w > EXACT_WORK && rate > 1.0 / 1024.0 {
            w /= 2;
            rate /= 2.0;
        }
        (rate < 1.0).then_some(rate)
    });
    let trace = IrTrace::new(&p).expect("traces");
    let elements = Options {
        sample,
        ..Options::default()
    };
    let lines = Options {
        line: Some(caches.line_bytes()),
        caches: Some(caches.clone()),
        sample,
        ..Options::default()
    };
    let e = analyze(&trace, &elements).expect("analyzes");
    let l = analyze(&trace, &lines).expect("analyzes");
    let compiled = Compiled::build(&p).expect("compiles");
    let inputs = random_inputs(&p, 7).expect("inputs");
    let samples = compiled
        .bench_threads(&inputs, 1, reps, Some(1))
        .expect("runs");
    let scored = Scored {
        name: v.name,
        dmd_elements: e.total.dmd,
        dmd_lines: l.total.dmd,
        estimate_ms: model.estimate_ms(&l.total),
        time_ms: Stats::from_samples(&samples).expect("samples").median_ms,
    };
    (scored, p)
}

/// Fails the study when a variant's outputs differ from the reference program's.
fn check_outputs(reference: &Program, p: &Program, name: &str) {
    let inputs = random_inputs(reference, 11).expect("inputs");
    let want = Compiled::build(reference)
        .expect("compiles")
        .run(&inputs)
        .expect("runs");
    let got = Compiled::build(p)
        .expect("compiles")
        .run(&inputs)
        .expect("runs");
    for (k, w) in &want {
        let c = dmove::numerics::compare(&got[k], w);
        assert!(
            c.within_tolerance,
            "{name}: output {k} differs by {}",
            c.max_abs_error
        );
    }
}

/// Ranks (1 = smallest), ties averaged.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        for &k in &idx[i..=j] {
            r[k] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation (Pearson correlation of the ranks).
fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let m = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / m, rb.iter().sum::<f64>() / m);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

type Pick = fn(&Scored) -> f64;

const SCORES: [(&str, Pick); 3] = [
    ("DMD (elements)", |s| s.dmd_elements),
    ("DMD (lines)", |s| s.dmd_lines),
    ("cost model", |s| s.estimate_ms),
];

fn main() {
    let reps: usize = std::env::var("STUDY_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let keep: Vec<String> = std::env::var("STUDY_FAMILIES")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let caches = Caches::detect().expect("this machine's caches");
    let (model, _) = cost_model(&caches, false).expect("calibrates");
    println!("cost model (ns): {}\n", model.describe());
    let mut all: Vec<Vec<Scored>> = Vec::new();
    for (name, build) in families() {
        if !keep.is_empty() && !keep.iter().any(|k| name.contains(k.as_str())) {
            continue;
        }
        let variants = build();
        let mut scored = Vec::new();
        let mut reference = None;
        for v in variants {
            let (s, p) = score(v, &caches, &model, reps);
            match &reference {
                None => reference = Some(p),
                Some(r) => check_outputs(r, &p, &s.name),
            }
            scored.push(s);
        }
        println!("### {name}\n");
        println!("| variant | DMD (elements) | DMD (lines) | model ms | measured ms |");
        println!("|---|---:|---:|---:|---:|");
        for s in &scored {
            println!(
                "| {} | {:.4e} | {:.4e} | {:.3} | {:.3} |",
                s.name, s.dmd_elements, s.dmd_lines, s.estimate_ms, s.time_ms
            );
        }
        let times: Vec<f64> = scored.iter().map(|s| s.time_ms).collect();
        let line: Vec<String> = (SCORES.iter())
            .map(|(label, pick)| {
                let v: Vec<f64> = scored.iter().map(pick).collect();
                format!("{label} {:.2}", spearman(&v, &times))
            })
            .collect();
        println!("\nSpearman with time: {}\n", line.join(", "));
        all.push(scored);
    }
    println!("### Summary over {} families\n", all.len());
    println!("| score | Spearman, all variants | families with Spearman ≥ 0.8 | choices within 10% of the fastest |");
    println!("|---|---:|---:|---:|");
    for (label, pick) in SCORES {
        let v: Vec<f64> = all.iter().flatten().map(pick).collect();
        let t: Vec<f64> = all.iter().flatten().map(|s| s.time_ms).collect();
        let mut good = 0;
        let mut within = 0;
        for f in &all {
            let fv: Vec<f64> = f.iter().map(pick).collect();
            let ft: Vec<f64> = f.iter().map(|s| s.time_ms).collect();
            good += usize::from(spearman(&fv, &ft) >= 0.8);
            let chosen = (0..f.len())
                .min_by(|&a, &b| fv[a].total_cmp(&fv[b]))
                .unwrap_or(0);
            let fastest = ft.iter().copied().fold(f64::INFINITY, f64::min);
            within += usize::from(ft[chosen] <= 1.1 * fastest);
        }
        println!(
            "| {label} | {:.2} | {good} of {} | {within} of {} |",
            spearman(&v, &t),
            all.len(),
            all.len()
        );
    }
}
