//! The open documents: their text as the editor has it (full synchronisation: every change
//! sends the whole text), the line index for positions and the analysis of that text.
//!
//! A document that does not parse while it is being typed still completes the names it declared
//! the last time it did, so each document keeps its last analysis that parsed as well.

use super::analysis::Analysis;
use super::position::LineIndex;
use lsp_types::Url;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

/// One open document.
#[derive(Debug)]
pub struct Document {
    pub text: String,
    pub lines: LineIndex,
    pub analysis: Rc<Analysis>,
    /// The latest analysis whose text parsed (the current one when it parses).
    pub last_parsed: Option<Rc<Analysis>>,
}

impl Document {
    /// The file behind the document, for `file:` URIs.
    pub fn path(uri: &Url) -> Option<PathBuf> {
        (uri.scheme() == "file")
            .then(|| uri.to_file_path().ok())
            .flatten()
    }
}

/// Every open document, by URI.
#[derive(Debug, Default)]
pub struct Documents {
    open: HashMap<Url, Document>,
}

impl Documents {
    /// Opens or replaces the text of `uri`, analysing it; returns the new document.
    pub fn set(&mut self, uri: &Url, text: String, analysis: Analysis) -> &Document {
        let analysis = Rc::new(analysis);
        let previous = self.open.remove(uri).and_then(|d| d.last_parsed);
        let last_parsed = if analysis.parsed() {
            Some(analysis.clone())
        } else {
            previous
        };
        let doc = Document {
            lines: LineIndex::new(&text),
            text,
            analysis,
            last_parsed,
        };
        self.open.entry(uri.clone()).or_insert(doc)
    }

    pub fn get(&self, uri: &Url) -> Option<&Document> {
        self.open.get(uri)
    }

    pub fn close(&mut self, uri: &Url) {
        self.open.remove(uri);
    }
}

/// Analyses the text of the document at `uri`: named by its path when it is a file (so
/// messages say what `dmove check` would), with file `use`s relative to its directory.
pub fn analyse(uri: &Url, text: &str) -> Analysis {
    let path = Document::path(uri);
    let name = path
        .as_ref()
        .map_or_else(|| uri.to_string(), |p| p.display().to_string());
    Analysis::new(&name, text, path.as_deref())
}
