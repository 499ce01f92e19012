//! Recipe text → [`ast::File`]. The pest grammar (`grammar/recipe.pest`) decides what is
//! well-formed; this module builds the tree with a byte span on every node, and reports what the
//! grammar cannot express: statements sharing a line, literals out of range, bad escapes, nesting
//! too deep to process safely. Every problem is a [`Diagnostic`] with code
//! `dmove::recipe::syntax`; no input makes the parser panic.
//!
//! The walk over pest's tree goes through [`Kids`], which returns a diagnostic (never panics) if
//! the tree ever differs from what the grammar promises.

mod exprs;
mod items;
mod lex;
mod session;
mod stmts;
mod syntax_error;

use super::ast;
use super::diag::{Diagnostic, FileId, Span};
use pest::iterators::Pair;
use pest::Parser;
use std::collections::VecDeque;

/// The pest parser, kept private so the generated `Rule` enum is not part of the API.
mod grammar {
    #[derive(pest_derive::Parser)]
    #[grammar = "grammar/recipe.pest"]
    pub struct RecipeParser;
}

use grammar::{RecipeParser, Rule};

pub use lex::{open_brackets, quote};

/// The diagnostic code of every error this module reports.
pub const SYNTAX: &str = "dmove::recipe::syntax";

/// Parses one recipe or module file. `file` is stamped on every span.
///
/// The diagnostic is returned by value, as every stage of the recipe pipeline does; inside, the
/// builder passes it boxed so the deep recursion over expressions keeps small frames.
pub fn parse(file: FileId, text: &str) -> Result<ast::File, Diagnostic> {
    parse_boxed(file, text).map_err(|d| *d)
}

fn parse_boxed(file: FileId, text: &str) -> Result<ast::File, Box<Diagnostic>> {
    let top = top_pair(Rule::file, file, text)?;
    let builder = Builder { file, text };
    let mut parsed = builder.file(top)?;
    parsed.comments = lex::comments(file, text);
    Ok(parsed)
}

/// Parses one input of an interactive session: declarations and statements in the order typed
/// (`dmove repl`); comments are dropped.
pub fn parse_input(file: FileId, text: &str) -> Result<Vec<ast::Entry>, Diagnostic> {
    let top = top_pair(Rule::session_input, file, text).map_err(|d| *d)?;
    Builder { file, text }.session_input(top).map_err(|d| *d)
}

/// Parses one expression on its own.
pub fn parse_expr(file: FileId, text: &str) -> Result<ast::Expr, Diagnostic> {
    let top = top_pair(Rule::session_expr, file, text).map_err(|d| *d)?;
    Builder { file, text }.session_expr(top).map_err(|d| *d)
}

/// The top pair of `text` read as `rule`, or its syntax error.
fn top_pair(rule: Rule, file: FileId, text: &str) -> Result<Pair<'_, Rule>, Box<Diagnostic>> {
    // Deep nesting would exhaust the stack in pest or in the recursive tree walk; refuse it
    // before either runs.
    lex::check_nesting(file, text)?;
    // Richer "expected …" lists (literal tokens as well as rules); a process-wide pest switch.
    pest::set_error_detail(true);
    let mut pairs =
        RecipeParser::parse(rule, text).map_err(|e| syntax_error::from_pest(file, text, &e))?;
    pairs.next().ok_or_else(|| {
        Box::new(Diagnostic::error(
            SYNTAX,
            Span::new(file, 0, 0),
            "empty parse",
        ))
    })
}

/// Converts pest pairs of one file into AST nodes.
struct Builder<'i> {
    file: FileId,
    text: &'i str,
}

impl<'i> Builder<'i> {
    fn span(&self, p: &Pair<'i, Rule>) -> Span {
        let s = p.as_span();
        let end = lex::code_end(self.text, s.start(), s.end());
        Span::new(self.file, s.start(), end)
    }

