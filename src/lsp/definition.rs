//! Go to definition: rules, patterns, parameters and variables jump to where they are declared,
//! a module alias or `use` to the file it loads. Standard modules are embedded in the binary and
//! have no file to open, so their items have no location (hover still shows them).

use super::analysis::Analysis;
use super::cursor::Found;
use super::meaning::Meaning;
use super::position::LineIndex;
use crate::recipe::Span;
use lsp_types::{Location, Position, Range, Url};

/// Where `found` is declared; `uri` is the document's own.
pub fn definition(a: &Analysis, found: &Found<'_>, uri: &Url) -> Option<Location> {
    let (module, span) = match super::meaning::of(a, found)? {
        Meaning::Rule { module, rule } => (module, Some(rule.name.span)),
        Meaning::Pattern { module, decl } => (module, Some(decl.name.span)),
        Meaning::Param { module, decl } => (module, Some(decl.name.span)),
        Meaning::Variable(v) => (0, Some(v.span)),
        Meaning::Module(m) | Meaning::ScriptFunction { module: m, .. } => (m, None),
        Meaning::Transformation(_)
        | Meaning::TransformationParam(..)
        | Meaning::Builtin(_)
        | Meaning::TypeWord(_)
        | Meaning::Baseline => return None,
    };
    Some(Location::new(
        a.uri(module, uri)?,
        range_in(a, module, span),
    ))
}

/// The range of `span` in module `m`'s text, or the start of the file.
pub fn range_in(a: &Analysis, m: usize, span: Option<Span>) -> Range {
    match span {
        Some(span) => {
            let text = a.loaded.sources.text(a.loaded.modules[m].file);
            LineIndex::new(text).range(text, span)
        }
        None => Range::new(Position::new(0, 0), Position::new(0, 0)),
    }
}
