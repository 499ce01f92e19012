//! Loading a recipe and every module it uses, transitively, into one table.
//!
//! The root is parsed first, then each `use` in the order written: `use std::a::b` reads the
//! embedded standard module `a::b` ([`super::stdlib`]), `use "./x.recipe"` reads a file relative
//! to the directory of the module that says it. A module reached twice (by canonical path or std
//! name) is loaded once and shared. Loading never stops at the first problem: an unreadable
//! file, an unknown standard module, a cycle or a syntax error is recorded in
//! [`Loaded::diagnostics`] and the other modules are still loaded, so `dmove check` reports
//! everything in one go. A module that does not parse is kept with an empty syntax tree, so
//! indices stay valid and the checker can tell it apart (it has a diagnostic in its file).

use super::ast::{self, UseTarget};
use super::diag::{Diagnostic, FileId, Sources, Span};
use super::{parse, scripts, stdlib};
use crate::script::{self, Script};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MODULE: &str = "dmove::recipe::module";

/// One loaded file: a recipe, a file module or a standard module.
#[derive(Clone, Debug)]
pub struct Module {
    pub file: FileId,
    /// `std::cpu`, `./common.recipe` (as the `use` wrote it), or the root's display path.
    pub name: String,
    pub ast: ast::File,
    /// Alias → index in [`Loaded::modules`].
    pub uses: BTreeMap<String, usize>,
    /// The directory file `use`s are relative to (`None` for standard modules and for a root
    /// given as text without one).
    pub dir: Option<PathBuf>,
    /// The loaded script, for a `.rhai` module (its syntax tree is then empty).
    pub script: Option<Arc<Script>>,
}

/// Every module of one recipe, `[0]` being the root.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub sources: Sources,
    pub modules: Vec<Module>,
    /// Load errors: unreadable files, unknown standard modules, cycles, syntax errors.
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    pub fn root(&self) -> &Module {
        &self.modules[0]
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// SHA-256 (hex) over every module's source (and each used module's name), in load order: what a lock file
    /// records so that a change to any used module is noticed.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        for (i, m) in self.modules.iter().enumerate() {
            // The root is hashed by content only: how its path was typed (`./x.recipe`,
            // `x.recipe`) must not change the hash; modules are named as the recipe uses them.
            let name = if i == 0 { "" } else { m.name.as_str() };
            for part in [name, self.sources.text(m.file)] {
                h.update(part.len().to_le_bytes());
                h.update(part.as_bytes());
            }
        }
        hex::encode(h.finalize())
    }

    /// Whether module `index` failed to parse (its tree is empty and says nothing): a recipe's
    /// syntax error, or a script's (whose wrapper's call into it is then not reported again).
    pub fn failed_to_parse(&self, index: usize) -> bool {
        self.modules.get(index).is_some_and(|m| {
            (self.diagnostics.iter()).any(|d| {
                d.span.file == m.file
                    && ["dmove::recipe::syntax", crate::script::error::SYNTAX].contains(&d.code)
            })
        })
    }
}

/// Loads the recipe at `path` and everything it uses. A script (`.rhai`) is loaded as the
/// whole recipe: a wrapper whose `main` calls the script's `main()` ([`scripts::wrapper`]).
pub fn load_file(path: &Path) -> Loaded {
    if let Some(file_name) =
        (path.file_name().and_then(|n| n.to_str())).filter(|n| scripts::is_script(n))
    {
        let stem = file_name.trim_end_matches(".rhai");
        let name = format!("{} (run as a recipe)", path.display());
        return load_source(
            &name,
            &scripts::wrapper(stem, file_name),
            Some(&parent(path)),
        );
    }
    let mut loader = Loader::default();
    let name = path.display().to_string();
    match read(path) {
        Ok(text) => {
            let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            loader.module(Key::File(canonical), name, &text, Some(parent(path)));
        }
        Err(why) => {
            let file = loader.sources.add(name.clone(), "");
            loader.push_empty(file, name.clone(), None);
            loader.diagnostics.push(
                Diagnostic::error(
                    MODULE,
                    Span::new(file, 0, 0),
                    format!("cannot read {name}: {why}"),
                )
                .label("this recipe"),
            );
        }
    }
    loader.finish()
}

