//! What a name under the cursor means, resolved exactly as the checker resolves it
//! ([`crate::recipe::resolve`]): hover describes a [`Meaning`], definition jumps to it.

use super::analysis::Analysis;
use super::cursor::{Found, Target};
use crate::recipe::ast;
use crate::recipe::builtins::Builtin;
use crate::recipe::check::TYPE_WORDS;
use crate::recipe::modules::alias;
use crate::recipe::resolve::{self, Callee};
use crate::transform::{ParamDecl, Transformation};

/// What a name refers to. Items of modules carry the module's index in the analysis.
#[derive(Clone, Copy)]
pub enum Meaning<'a> {
    Transformation(&'static dyn Transformation),
    /// A parameter of a transformation, named in a call.
    TransformationParam(&'static dyn Transformation, &'static ParamDecl),
    Builtin(&'static Builtin),
    Rule {
        module: usize,
        rule: &'a ast::Rule,
    },
    Pattern {
        module: usize,
        decl: &'a ast::PatternDecl,
    },
    Param {
        module: usize,
        decl: &'a ast::Param,
    },
    ScriptFunction {
        module: usize,
        name: &'a str,
        arity: usize,
    },
    /// A rule parameter, `let` or `for each` variable, at its binding.
    Variable(&'a ast::Ident),
    Module(usize),
    /// A node class or value type in a rule parameter's type.
    TypeWord(&'a str),
    /// `baseline`: the program before the recipe's first step.
    Baseline,
}

/// The meaning of `found`, a name in the document (module 0); `None` when it names nothing
/// (the checker reports that as a diagnostic).
pub fn of<'a>(a: &'a Analysis, found: &Found<'a>) -> Option<Meaning<'a>> {
    let l = &a.loaded;
    match found.target {
        Target::Module { path, depth } => {
            let mut m = 0;
            for seg in &path.segments[..=depth] {
                m = *l.modules.get(m)?.uses.get(&seg.name)?;
            }
            Some(Meaning::Module(m))
        }
        Target::Use(u) => {
            let name = alias(u)?.name;
            l.root().uses.get(&name).map(|&m| Meaning::Module(m))
        }
        Target::Callee(path) => callee(a, path),
        Target::ArgName { callee: path, name } => match callee(a, path)? {
            Meaning::Transformation(t) => (t.schema().params.iter())
                .find(|d| d.name == name.name)
                .map(|d| Meaning::TransformationParam(t, d)),
            other => Some(other),
        },
        Target::Type(path) => match path.segments.as_slice() {
            [word] if TYPE_WORDS.contains(&word.name.as_str()) => {
                Some(Meaning::TypeWord(&word.name))
            }
            _ => pattern(a, path),
        },
        Target::Value { local: Some(v), .. } | Target::Binding(v) => Some(Meaning::Variable(v)),
        Target::Value { path, local: None } => match resolve::param(l, 0, path) {
            Some((module, decl)) => Some(Meaning::Param { module, decl }),
            None if path.text() == "baseline" => Some(Meaning::Baseline),
            // A pattern passed by name, as to `matches(p)`.
            None => pattern(a, path),
        },
        Target::Chosen(i) => (resolve::params(l, 0))
            .find(|p| p.name.name == i.name)
            .map(|decl| Meaning::Param { module: 0, decl }),
        Target::Rule(rule) => Some(Meaning::Rule { module: 0, rule }),
        Target::Pattern(decl) => Some(Meaning::Pattern { module: 0, decl }),
        Target::Param(decl) => Some(Meaning::Param { module: 0, decl }),
    }
}

fn callee<'a>(a: &'a Analysis, path: &'a ast::Path) -> Option<Meaning<'a>> {
    Some(match resolve::callee(&a.loaded, 0, path).ok()? {
        Callee::Rule { module, rule } => Meaning::Rule { module, rule },
        Callee::Transformation(t) => Meaning::Transformation(t),
        Callee::Builtin(b) => Meaning::Builtin(b),
        Callee::Script {
            module,
            name,
            arity,
            ..
        } => Meaning::ScriptFunction {
            module,
            name,
            arity,
        },
    })
}

fn pattern<'a>(a: &'a Analysis, path: &ast::Path) -> Option<Meaning<'a>> {
    resolve::pattern(&a.loaded, 0, path)
        .ok()
        .map(|(module, decl)| Meaning::Pattern { module, decl })
}
