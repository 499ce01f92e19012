//! Completion, from the text before the cursor (which rarely parses while it is being typed)
//! and the names the document declared the last time it parsed:
//! - after `alias::`, the rules, patterns and parameters of that module (or a script's
//!   functions); after `use std::`, the standard modules;
//! - in a call's argument list at an argument's start, the called transformation's parameter
//!   names (as `name = `), or a built-in's named filters, before the other names;
//! - after `:` in a rule's parameters, the types and patterns (in a `param`, its value types);
//! - elsewhere, keywords, transformations, built-ins, and the document's rules, patterns,
//!   parameters and module aliases.

use super::analysis::Analysis;
use super::hover;
use crate::recipe::builtins::{self, BUILTINS};
use crate::recipe::check::TYPE_WORDS;
use crate::recipe::{resolve, stdlib};
use crate::transform;
use lsp_types::{CompletionItem, CompletionItemKind, Documentation, MarkupContent, MarkupKind};

/// Words the grammar reserves, and `main`, which starts an item.
const KEYWORDS: &[&str] = &[
    "recipe",
    "version",
    "requires",
    "use",
    "as",
    "param",
    "in",
    "pow2",
    "where",
    "choose",
    "by",
    "fixed",
    "pattern",
    "rule",
    "main",
    "apply",
    "everywhere",
    "once",
    "at",
    "for",
    "each",
    "try",
    "first",
    "or",
    "repeat",
    "until",
    "fixpoint",
    "if",
    "else",
    "let",
    "expect",
    "unsafe",
    "because",
    "print",
    "note",
    "and",
    "not",
    "true",
    "false",
];

/// The value types a `param` declaration takes.
const PARAM_TYPES: &[&str] = &["int", "float", "bool", "enum"];

/// The completions at byte `offset` of `text`; `names` is the latest analysis of the document
/// that parsed (`None` when it never has).
pub fn complete(text: &str, offset: usize, names: Option<&Analysis>) -> Vec<CompletionItem> {
    let offset = floor(text, offset);
    let start = word_start(text, offset);
    let typed = &text[start..offset];
    let line = text[..start]
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .trim_start();
    if let Some((qualifier, _)) = typed.rsplit_once("::") {
        return match (line.starts_with("use"), qualifier) {
            (true, "std") => std_modules(),
            _ => names.map_or_else(Vec::new, |a| qualified(a, qualifier)),
        };
    }
    if line.starts_with("use") {
        return std_modules()
            .into_iter()
            .map(|mut item| {
                item.label = format!("std::{}", item.label);
                item
            })
            .collect();
    }
    let before = text[..start].trim_end();
    if before.ends_with(':') && !before.ends_with("::") {
        return types(line, names);
    }
    let mut items = Vec::new();
    if let Some(call) = open_call(&text[..start]) {
        items.extend(arguments(&call));
    }
    items.extend(general(names));
    items
}

/// The largest char boundary at or before `offset`.
fn floor(text: &str, offset: usize) -> usize {
    let mut o = offset.min(text.len());
    while !text.is_char_boundary(o) {
        o -= 1;
    }
    o
}

/// Where the path being typed before `offset` starts (identifier characters and `::`).
fn word_start(text: &str, offset: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = offset;
    while i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'_' | b':')) {
        i -= 1;
    }
    // A lone `:` (a type annotation) is not part of a path.
    while text[i..offset].starts_with(':') && !text[i..offset].starts_with("::") {
        i += 1;
    }
    i
}

/// The call whose argument list the cursor is in, and whether it is at an argument's start.
struct OpenCall {
    callee: String,
    at_argument_start: bool,
}

/// The innermost unclosed `(` of `before` (strings and comments skipped) and the path right
/// before it.
fn open_call(before: &str) -> Option<OpenCall> {
    let mut open: Vec<(usize, u8)> = Vec::new();
    // The last byte that is neither blank nor in a comment.
    let mut last = 0u8;
    let bytes = before.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => open.push((i, c)),
            b')' | b']' | b'}' => {
                open.pop();
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() && c != b'#' {
            last = c;
        }
        i += 1;
    }
    let &(paren, kind) = open.last()?;
    if kind != b'(' {
        return None;
    }
    let callee_end = before[..paren].trim_end().len();
    let callee_start = word_start(before, callee_end);
    let callee = &before[callee_start..callee_end];
    (!callee.is_empty()).then(|| OpenCall {
        callee: callee.to_string(),
        at_argument_start: matches!(last, b'(' | b','),
    })
}

