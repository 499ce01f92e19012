//! `dmove bench MODEL` / `dmove bench --suite [kernels|networks]`: the baseline, the recipe's
//! program and the peers side by side (see [`crate::demo::bench`]), as a table per workload or
//! as JSON.

use super::recipe::{load_checked, load_model, locked_decisions, ScriptLimits};
use super::{is_onnx, print_json, write_output, Bindings, CliError};
use crate::bench::machine::Machine;
use crate::bench::peer::Peer;
use crate::bench::report::{
    load_note, render_ratios, render_table, render_under_load, UnderLoad, WorkloadFigures,
};
use crate::bench::variants::{require_agreement, Settings};
use crate::demo::bench::{
    import_bytes, measure_all, measure_steps, measure_under_load, prepare, BenchOptions, Measured,
    Prepared,
};
use crate::demo::suite;
use crate::plot::{bench_chart, Timing};
use crate::progress::{Mode, Progress};
use crate::recipe::run::value::ParamValue;
use crate::recipe::Loaded;
use crate::transform::engine::Checks;
use crate::zoo::networks::networks;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `--vs` may name besides dmove's own optimized program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Versus {
    Baseline,
    Onnxruntime,
    Openvino,
    Numpy,
}

/// The built-in suites of `--suite`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    // Single operators and encoder layers, in seconds (`crate::demo::suite`); plain comments,
    // so `--help` lists the values on one line.
    Kernels,
    // Whole networks at deployment size, in minutes each (`crate::zoo::networks`).
    Networks,
}

impl Suite {
    fn name(self) -> &'static str {
        match self {
            Suite::Kernels => "kernels",
            Suite::Networks => "networks",
        }
    }
}

/// `dmove bench`
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// The model: an `.onnx` file (the peers run it too), or textual IR.
    #[arg(
        value_name = "MODEL",
        required_unless_present = "suite",
        conflicts_with = "suite"
    )]
    pub model: Option<PathBuf>,
    /// Run a built-in suite instead of a model: `kernels` (the default) or `networks`.
    #[arg(
        long,
        value_enum,
        value_name = "SUITE",
        num_args = 0..=1,
        default_missing_value = "kernels"
    )]
    pub suite: Option<Suite>,
    /// With `--suite`: run only these workloads (comma-separated names, as `--list` prints).
    #[arg(long, value_delimiter = ',', value_name = "NAMES", requires = "suite")]
    pub only: Vec<String>,
    /// With `--suite`: print the suite's workloads, one a line (name, then title); run nothing.
    #[arg(long, requires = "suite")]
    pub list: bool,
    /// The recipe that makes the `dmove` variant (a file, or `std::NAME`).
    #[arg(long, value_name = "RECIPE", default_value = "std::cpu")]
    pub recipe: PathBuf,
    /// What to compare with (comma-separated; default: all of them, numpy only where the
    /// workload is a single MatMul).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "VARIANTS")]
    pub vs: Option<Vec<Versus>>,
    /// Threads of every variant and peer (default: every CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Timed runs per variant (the median is reported).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Untimed warm-up runs per variant.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Measure everything once more beside one competing busy process (started and stopped
    /// by the benchmark).
    #[arg(long)]
    pub load: bool,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also draw each workload's timings as a bar chart (median, min–max whiskers) into this
    /// SVG file; with several workloads (`--suite`), one file each, named `STEM-WORKLOAD.svg`.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Seed of the random inputs (and of the suite's weights).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub bindings: Bindings,
    #[command(flatten)]
    pub script_limits: ScriptLimits,
}

/// The JSON of `dmove bench --json`.
#[derive(Serialize)]
struct BenchJson<'a> {
    machine: &'a Machine,
    settings: &'a Settings,
    recipe: String,
    workloads: Vec<WorkloadFigures>,
    /// With `--load`: the same workloads beside a competing busy process.
    under_load: Option<LoadedJson>,
}

#[derive(Serialize)]
struct LoadedJson {
    workloads: Vec<WorkloadFigures>,
    comparison: Vec<UnderLoad>,
}

