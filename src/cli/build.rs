//! `dmove build MODEL [--recipe R] -o DIR`: the generated program as a directory a user can
//! ship (C source with its harness, weights, header, Makefile, README; see
//! `codegen::Deliverable`).
//!
//! The program is the one `dmove c` prints (without a recipe: every operator expanded as
//! imported) or the one `dmove run` writes (with a recipe, run with every check), so what is
//! shipped is what those commands show and test.

use super::commands::lowered;
use super::recipe::{file_name, optimize, ModelInput};
use super::CliError;
use crate::codegen::Deliverable;
use crate::ir::Program;
use std::path::{Path, PathBuf};

/// `dmove build`
#[derive(Clone, Debug, clap::Args)]
pub struct BuildArgs {
    /// The model, its bindings and `--recipe` (without it: built as imported, every operator
    /// expanded).
    #[command(flatten)]
    pub input: ModelInput,
    /// The thread count `make run` uses (`OMP_NUM_THREADS`; the binary honours that variable
    /// whatever this says).
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,
    /// The directory to write; it must not exist or be empty, unless `--force`.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Replace a non-empty output directory.
    #[arg(long)]
    pub force: bool,
    /// Seed of the random inputs the recipe's numerics checks and searches use.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn build(args: &BuildArgs) -> Result<(), CliError> {
    let (program, origin) = match &args.input.with.recipe {
        None => (
            lowered(&args.input.model, &args.input.bindings)?,
            file_name(&args.input.model),
        ),
        Some(recipe) => optimized(args, recipe)?,
    };
    let c = crate::codegen::emit(&program)?;
    Deliverable::new(&c, &origin, args.threads as usize).write(&args.output, args.force)?;
    eprintln!(
        "wrote {dir}: build it with `make -C {dir}`, run it with `make -C {dir} run` (see {dir}/README.md)",
        dir = args.output.display()
    );
    Ok(())
}

/// The model after `recipe`, run the way `dmove run` runs it (its lock is not written: a
/// build records nothing beside the recipe).
fn optimized(args: &BuildArgs, recipe: &Path) -> Result<(Program, String), CliError> {
    let o = optimize(
        &args.input.model,
        &args.input.bindings,
        recipe,
        &args.input.with.set,
        args.seed,
    )?;
    Ok((o.done.program, o.origin))
}