/// Parameter names of the called transformation, or named filters of the called built-in.
fn arguments(call: &OpenCall) -> Vec<CompletionItem> {
    if !call.at_argument_start {
        return Vec::new();
    }
    if let Some(t) = transform::lookup(&call.callee) {
        return (t.schema().params.iter())
            .map(|d| CompletionItem {
                insert_text: Some(format!("{} = ", d.name)),
                detail: Some(d.describe()),
                sort_text: Some(format!("0{}", d.name)),
                ..item(d.name, CompletionItemKind::PROPERTY)
            })
            .collect();
    }
    let named = builtins::lookup(&call.callee).map_or(&[][..], |b| b.named);
    (named.iter())
        .map(|n| CompletionItem {
            insert_text: Some(format!("{n} = ")),
            detail: Some(format!("filter of {}", call.callee)),
            sort_text: Some(format!("0{n}")),
            ..item(n, CompletionItemKind::PROPERTY)
        })
        .collect()
}

/// Everything a one-segment name may be.
fn general(names: Option<&Analysis>) -> Vec<CompletionItem> {
    let mut items: Vec<CompletionItem> = (transform::all().into_iter())
        .map(|t| CompletionItem {
            detail: Some(format!("transformation ({:?})", t.level())),
            documentation: Some(markdown(hover::transformation(t))),
            ..item(t.name(), CompletionItemKind::CLASS)
        })
        .collect();
    items.extend(BUILTINS.iter().map(|b| CompletionItem {
        detail: Some("built-in function".to_string()),
        documentation: Some(markdown(hover::builtin(b))),
        ..item(b.name, CompletionItemKind::FUNCTION)
    }));
    if let Some(a) = names {
        items.extend(module_items(a, 0));
        items.extend(a.loaded.root().uses.keys().map(|alias| CompletionItem {
            detail: Some("module".to_string()),
            ..item(alias, CompletionItemKind::MODULE)
        }));
    }
    items.push(CompletionItem {
        detail: Some("the program before the first step".to_string()),
        ..item("baseline", CompletionItemKind::VARIABLE)
    });
    items.extend(
        KEYWORDS
            .iter()
            .map(|k| item(k, CompletionItemKind::KEYWORD)),
    );
    items
}

/// The items of the module `qualifier` leads to from the document.
fn qualified(a: &Analysis, qualifier: &str) -> Vec<CompletionItem> {
    let mut m = 0;
    for alias in qualifier.split("::") {
        match a.loaded.modules.get(m).and_then(|x| x.uses.get(alias)) {
            Some(&next) => m = next,
            None => return Vec::new(),
        }
    }
    let mut items = module_items(a, m);
    if let Some(script) = &a.loaded.modules[m].script {
        items.extend(
            script
                .functions()
                .into_iter()
                .map(|(f, arity)| CompletionItem {
                    detail: Some(format!("script function, {arity} argument(s)")),
                    ..item(&f, CompletionItemKind::FUNCTION)
                }),
        );
    }
    items
}

/// The rules, patterns and parameters module `m` declares.
fn module_items(a: &Analysis, m: usize) -> Vec<CompletionItem> {
    let l = &a.loaded;
    let rules = resolve::rules(l, m)
        .filter(|r| r.name.name != "main" || m != 0)
        .map(|r| CompletionItem {
            detail: Some("rule".to_string()),
            ..item(&r.name.name, CompletionItemKind::FUNCTION)
        });
    let patterns = resolve::patterns(l, m).map(|p| CompletionItem {
        detail: Some("pattern".to_string()),
        ..item(&p.name.name, CompletionItemKind::INTERFACE)
    });
    let params = resolve::params(l, m).map(|p| CompletionItem {
        detail: Some("parameter".to_string()),
        ..item(&p.name.name, CompletionItemKind::CONSTANT)
    });
    rules.chain(patterns).chain(params).collect()
}

