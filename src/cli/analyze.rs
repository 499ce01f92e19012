//! `dmove analyze`: data-movement reports, sweeps with leading terms, and choosing tile sizes.

use super::recipe::{optimize, WithRecipe};
use super::{
    load_program, output_path, parse_node_id, print_json, write_output, Bindings, CliError,
};
use crate::analysis::caches::Caches;
use crate::analysis::choose::{choose_by_dmd, tile_candidates};
use crate::analysis::cost::CostModel;
use crate::analysis::fit::sweep;
use crate::analysis::kernels::Kernel;
use crate::analysis::trace::IrTrace;
use crate::analysis::{analyze as run_analysis, AccessSource, AnalysisError, Options};
use crate::ir::Program;
use crate::ops::expand::expand_all;
use crate::transform::engine::Checks;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `dmove analyze`
#[derive(Clone, Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// An `.onnx` model or textual IR (omit with `--kernel`).
    #[arg(value_name = "MODEL")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub bindings: Bindings,
    /// A built-in kernel instead of a model.
    #[arg(long, value_name = "NAME", long_help = kernel_help(), conflicts_with = "recipe")]
    pub kernel: Option<String>,
    /// Kernel parameters, e.g. `--param n=64 --param order=kij`.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Keep only these arrays' accesses in the trace, e.g. `--only L,R`.
    #[arg(long, value_delimiter = ',', value_name = "ARRAY")]
    pub only: Vec<String>,
    /// Cache-line granularity in bytes (default: element granularity).
    #[arg(long, value_name = "BYTES")]
    pub line: Option<u64>,
    /// SHARDS spatial sampling rate in (0, 1] for very long traces (estimates).
    #[arg(long, value_name = "RATE")]
    pub sample: Option<f64>,
    /// Count each cache level's misses and traffic (DRAM included) at line granularity: this
    /// machine's caches (no value, or `auto`), or the ones a JSON file describes
    /// (`{"levels": [{"name": "L1d", "size_bytes": 49152, "line_bytes": 64}, …]}`).
    #[arg(long, value_name = "CACHES.json", num_args = 0..=1, default_missing_value = "auto")]
    pub machine: Option<PathBuf>,
    /// Measure this machine's costs again (about ten seconds) instead of using the kept ones;
    /// with `--machine` and no file, the report estimates the time from them.
    #[arg(long, requires = "machine")]
    pub calibrate: bool,
    /// Print the report (or the sweep, or the tile choice) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a figure as SVG: the miss-ratio curve and DMD per node and per array (with
    /// `--recipe`: the naive lowering and the recipe's result side by side).
    #[arg(long, value_name = "OUT.svg")]
    pub plot: Option<PathBuf>,
    /// With `--recipe`, the report (and `--plot`) compares the naive lowering with the result.
    #[command(flatten)]
    pub with: WithRecipe,
    /// Evaluate at several sizes and fit the leading term: `n=32..512` (doubling) or `n=32,48`.
    #[arg(long, value_name = "NAME=RANGE", conflicts_with = "recipe")]
    pub sweep: Option<String>,
    /// Choose the tile size of this map (node id, after lowering) by DMD.
    #[arg(long, value_name = "MAP", conflicts_with = "recipe")]
    pub choose_tile: Option<String>,
    /// Tile sizes to choose from, with `--choose-tile`, e.g. `--candidates 8,16,32,64`.
    #[arg(long, value_delimiter = ',', value_name = "SIZE")]
    pub candidates: Vec<i64>,
}

/// What is analyzed: a program (with its symbols) or a built-in kernel.
enum Subject {
    Program(Box<Program>),
    Kernel(String, BTreeMap<String, String>),
}

impl Subject {
    /// The source at the subject's own sizes, or with `param` set to `value`.
    fn source(&self, set: Option<(&str, u64)>) -> Result<Box<dyn AccessSource>, AnalysisError> {
        match self {
            Subject::Program(p) => {
                let mut p = Program::clone(p);
                if let Some((name, v)) = set {
                    if !p.symbols.contains_key(name) {
                        return Err(AnalysisError::BadOption(format!(
                            "the program has no symbol `{name}` to sweep (symbols: {})",
                            p.symbols.keys().cloned().collect::<Vec<_>>().join(", ")
                        )));
                    }
                    p.symbols.insert(name.to_string(), Some(v as i64));
                }
                Ok(Box::new(IrTrace::new(&p)?))
            }
            Subject::Kernel(name, params) => {
                let mut params = params.clone();
                if let Some((k, v)) = set {
                    params.insert(k.to_string(), v.to_string());
                }
                Ok(Box::new(Kernel::new(name, &params)?))
            }
        }
    }
}

