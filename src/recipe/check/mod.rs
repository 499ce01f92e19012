//! The static checker: everything that can be known about a recipe before it runs, reported all
//! at once.
//!
//! It checks every loaded module (the root and what it uses): the header and version range
//! ([`header`]), duplicate names, parameters and `choose` ([`items`]), patterns (through
//! [`crate::recipe::patterns::build`]), and every statement and expression of `main` and the
//! rules ([`stmts`], [`exprs`]): names resolve, calls fit the transformation schemas, rules and
//! built-ins ([`calls`]), captures exist, and types agree where they are known ([`types`]).
//! Unused parameters and rules of the root are warnings ([`unused`]).
//!
//! The result includes the load errors ([`Loaded::diagnostics`]) so one list says everything;
//! names that lead into a module that failed to load are not reported again.

mod calls;
mod exprs;
mod functions;
mod header;
mod items;
mod reach;
mod stmts;
mod types;
mod unused;

pub use calls::TYPE_WORDS;
pub use reach::params_read;

use super::ast;
use super::diag::Diagnostic;
use super::modules::{alias, Loaded};
use std::collections::BTreeSet;
use types::Ty;

pub(crate) const BAD: &str = "dmove::recipe::bad_argument";
pub(crate) const DUPLICATE: &str = "dmove::recipe::duplicate";

/// Every error and warning about `l`, load errors included, sorted by file and position.
pub fn check(l: &Loaded) -> Vec<Diagnostic> {
    let mut c = Checker::run(l);
    if !l.failed_to_parse(0) {
        unused::warn(&mut c);
    }
    let mut all = l.diagnostics.clone();
    all.append(&mut c.out);
    all.sort_by_key(|d| (d.span.file, d.span.start));
    all
}

/// The checker's state: what it found, and which items each body refers to.
pub(crate) struct Checker<'a> {
    l: &'a Loaded,
    out: Vec<Diagnostic>,
    /// Every reference to a rule or parameter `(module, name)` from outside itself, with the
    /// body it is made from.
    refs: BTreeSet<(Body, (usize, String))>,
}

/// A body references are made from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Body {
    /// A module's `main` (only the root's runs).
    Main(usize),
    /// A module's parameter declarations and `choose` items (evaluated for every module used).
    Declarations(usize),
    /// A rule of a module.
    Rule(usize, String),
}

/// Where a body is checked: its module and the rule it belongs to (`None` for `main` and
/// parameter declarations, told apart by `main`).
#[derive(Clone, Copy)]
pub(crate) struct Cx<'a> {
    pub module: usize,
    pub rule: Option<&'a str>,
    pub main: bool,
}

impl Cx<'_> {
    fn body(&self) -> Body {
        match (self.rule, self.main) {
            (Some(r), _) => Body::Rule(self.module, r.to_string()),
            (None, true) => Body::Main(self.module),
            (None, false) => Body::Declarations(self.module),
        }
    }
}

/// Variables in scope: rule parameters, `let`s, `for each` variables, innermost frame last.
#[derive(Default)]
pub(crate) struct Scope<'a> {
    frames: Vec<Vec<(String, Ty<'a>)>>,
}

impl<'a> Scope<'a> {
    pub fn push(&mut self) {
        self.frames.push(Vec::new());
    }

    pub fn pop(&mut self) {
        self.frames.pop();
    }

    pub fn bind(&mut self, name: &str, ty: Ty<'a>) {
        if self.frames.is_empty() {
            self.push();
        }
        if let Some(frame) = self.frames.last_mut() {
            frame.push((name.to_string(), ty));
        }
    }

    /// The innermost binding of `name`.
    pub fn get(&self, name: &str) -> Option<&Ty<'a>> {
        (self.frames.iter().rev())
            .flat_map(|f| f.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    pub fn names(&self) -> Vec<String> {
        self.frames
            .iter()
            .flatten()
            .map(|(n, _)| n.clone())
            .collect()
    }
}

impl<'a> Checker<'a> {
    /// Checks every module that parsed.
    fn run(l: &'a Loaded) -> Checker<'a> {
        let mut c = Checker {
            l,
            out: Vec::new(),
            refs: BTreeSet::new(),
        };
        for m in 0..l.modules.len() {
            if !l.failed_to_parse(m) {
                c.module(m);
            }
        }
        c
    }

    /// Whether anything outside item `name` of module `m` refers to it.
    fn used(&self, m: usize, name: &str) -> bool {
        (self.refs.iter()).any(|(_, (tm, tn))| *tm == m && tn == name)
    }

    fn module(&mut self, m: usize) {
        let l = self.l;
        let module = &l.modules[m];
        header::check(self, m);
        items::check(self, m);
        for item in &module.ast.items {
            match item {
                ast::Item::Pattern(p) => {
                    if let Err(mut e) = super::patterns::build(p) {
                        self.out.append(&mut e);
                    }
                }
                ast::Item::Rule(r) => self.rule(m, r),
                ast::Item::Main(r) => {
                    let cx = Cx {
                        module: m,
                        rule: None,
                        main: true,
                    };
                    self.block(cx, &mut Scope::default(), &r.body);
                }
                ast::Item::Use(_) | ast::Item::Param(_) | ast::Item::Choose(_) => {}
            }
        }
    }

    /// A rule's parameters (typed, distinct) and its body.
    fn rule(&mut self, m: usize, r: &'a ast::Rule) {
        let mut scope = Scope::default();
        scope.push();
        for (i, p) in r.params.iter().enumerate() {
            if let Some(first) = r.params[..i].iter().find(|q| q.name.name == p.name.name) {
                self.out.push(
                    Diagnostic::error(
                        DUPLICATE,
                        p.name.span,
                        format!(
                            "rule `{}` has two parameters named `{}`",
                            r.name.name, p.name.name
                        ),
                    )
                    .label("declared again here")
                    .also(first.name.span, "first declared here"),
                );
            }
            let ty = match calls::param_type(self.l, m, p) {
                Ok(t) => t,
                Err(d) => {
                    self.report(m, &p.ty, *d);
                    Ty::Unknown
                }
            };
            scope.bind(&p.name.name, ty);
        }
        let cx = Cx {
            module: m,
            rule: Some(&r.name.name),
            main: false,
        };
        self.block(cx, &mut scope, &r.body);
    }

    /// Records a reference to item `name` of module `m`, unless it is the rule itself.
    fn record(&mut self, cx: Cx<'_>, m: usize, name: &str) {
        if !(m == cx.module && cx.rule == Some(name)) {
            self.refs.insert((cx.body(), (m, name.to_string())));
        }
    }

    /// Reports `d` about `path` (seen from module `m`) unless the path leads through a module
    /// that failed to load or parse, whose error has been reported already.
    fn report(&mut self, m: usize, path: &ast::Path, d: Diagnostic) {
        if !self.silenced(m, path) {
            self.out.push(d);
        }
    }

    /// Whether `path` leads through a `use` that failed (or into a module that did not parse).
    fn silenced(&self, m: usize, path: &ast::Path) -> bool {
        let l = self.l;
        let mut module = m;
        for seg in &path.segments[..path.segments.len().saturating_sub(1)] {
            let Some(current) = l.modules.get(module) else {
                return true;
            };
            match current.uses.get(&seg.name) {
                Some(&next) if l.failed_to_parse(next) => return true,
                Some(&next) => module = next,
                None => {
                    return (current.ast.items.iter()).any(|i| {
                        matches!(i, ast::Item::Use(u) if alias(u).is_some_and(|a| a.name == seg.name))
                    })
                }
            }
        }
        false
    }
}