/// The directory `path` is in, as the user spelt it (so messages show the paths they typed; a
/// bare file name is in `.`).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `rel` read from `dir`, without the `.` components (`dir/./x` is shown as `dir/x`).
fn relative_to(dir: &Path, rel: &str) -> PathBuf {
    let joined = dir.join(rel);
    let kept: PathBuf = (joined.components())
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    if kept.as_os_str().is_empty() {
        joined
    } else {
        kept
    }
}

/// Loads a recipe given as text (`name` is how messages call it); file `use`s are relative to
/// `dir`, and are errors without one.
pub fn load_source(name: &str, text: &str, dir: Option<&Path>) -> Loaded {
    let mut loader = Loader::default();
    loader.module(
        Key::Root,
        name.to_string(),
        text,
        dir.map(Path::to_path_buf),
    );
    loader.finish()
}

/// Loads what a root given as a syntax tree uses: an interactive session's declarations, whose
/// spans point into `sources` (each input is a file of its own there). `name` is how messages
/// call the root, and its file `use`s are relative to `dir`. A module already in `sources` with
/// the same name and text keeps its file, so reloading after each input does not grow them and
/// spans recorded earlier stay valid.
pub fn load_tree(sources: Sources, name: &str, mut root: ast::File, dir: Option<&Path>) -> Loaded {
    let mut loader = Loader {
        sources,
        ..Loader::default()
    };
    let file = loader.sources.intern(name, "");
    root.span = Span::new(file, 0, 0);
    let index = loader.push_empty(file, name.to_string(), dir.map(Path::to_path_buf));
    loader.keys.push(Key::Root);
    loader.modules[index].ast = root;
    loader.uses(index);
    loader.finish()
}

/// Reads a file as UTF-8, saying what went wrong in words.
fn read(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the file is not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// What makes two `use`s the same module.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    /// A root given as text: nothing can `use` it.
    Root,
    File(PathBuf),
    Std(String),
}

#[derive(Default)]
struct Loader {
    sources: Sources,
    modules: Vec<Module>,
    keys: Vec<Key>,
    diagnostics: Vec<Diagnostic>,
    /// The modules being loaded, outermost first (for cycles).
    stack: Vec<usize>,
}

impl Loader {
    fn finish(self) -> Loaded {
        Loaded {
            sources: self.sources,
            modules: self.modules,
            diagnostics: self.diagnostics,
        }
    }

    fn push_empty(&mut self, file: FileId, name: String, dir: Option<PathBuf>) -> usize {
        let text_len = self.sources.text(file).len();
        self.modules.push(Module {
            file,
            name,
            ast: ast::File {
                header: None,
                items: Vec::new(),
                comments: Vec::new(),
                span: Span::new(file, 0, text_len),
            },
            uses: BTreeMap::new(),
            dir,
            script: None,
        });
        self.modules.len() - 1
    }

    /// Adds, parses and registers one module, then loads what it uses; returns its index.
    fn module(&mut self, key: Key, name: String, text: &str, dir: Option<PathBuf>) -> usize {
        let file = self.sources.intern(&name, text);
        let (is_script, owner) = match &key {
            Key::File(path) => (
                path.to_str().is_some_and(scripts::is_script),
                path.display().to_string(),
            ),
            Key::Std(name) => (stdlib::script(name).is_some(), format!("std::{name}")),
            Key::Root => (false, name.clone()),
        };
        let index = self.push_empty(file, name.clone(), dir);
        self.keys.push(key);
        if is_script {
            match script::load(&name, &owner, text, script::Limits::configured()) {
                Ok(s) => self.modules[index].script = Some(s),
                Err(e) => self.diagnostics.push(e.diagnostic(file, text)),
            }
            return index;
        }
        match parse(file, text) {
            Ok(tree) => self.modules[index].ast = tree,
            Err(d) => {
                self.diagnostics.push(d);
                return index;
            }
        }
        self.uses(index);
        index
    }