pub fn analyze(args: &AnalyzeArgs) -> Result<(), CliError> {
    let subject =
        match (&args.model, &args.kernel) {
            (Some(path), None) => Subject::Program(Box::new(load_program(path, &args.bindings)?)),
            (None, Some(kernel)) => Subject::Kernel(kernel.clone(), kernel_params(&args.params)?),
            _ => return Err(CliError::Usage(
                "give either a MODEL file or `--kernel NAME` (e.g. --kernel matmul --param n=64)"
                    .into(),
            )),
        };
    let caches = match &args.machine {
        None => None,
        Some(p) if p.as_os_str() == "auto" => Some(Caches::detect().map_err(AnalysisError::from)?),
        Some(p) => Some(Caches::from_file(p).map_err(AnalysisError::from)?),
    };
    let opts = Options {
        line: args.line.or(caches.as_ref().map(Caches::line_bytes)),
        only: (!args.only.is_empty()).then(|| args.only.iter().cloned().collect()),
        sample: args.sample,
        caches,
    };
    if let Some(map) = &args.choose_tile {
        let Subject::Program(p) = subject else {
            return Err(CliError::Usage(
                "`--choose-tile` rewrites a program: give a MODEL, not a kernel".into(),
            ));
        };
        return choose_tile(*p, map, &args.candidates, &opts, args.json);
    }
    if let Some(spec) = &args.sweep {
        let (param, values) = parse_sweep(spec)?;
        let s = sweep(&param, &values, &opts, &|v| {
            subject.source(Some((&param, v)))
        })?;
        return emit(args.json, &s, &s.render());
    }
    if let (Some(recipe), Some(model)) = (&args.with.recipe, &args.model) {
        return compare(args, model, recipe, &opts);
    }
    let mut report = run_analysis(subject.source(None)?.as_ref(), &opts)?;
    if let Some(model) = cost_model(args, opts.caches.as_ref())? {
        report.estimate(&model);
    }
    if let Some(path) = &args.plot {
        write_output(path, crate::analysis::svg::plot(&report).as_bytes())?;
    }
    emit(args.json, &report, &report.render())
}

/// This machine's cost model when `--machine` names no file (another machine's costs cannot
/// be measured here), calibrated now when none is kept or `--calibrate` asks.
fn cost_model(args: &AnalyzeArgs, caches: Option<&Caches>) -> Result<Option<CostModel>, CliError> {
    let Some(caches) = caches.filter(|_| args.machine.as_deref() == Some(Path::new("auto"))) else {
        return Ok(None);
    };
    let (model, measured) = crate::bench::calibrate::cost_model(caches, args.calibrate)?;
    if measured {
        eprintln!("calibrated this machine's costs (ns): {}", model.describe());
        for p in &model.probes {
            eprintln!(
                "  {} probe, {} KiB: measured {:.3} ms, modelled {:.3} ms",
                p.kind,
                p.working_set_bytes >> 10,
                p.measured_ns / 1e6,
                p.modelled_ns / 1e6
            );
        }
    }
    Ok(Some(model))
}

/// The naive lowering of `model` against the model after `recipe`: both reports, and the
/// comparison figure with `--plot`.
fn compare(
    args: &AnalyzeArgs,
    model: &Path,
    recipe: &Path,
    opts: &Options,
) -> Result<(), CliError> {
    let o = optimize(model, &args.bindings, recipe, &args.with.set, 0)?;
    let before = run_analysis(&IrTrace::new(&o.imported)?, opts)?;
    let after = run_analysis(&IrTrace::new(&o.done.program)?, opts)?;
    if let Some(path) = &args.plot {
        let svg =
            crate::analysis::svg::compare(&before, &after, ["naive lowering", "after recipe"]);
        write_output(path, svg.as_bytes())?;
    }
    let both = Compared {
        baseline: before,
        optimized: after,
    };
    let text = format!(
        "naive lowering\n{}\n{}\n{}",
        both.baseline.render(),
        o.origin,
        both.optimized.render()
    );
    emit(args.json, &both, &text)
}

