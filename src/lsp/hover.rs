//! Hover: what the name under the cursor is, in Markdown — a transformation's doc, site roles
//! and typed parameters (kind with its domain, default, doc line), a rule's signature, a
//! pattern's or parameter's declaration (with the comment written above it), a built-in's
//! signature and doc, a module's rules.

use super::analysis::Analysis;
use super::cursor::Found;
use super::meaning::Meaning;
use crate::recipe::ast;
use crate::recipe::builtins::Builtin;
use crate::recipe::resolve;
use crate::recipe::Span;
use crate::transform::Transformation;

/// The Markdown describing `found`, or `None` when it names nothing.
pub fn hover(a: &Analysis, found: &Found<'_>) -> Option<String> {
    let meaning = super::meaning::of(a, found)?;
    Some(match meaning {
        Meaning::Transformation(t) => transformation(t),
        Meaning::TransformationParam(t, d) => {
            format!("parameter of **{}**\n\n`{}`", t.name(), d.describe())
        }
        Meaning::Builtin(b) => builtin(b),
        Meaning::Rule { module, rule } => declared(a, module, &signature(rule), rule.span),
        Meaning::Pattern { module, decl } => declared(a, module, source(a, module, decl.span), decl.span),
        Meaning::Param { module, decl } => declared(a, module, source(a, module, decl.span), decl.span),
        Meaning::ScriptFunction {
            module,
            name,
            arity,
        } => format!(
            "function `{name}` of the script {} ({arity} argument{})",
            a.loaded.modules[module].name,
            if arity == 1 { "" } else { "s" }
        ),
        Meaning::Variable(v) => {
            let (line, _) = a.loaded.sources.line_col(v.span);
            format!("variable `{}`, bound on line {line}", v.name)
        }
        Meaning::Module(m) => module(a, m),
        Meaning::TypeWord(w) => type_word(w).to_string(),
        Meaning::Baseline => "`baseline`: the program before the recipe's first step; its fields are `dmd`, `bytes` and `time`".to_string(),
    })
}

/// Name, level and doc, then the site roles and the parameters, one per line: the listing
/// `dmove transforms` prints.
pub(super) fn transformation(t: &dyn Transformation) -> String {
    format!("```text\n{}```", crate::transform::listing(t.schema()))
}

/// `maps(depth?, params?, …)` and the doc line.
pub(super) fn builtin(b: &Builtin) -> String {
    let mut args: Vec<String> = (b.args.iter().enumerate())
        .map(|(i, a)| {
            if i < b.required {
                a.to_string()
            } else {
                format!("{a}?")
            }
        })
        .collect();
    args.extend(b.named.iter().map(|n| format!("{n} = …")));
    format!(
        "```recipe\n{}({})\n```\nbuilt-in function: {}",
        b.name,
        args.join(", "),
        b.doc
    )
}

/// `rule name(p: type, …)`.
fn signature(r: &ast::Rule) -> String {
    if r.name.name == "main" && r.params.is_empty() {
        return "main".to_string();
    }
    let params: Vec<String> = (r.params.iter())
        .map(|p| format!("{}: {}", p.name.name, p.ty.text()))
        .collect();
    format!("rule {}({})", r.name.name, params.join(", "))
}

/// A declaration's text, the comment above it, and the module it is in (when not this one).
fn declared(a: &Analysis, module: usize, decl: &str, span: Span) -> String {
    let text = a.loaded.sources.text(a.loaded.modules[module].file);
    let mut out = format!("```recipe\n{}\n```", decl.trim_end());
    let doc = comment_above(text, span.start);
    if !doc.is_empty() {
        out.push_str(&format!("\n{doc}"));
    }
    if module != 0 {
        out.push_str(&format!("\n\n_in {}_", a.loaded.modules[module].name));
    }
    out
}

fn source(a: &Analysis, module: usize, span: Span) -> &str {
    let text = a.loaded.sources.text(a.loaded.modules[module].file);
    text.get(span.start..span.end).unwrap_or_default()
}

/// The `#` comment lines right above byte `start` (no blank line between), without the `#`.
fn comment_above(text: &str, start: usize) -> String {
    let before = &text[..text[..start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1)];
    let mut lines: Vec<&str> = (before.lines().rev())
        .map_while(|l| l.trim_start().strip_prefix('#'))
        .map(str::trim)
        .collect();
    lines.reverse();
    lines.join("\n")
}

/// A module's name, its path or standard-library status, its opening comment and its rules.
fn module(a: &Analysis, m: usize) -> String {
    let module = &a.loaded.modules[m];
    let text = a.loaded.sources.text(module.file);
    let mut out = format!("module `{}`", module.name);
    match &a.paths[m] {
        Some(p) => out.push_str(&format!(" ({})", p.display())),
        None => out.push_str(" (standard library)"),
    }
    let opening: Vec<&str> = (text.lines())
        .map_while(|l| l.trim_start().strip_prefix('#'))
        .map(str::trim)
        .collect();
    if !opening.is_empty() {
        out.push_str(&format!("\n\n{}", opening.join("\n")));
    }
    if let Some(script) = &module.script {
        let functions: Vec<String> = (script.functions().into_iter())
            .map(|(f, arity)| format!("`{f}`/{arity}"))
            .collect();
        out.push_str(&format!("\n\nfunctions: {}", functions.join(", ")));
    }
    let rules: Vec<String> = resolve::rules(&a.loaded, m)
        .map(|r| format!("`{}`", signature(r)))
        .collect();
    if !rules.is_empty() {
        out.push_str(&format!("\n\nrules: {}", rules.join(", ")));
    }
    out
}

fn type_word(w: &str) -> &'static str {
    match w {
        "map" => "`map`: a map scope, at any depth",
        "op" => "`op`: a library (operator) node",
        "tasklet" => "`tasklet`: a tasklet",
        "data" => "`data`: an access node (one data container)",
        "node" => "`node`: any node",
        "int" => "`int`: an integer",
        "float" => "`float`: a floating-point number",
        "bool" => "`bool`: true or false",
        "string" => "`string`: a string",
        "list" => "`list`: a list of values",
        _ => "a rule parameter type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comment_above_a_declaration_is_its_doc() {
        let text = "# not this\n\n# Tiles.\n# Twice.\nrule t() {\n}\n";
        let start = text.find("rule").expect("rule");
        assert_eq!(comment_above(text, start), "Tiles.\nTwice.");
        assert_eq!(comment_above(text, 0), "");
    }
}
