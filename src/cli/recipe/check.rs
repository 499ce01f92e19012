//! `dmove check RECIPE|LOCK…`: what a repository's CI runs. Every locked entry is replayed —
//! the model reloaded from its recorded path with its recorded bindings, the recipe re-run
//! with the lock's searched decisions fixed and nothing measured — and compared with the lock;
//! any difference is printed as a readable diff and fails the command. `--update` rewrites the
//! lock with the replayed entries instead.

use super::{
    bindings_of, execute, load_checked, load_model, recipe_name, RecipeError, ScriptLimits,
};
use crate::cli::CliError;
use crate::recipe::lock::{self, compare, compare_header, tool_version, Drift, Lock, LockEntry};
use crate::recipe::modules::Loaded;
use crate::recipe::run::choose::Decision;
use crate::recipe::run::RunOptions;
use crate::transform::engine::Checks;
use std::path::{Path, PathBuf};

/// `dmove check`
#[derive(Clone, Debug, clap::Args)]
pub struct CheckArgs {
    /// Recipes (each checked against its lock `RECIPE.lock`) or lock files (each checked
    /// against the recipe beside it, named by the lock without `.lock`).
    #[arg(value_name = "RECIPE|LOCK", required = true)]
    pub files: Vec<PathBuf>,
    /// Rewrite each lock with what the replay produced (and succeed).
    #[arg(long)]
    pub update: bool,
    /// Seed of the random inputs used for numerics checks.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub script_limits: ScriptLimits,
}

/// How the entries of one lock fared.
#[derive(Default)]
struct Tally {
    total: usize,
    failed: usize,
}

pub fn check(args: &CheckArgs) -> Result<(), CliError> {
    args.script_limits.configure()?;
    let mut tally = Tally::default();
    for file in &args.files {
        if let Err(e) = check_one(file, args, &mut tally) {
            // One lock's failure (a recipe error, an unreadable lock) does not hide the others.
            eprintln!("{:?}", miette::Report::new(e));
            tally.total += 1;
            tally.failed += 1;
        }
    }
    match tally.failed {
        0 => Ok(()),
        failed => Err(RecipeError::Drifted {
            failed,
            total: tally.total,
        }
        .into()),
    }
}

/// The recipe and lock an argument names.
fn pair(file: &Path) -> Result<(PathBuf, PathBuf), CliError> {
    if file.extension().is_some_and(|e| e == "lock") {
        let recipe = lock::recipe_of(file)
            .ok_or_else(|| CliError::Usage(format!("{} does not name a recipe", file.display())))?;
        return Ok((recipe, file.to_path_buf()));
    }
    Ok((file.to_path_buf(), super::run::default_lock(file)))
}

fn check_one(file: &Path, args: &CheckArgs, tally: &mut Tally) -> Result<(), CliError> {
    let (mut recipe, lock_path) = pair(file)?;
    let locked = Lock::read(&lock_path).map_err(RecipeError::from)?;
    if !recipe.exists() && locked.recipe.starts_with("std::") {
        // A lock of a standard module (`dmove run std::cpu`) has no recipe file beside it.
        recipe = PathBuf::from(&locked.recipe);
    }
    let loaded = load_checked(&recipe)?.loaded;
    let hash = loaded.hash();
    for note in compare_header(&locked, &tool_version(), &hash) {
        println!("{}: {note}", lock_path.display());
    }
    let mut replayed = Vec::new();
    for entry in &locked.entries {
        tally.total += 1;
        match replay(&loaded, &lock_path, entry, args.seed) {
            Ok(now) => {
                let drift = compare(entry, &now);
                if drift.iter().any(Drift::fails) {
                    tally.failed += usize::from(!args.update);
                    print_drift(entry, &drift, args.update);
                } else {
                    let n = now.steps.len();
                    let noun = if n == 1 { "step" } else { "steps" };
                    println!("ok: {} ({n} {noun}, {})", entry.describe(), now.final_hash);
                }
                replayed.push(now);
            }
            Err(e) => {
                tally.failed += 1;
                eprintln!("{:?}", miette::Report::new(e));
                eprintln!(
                    "could not replay {} from {}",
                    entry.describe(),
                    lock_path.display()
                );
            }
        }
    }
    if args.update {
        let name = recipe_name(&loaded, &recipe);
        locked
            .updated(&name, &hash, replayed)
            .write(&lock_path)
            .map_err(RecipeError::from)?;
        println!("updated {}", lock_path.display());
    }
    Ok(())
}

fn print_drift(entry: &LockEntry, drift: &[Drift], update: bool) {
    let verb = if update { "updating" } else { "drift" };
    println!("{verb}: {}", entry.describe());
    for d in drift {
        println!("  {d}");
    }
}

/// The entry as the recipe produces it today: same model path and bindings, same `--set`
/// values, searched decisions replayed, nothing measured.
fn replay(
    l: &Loaded,
    lock_path: &Path,
    entry: &LockEntry,
    seed: u64,
) -> Result<LockEntry, CliError> {
    let path = lock::model_path(lock_path, &entry.model);
    let model = load_model(&path, &bindings_of(entry), &entry.set, lock_path)?;
    let opts = RunOptions {
        checks: Checks::default(),
        set: entry.set.clone(),
        fixed: entry.replayed(),
        measure: false,
        seed,
        ..RunOptions::default()
    };
    let mut now = execute(l, &model, &opts)?.entry;
    // The model's path is as the lock wrote it, not as reached from here.
    now.model = entry.model.clone();
    now.decisions = with_scores(&entry.decisions, now.decisions);
    Ok(now)
}

/// `now`'s decisions, where each one replayed from the lock (`by = "locked"`) is the locked
/// decision it replayed, so an updated lock keeps the original search and its scores.
fn with_scores(locked: &[Decision], now: Vec<Decision>) -> Vec<Decision> {
    now.into_iter()
        .map(|d| {
            let original = (locked.iter())
                .find(|o| o.params == d.params && o.chosen == d.chosen && d.by == "locked");
            original.cloned().unwrap_or(d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::run::value::ParamValue;
    use std::collections::BTreeMap;

    fn decision(by: &str, tile: i64) -> Decision {
        Decision {
            params: vec!["tile".into()],
            by: by.into(),
            candidates: Vec::new(),
            chosen: BTreeMap::from([("tile".into(), ParamValue::Int(tile))]),
        }
    }

    #[test]
    fn replayed_decisions_keep_the_locked_search() {
        let locked = [decision("dmd", 16)];
        assert_eq!(with_scores(&locked, vec![decision("locked", 16)]), locked);
        // Another value, or a decision made afresh, is kept as the replay made it.
        assert_eq!(
            with_scores(&locked, vec![decision("locked", 32)])[0].by,
            "locked"
        );
        assert_eq!(with_scores(&locked, vec![decision("set", 16)])[0].by, "set");
    }

    #[test]
    fn arguments_name_a_recipe_and_its_lock() {
        let (r, l) = pair(Path::new("recipes/mlp.recipe")).expect("recipe");
        assert_eq!(
            (r.as_path(), l.as_path()),
            (
                Path::new("recipes/mlp.recipe"),
                Path::new("recipes/mlp.recipe.lock")
            )
        );
        let (r, l) = pair(Path::new("recipes/mlp.recipe.lock")).expect("lock");
        assert_eq!(
            (r.as_path(), l.as_path()),
            (
                Path::new("recipes/mlp.recipe"),
                Path::new("recipes/mlp.recipe.lock")
            )
        );
    }
}