/// `analyze --recipe --json`: both reports.
#[derive(serde::Serialize)]
struct Compared {
    baseline: crate::analysis::Report,
    optimized: crate::analysis::Report,
}

fn choose_tile(
    mut p: Program,
    map: &str,
    sizes: &[i64],
    opts: &Options,
    json: bool,
) -> Result<(), CliError> {
    if sizes.is_empty() {
        return Err(CliError::Usage(
            "`--choose-tile MAP` needs `--candidates`, e.g. --candidates 8,16,32,64".into(),
        ));
    }
    expand_all(&mut p)?;
    let map = parse_node_id(map)?;
    let candidates = tile_candidates(&p, map, sizes)?;
    let choice = choose_by_dmd(
        &p,
        "MapTiling",
        &[map],
        &candidates,
        opts,
        &Checks::default(),
    )?;
    let mut text = format!(
        "{} at {map} by DMD ({}):\n",
        choice.transformation, choice.granularity
    );
    for (i, s) in choice.scores.iter().enumerate() {
        let tiles = s
            .params
            .get("tiles")
            .map(|v| v.to_string())
            .unwrap_or_default();
        let mark = if i == choice.chosen {
            "  <- chosen"
        } else {
            ""
        };
        text.push_str(&match (s.dmd, &s.refused) {
            (Some(d), _) => format!("  tiles={tiles:<16} dmd {d:.6e}{mark}\n"),
            (None, Some(why)) => format!("  tiles={tiles:<16} refused: {why}\n"),
            (None, None) => format!("  tiles={tiles:<16} not scored\n"),
        });
    }
    emit(json, &choice, &text)
}

fn emit(json: bool, value: &impl serde::Serialize, text: &str) -> Result<(), CliError> {
    if json {
        print_json(value)
    } else {
        write_output(output_path(None), text.as_bytes())
    }
}

impl From<AnalysisError> for CliError {
    fn from(e: AnalysisError) -> Self {
        CliError::Analysis(Box::new(e))
    }
}

fn kernel_params(pairs: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    pairs
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(CliError::BadOption {
                what: "kernel parameter",
                text: s.clone(),
                hint: "write NAME=VALUE, e.g. n=64 or order=kij",
            }),
        })
        .collect()
}

/// `n=32..512` (powers of two times the start, up to the end) or `n=32,48,64`.
pub fn parse_sweep(spec: &str) -> Result<(String, Vec<u64>), CliError> {
    let bad = || CliError::BadOption {
        what: "sweep",
        text: spec.to_string(),
        hint: "write NAME=FROM..TO (doubling) or NAME=A,B,C with positive integers, e.g. n=32..512",
    };
    let (name, range) = spec.split_once('=').ok_or_else(bad)?;
    let int = |s: &str| s.trim().parse::<u64>().ok().filter(|v| *v > 0);
    let values: Vec<u64> = if let Some((a, b)) = range.split_once("..") {
        let (a, b) = (int(a).ok_or_else(bad)?, int(b).ok_or_else(bad)?);
        std::iter::successors(Some(a), |v| v.checked_mul(2))
            .take_while(|v| *v <= b)
            .collect()
    } else {
        range
            .split(',')
            .map(int)
            .collect::<Option<_>>()
            .ok_or_else(bad)?
    };
    if name.trim().is_empty() || values.is_empty() {
        return Err(bad());
    }
    Ok((name.trim().to_string(), values))
}

/// The long help of `--kernel`: every built-in kernel with its parameters.
pub fn kernel_help() -> String {
    let kernels: Vec<String> = (crate::analysis::kernels::KERNELS.iter())
        .map(|(k, p)| format!("  {k}: {p}"))
        .collect();
    format!(
        "A built-in kernel instead of a model; its sizes are set with `--param`:\n{}",
        kernels.join("\n")
    )
}
