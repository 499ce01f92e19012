//! The recipe commands: `dmove run` (a recipe on a model: optimized IR, C, lock and a report),
//! `dmove check` (replay every locked entry and show where it drifted) and `dmove fmt`.
//!
//! What they share lives here: loading and checking a recipe with every diagnostic rendered
//! (errors stop the command, warnings are shown and do not), the model's identity for the lock,
//! and this layer's errors. A recipe's own problems are [`Diagnostic`]s rendered with their
//! source through miette; this layer's errors only summarise what was already shown.

pub mod bench;
pub mod check;
pub mod fmt;
pub mod report;
pub mod run;

use super::{load_program, Bindings, CliError};
use crate::ir::Program;
use crate::recipe::lock::{self, Lock, LockEntry, LockError, ModelKey};
use crate::recipe::modules::{load_file, load_source, Loaded};
use crate::recipe::run::value::ParamValue;
use crate::recipe::run::{params, RunOptions, RunReport};
use crate::recipe::{Diagnostic, Sources};
use crate::transform::engine::{program_hash, Checks};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors of the recipe commands.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RecipeError {
    /// The recipe has errors; they were rendered above this message.
    #[error("{} has {errors} error(s); nothing was run", path.display())]
    #[diagnostic(code(dmove::cli::recipe_errors))]
    Rejected { path: PathBuf, errors: usize },
    /// The run failed; its diagnostic was rendered above this message.
    #[error("the recipe failed on {model} after {steps} step(s)")]
    #[diagnostic(code(dmove::cli::recipe_failed))]
    Failed { model: String, steps: usize },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lock(#[from] LockError),
    /// `dmove check` found entries that no longer reproduce or could not run.
    #[error("{failed} of {total} locked run(s) did not reproduce")]
    #[diagnostic(
        code(dmove::cli::drift),
        help("if the change is intended, `dmove check --update` rewrites the lock")
    )]
    Drifted { failed: usize, total: usize },
    /// `dmove fmt` could not format a file, or `--check` found unformatted files.
    #[error("{0}")]
    #[diagnostic(code(dmove::cli::fmt))]
    Format(String),
}

/// Prints `diags` to standard error the way miette prints any error (warnings included),
/// returning how many were errors.
pub fn show(sources: &Sources, diags: &[Diagnostic]) -> usize {
    for d in diags {
        eprintln!("{:?}", miette::Report::new(sources.render(d)));
    }
    diags.iter().filter(|d| d.is_error()).count()
}

/// The prefix that names a standard module instead of a file: `dmove run std::cpu`.
const STD: &str = "std::";

/// `NAME` and its source when `path` is spelt `std::NAME`, names a standard module, and no
/// file has that name (a file always wins, so a recipe can be called anything).
pub fn std_module(path: &Path) -> Option<(&str, &'static str)> {
    let name = path.to_str()?.strip_prefix(STD)?;
    let source = crate::recipe::stdlib::source(name)?;
    (!path.exists()).then_some((name, source))
}

/// A recipe file, or the embedded standard module `std::NAME` (see [`std_module`]).
pub fn load(path: &Path) -> Loaded {
    match std_module(path) {
        Some((name, source)) => load_source(&format!("{STD}{name}"), source, None),
        None => load_file(path),
    }
}

/// A recipe that passed the checker, with the warnings it gave.
pub struct Checked {
    pub loaded: Loaded,
    pub warnings: Vec<Diagnostic>,
}

/// The recipe at `path` (see [`load`]), loaded with its modules and checked (load errors
/// included); every diagnostic is shown and any error stops the command.
/// The sandbox limits of the scripts a recipe uses (`--script-time`, `--script-ops`).
#[derive(Clone, Debug, clap::Args)]
pub struct ScriptLimits {
    /// Wall-clock limit of each call into a script, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub script_time: f64,
    /// Operation limit of each call into a script (Rhai operations; 0 = no limit, the time
    /// limit still holds).
    #[arg(long, value_name = "N", default_value_t = 200_000_000)]
    pub script_ops: u64,
}

