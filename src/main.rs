//! The `dmove` command line: argument declarations only; the work is in `dmove::cli`.

use clap::{Args, Parser, Subcommand};
use dmove::cli::analyze::{self, AnalyzeArgs};
use dmove::cli::commands::{self, ApplyArgs, DemoArgs, ImportArgs};
use dmove::cli::conformance::{conformance, ConformanceArgs};
use dmove::cli::matching::{self, MatchArgs};
use dmove::cli::{Bindings, CliError};
use dmove::demo::model::EncoderConfig;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "dmove",
    version,
    about = "Make neural networks fast by moving less data"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a transformer encoder layer, optimize it, check it and benchmark it (no files needed).
    Demo {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Only write the demo's ONNX model to this file (so peers can run the same model).
        #[arg(long, value_name = "FILE")]
        write_model: Option<PathBuf>,
        /// Timed repetitions per variant (the median is reported).
        #[arg(long, default_value_t = 15)]
        reps: usize,
        /// Untimed warm-up runs per variant.
        #[arg(long, default_value_t = 3)]
        warmup: usize,
        /// Skip the ONNX Runtime comparison.
        #[arg(long)]
        no_peer: bool,
        #[arg(long, default_value_t = 128)]
        seq: i64,
        #[arg(long, default_value_t = 256)]
        hidden: i64,
        #[arg(long, default_value_t = 4)]
        heads: i64,
        #[arg(long, default_value_t = 1024)]
        ffn: i64,
    },
    /// Import a model (ONNX or textual IR) and print its IR.
    Import {
        model: PathBuf,
        #[command(flatten)]
        bindings: BindingArgs,
        /// Lower every operator to maps and tasklets first.
        #[arg(long)]
        expand: bool,
        /// Include every constant's values, so the output can be loaded again.
        #[arg(long)]
        exact: bool,
        /// Write Graphviz DOT to this file (`-` for standard output).
        #[arg(long, value_name = "FILE")]
        dot: Option<PathBuf>,
        /// Write the IR here instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print a summary instead of the IR: operators with counts, parameters, weight bytes,
        /// FLOPs.
        #[arg(long)]
        summary: bool,
        /// With `--summary`: print it as JSON.
        #[arg(long, requires = "summary")]
        json: bool,
    },
    /// List the transformations.
    Transforms {
        #[arg(long)]
        json: bool,
    },
    /// Apply one transformation by hand and print the resulting IR, or the refusal and its reason.
    Apply {
        model: PathBuf,
        #[command(flatten)]
        bindings: BindingArgs,
        /// Transformation name (see `dmove transforms`).
        #[arg(long = "transform", short = 't')]
        transform: String,
        /// Node ids of the site, e.g. `--at n12` (MapFusion takes producer and consumer).
        #[arg(long, required = true, num_args = 1.., value_delimiter = ',')]
        at: Vec<String>,
        /// Parameters, e.g. `--param tiles=32,32,0`.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Lower every operator to maps and tasklets before applying.
        #[arg(long)]
        expand: bool,
        /// Skip the numerics check (recorded in the step's checks).
        #[arg(long)]
        no_numerics: bool,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Find a built-in pattern (matmul_add, conv_bn, elementwise_chain) and list its matches,
    /// or say why it does not match at a node.
    Match {
        model: PathBuf,
        #[command(flatten)]
        bindings: BindingArgs,
        /// Built-in pattern name.
        #[arg(long)]
        pattern: String,
        /// Explain the match anchored at this node, e.g. `--why n12`.
        #[arg(long, value_name = "NODE")]
        why: Option<String>,
        /// Lower every operator to maps and tasklets first.
        #[arg(long)]
        expand: bool,
    },
    /// Data movement: reuse distances, DMD, miss-ratio curve, per node and array; sweeps with
    /// leading-term fits; choosing a map's tile size by DMD.
    Analyze {
        /// An `.onnx` model or textual IR (omit with `--kernel`).
        model: Option<PathBuf>,
        #[command(flatten)]
        bindings: BindingArgs,
        /// A built-in kernel instead of a model.
        #[arg(long, long_help = analyze::kernel_help())]
        kernel: Option<String>,
        /// Kernel parameters, e.g. `--param n=64 --param order=kij`.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Keep only these arrays' accesses in the trace, e.g. `--only L,R`.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Cache-line granularity in bytes (default: element granularity).
        #[arg(long, value_name = "BYTES")]
        line: Option<u64>,
        /// SHARDS spatial sampling rate in (0, 1] for very long traces (estimates).
        #[arg(long, value_name = "RATE")]
        sample: Option<f64>,
        #[arg(long)]
        json: bool,
        /// Write the miss-ratio curve and per-node DMD bars as SVG.
        #[arg(long, value_name = "OUT.svg")]
        plot: Option<PathBuf>,
        /// Evaluate at several sizes and fit the leading term: `n=32..512` (doubling) or `n=32,48`.
        #[arg(long, value_name = "NAME=RANGE")]
        sweep: Option<String>,
        /// Choose the tile size of this map (node id, after lowering) by DMD.
        #[arg(long, value_name = "MAP")]
        choose_tile: Option<String>,
        /// Tile sizes to choose from.
        #[arg(long, value_delimiter = ',')]
        candidates: Vec<i64>,
    },
    /// Lower a model completely and print the generated C.
    C {
        model: PathBuf,
        #[command(flatten)]
        bindings: BindingArgs,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Run the ONNX backend test cases in DIR (from `scripts/onnx_node_tests.py`) through the
    /// interpreter and the generated C.
    Conformance {
        dir: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Only cases whose name contains this.
        #[arg(long, value_name = "SUBSTR")]
        filter: Option<String>,
        /// Skip the generated C (interpreter only).
        #[arg(long)]
        no_c: bool,
        /// Cases run at once (each compile uses one core).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Exit non-zero when a case listed in FILE does not pass.
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// Write the names of the passing cases to FILE.
        #[arg(long, value_name = "FILE")]
        write_manifest: Option<PathBuf>,
    },
}

#[derive(Args)]
struct BindingArgs {
    /// Bind an input's shape, e.g. `--shape input=1x3x224x224`.
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    shapes: Vec<String>,
    /// Bind a symbolic dimension, e.g. `--dim batch=1`.
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    dims: Vec<String>,
    /// Import the ONNX graph as written: no constant folding, no Identity/Dropout removal.
    #[arg(long)]
    as_written: bool,
}

impl From<BindingArgs> for Bindings {
    fn from(b: BindingArgs) -> Self {
        Bindings {
            shapes: b.shapes,
            dims: b.dims,
            as_written: b.as_written,
        }
    }
}

fn run(cli: Cli) -> miette::Result<()> {
    let result: Result<(), CliError> = match cli.command {
        Command::Demo {
            json,
            write_model,
            reps,
            warmup,
            no_peer,
            seq,
            hidden,
            heads,
            ffn,
        } => commands::demo(&DemoArgs {
            json,
            write_model,
            config: EncoderConfig {
                seq,
                hidden,
                heads,
                ffn,
            },
            warmup,
            reps,
            peer: !no_peer,
        }),
        Command::Import {
            model,
            bindings,
            expand,
            exact,
            dot,
            output,
            summary,
            json,
        } => commands::import(&ImportArgs {
            model,
            bindings: bindings.into(),
            expand,
            exact,
            dot,
            output,
            summary,
            json,
        }),
        Command::Transforms { json } => commands::transforms(json),
        Command::Apply {
            model,
            bindings,
            transform,
            at,
            params,
            expand,
            no_numerics,
            output,
        } => commands::apply(&ApplyArgs {
            model,
            bindings: bindings.into(),
            transform,
            at,
            params,
            expand,
            numerics: !no_numerics,
            output,
        }),
        Command::Match {
            model,
            bindings,
            pattern,
            why,
            expand,
        } => matching::run(&MatchArgs {
            model,
            bindings: bindings.into(),
            pattern,
            why,
            expand,
        }),
        Command::Analyze {
            model,
            bindings,
            kernel,
            params,
            only,
            line,
            sample,
            json,
            plot,
            sweep,
            choose_tile,
            candidates,
        } => analyze::analyze(&AnalyzeArgs {
            model,
            bindings: bindings.into(),
            kernel,
            params,
            only,
            line,
            sample,
            json,
            plot,
            sweep,
            choose_tile,
            candidates,
        }),
        Command::C {
            model,
            bindings,
            output,
        } => commands::emit_c(&model, &bindings.into(), output.as_deref()),
        Command::Conformance {
            dir,
            json,
            filter,
            no_c,
            jobs,
            manifest,
            write_manifest,
        } => conformance(&ConformanceArgs {
            dir,
            json,
            filter,
            c: !no_c,
            jobs,
            manifest,
            write_manifest,
        }),
    };
    result.map_err(miette::Report::new)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(report) => {
            eprintln!("{report:?}");
            ExitCode::FAILURE
        }
    }
}