pub fn bench(args: &BenchArgs) -> Result<(), CliError> {
    if let (Some(suite), true) = (args.suite, args.list) {
        let lines: String = (catalogue(suite).iter())
            .map(|(name, title)| format!("{name}\t{title}\n"))
            .collect();
        return write_output(Path::new("-"), lines.as_bytes());
    }
    args.script_limits.configure()?;
    let recipe = load_checked(&args.recipe)?.loaded;
    let opts = options(args);
    let mode = Mode::for_stderr(args.json);
    let machine = Machine::detect();
    let prepared = {
        let sources = sources(args, &recipe)?;
        let bar = Progress::new(mode, "optimizing", sources.len() as u64);
        let mut prepared = Vec::new();
        for ((name, title, program, onnx), fixed) in sources {
            bar.step(&format!("{name}: running {}", args.recipe.display()));
            prepared.push(prepare(
                &name, &title, program, onnx, &recipe, fixed, &opts,
            )?);
            bar.advance();
        }
        prepared
    };
    let bar = Progress::new(mode, "benchmark", measure_steps(&prepared, &opts));
    let idle = measure_all(&prepared, &opts, &bar)?;
    drop(bar);
    let loaded = if args.load {
        let bar = Progress::new(
            mode,
            "benchmark under load",
            measure_steps(&prepared, &opts),
        );
        Some(measure_under_load(&prepared, &opts, &bar)?)
    } else {
        None
    };
    let peak = machine.peak_gflops;
    if args.json {
        let figures = |m: &[Measured]| {
            (m.iter())
                .map(|w| {
                    WorkloadFigures::new(
                        (&w.name, &w.title),
                        w.flops,
                        w.reference.clone(),
                        &w.rows,
                        peak,
                    )
                })
                .collect()
        };
        print_json(&BenchJson {
            machine: &machine,
            settings: &opts.settings,
            recipe: args.recipe.display().to_string(),
            workloads: figures(&idle),
            under_load: loaded.as_ref().map(|l| LoadedJson {
                workloads: figures(l),
                comparison: comparisons(&idle, l),
            }),
        })?;
    } else {
        let text = render(
            args,
            &machine,
            &opts.settings,
            &prepared,
            &idle,
            loaded.as_deref(),
        );
        write_output(Path::new("-"), text.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        write_charts(path, &idle)?;
    }
    for m in idle.iter().chain(loaded.iter().flatten()) {
        require_agreement(&m.rows)?;
    }
    Ok(())
}

/// One bench chart per measured workload (the idle runs): at `path` for a single workload,
/// beside it as `STEM-NAME.EXT` for several. Rows without timings (a missing peer) are left out.
fn write_charts(path: &Path, measured: &[Measured]) -> Result<(), CliError> {
    for m in measured {
        let timings: Vec<Timing> = (m.rows.iter())
            .filter_map(|r| {
                let s = r.stats.as_ref()?;
                Some(Timing {
                    label: r.variant.clone(),
                    median_ms: s.median_ms,
                    min_ms: s.min_ms,
                    max_ms: s.max_ms,
                    reps: s.reps,
                })
            })
            .collect();
        let title = format!("{}: {}", m.name, m.title);
        let file = if measured.len() == 1 {
            path.to_path_buf()
        } else {
            chart_path(path, &m.name)
        };
        write_output(&file, bench_chart(&title, &timings).as_bytes())?;
    }
    Ok(())
}

/// `dir/stem.ext` → `dir/stem-name.ext` (the workload's name is a suite identifier).
fn chart_path(path: &Path, name: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("bench".into(), |s| s.to_string_lossy());
    let file = match path.extension() {
        Some(ext) => format!("{stem}-{name}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{name}.svg"),
    };
    path.with_file_name(file)
}

fn options(args: &BenchArgs) -> BenchOptions {
    let vs = args.vs.clone().unwrap_or_else(|| {
        vec![
            Versus::Baseline,
            Versus::Onnxruntime,
            Versus::Openvino,
            Versus::Numpy,
        ]
    });
    let peers = (vs.iter())
        .filter_map(|v| match v {
            Versus::Baseline => None,
            Versus::Onnxruntime => Some(Peer::OnnxRuntime),
            Versus::Openvino => Some(Peer::OpenVino),
            Versus::Numpy => Some(Peer::Numpy),
        })
        .collect();
    let threads = crate::codegen::available_cpus();
    BenchOptions {
        settings: Settings {
            warmup: args.warmup as usize,
            reps: args.reps as usize,
            threads: args.threads.map_or(threads, usize::from),
        },
        baseline: vs.contains(&Versus::Baseline),
        peers,
        numpy_explicit: args.vs.as_ref().is_some_and(|v| v.contains(&Versus::Numpy)),
        seed: args.seed,
        checks: Checks::default(),
    }
}

/// A workload: (name, title, program as imported, ONNX bytes for the peers).
type Source = (String, String, crate::ir::Program, Option<Vec<u8>>);

/// Parameter values replayed from a lock, by key.
type Decisions = BTreeMap<String, ParamValue>;

/// A workload of a built-in suite, built in memory.
struct SuiteWorkload {
    name: String,
    title: String,
    onnx: Vec<u8>,
    dims: Vec<(&'static str, i64)>,
}

/// Name and title of every workload of `suite`, in the order they run (no network is built).
fn catalogue(suite: Suite) -> Vec<(String, String)> {
    match suite {
        Suite::Kernels => (suite::models(0).into_iter())
            .map(|m| (m.name.into(), m.title))
            .collect(),
        Suite::Networks => (networks().into_iter())
            .map(|n| (n.name.into(), n.title.into()))
            .collect(),
    }
}

/// The workloads of `suite` that `only` names (all when it is empty), weights drawn from
/// `seed`; an unknown name is an error that lists the suite's.
fn suite_workloads(
    suite: Suite,
    only: &[String],
    seed: u64,
) -> Result<Vec<SuiteWorkload>, CliError> {
    let known: Vec<String> = catalogue(suite).into_iter().map(|(name, _)| name).collect();
    if let Some(unknown) = only.iter().find(|o| !known.contains(o)) {
        return Err(CliError::Usage(format!(
            "`{unknown}` is not a workload of the {} suite; it has: {}",
            suite.name(),
            known.join(", ")
        )));
    }
    let chosen = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    Ok(match suite {
        Suite::Kernels => (suite::models(seed).into_iter())
            .filter(|m| chosen(m.name))
            .map(|m| SuiteWorkload {
                name: m.name.into(),
                title: m.title,
                onnx: m.onnx,
                dims: Vec::new(),
            })
            .collect(),
        Suite::Networks => (networks().into_iter())
            .filter(|n| chosen(n.name))
            .map(|n| SuiteWorkload {
                name: n.name.into(),
                title: n.title.into(),
                onnx: n.build(seed).bytes,
                dims: n.dims,
            })
            .collect(),
    })
}

/// The workloads to run, each with the decisions the recipe's lock records for it (see
/// [`super::recipe::locked_decisions`]; none for a suite, whose models no lock names). A
/// model is read and imported once, for both.
fn sources(args: &BenchArgs, recipe: &Loaded) -> Result<Vec<(Source, Decisions)>, CliError> {
    if let Some(suite) = args.suite {
        return (suite_workloads(suite, &args.only, args.seed)?.into_iter())
            .map(|w| {
                let program = import_bytes(&w.onnx, &w.dims)?;
                let source = (w.name, w.title, program, Some(w.onnx));
                Ok((source, BTreeMap::new()))
            })
            .collect();
    }
    let Some(path) = &args.model else {
        return Err(CliError::Usage("give a MODEL or --suite".into()));
    };
    let lock_path = super::recipe::run::default_lock(&args.recipe);
    let model = load_model(path, &args.bindings, &BTreeMap::new(), &lock_path)?;
    let fixed = locked_decisions(recipe, &args.recipe, &model)?;
    let name =
        (path.file_stem()).map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    let onnx = is_onnx(path).then_some(model.bytes);
    let source = (name, path.display().to_string(), model.program, onnx);
    Ok(vec![(source, fixed)])
}

fn comparisons(idle: &[Measured], loaded: &[Measured]) -> Vec<UnderLoad> {
    (idle.iter().zip(loaded))
        .filter_map(|(i, l)| UnderLoad::new(&i.name, &i.rows, &l.rows))
        .collect()
}

fn render(
    args: &BenchArgs,
    machine: &Machine,
    settings: &Settings,
    prepared: &[Prepared],
    idle: &[Measured],
    loaded: Option<&[Measured]>,
) -> String {
    let mut out = format!(
        "machine: {}\n{}\nthreads {}, {} warm-up and {} timed runs per variant; dmove = {}\n",
        machine.describe(),
        machine.peak_assumption,
        settings.threads,
        settings.warmup,
        settings.reps,
        args.recipe.display(),
    );
    let section = |out: &mut String, runs: &[Measured]| {
        for (m, p) in runs.iter().zip(prepared) {
            out.push_str(&format!(
                "\n== {}: {} — {:.1} MFLOP; {} recipe steps; outputs checked against {}\n",
                m.name,
                m.title,
                m.flops as f64 / 1e6,
                p.steps,
                m.reference.describe()
            ));
            out.push_str(&render_table(&m.rows, machine.peak_gflops));
            out.push_str(&render_ratios(&m.rows));
            out.push_str(&load_note(&m.rows));
        }
    };
    section(&mut out, idle);
    if let Some(loaded) = loaded {
        out.push_str("\n#### again, beside one competing busy process\n");
        section(&mut out, loaded);
        out.push_str("\nunder load (medians in ms):\n");
        out.push_str(&render_under_load(&comparisons(idle, loaded)));
    }
    out
}
