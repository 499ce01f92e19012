//! `dmove view MODEL [--recipe R] -o FILE.svg|FILE.html`: a picture of the program (see
//! `view`). With a recipe, the SVG shows the program after it and the HTML page has a slider
//! through every step.

use super::recipe::{file_name, optimize, ModelInput};
use super::{load_program, write_output, CliError};
use crate::ops::expand::expand_all;
use crate::view::colour::Metric;
use std::path::PathBuf;

/// `dmove view`
#[derive(Clone, Debug, clap::Args)]
pub struct ViewArgs {
    /// The model, its bindings and `--recipe` (without it: the model as loaded; with it, the HTML
    /// page gets a slider through its steps).
    #[command(flatten)]
    pub input: ModelInput,
    /// Show every operator expanded into maps and tasklets (without `--recipe`).
    #[arg(long, conflicts_with = "recipe")]
    pub expand: bool,
    /// What colours the arrays: bytes moved by their memlets, or their DMD (runs the
    /// data-movement analysis once per program shown).
    #[arg(long = "color", value_enum, default_value_t = Metric::Bytes)]
    pub colour: Metric,
    /// With `--recipe`, the HTML page keeps at most this many steps (evenly spread, the first
    /// and the last included; 0 keeps every step).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub max_steps: usize,
    /// The file to write: `.svg` for a picture, `.html` for the interactive page.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

/// What `-o` asks for, by its extension.
enum Format {
    Svg,
    Html,
}

pub fn view(args: &ViewArgs) -> Result<(), CliError> {
    let ext = (args.output.extension())
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let format = match ext.as_str() {
        "svg" => Format::Svg,
        "html" | "htm" => Format::Html,
        _ => {
            return Err(CliError::Usage(format!(
                "`{}`: write the view to a `.svg` or `.html` file",
                args.output.display()
            )))
        }
    };
    let bytes = match (&args.input.with.recipe, format) {
        (None, format) => {
            let mut p = load_program(&args.input.model, &args.input.bindings)?;
            if args.expand {
                expand_all(&mut p)?;
            }
            match format {
                Format::Svg => crate::view::svg(&p, args.colour)?,
                Format::Html => crate::view::html::page(
                    &crate::view::history::single(p, &file_name(&args.input.model)),
                    args.colour,
                )?,
            }
        }
        (Some(recipe), format) => {
            let o = optimize(
                &args.input.model,
                &args.input.bindings,
                recipe,
                &args.input.with.set,
                0,
            )?;
            match format {
                Format::Svg => crate::view::svg(&o.done.program, args.colour)?,
                Format::Html => {
                    let steps = &o.done.report.steps;
                    let h = crate::view::history::History::replay(
                        o.imported,
                        steps,
                        &o.origin,
                        args.max_steps,
                    )?;
                    crate::view::html::page(&h, args.colour)?
                }
            }
        }
    };
    write_output(&args.output, bytes.as_bytes())?;
    eprintln!("wrote {}", args.output.display());
    Ok(())
}
