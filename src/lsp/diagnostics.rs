//! Recipe diagnostics as LSP diagnostics: the same code, message, severity and span as
//! `dmove check` prints, with the labels as related information and the note and help appended
//! to the message (the protocol has no fields for them).
//!
//! A finding inside a module the document uses (a syntax error in `./common.recipe`, say) is
//! shown on the document's `use` that loaded the module, prefixed with the module's name, with
//! its own location as related information; labels in standard modules, which have no file to
//! open, are written into the message instead.

use super::analysis::Analysis;
use super::definition::range_in;
use crate::recipe::{Diagnostic, Severity, Span};
use lsp_types::{DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Url};

/// Every diagnostic of the analysis, placed in the document at `uri`.
pub fn to_lsp(a: &Analysis, uri: &Url) -> Vec<lsp_types::Diagnostic> {
    a.diagnostics.iter().map(|d| convert(a, uri, d)).collect()
}

fn convert(a: &Analysis, uri: &Url, d: &Diagnostic) -> lsp_types::Diagnostic {
    let module = a.module_of(d.span.file);
    let (range, mut message) = match module {
        Some(0) => (range_in(a, 0, Some(d.span)), d.message.clone()),
        other => {
            let via = other.and_then(|m| a.via[m]);
            let name = other.map_or("?", |m| a.loaded.modules[m].name.as_str());
            (range_in(a, 0, via), format!("in {name}: {}", d.message))
        }
    };
    let mut related = Vec::new();
    let labels = std::iter::once((d.span, d.label.as_str()))
        .filter(|(_, l)| !l.is_empty())
        .chain(d.secondary.iter().map(|(s, l)| (*s, l.as_str())));
    for (span, label) in labels {
        match location(a, uri, span) {
            Some(location) => related.push(DiagnosticRelatedInformation {
                location,
                message: label.to_string(),
            }),
            None => {
                let (line, col) = a.loaded.sources.line_col(span);
                let file = a.loaded.sources.name(span.file);
                message.push_str(&format!("\n{label} ({file}:{line}:{col})"));
            }
        }
    }
    if let Some(note) = &d.note {
        message.push_str(&format!("\n{note}"));
    }
    if let Some(help) = &d.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.to_string())),
        source: Some("dmove".to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..lsp_types::Diagnostic::default()
    }
}

/// Where `span` is, when its file can be opened: the document itself or a file module.
fn location(a: &Analysis, uri: &Url, span: Span) -> Option<Location> {
    let m = a.module_of(span.file)?;
    Some(Location::new(a.uri(m, uri)?, range_in(a, m, Some(span))))
}