    /// Loads every module that module `index` uses, recording them under their aliases.
    fn uses(&mut self, index: usize) {
        self.stack.push(index);
        let uses: Vec<ast::Use> = (self.modules[index].ast.items.iter())
            .filter_map(|item| match item {
                ast::Item::Use(u) => Some(u.clone()),
                _ => None,
            })
            .collect();
        let mut spans: BTreeMap<String, Span> = BTreeMap::new();
        for u in &uses {
            let Some(alias) = alias(u) else { continue };
            if let Some(first) = spans.get(&alias.name) {
                self.diagnostics.push(
                    Diagnostic::error(
                        MODULE,
                        alias.span,
                        format!("two modules are used as `{}`", alias.name),
                    )
                    .label("used again here")
                    .also(*first, "first used here")
                    .note("an alias names one module; items are referred to as `alias::name`")
                    .help(format!(
                        "give one of them another name: `… as {}2`",
                        alias.name
                    )),
                );
                continue;
            }
            spans.insert(alias.name.clone(), alias.span);
            if let Some(target) = self.load_use(index, u) {
                self.modules[index].uses.insert(alias.name, target);
            }
        }
        self.stack.pop();
    }

    /// Loads the target of `u` (used by module `from`), or records why it cannot be.
    fn load_use(&mut self, from: usize, u: &ast::Use) -> Option<usize> {
        let (key, name, text, dir) = match self.locate(from, u) {
            Ok(found) => found,
            Err(d) => {
                self.diagnostics.push(*d);
                return None;
            }
        };
        let existing = self.keys.iter().position(|k| *k == key);
        match existing {
            Some(i) if self.stack.contains(&i) => {
                let start = self.stack.iter().position(|&s| s == i).unwrap_or(0);
                let mut chain: Vec<&str> = (self.stack[start..].iter())
                    .map(|&s| self.modules[s].name.as_str())
                    .collect();
                chain.push(&self.modules[i].name);
                let chain = chain.join(" → ");
                self.diagnostics.push(
                    Diagnostic::error(MODULE, u.span, format!("modules use each other in a cycle: {chain}"))
                        .label("this use closes the cycle")
                        .note("a module's items must be known before the modules using it; a cycle has no first module")
                        .help("move what both need into a third module that uses neither"),
                );
                None
            }
            Some(i) => Some(i),
            None => Some(self.module(key, name, &text, dir)),
        }
    }

    /// Where `u` points: its key, module name, source and directory.
    fn locate(
        &self,
        from: usize,
        u: &ast::Use,
    ) -> Result<(Key, String, String, Option<PathBuf>), Box<Diagnostic>> {
        let error = |message: String| Diagnostic::error(MODULE, u.span, message);
        match &u.target {
            UseTarget::Std(path) => {
                let inner = std_name(path);
                let name = format!("std::{inner}");
                match stdlib::source(&inner).or_else(|| stdlib::script(&inner)) {
                    Some(text) => Ok((Key::Std(inner), name, text.to_string(), None)),
                    None => {
                        let known = stdlib::names();
                        let mut d = error(format!("there is no standard module `{name}`"))
                            .label("not a standard module");
                        d = match super::resolve::suggest(&inner, known.iter().copied()) {
                            Some(c) => d.help(format!("did you mean `std::{c}`?")),
                            None => d,
                        };
                        let listing = if known.is_empty() {
                            "the standard library has no modules yet".to_string()
                        } else {
                            format!("standard modules: {}", known.join(", "))
                        };
                        Err(Box::new(d.note(listing)))
                    }
                }
            }
            UseTarget::File(s) => {
                let Some(dir) = &self.modules[from].dir else {
                    return Err(Box::new(error(format!("cannot use \"{}\" here", s.value))
                        .label("a file module")
                        .note(format!(
                            "{} has no directory to read files relative to (it is a standard module or was given as text)",
                            self.modules[from].name
                        ))));
                };
                let tried = relative_to(dir, &s.value);
                match read(&tried) {
                    Ok(text) => {
                        let canonical = tried.canonicalize().unwrap_or_else(|_| tried.clone());
                        Ok((Key::File(canonical), s.value.clone(), text, Some(parent(&tried))))
                    }
                    Err(why) => Err(Box::new(error(format!("cannot read module \"{}\"", s.value))
                        .label("this module")
                        .note(format!("tried {}: {why}", tried.display()))
                        .help("file paths are relative to the directory of the file that uses them"))),
                }
            }
        }
    }
}