impl ScriptLimits {
    /// Makes these the limits of every script this process loads.
    pub fn configure(&self) -> Result<(), CliError> {
        let time = std::time::Duration::try_from_secs_f64(self.script_time).map_err(|_| {
            CliError::Usage(format!(
                "--script-time {} is not a duration in seconds",
                self.script_time
            ))
        })?;
        crate::script::Limits {
            time,
            operations: self.script_ops,
            ..crate::script::Limits::default()
        }
        .configure();
        Ok(())
    }
}

pub fn load_checked(path: &Path) -> Result<Checked, CliError> {
    let loaded = load(path);
    let diags = crate::recipe::check::check(&loaded);
    let errors = show(&loaded.sources, &diags);
    if errors > 0 {
        return Err(RecipeError::Rejected {
            path: path.to_path_buf(),
            errors,
        }
        .into());
    }
    Ok(Checked {
        loaded,
        warnings: diags,
    })
}

/// The recipe's header name, or the file's stem for a recipe without a header.
pub fn recipe_name(l: &Loaded, path: &Path) -> String {
    match &l.root().ast.header {
        Some(h) => h.name.value.clone(),
        None => (path.file_stem()).map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        ),
    }
}

/// A model loaded for a lock entry: the program as imported, its bytes and its key.
pub struct Model {
    /// As given (for messages).
    pub path: PathBuf,
    pub program: Program,
    pub bytes: Vec<u8>,
    pub key: ModelKey,
}

/// Loads the model at `path` the way `dmove import` does, keyed for the lock at `lock_path`
/// (`set`: the run's `--set` values, part of what the lock replays).
pub fn load_model(
    path: &Path,
    bindings: &Bindings,
    set: &BTreeMap<String, String>,
    lock_path: &Path,
) -> Result<Model, CliError> {
    let bytes = std::fs::read(path).map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let program = load_program(path, bindings)?;
    let opts = bindings.import_options(None)?;
    let key = ModelKey {
        model: lock::relative_path(path, lock::dir_of(lock_path)),
        model_sha256: lock::sha256_hex(&bytes),
        dims: opts.dims,
        shapes: opts.input_shapes,
        as_written: bindings.as_written,
        set: set.clone(),
    };
    Ok(Model {
        path: path.to_path_buf(),
        program,
        bytes,
        key,
    })
}

/// What running a recipe on a model produced.
pub struct Executed {
    /// The program after the recipe.
    pub program: Program,
    pub report: RunReport,
    /// The lock entry that records the run.
    pub entry: LockEntry,
}

/// Runs the recipe on a copy of `model`'s program and records the entry for its lock. The
/// run's warnings are shown; a failure shows its diagnostic (what happened before it is in
/// the message: how many steps had applied).
pub fn execute(l: &Loaded, model: &Model, opts: &RunOptions) -> Result<Executed, CliError> {
    let unread = params::unread_sets(l, &params::canonical_sets(l, &opts.set));
    if !unread.is_empty() {
        show(&l.sources, &unread);
        return Err(RecipeError::Failed {
            model: model.path.display().to_string(),
            steps: 0,
        }
        .into());
    }
    let mut program = model.program.clone();
    match crate::recipe::run::run(l, &mut program, opts) {
        Ok(report) => {
            show(&l.sources, &report.warnings);
            let entry = lock::entry(
                model.key.clone(),
                &report,
                &l.sources,
                program_hash(&program),
            );
            Ok(Executed {
                program,
                report,
                entry,
            })
        }
        Err(e) => {
            // What the recipe printed before it failed is often what explains the failure.
            for line in &e.report.printed {
                eprintln!("print   {line}");
            }
            show(&l.sources, &e.report.warnings);
            show(&l.sources, std::slice::from_ref(&e.diagnostic));
            Err(RecipeError::Failed {
                model: model.path.display().to_string(),
                steps: e.report.steps.len(),
            }
            .into())
        }
    }
}

/// `--recipe R [--set NAME=VALUE]`: optimize the model with a recipe first (`build`,
/// `analyze`, `view`).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct WithRecipe {
    /// Optimize the model with this recipe first: a `.recipe` file or a standard module such as
    /// `std::cpu`, run with every check as `dmove run` runs it (no lock is written).
    #[arg(long, value_name = "RECIPE")]
    pub recipe: Option<PathBuf>,
    /// Override a recipe parameter, e.g. `--set tile=32` (needs `--recipe`).
    #[arg(long = "set", value_name = "NAME=VALUE", requires = "recipe")]
    pub set: Vec<String>,
}