/// What may follow `name:` — a `param`'s value types, or a rule parameter's types and patterns.
fn types(line: &str, names: Option<&Analysis>) -> Vec<CompletionItem> {
    if line.starts_with("param") {
        return (PARAM_TYPES.iter())
            .map(|t| item(t, CompletionItemKind::TYPE_PARAMETER))
            .collect();
    }
    let mut items: Vec<CompletionItem> = (TYPE_WORDS.iter())
        .map(|t| item(t, CompletionItemKind::TYPE_PARAMETER))
        .collect();
    if let Some(a) = names {
        items.extend(resolve::patterns(&a.loaded, 0).map(|p| CompletionItem {
            detail: Some("pattern".to_string()),
            ..item(&p.name.name, CompletionItemKind::INTERFACE)
        }));
    }
    items
}

fn std_modules() -> Vec<CompletionItem> {
    (stdlib::names().into_iter())
        .map(|n| CompletionItem {
            detail: Some("standard module".to_string()),
            ..item(n, CompletionItemKind::MODULE)
        })
        .collect()
}

fn item(label: &str, kind: CompletionItemKind) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        ..CompletionItem::default()
    }
}

fn markdown(value: String) -> Documentation {
    Documentation::MarkupContent(MarkupContent {
        kind: MarkupKind::Markdown,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str, names: Option<&Analysis>) -> Vec<String> {
        let offset = text.find('|').expect("cursor");
        let text = text.replace('|', "");
        complete(&text, offset, names)
            .into_iter()
            .map(|i| i.label)
            .collect()
    }

    #[test]
    fn argument_lists_offer_the_transformations_parameters_first() {
        let l = labels("main {\n  MapTiling(m, |", None);
        assert_eq!(l.first().map(String::as_str), Some("tiles"));
        assert!(l.iter().any(|x| x == "MapFusion"), "names follow");
        // Not at an argument's start: no parameter names.
        let l = labels("main {\n  MapTiling(m, tiles = |", None);
        assert!(!l.iter().any(|x| x == "tiles"));
        // A closed call is left.
        let l = labels("main {\n  MapTiling(m, tiles = [1]) |", None);
        assert!(!l.iter().any(|x| x == "tiles"));
        // Parentheses in strings and comments do not count.
        let l = labels("main {\n  MapTiling(m, tiles = [\")\"], # (\n |", None);
        assert_eq!(l.first().map(String::as_str), Some("tiles"));
        let l = labels("main {\n  maps(|", None);
        assert_eq!(l.first().map(String::as_str), Some("depth"));
    }

    #[test]
    fn use_lines_offer_standard_modules() {
        assert!(labels("use std::|", None).contains(&"loops".to_string()));
        assert!(labels("use st|", None).contains(&"std::cpu".to_string()));
    }

    #[test]
    fn qualified_names_offer_the_modules_rules() {
        let src = "recipe \"t\" version \"0.1.0\"\nuse std::loops\nmain {\n}\n";
        let a = Analysis::new("t.recipe", src, None);
        let l = labels("main {\n  loops::|", Some(&a));
        assert!(l.contains(&"schedule".to_string()), "{l:?}");
        assert!(l.contains(&"all".to_string()));
        assert!(labels("main {\n  nosuch::|", Some(&a)).is_empty());
        let general = labels("main {\n  |", Some(&a));
        assert!(general.contains(&"loops".to_string()));
        let mains = general.iter().filter(|l| *l == "main").count();
        assert_eq!(mains, 1, "the keyword, not the document's `main` as a rule");
    }

    #[test]
    fn rule_parameter_types_offer_classes_and_patterns() {
        let src = "recipe \"t\" version \"0.1.0\"\npattern mm {\n  a = op MatMul\n}\nmain {\n}\n";
        let a = Analysis::new("t.recipe", src, None);
        let l = labels("rule r(m: |", Some(&a));
        assert!(
            l.contains(&"map".to_string()) && l.contains(&"mm".to_string()),
            "{l:?}"
        );
        assert_eq!(labels("param t: |", Some(&a)), PARAM_TYPES);
    }
}