/// The standard module's name without the leading `std`: `cpu`, `a::b`.
fn std_name(path: &ast::Path) -> String {
    let segments: Vec<&str> = path.segments.iter().map(|s| s.name.as_str()).collect();
    match segments.as_slice() {
        ["std", rest @ ..] if !rest.is_empty() => rest.join("::"),
        all => all.join("::"),
    }
}

/// The name a `use` binds: its `as` alias, else the last segment of a std path, else the file
/// stem (`"./common.recipe"` → `common`). `None` when a file name has no usable stem.
pub fn alias(u: &ast::Use) -> Option<ast::Ident> {
    if let Some(a) = &u.alias {
        return Some(a.clone());
    }
    match &u.target {
        UseTarget::Std(path) => path.segments.last().cloned(),
        UseTarget::File(s) => {
            let stem = Path::new(&s.value).file_stem()?.to_str()?;
            let stem = stem.strip_suffix(".recipe").unwrap_or(stem);
            let stem = stem.strip_suffix(".rhai").unwrap_or(stem);
            Some(ast::Ident {
                name: stem.to_string(),
                span: s.span,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "recipe \"t\" version \"0.1.0\"\n";

    #[test]
    fn an_unknown_standard_module_is_a_module_error_at_the_use() {
        let src = format!("{HEADER}use std::nosuch\nmain {{\n}}\n");
        let l = load_source("t.recipe", &src, None);
        assert_eq!(l.modules.len(), 1);
        let [d] = l.diagnostics.as_slice() else {
            panic!("one diagnostic expected: {:#?}", l.diagnostics)
        };
        assert_eq!(d.code, MODULE);
        assert_eq!(d.message, "there is no standard module `std::nosuch`");
        assert_eq!(&src[d.span.start..d.span.end], "use std::nosuch");
        assert!(l.root().uses.is_empty());
    }

    #[test]
    fn a_file_use_needs_a_directory() {
        let src = format!("{HEADER}use \"./x.recipe\" as x\nmain {{\n}}\n");
        let l = load_source("t.recipe", &src, None);
        assert_eq!(l.diagnostics.len(), 1);
        assert_eq!(l.diagnostics[0].message, "cannot use \"./x.recipe\" here");
    }

    #[test]
    fn a_root_that_cannot_be_read_is_reported() {
        let l = load_file(Path::new("/nonexistent/dir/r.recipe"));
        assert_eq!(l.modules.len(), 1);
        assert!(l.has_errors());
        assert!(l.diagnostics[0]
            .message
            .starts_with("cannot read /nonexistent/dir/r.recipe"));
    }

    #[test]
    fn a_syntax_error_keeps_an_empty_module() {
        let l = load_source("t.recipe", "rule (", None);
        assert_eq!(l.modules.len(), 1);
        assert!(l.failed_to_parse(0));
        assert!(l.root().ast.items.is_empty());
    }

    #[test]
    fn std_paths_drop_the_std_segment_and_alias_the_last() {
        let src = format!("{HEADER}use std::a::b\nmain {{\n}}\n");
        let file = crate::recipe::parse(FileId(0), &src).expect("parses");
        let Some(ast::Item::Use(u)) = file.items.first() else {
            panic!("a use")
        };
        let UseTarget::Std(path) = &u.target else {
            panic!("a std use")
        };
        assert_eq!(std_name(path), "a::b");
        assert_eq!(alias(u).map(|a| a.name), Some("b".to_string()));
    }
}