/// A model, how to import it, and a recipe to run on it first, if any (`build`, `view`).
#[derive(Clone, Debug, clap::Args)]
pub struct ModelInput {
    /// The model: an `.onnx` file, or textual IR (any other extension).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    #[command(flatten)]
    pub bindings: Bindings,
    #[command(flatten)]
    pub with: WithRecipe,
}

/// A model after a recipe, run the way `dmove run` runs it but without writing a lock (for
/// commands that only use the result: `build`, `analyze --recipe`, `view --recipe`).
pub struct Optimized {
    /// The model as imported, before the first step.
    pub imported: Program,
    pub done: Executed,
    /// `MODEL with recipe NAME` (file names only, no paths of this machine).
    pub origin: String,
}

/// Runs `recipe` (a file or `std::NAME`) on the model at `model` with every check; `set` are
/// `--set` values and `seed` the seed of the numerics checks' random inputs.
pub fn optimize(
    model: &Path,
    bindings: &Bindings,
    recipe: &Path,
    set: &[String],
    seed: u64,
) -> Result<Optimized, CliError> {
    let checked = load_checked(recipe)?;
    let set = parse_sets(set)?;
    let model_data = load_model(model, bindings, &set, &run::default_lock(recipe))?;
    crate::onnx::idioms::require_bound_inputs(&model_data.program)?;
    let fixed = locked_decisions(&checked.loaded, recipe, &model_data)?;
    let opts = RunOptions {
        fixed,
        ..user_run(set, seed)
    };
    let done = execute(&checked.loaded, &model_data, &opts)?;
    eprintln!(
        "{}: {} checked rewrite(s) applied",
        recipe.display(),
        done.report.steps.len()
    );
    Ok(Optimized {
        imported: model_data.program,
        done,
        origin: format!(
            "{} with recipe {}",
            file_name(model),
            recipe_name(&checked.loaded, recipe)
        ),
    })
}

/// The decisions a build or a benchmark replays instead of searching again: those `recipe`'s
/// lock (where `dmove run` writes it) records for this model, bindings and `--set` values,
/// when this recipe wrote it. Says on stderr which lock it replays.
pub fn locked_decisions(
    loaded: &Loaded,
    recipe: &Path,
    model: &Model,
) -> Result<BTreeMap<String, ParamValue>, CliError> {
    let lock_path = run::default_lock(recipe);
    let lock = Lock::read_if_exists(&lock_path).map_err(RecipeError::from)?;
    let fixed = lock.and_then(|l| l.decisions_for(&model.key, &loaded.hash()));
    if let Some(f) = (fixed.as_ref()).filter(|f| !f.is_empty()) {
        let values: Vec<String> = f.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        eprintln!(
            "replaying the decisions of {} ({})",
            lock_path.display(),
            values.join(", ")
        );
    }
    Ok(fixed.unwrap_or_default())
}

/// The file name of `path`, without this machine's directories.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The command-line bindings an entry was run with, to import its model the same way again.
pub fn bindings_of(e: &LockEntry) -> Bindings {
    Bindings {
        dims: e.dims.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        shapes: (e.shapes.iter())
            .map(|(k, dims)| format!("{k}={}", lock::shape_text(dims)))
            .collect(),
        as_written: e.as_written,
    }
}

/// The options of a user's run of a recipe (`dmove run`, `dmove build`): every check, time
/// measured for `time()` and bench searches, nothing replayed from a lock.
pub fn user_run(set: BTreeMap<String, String>, seed: u64) -> RunOptions {
    RunOptions {
        checks: Checks::default(),
        set,
        fixed: BTreeMap::new(),
        measure: true,
        seed,
        progress: crate::progress::Mode::for_stderr(false).without_lines(),
    }
}

/// `--set k=v` pairs as a map (the interpreter reads each value as its parameter's type).
pub fn parse_sets(pairs: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut out = BTreeMap::new();
    for s in pairs {
        let (k, v) = super::split_binding(
            s,
            "parameter setting",
            "write NAME=VALUE, e.g. --set tile=32 or --set cpu::tile=32",
        )?;
        out.insert(k, v.trim().to_string());
    }
    Ok(out)
}
