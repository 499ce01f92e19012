//! Recipe diagnostics: a stable code, a message, the span it is about with a label, a note that
//! says why and an optional help. Sources are kept in a [`Sources`] table and attached only when
//! a diagnostic is rendered, so diagnostics stay small values that tests can compare.

use miette::{LabeledSpan, NamedSource, SourceSpan};
use std::fmt;
use std::sync::Arc;

/// Index of a file in [`Sources`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileId(pub u32);

/// A byte range of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span { file, start, end }
    }

    /// The smallest span covering both (of the same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// One finding about a recipe.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// `dmove::recipe::unknown_name`, … (see `docs/recipe-language.md`).
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    pub label: String,
    /// More places worth showing (another file's spans are shown as related notes).
    pub secondary: Vec<(Span, String)>,
    /// Why, in words.
    pub note: Option<String>,
    /// What to do about it.
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            note: None,
            help: None,
        }
    }

    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn also(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The text of every file a recipe run loaded, by [`FileId`].
#[derive(Clone, Debug, Default)]
pub struct Sources {
    files: Vec<(String, Arc<str>)>,
}

impl Sources {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> FileId {
        self.files.push((name.into(), text.into()));
        FileId(self.files.len() as u32 - 1)
    }

    /// The file with this name and text if there is one, else a new one: reloading a module
    /// keeps its file, so spans recorded before the reload still point at the right text.
    pub fn intern(&mut self, name: &str, text: &str) -> FileId {
        match (self.files.iter()).position(|(n, t)| n == name && **t == *text) {
            Some(i) => FileId(i as u32),
            None => self.add(name, text),
        }
    }

    pub fn name(&self, id: FileId) -> &str {
        self.files.get(id.0 as usize).map_or("?", |f| f.0.as_str())
    }

    pub fn text(&self, id: FileId) -> &str {
        self.files.get(id.0 as usize).map_or("", |f| &f.1)
    }

    /// 1-based line and column of a span's start.
    pub fn line_col(&self, span: Span) -> (usize, usize) {
        let text = self.text(span.file);
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, col)
    }

    /// The diagnostic with its source attached, for miette's handlers.
    pub fn render(&self, d: &Diagnostic) -> Rendered {
        let file = |id: FileId| {
            let (name, text) = self.files.get(id.0 as usize).cloned().unwrap_or_default();
            NamedSource::new(name, text.to_string())
        };
        let elsewhere = (d.secondary.iter())
            .filter(|(s, _)| s.file != d.span.file)
            .map(|(s, label)| Rendered {
                code: d.code,
                severity: miette::Severity::Advice,
                message: label.clone(),
                source: file(s.file),
                labels: vec![LabeledSpan::new_with_span(
                    Some(label.clone()),
                    to_miette(*s),
                )],
                help: None,
                related: Vec::new(),
            })
            .collect();
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            (!d.label.is_empty()).then(|| d.label.clone()),
            to_miette(d.span),
        )];
        labels.extend(
            (d.secondary.iter())
                .filter(|(s, _)| s.file == d.span.file)
                .map(|(s, label)| LabeledSpan::new_with_span(Some(label.clone()), to_miette(*s))),
        );
        let help = match (&d.note, &d.help) {
            (Some(n), Some(h)) => Some(format!("{n}\n{h}")),
            (n, h) => n.clone().or_else(|| h.clone()),
        };
        Rendered {
            code: d.code,
            severity: match d.severity {
                Severity::Error => miette::Severity::Error,
                Severity::Warning => miette::Severity::Warning,
            },
            message: d.message.clone(),
            source: file(d.span.file),
            labels,
            help,
            related: elsewhere,
        }
    }

    /// Every diagnostic rendered as plain text (no colours), for tests and non-terminal output.
    pub fn render_plain(&self, diags: &[Diagnostic]) -> String {
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_width(100);
        let mut out = String::new();
        for d in diags {
            let r = self.render(d);
            let _ = handler.render_report(&mut out, &r);
        }
        out
    }
}

fn to_miette(s: Span) -> SourceSpan {
    SourceSpan::new(s.start.into(), s.end.saturating_sub(s.start))
}

/// A diagnostic with its source, ready for miette.
#[derive(Debug)]
pub struct Rendered {
    code: &'static str,
    severity: miette::Severity,
    message: String,
    source: NamedSource<String>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
    related: Vec<Rendered>,
}

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rendered {}

impl miette::Diagnostic for Rendered {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        if self.related.is_empty() {
            return None;
        }
        Some(Box::new(
            self.related.iter().map(|r| r as &dyn miette::Diagnostic),
        ))
    }
}
