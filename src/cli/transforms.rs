//! `dmove transforms`: every transformation's schema — site roles and typed parameters — in
//! words, or as JSON for tools (recipe checkers, shell completion).

use super::{output_path, print_json, write_output, CliError};
use crate::transform::Schema;

/// `dmove transforms`
#[derive(Clone, Debug, clap::Args)]
pub struct TransformsArgs {
    /// Print every transformation's full schema as JSON: name, level, doc, site roles (name,
    /// node class, optional, doc) and parameters (name, type with domain, required, default,
    /// doc).
    #[arg(long)]
    pub json: bool,
    /// Load these Rhai scripts first, so the transformations they declare are listed too
    /// (marked `scripted`).
    #[arg(long = "script", value_name = "FILE.rhai")]
    pub scripts: Vec<std::path::PathBuf>,
}

pub fn transforms(args: &TransformsArgs) -> Result<(), CliError> {
    for path in &args.scripts {
        load_script(path)?;
    }
    let schemas: Vec<&Schema> = crate::transform::all().iter().map(|t| t.schema()).collect();
    if args.json {
        return print_json(&schemas);
    }
    let text: String = schemas
        .iter()
        .map(|s| crate::transform::listing(s))
        .collect::<Vec<_>>()
        .join("\n");
    write_output(output_path(None), text.as_bytes())
}

/// Loads the script at `path` (registering its transformations), or renders why not.
fn load_script(path: &std::path::Path) -> Result<(), CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let name = path.display().to_string();
    let owner = path
        .canonicalize()
        .map_or_else(|_| name.clone(), |p| p.display().to_string());
    crate::script::load(&name, &owner, &text, crate::script::Limits::configured()).map_err(
        |e| {
            let mut sources = crate::recipe::Sources::default();
            let file = sources.add(name, text.as_str());
            eprintln!(
                "{:?}",
                miette::Report::new(sources.render(&e.diagnostic(file, &text)))
            );
            CliError::Recipe(crate::cli::recipe::RecipeError::Rejected {
                path: path.to_path_buf(),
                errors: 1,
            })
        },
    )?;
    Ok(())
}
