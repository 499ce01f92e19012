//! `dmove view`: pictures of a program's IR — library operators, maps as nested boxes,
//! tasklets, access nodes coloured by their data movement with a legend, memlets labelled with
//! subset and volume — as one SVG file or as one self-contained HTML page (pan and zoom,
//! collapsible maps, details on hover, and a step slider through a recipe's rewrites).
//!
//! The layout is this module's own (no Graphviz): `scene` turns the IR into boxes, `rank` puts
//! each scope's boxes in rows, `place` gives coordinates scope by scope (a map's box around its
//! placed body), `draw` writes SVG, `colour` measures arrays, `html` and `history` build the
//! interactive page.

pub mod colour;
pub mod draw;
pub mod history;
pub mod html;
pub mod place;
pub mod rank;
pub mod scene;

use crate::ir::Program;
use colour::{Colouring, Metric};

/// Why a picture could not be made.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ViewError {
    /// The data-movement analysis behind `--color dmd` failed.
    #[error("cannot measure the arrays' data movement: {0}")]
    #[diagnostic(
        code(dmove::view::measure),
        help("bind every symbol (e.g. `--dim batch=1`), or colour by bytes: `--color bytes`")
    )]
    Measure(String),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Replay(#[from] crate::transform::engine::ReplayError),
}

/// `p` as an SVG document, titled with its name, arrays coloured by `metric`.
pub fn svg(p: &Program, metric: Metric) -> Result<String, ViewError> {
    let colouring = Colouring::measure(metric, &[p])
        .map_err(ViewError::Measure)?
        .remove(0);
    let s = scene::scene(p, &colouring);
    let placed = place::place(&s);
    Ok(draw::document(&title(p), &s, &placed, &colouring))
}

/// The picture's title: the program's name and its size.
fn title(p: &Program) -> String {
    let mut nodes = 0;
    p.graph.each(&mut |_| nodes += 1);
    format!("{} — {} nodes, {} containers", p.name, nodes, p.data.len())
}
