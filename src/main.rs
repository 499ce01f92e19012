//! The `dmove` command line: the list of commands. Each command's arguments are declared on its
//! argument struct in `dmove::cli` (clap's derive), and its body is there too.

use clap::{Parser, Subcommand};
use dmove::cli::analyze::{self, AnalyzeArgs};
use dmove::cli::apply::{self, ApplyArgs};
use dmove::cli::bench::{self, BenchArgs};
use dmove::cli::build::{self, BuildArgs};
use dmove::cli::commands::{self, DemoArgs, EmitCArgs, ImportArgs};
use dmove::cli::conformance::{self, ConformanceArgs};
use dmove::cli::lsp::{self, LspArgs};
use dmove::cli::matching::{self, MatchArgs};
use dmove::cli::models::{self, ModelsArgs};
use dmove::cli::recipe::check::{self, CheckArgs};
use dmove::cli::recipe::fmt::{self, FmtArgs};
use dmove::cli::recipe::run::{self as recipe_run, RunArgs};
use dmove::cli::transforms::{self, TransformsArgs};
use dmove::cli::view::{self, ViewArgs};
use dmove::repl::{self, ReplArgs};
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
    /// Run a recipe on a model: writes the optimized IR, the C and the lock, and prints a
    /// report (steps per rule, refusals, checks, decisions, data movement; `--bench` times it).
    Run(RunArgs),
    /// Replay every entry of recipes' locks and fail with a diff where one no longer
    /// reproduces (what CI runs); `--update` rewrites the locks.
    Check(CheckArgs),
    /// Format recipes canonically (`--check`: list the files that are not formatted).
    Fmt(FmtArgs),
    /// Write the built-in models the recipes in `recipes/` are locked against (into
    /// `recipes/models`, or `-o DIR`), so `dmove check recipes/*.recipe` runs in a fresh clone.
    Models(ModelsArgs),
    /// Build a transformer encoder layer, optimize it, check it and benchmark it (no files needed).
    Demo(DemoArgs),
    /// Benchmark a model (or `--suite [kernels|networks]`): the baseline, the recipe's program,
    /// ONNX Runtime, OpenVINO and numpy side by side, with outputs checked and the foreign CPU
    /// load measured.
    Bench(BenchArgs),
    /// Import a model (ONNX or textual IR) and print its IR.
    Import(ImportArgs),
    /// List the transformations: site roles and typed parameters.
    Transforms(TransformsArgs),
    /// Apply one transformation by hand and print the resulting IR, or the refusal and its
    /// reason; `--explain` says where it applies without changing anything.
    Apply(ApplyArgs),
    /// Find a built-in pattern (matmul_add, conv_bn, elementwise_chain) and list its matches,
    /// or say why it does not match at a node.
    Match(MatchArgs),
    /// Data movement: reuse distances, DMD, miss-ratio curve, per node and array; sweeps with
    /// leading-term fits; choosing a map's tile size by DMD.
    Analyze(AnalyzeArgs),
    /// Lower a model completely and print the generated C.
    C(EmitCArgs),
    /// Write a directory to ship: the C (optimized by `--recipe`), its weights, a header, a
    /// Makefile, a harness and a README.
    Build(BuildArgs),
    /// Draw the program's IR (operators, nested maps, tasklets, memlets, arrays coloured by data
    /// movement) as SVG, or as an interactive HTML page (with `--recipe`: a slider through its
    /// steps).
    View(ViewArgs),
    /// Run the ONNX backend test cases in DIR (from `scripts/onnx_node_tests.py`) through the
    /// interpreter and the generated C.
    Conformance(ConformanceArgs),
    /// The recipe language server, for editors: diagnostics as you type, hover, completion and
    /// go to definition, over standard input and output.
    Lsp(LspArgs),
    /// An interactive session on a model (the demo's encoder layer without one): type recipe
    /// statements, look at matches, ask why not, undo, diff, bench, save as a recipe and lock.
    Repl(ReplArgs),
}

fn run(cli: Cli) -> miette::Result<()> {
    let result = match cli.command {
        Command::Run(args) => recipe_run::run(&args),
        Command::Check(args) => check::check(&args),
        Command::Fmt(args) => fmt::fmt(&args),
        Command::Models(args) => models::models(&args),
        Command::Demo(args) => commands::demo(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Import(args) => commands::import(&args),
        Command::Transforms(args) => transforms::transforms(&args),
        Command::Apply(args) => apply::apply(&args),
        Command::Match(args) => matching::run(&args),
        Command::Analyze(args) => analyze::analyze(&args),
        Command::C(args) => commands::emit_c(&args),
        Command::Build(args) => build::build(&args),
        Command::Conformance(args) => conformance::conformance(&args),
        Command::Lsp(args) => lsp::lsp(&args),
        Command::View(args) => view::view(&args),
        Command::Repl(args) => return repl::run(&args).map_err(miette::Report::new),
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
