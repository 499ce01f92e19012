//! `dmove fmt [--check] FILE…`: recipes in their canonical form. Without `--check` each file
//! is rewritten atomically (only when it changes); with it, nothing is written and the files
//! that would change are listed. A file that does not parse is reported with its diagnostic and
//! left untouched; the others are still processed.

use super::{show, RecipeError};
use crate::cli::CliError;
use crate::recipe::format::format;
use crate::recipe::{parse, Sources};
use std::path::{Path, PathBuf};

/// `dmove fmt`
#[derive(Clone, Debug, clap::Args)]
pub struct FmtArgs {
    /// Recipe files to format.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Change nothing: list the files that are not formatted and fail if there are any.
    #[arg(long)]
    pub check: bool,
}

/// What formatting one file found.
enum Outcome {
    Formatted,
    Changed,
    /// It could not be read or parsed (the reason was shown).
    Failed,
}

pub fn fmt(args: &FmtArgs) -> Result<(), CliError> {
    let mut changed = Vec::new();
    let mut failed = Vec::new();
    for path in &args.files {
        match one(path, args.check) {
            Outcome::Formatted => {}
            Outcome::Changed => changed.push(path.display().to_string()),
            Outcome::Failed => failed.push(path.display().to_string()),
        }
    }
    if args.check {
        for c in &changed {
            println!("{c}");
        }
    }
    let mut problems = Vec::new();
    if !failed.is_empty() {
        problems.push(format!(
            "{} file(s) could not be formatted: {}",
            failed.len(),
            failed.join(", ")
        ));
    }
    if args.check && !changed.is_empty() {
        problems.push(format!(
            "{} file(s) are not formatted (`dmove fmt FILE…` rewrites them)",
            changed.len()
        ));
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(RecipeError::Format(problems.join("; ")).into()),
    }
}

fn one(path: &Path, check: bool) -> Outcome {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(source) => {
            let path = path.to_path_buf();
            eprintln!("{:?}", miette::Report::new(CliError::Read { path, source }));
            return Outcome::Failed;
        }
    };
    let mut sources = Sources::default();
    let file = sources.add(path.display().to_string(), text.as_str());
    let formatted = match parse(file, &text) {
        Ok(ast) => format(&ast),
        Err(d) => {
            show(&sources, &[d]);
            return Outcome::Failed;
        }
    };
    if formatted == text {
        return Outcome::Formatted;
    }
    if !check {
        if let Err(source) = crate::fsutil::write_atomic(path, formatted.as_bytes()) {
            let path = path.to_path_buf();
            eprintln!(
                "{:?}",
                miette::Report::new(CliError::Write { path, source })
            );
            return Outcome::Failed;
        }
    }
    Outcome::Changed
}
