//! Name resolution, shared by the checker and the interpreter so both agree on what a name is.
//!
//! A one-segment name is looked up in the module itself (its rules, patterns and params), then
//! in the transformation registry (by its exact spelling), then among the built-in functions.
//! `alias::name` (or `a::b::name` through modules that use modules) looks only at the items of
//! the module the aliases lead to: registry names and built-ins are never qualified. An unknown
//! name is `dmove::recipe::unknown_name` with the closest visible name as "did you mean".

use super::ast;
use super::builtins::{self, Builtin};
use super::diag::Diagnostic;
use super::modules::Loaded;
use crate::script::Script;
use crate::transform::{self, Transformation};
use std::sync::Arc;

pub const UNKNOWN_NAME: &str = "dmove::recipe::unknown_name";

/// What a call refers to.
#[derive(Clone, Copy)]
pub enum Callee<'a> {
    Rule {
        module: usize,
        rule: &'a ast::Rule,
    },
    Transformation(&'static dyn Transformation),
    Builtin(&'static Builtin),
    /// A function of the script module `module` (`alias::name`).
    Script {
        module: usize,
        script: &'a Arc<Script>,
        name: &'a str,
        arity: usize,
    },
}

/// The rule, transformation or built-in `path` names, seen from `module`.
pub fn callee<'a>(
    l: &'a Loaded,
    module: usize,
    path: &'a ast::Path,
) -> Result<Callee<'a>, Diagnostic> {
    let (m, name) = owner(l, module, path)?;
    if let Some(script) = l
        .modules
        .get(m)
        .and_then(|x| x.script.as_ref())
        .filter(|_| m != module)
    {
        let functions = script.functions();
        return match functions.iter().find(|(f, _)| *f == name.name) {
            Some((_, arity)) => Ok(Callee::Script {
                module: m,
                script,
                name: &name.name,
                arity: *arity,
            }),
            None => {
                let names: Vec<String> = functions.into_iter().map(|(f, _)| f).collect();
                Err(unknown(
                    path,
                    format!(
                        "the script {} has no function `{}`",
                        l.modules[m].name, name.name
                    ),
                    "not a function of the script",
                    &names,
                )
                .note(match names.is_empty() {
                    true => "the script defines no functions".to_string(),
                    false => format!("its functions: {}", names.join(", ")),
                }))
            }
        };
    }
    if let Some(rule) = rules(l, m).find(|r| r.name.name == name.name) {
        return Ok(Callee::Rule { module: m, rule });
    }
    if path.segments.len() == 1 {
        if let Some(t) = transform::lookup(&name.name) {
            return Ok(Callee::Transformation(t));
        }
        if let Some(b) = builtins::lookup(&name.name) {
            return Ok(Callee::Builtin(b));
        }
    }
    let mut candidates = visible(l, m, path.segments.len() == 1);
    candidates.retain(|c| !patterns(l, m).any(|p| p.name.name == *c));
    Err(unknown(
        path,
        format!("no rule, transformation or function is named `{}`", path.text()),
        "not a rule, transformation or function",
        &candidates,
    )
    .note(match path.segments.len() {
        1 => "a call names a rule of this file, a transformation of the registry (`dmove transforms` lists them) or a built-in function",
        _ => "a qualified call names a rule of that module, or a function of that script",
    }))
}

/// The pattern `path` names, seen from `module`: the module that declares it and the pattern.
pub fn pattern<'a>(
    l: &'a Loaded,
    module: usize,
    path: &ast::Path,
) -> Result<(usize, &'a ast::PatternDecl), Diagnostic> {
    let (m, name) = owner(l, module, path)?;
    match patterns(l, m).find(|p| p.name.name == name.name) {
        Some(p) => Ok((m, p)),
        None => {
            let names: Vec<String> = patterns(l, m).map(|p| p.name.name.clone()).collect();
            Err(unknown(
                path,
                format!("no pattern is named `{}`", path.text()),
                "not a pattern",
                &names,
            ))
        }
    }
}

/// The recipe parameter `path` names, seen from `module`, if there is one.
pub fn param<'a>(
    l: &'a Loaded,
    module: usize,
    path: &ast::Path,
) -> Option<(usize, &'a ast::Param)> {
    let (m, name) = owner(l, module, path).ok()?;
    params(l, m)
        .find(|p| p.name.name == name.name)
        .map(|p| (m, p))
}

/// The module whose items `path` refers to (following its alias segments) and the item name.
pub fn owner<'p>(
    l: &Loaded,
    module: usize,
    path: &'p ast::Path,
) -> Result<(usize, &'p ast::Ident), Diagnostic> {
    let Some((name, aliases)) = path.segments.split_last() else {
        return Err(Diagnostic::error(UNKNOWN_NAME, path.span, "an empty name").label("here"));
    };
    let mut m = module;
    for alias in aliases {
        let Some(module) = l.modules.get(m) else {
            break;
        };
        match module.uses.get(&alias.name) {
            Some(&next) => m = next,
            None => {
                let known: Vec<String> = module.uses.keys().cloned().collect();
                let listing = if known.is_empty() {
                    format!("{} uses no modules", module.name)
                } else {
                    format!("modules used here: {}", known.join(", "))
                };
                let d = Diagnostic::error(
                    UNKNOWN_NAME,
                    alias.span,
                    format!("no module is used as `{}`", alias.name),
                )
                .label("not a module alias")
                .note(listing);
                return Err(with_suggestion(d, &alias.name, &known)
                    .or_help("add `use std::NAME`, `use \"./FILE.recipe\" as NAME` or `use \"./FILE.rhai\" as NAME` at the top"));
            }
        }
    }
    Ok((m, name))
}

