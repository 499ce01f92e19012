//! `dmove run RECIPE --model M.onnx`: the user's main job. Imports the model, runs the checked
//! recipe on it, and writes the optimized IR, the C (when the result is fully lowered) and the
//! lock, then prints the one-screen report.

use super::report::{self, Figure, Outputs, Report};
use super::{
    execute, load_checked, load_model, parse_sets, recipe_name, std_module, user_run, Executed,
    Model, RecipeError, ScriptLimits,
};
use crate::cli::{is_onnx, print_json, write_output, Bindings, CliError};
use crate::codegen::CodegenError;
use crate::ir::text::print_exact;
use crate::ir::Program;
use crate::recipe::lock::{self, Lock};
use crate::recipe::modules::Loaded;
use crate::recipe::run::measure;
use crate::recipe::run::RunOptions;
use std::path::{Path, PathBuf};

/// Where outputs go without `-o`: `dmove-out/MODEL` in the current directory, like a build
/// directory, so running a committed recipe does not write beside it (only its lock does), and
/// the run of another model does not overwrite this one's.
const DEFAULT_OUT: &str = "dmove-out";

/// `dmove run`
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    /// The recipe: a `.recipe` file, or a standard module such as `std::cpu`.
    #[arg(value_name = "RECIPE")]
    pub recipe: PathBuf,
    /// The model: an `.onnx` file, or textual IR (any other extension).
    #[arg(long, value_name = "MODEL")]
    pub model: PathBuf,
    #[command(flatten)]
    pub bindings: Bindings,
    /// Override a recipe parameter, e.g. `--set tile=32` (`--set cpu::tile=32` for a module's);
    /// a parameter set here is not searched.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Directory for `optimized.ir`, `optimized.c` and `optimized.weights` (created if needed;
    /// default `dmove-out/MODEL`, after the model's file name).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The lock file to write (default: `RECIPE.lock` beside the recipe; for a standard module,
    /// `NAME.recipe.lock` in the current directory).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Also time the baseline (no recipe), the optimized program and ONNX Runtime side by side.
    #[arg(long)]
    pub bench: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Seed of the random inputs used for numerics checks and benchmarks.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub script_limits: ScriptLimits,
}

/// Where `dmove run` writes without `-o`: see [`DEFAULT_OUT`].
fn default_output(model: &Path) -> PathBuf {
    let stem = model
        .file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy());
    Path::new(DEFAULT_OUT).join(stem.as_ref())
}

/// The lock `dmove run` writes for `recipe` without `--lock`.
pub fn default_lock(recipe: &Path) -> PathBuf {
    match std_module(recipe) {
        Some((name, _)) => PathBuf::from(format!("{}.recipe.lock", name.replace("::", "-"))),
        None => lock::default_path(recipe),
    }
}

pub fn run(args: &RunArgs) -> Result<(), CliError> {
    args.script_limits.configure()?;
    let checked = load_checked(&args.recipe)?;
    let loaded = &checked.loaded;
    let set = parse_sets(&args.set)?;
    let lock_path = args
        .lock
        .clone()
        .unwrap_or_else(|| default_lock(&args.recipe));
    let model = load_model(&args.model, &args.bindings, &set, &lock_path)?;
    let opts = RunOptions {
        progress: crate::progress::Mode::for_stderr(args.json).without_lines(),
        ..user_run(set, args.seed)
    };
    let done = run_locked(loaded, &args.recipe, &model, &opts, &lock_path)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.model));
    let outputs = write_outputs(&output, &done.program, &lock_path)?;
    let name = recipe_name(loaded, &args.recipe);
    let final_hash = done.entry.final_hash.clone();
    let bench = match (&outputs.c, args.bench) {
        (Some(_), true) => {
            let onnx = is_onnx(&args.model).then_some(model.bytes.as_slice());
            Some(super::bench::side_by_side(
                &model.program,
                &done.program,
                onnx,
                args.seed,
                crate::progress::Mode::for_stderr(args.json),
            )?)
        }
        (None, true) => {
            eprintln!("not benchmarking: no C was generated");
            None
        }
        (_, false) => None,
    };
    let sources = &loaded.sources;
    // The two analyses are independent and each takes seconds on a real network: one per core.
    let (dmd_before, dmd_after) = std::thread::scope(|s| {
        let before = s.spawn(|| measure::dmd(&model.program));
        let after = measure::dmd(&done.program);
        let before = before
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (before, after)
    });
    let report = Report {
        recipe: name,
        version: (loaded.root().ast.header.as_ref()).map(|h| h.version.value.clone()),
        model: args.model.display().to_string(),
        model_sha256: model.key.model_sha256.clone(),
        run: report::from_run(&done.report, &checked.warnings, sources),
        dmd: Figure::new(dmd_before, dmd_after),
        bytes: Figure::new(
            measure::bytes(&model.program),
            measure::bytes(&done.program),
        ),
        final_hash,
        outputs,
        bench,
    };
    if args.json {
        print_json(&report)
    } else {
        write_output(Path::new("-"), report.render().as_bytes())
    }
}

/// Runs the checked recipe (loaded from `recipe`) on `model` and records the run in the lock at
/// `lock_path`, replacing the entry of the same model and bindings and keeping the others: what
/// `dmove run` does, and `dmove repl`'s `:save`.
pub fn run_locked(
    loaded: &Loaded,
    recipe: &Path,
    model: &Model,
    opts: &RunOptions,
    lock_path: &Path,
) -> Result<Executed, CliError> {
    let existing = Lock::read_if_exists(lock_path).map_err(RecipeError::from)?;
    let done = execute(loaded, model, opts)?;
    let name = recipe_name(loaded, recipe);
    let lock = existing
        .unwrap_or_else(|| Lock::new(&name, &loaded.hash()))
        .updated(&name, &loaded.hash(), vec![done.entry.clone()]);
    lock.write(lock_path).map_err(RecipeError::from)?;
    Ok(done)
}

/// Writes `optimized.ir` (exact, so it loads again), and when the program is fully lowered
/// `optimized.c` with its weights file `optimized.weights` (the binary takes the weights path,
/// a directory of `in<k>.bin` inputs, warm-up and timed run counts, and writes `out<k>.bin`).
fn write_outputs(dir: &Path, p: &Program, lock: &Path) -> Result<Outputs, CliError> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let ir = dir.join("optimized.ir");
    write_output(&ir, print_exact(p).as_bytes())?;
    let mut out = Outputs {
        ir: ir.display().to_string(),
        lock: lock.display().to_string(),
        ..Outputs::default()
    };
    match crate::codegen::emit(p) {
        Ok(c) => {
            let (source, weights) = (dir.join("optimized.c"), dir.join("optimized.weights"));
            write_output(&source, c.source.as_bytes())?;
            write_output(&weights, &c.weights)?;
            out.c = Some(source.display().to_string());
            out.weights = Some(weights.display().to_string());
        }
        Err(CodegenError::NotLowered(nodes)) => {
            out.c_skipped = Some(format!(
                "{} operator(s) are not lowered \
                 (the recipe should end with `apply Expand everywhere`)",
                nodes.len()
            ));
        }
        Err(CodegenError::UnboundSymbols(symbols)) => {
            out.c_skipped = Some(format!(
                "symbolic dimension(s) {} have no value \
                 (bind them with `--dim NAME=VALUE` or `--shape`)",
                symbols.join(", ")
            ));
        }
        Err(other) => return Err(other.into()),
    }
    Ok(out)
}
