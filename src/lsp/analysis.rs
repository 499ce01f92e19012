//! What the server knows about one open document: the recipe loaded from the editor's text (its
//! `use`d files read from disk relative to the document), every diagnostic the checker reports,
//! and where each loaded module lives, so hover, completion and definition can follow names
//! into the modules that declare them.

use crate::recipe::ast::{self, UseTarget};
use crate::recipe::{check, load_source, Diagnostic, FileId, Loaded, Span};
use lsp_types::Url;
use std::path::{Path, PathBuf};

/// The loaded recipe and its diagnostics, computed once per version of a document.
#[derive(Debug)]
pub struct Analysis {
    pub loaded: Loaded,
    /// Load errors and checker findings, as `dmove check` reports them.
    pub diagnostics: Vec<Diagnostic>,
    /// The file each module was read from (`None` for standard modules); `[0]` is the
    /// document's own path when it is a file.
    pub paths: Vec<Option<PathBuf>>,
    /// For each module, the span of the document's `use` through which it was loaded (`None`
    /// for the document itself and for modules no `use` of it reaches).
    pub via: Vec<Option<Span>>,
}

impl Analysis {
    /// Loads and checks `text`, the content of the document at `path` (`None` for an unsaved
    /// buffer, whose file `use`s then cannot be resolved and are reported as such).
    pub fn new(name: &str, text: &str, path: Option<&Path>) -> Analysis {
        let dir = path.and_then(Path::parent);
        let loaded = load_source(name, text, dir);
        let diagnostics = check(&loaded);
        let paths = module_paths(&loaded, path);
        let via = reached_through(&loaded);
        Analysis {
            loaded,
            diagnostics,
            paths,
            via,
        }
    }

    /// Whether the document itself parsed (its syntax tree says what it declares).
    pub fn parsed(&self) -> bool {
        !self.loaded.failed_to_parse(0)
    }

    /// The index of the module whose source is `file`.
    pub fn module_of(&self, file: FileId) -> Option<usize> {
        self.loaded.modules.iter().position(|m| m.file == file)
    }

    /// The URI of module `m`: `document` for the document itself, a `file:` URI for a file
    /// module, `None` for a standard module (embedded, with no file to open).
    pub fn uri(&self, m: usize, document: &Url) -> Option<Url> {
        match m {
            0 => Some(document.clone()),
            m => Url::from_file_path(self.paths.get(m)?.as_ref()?).ok(),
        }
    }

    /// The syntax tree of the document.
    pub fn root(&self) -> &ast::File {
        &self.loaded.root().ast
    }
}

/// Where each module was read from: a file `use` is relative to the directory of the module
/// that says it. Modules are loaded depth-first, each pushed before what it uses, so a module's
/// first user always comes before it.
fn module_paths(l: &Loaded, root: Option<&Path>) -> Vec<Option<PathBuf>> {
    let mut paths: Vec<Option<PathBuf>> = vec![None; l.modules.len()];
    if let Some(p) = root {
        paths[0] = Some(p.to_path_buf());
    }
    for m in &l.modules {
        let Some(dir) = &m.dir else { continue };
        for (target, u) in uses_with_items(m) {
            let UseTarget::File(s) = &u.target else {
                continue;
            };
            if let Some(slot) = paths.get_mut(target).filter(|p| p.is_none()) {
                let joined = dir.join(&s.value);
                *slot = Some(joined.canonicalize().unwrap_or(joined));
            }
        }
    }
    paths
}

/// For every module, the root `use` it was first reached through.
fn reached_through(l: &Loaded) -> Vec<Option<Span>> {
    let mut via: Vec<Option<Span>> = vec![None; l.modules.len()];
    for (start, u) in uses_with_items(&l.modules[0]) {
        let mut stack = vec![start];
        while let Some(m) = stack.pop() {
            match via.get_mut(m) {
                Some(slot @ None) if m != 0 => *slot = Some(u.span),
                _ => continue,
            }
            stack.extend(l.modules[m].uses.values().copied());
        }
    }
    via
}

/// `(module index, use)` of each `use` of `m` that loaded, in source order.
fn uses_with_items(m: &crate::recipe::Module) -> impl Iterator<Item = (usize, &ast::Use)> {
    m.ast.items.iter().filter_map(|item| match item {
        ast::Item::Use(u) => {
            let alias = crate::recipe::modules::alias(u)?;
            m.uses.get(&alias.name).map(|&i| (i, u))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_located_and_traced_to_the_use_that_loaded_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("common.recipe"),
            "rule fold() {\n  print 1\n}\n",
        )
        .expect("write");
        let root = dir.path().join("main.recipe");
        let text = "recipe \"t\" version \"0.1.0\"\nuse std::loops\nuse \"./common.recipe\" as common\nmain {\n  common::fold()\n}\n";
        let a = Analysis::new("main.recipe", text, Some(&root));
        assert!(a.parsed());
        assert_eq!(a.loaded.modules.len(), 3, "{:#?}", a.diagnostics);
        let common = (a.loaded.modules.iter())
            .position(|m| m.name == "./common.recipe")
            .expect("common loaded");
        let expected = dir
            .path()
            .join("common.recipe")
            .canonicalize()
            .expect("exists");
        assert_eq!(a.paths[common].as_deref(), Some(expected.as_path()));
        let loops = (a.loaded.modules.iter())
            .position(|m| m.name == "std::loops")
            .expect("loops loaded");
        assert_eq!(a.paths[loops], None);
        let via = a.via[common].expect("reached");
        assert_eq!(
            &text[via.start..via.end],
            "use \"./common.recipe\" as common"
        );
        assert_eq!(a.via[0], None);
    }
}