/// The rules of module `m`, its `main` included.
pub fn rules(l: &Loaded, m: usize) -> impl Iterator<Item = &ast::Rule> {
    items(l, m).filter_map(|i| match i {
        ast::Item::Rule(r) | ast::Item::Main(r) => Some(r),
        _ => None,
    })
}

/// The patterns of module `m`.
pub fn patterns(l: &Loaded, m: usize) -> impl Iterator<Item = &ast::PatternDecl> {
    items(l, m).filter_map(|i| match i {
        ast::Item::Pattern(p) => Some(p),
        _ => None,
    })
}

/// The parameters of module `m`.
pub fn params(l: &Loaded, m: usize) -> impl Iterator<Item = &ast::Param> {
    items(l, m).filter_map(|i| match i {
        ast::Item::Param(p) => Some(p),
        _ => None,
    })
}

fn items(l: &Loaded, m: usize) -> impl Iterator<Item = &ast::Item> {
    l.modules
        .get(m)
        .into_iter()
        .flat_map(|m| m.ast.items.iter())
}

/// Every name visible in module `m`: its rules, patterns and params and its aliases, plus the
/// registry and the built-ins when `global` (a one-segment name).
pub fn visible(l: &Loaded, m: usize, global: bool) -> Vec<String> {
    let mut v: Vec<String> = (rules(l, m).map(|r| r.name.name.clone()))
        .chain(patterns(l, m).map(|p| p.name.name.clone()))
        .chain(params(l, m).map(|p| p.name.name.clone()))
        .collect();
    if global {
        v.extend(transform::all().into_iter().map(|t| t.name().to_string()));
        v.extend(builtins::BUILTINS.iter().map(|b| b.name.to_string()));
        if let Some(module) = l.modules.get(m) {
            v.extend(module.uses.keys().cloned());
        }
    }
    v
}

/// An `unknown_name` error at `path`, with "did you mean" over `candidates`.
pub fn unknown(
    path: &ast::Path,
    message: String,
    label: &str,
    candidates: &[String],
) -> Diagnostic {
    let d = Diagnostic::error(UNKNOWN_NAME, path.span, message).label(label);
    with_suggestion(d, &path.last().name, candidates)
}

/// Adds "did you mean `X`?" as help when a candidate is close to `word`.
pub fn with_suggestion(d: Diagnostic, word: &str, candidates: &[String]) -> Diagnostic {
    match suggest(word, candidates.iter().map(String::as_str)) {
        Some(c) => d.help(format!("did you mean `{c}`?")),
        None => d,
    }
}

/// The closest of `names` to `word` when it is close enough to be a misspelling (Jaro-Winkler
/// similarity ≥ 0.8, case-insensitive, as the registry's own lookup uses).
pub fn suggest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    names
        .into_iter()
        .filter(|n| !n.is_empty())
        .map(|n| (strsim::jaro_winkler(&word, &n.to_lowercase()), n))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// Helpers for diagnostics that may already carry a help line.
pub trait HelpExt {
    /// Sets `help` unless one is there already.
    fn or_help(self, help: &str) -> Self;
}

impl HelpExt for Diagnostic {
    fn or_help(self, help: &str) -> Self {
        if self.help.is_some() {
            self
        } else {
            self.help(help)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::modules::load_source;

    const SRC: &str = "recipe \"t\" version \"0.1.0\"\nparam tile: int = 4\npattern p {\n  a = map\n}\nrule fold(m: p) {\n}\nmain {\n}\n";

    fn path(text: &str) -> ast::Path {
        let segments = (text.split("::"))
            .map(|s| ast::Ident {
                name: s.to_string(),
                span: Default::default(),
            })
            .collect();
        ast::Path {
            segments,
            span: Default::default(),
        }
    }

    #[test]
    fn one_segment_names_look_in_the_module_then_registry_then_builtins() {
        let l = load_source("t.recipe", SRC, None);
        assert!(matches!(
            callee(&l, 0, &path("fold")),
            Ok(Callee::Rule { module: 0, .. })
        ));
        assert!(
            matches!(callee(&l, 0, &path("MapTiling")), Ok(Callee::Transformation(t)) if t.name() == "MapTiling")
        );
        assert!(matches!(callee(&l, 0, &path("len")), Ok(Callee::Builtin(b)) if b.name == "len"));
        assert_eq!(
            pattern(&l, 0, &path("p"))
                .map(|(m, d)| (m, d.name.name.as_str()))
                .ok(),
            Some((0, "p"))
        );
        assert_eq!(
            param(&l, 0, &path("tile")).map(|(_, p)| p.name.name.as_str()),
            Some("tile")
        );
        assert!(param(&l, 0, &path("tiles")).is_none());
    }

    #[test]
    fn unknown_names_suggest_the_closest_visible_name() {
        let l = load_source("t.recipe", SRC, None);
        let Err(d) = callee(&l, 0, &path("fodl")) else {
            panic!("unknown")
        };
        assert_eq!(d.code, UNKNOWN_NAME);
        assert_eq!(d.help.as_deref(), Some("did you mean `fold`?"));
        let Err(d) = callee(&l, 0, &path("cpu::fold")) else {
            panic!("unknown module")
        };
        assert_eq!(d.message, "no module is used as `cpu`");
        let Err(d) = pattern(&l, 0, &path("q")) else {
            panic!("unknown pattern")
        };
        assert_eq!(d.message, "no pattern is named `q`");
    }

    #[test]
    fn suggestions_need_a_close_spelling() {
        assert_eq!(
            suggest("MapTilling", ["MapTiling", "Unroll"]),
            Some("MapTiling")
        );
        assert_eq!(suggest("xyz", ["MapTiling", "Unroll"]), None);
    }
}
