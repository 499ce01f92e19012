//! `dmove models [-o DIR] [--list]`: writes the built-in models the shipped recipes are locked
//! against (`zoo::recipe_models`), so `dmove check recipes/*.recipe` works in a fresh clone,
//! where `recipes/models/` (not in git) does not exist yet.

use super::{write_output, CliError};
use crate::zoo::recipe_models;
use std::path::{Path, PathBuf};

/// `dmove models`
#[derive(Clone, Debug, clap::Args)]
pub struct ModelsArgs {
    /// The directory to write the models into (created if missing); the default is where the
    /// locks of `recipes/` look for them, relative to the current directory.
    #[arg(short, long, value_name = "DIR", default_value = "recipes/models")]
    pub output: PathBuf,
    /// Only print the models' names, one a line; write nothing.
    #[arg(long, conflicts_with = "output")]
    pub list: bool,
}

pub fn models(args: &ModelsArgs) -> Result<(), CliError> {
    let stdout = Path::new("-");
    if args.list {
        let names: String = recipe_models()
            .iter()
            .map(|m| format!("{}\n", m.name))
            .collect();
        return write_output(stdout, names.as_bytes());
    }
    std::fs::create_dir_all(&args.output).map_err(|source| CliError::Write {
        path: args.output.clone(),
        source,
    })?;
    for m in recipe_models() {
        let path = args.output.join(m.file_name());
        let bytes = m.bytes();
        write_output(&path, &bytes)?;
        // A line as each file lands, so a failure part-way shows what was already written.
        let line = format!("wrote {} ({} bytes)\n", path.display(), bytes.len());
        write_output(stdout, line.as_bytes())?;
    }
    Ok(())
}