    /// The children of `p` without keyword and `=` tokens, which carry no value.
    fn kids(&self, p: &Pair<'i, Rule>) -> Kids<'i> {
        Kids {
            parent: self.span(p),
            rest: p
                .clone()
                .into_inner()
                .filter(|c| !is_token(c.as_rule()))
                .collect(),
        }
    }

    fn ident(&self, p: &Pair<'i, Rule>) -> Ident {
        ast::Ident {
            name: p.as_str().to_string(),
            span: self.span(p),
        }
    }

    /// A `path` or `callee` pair: `a`, `cpu::fuse`. The rule is atomic (no spaces, no inner
    /// pairs), so the segments are the text between `::`s.
    fn path(&self, p: &Pair<'i, Rule>) -> ast::Path {
        let span = self.span(p);
        let mut at = span.start;
        let segments = (p.as_str().split("::"))
            .map(|name| {
                let ident = ast::Ident {
                    name: name.to_string(),
                    span: Span::new(self.file, at, at + name.len()),
                };
                at += name.len() + 2;
                ident
            })
            .collect();
        ast::Path { segments, span }
    }

    /// A `string` pair, unescaped.
    fn string(&self, p: &Pair<'i, Rule>) -> Result<ast::Str, Box<Diagnostic>> {
        let span = self.span(p);
        // The body starts after the opening quote and ends before the closing one.
        let body = self
            .text
            .get(span.start + 1..span.end.saturating_sub(1))
            .unwrap_or("");
        let value = lex::unescape(body).map_err(|e| {
            let at = span.start + 1 + e.offset;
            Diagnostic::error(SYNTAX, Span::new(self.file, at, at + e.len), e.why)
                .label("not a valid escape")
                .help("the escapes are `\\\"`, `\\\\` and `\\n`")
        })?;
        Ok(ast::Str { value, span })
    }

    /// Refuses two statements, items or pattern elements on one line: the language separates
    /// them by newlines, which the grammar leaves to this check.
    fn separated(&self, prev_end: usize, next: Span, what: &str) -> Result<(), Box<Diagnostic>> {
        let between = self.text.get(prev_end..next.start).unwrap_or("\n");
        if between.contains('\n') {
            return Ok(());
        }
        // Point at the first line of the offending construct only.
        let line_end = (self.text.get(next.start..next.end))
            .and_then(|s| s.find('\n'))
            .map_or(next.end, |i| next.start + i);
        fail(
            Diagnostic::error(
                SYNTAX,
                Span::new(self.file, next.start, line_end),
                format!("expected a new line before this {what}"),
            )
            .label(format!(
                "this {what} starts on the line of the previous one"
            ))
            .help(format!("put each {what} on a line of its own")),
        )
    }

    /// Checks that consecutive spans are on different lines.
    fn one_per_line(&self, spans: &[Span], what: &str) -> Result<(), Box<Diagnostic>> {
        for w in spans.windows(2) {
            self.separated(w[0].end, w[1], what)?;
        }
        Ok(())
    }
}

type Ident = ast::Ident;

/// Keyword and `=` tokens: needed by the grammar, skipped by the tree builder.
fn is_token(rule: Rule) -> bool {
    rule == Rule::assign || syntax_error::keyword_rule(rule).is_some()
}

/// The remaining children of one pair. The grammar guarantees what the builder asks for; should
/// the two ever disagree, that is a diagnostic rather than a panic.
struct Kids<'i> {
    parent: Span,
    rest: VecDeque<Pair<'i, Rule>>,
}

impl<'i> Kids<'i> {
    /// The next child, whatever it is.
    fn next(&mut self) -> Option<Pair<'i, Rule>> {
        self.rest.pop_front()
    }

    /// The next child if it is a `rule`.
    fn take(&mut self, rule: Rule) -> Option<Pair<'i, Rule>> {
        if self.rest.front().map(Pair::as_rule) == Some(rule) {
            self.rest.pop_front()
        } else {
            None
        }
    }

    /// The next child, which the grammar says is there.
    fn need(&mut self, what: &str) -> Result<Pair<'i, Rule>, Box<Diagnostic>> {
        self.next().ok_or_else(|| mismatch(self.parent, what))
    }

    /// The next child, which the grammar says is a `rule`.
    fn need_rule(&mut self, rule: Rule) -> Result<Pair<'i, Rule>, Box<Diagnostic>> {
        self.take(rule)
            .ok_or_else(|| mismatch(self.parent, &format!("{rule:?}")))
    }

    /// Every remaining child.
    fn all(self) -> VecDeque<Pair<'i, Rule>> {
        self.rest
    }
}

/// `Err`, boxed: diagnostics are large, and small `Result`s keep the recursive builder's
/// frames small.
fn fail<T>(d: Diagnostic) -> Result<T, Box<Diagnostic>> {
    Err(Box::new(d))
}

/// The tree differs from what the grammar promises: a bug in dmove, reported, not panicked on.
fn mismatch(span: Span, what: &str) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(SYNTAX, span, "the parser could not read this construct")
            .label(format!("expected {what} in the syntax tree"))
            .note("the grammar and the tree builder disagree: this is a bug in dmove"),
    )
}

#[cfg(test)]
mod tests;
