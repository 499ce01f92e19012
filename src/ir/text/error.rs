//! Parse errors: what is wrong, where in the source, and the source itself for rendering.
//!
//! Conversion code works with [`Fault`] (a kind plus byte ranges); the source text is attached
//! once, at the public entry points, when a fault becomes a [`ParseError`].

use super::grammar::Rule;
use miette::{Diagnostic, NamedSource, SourceSpan};
use pest::error::{ErrorVariant, InputLocation};
use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

/// Which error, so tests and tools can tell failures apart without matching on messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("syntax error: expected {expected}")]
    Syntax { expected: String },
    #[error("edge refers to `{0}`, which is not declared")]
    UnknownNode(String),
    #[error("edge connects `{0}`, which is declared in a different scope")]
    CrossScope(String),
    #[error("{what} `{name}` is declared twice")]
    Duplicate { what: &'static str, name: String },
    #[error("unknown {what} `{name}` (expected one of: {expected})")]
    Unknown {
        what: &'static str,
        name: String,
        expected: String,
    },
    #[error("invalid {what} `{text}`: {why}")]
    Invalid {
        what: &'static str,
        text: String,
        why: String,
    },
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
}

impl ErrorKind {
    /// The short text shown next to the highlighted span.
    pub fn label(&self) -> String {
        match self {
            ErrorKind::Syntax { expected } => format!("expected {expected}"),
            ErrorKind::UnknownNode(_) => "no node with this id".into(),
            ErrorKind::CrossScope(_) => "declared in another scope".into(),
            ErrorKind::Duplicate { .. } => "declared again here".into(),
            ErrorKind::Unknown { what, .. } => format!("unknown {what}"),
            ErrorKind::Invalid { why, .. } => why.clone(),
            ErrorKind::TooDeep(_) => "too deeply nested".into(),
        }
    }
}

/// A malformed or inconsistent textual IR, with the offending span.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{kind}")]
#[diagnostic(code(dmove::ir::text::parse))]
pub struct ParseError {
    pub kind: ErrorKind,
    /// Shared so the error stays small enough to return by value.
    #[source_code]
    pub src: Arc<NamedSource<String>>,
    #[label("{}", kind.label())]
    pub span: SourceSpan,
    /// Where the first of two conflicting declarations is.
    #[label("first declared here")]
    pub previous: Option<SourceSpan>,
}

impl ParseError {
    /// The highlighted bytes, as a range into the source.
    pub fn byte_range(&self) -> Range<usize> {
        self.span.offset()..self.span.offset() + self.span.len()
    }
}

/// A located error before the source text is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kind: ErrorKind,
    pub at: Range<usize>,
    pub previous: Option<Range<usize>>,
}

impl Fault {
    pub fn new(kind: ErrorKind, span: pest::Span<'_>) -> Self {
        Fault {
            kind,
            at: span.start()..span.end(),
            previous: None,
        }
    }

    pub fn invalid(what: &'static str, span: pest::Span<'_>, why: impl Into<String>) -> Self {
        Fault::new(
            ErrorKind::Invalid {
                what,
                text: span.as_str().to_string(),
                why: why.into(),
            },
            span,
        )
    }

    pub fn unknown(what: &'static str, span: pest::Span<'_>, expected: &[&str]) -> Self {
        Fault::new(
            ErrorKind::Unknown {
                what,
                name: span.as_str().to_string(),
                expected: expected.join(", "),
            },
            span,
        )
    }

    pub fn with_previous(mut self, previous: Range<usize>) -> Self {
        self.previous = Some(previous);
        self
    }

    pub fn into_error(self, name: &str, src: &str) -> ParseError {
        ParseError {
            kind: self.kind,
            src: Arc::new(NamedSource::new(name, src.to_string())),
            span: to_span(self.at),
            previous: self.previous.map(to_span),
        }
    }
}

fn to_span(r: Range<usize>) -> SourceSpan {
    (r.start, r.end - r.start).into()
}

/// Turns pest's error into a fault at the failing position, listing what was expected.
pub fn from_pest(e: &pest::error::Error<Rule>, src: &str) -> Fault {
    let at = match e.location {
        InputLocation::Pos(p) => {
            // Highlight the character that could not be consumed (nothing at end of input).
            let len = src
                .get(p..)
                .and_then(|s| s.chars().next())
                .map_or(0, char::len_utf8);
            p..p + len
        }
        InputLocation::Span((s, end)) => s..end,
    };
    let expected = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => expected(positives, e),
        ErrorVariant::CustomError { message } => message.clone(),
    };
    Fault {
        kind: ErrorKind::Syntax { expected },
        at,
        previous: None,
    }
}

/// What the parser would have accepted: literal tokens (`]`, `->`, keywords) plus the token
/// classes (identifier, number, …) among pest's expected rules. Rules that stand for keywords or
/// operators are left out because their literals already appear; without token details (pest
/// only records them when error detail is on) every expected rule is described.
fn expected(positives: &[Rule], e: &pest::error::Error<Rule>) -> String {
    let mut words: BTreeSet<String> = BTreeSet::new();
    match e.parse_attempts() {
        Some(attempts) if !attempts.expected_tokens().is_empty() => {
            words.extend(
                positives
                    .iter()
                    .filter_map(|r| class(*r))
                    .map(str::to_string),
            );
            // pest's token type is not exported, so builtin classes and whitespace are
            // filtered by their rendering; `n` and `"` are the first characters of a node id
            // and of a string, which the classes already name.
            for t in attempts.expected_tokens().iter().map(ToString::to_string) {
                match t.as_str() {
                    "n" => words.insert(class(Rule::node_id).unwrap_or_default().to_string()),
                    "\"" => words.insert(class(Rule::string).unwrap_or_default().to_string()),
                    "BUILTIN_RULE" | "#" => false,
                    _ if t.trim().is_empty() => false,
                    _ => words.insert(format!("`{t}`")),
                };
            }
        }
        _ => words.extend(positives.iter().map(|r| describe(*r))),
    }
    words.into_iter().collect::<Vec<_>>().join(", ")
}

/// Token classes: rules that stand for an open set of spellings.
fn class(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::EOI => "end of input",
        Rule::ident => "an identifier",
        Rule::string | Rule::string_body => "a quoted string",
        Rule::name => "a name",
        Rule::node_id => "a node id like `n3`",
        Rule::uint => "an unsigned integer",
        Rule::int_lit => "an integer",
        Rule::number | Rule::unsigned_number => "a number",
        Rule::sym_expr | Rule::sym_term | Rule::sym_neg | Rule::sym_call => "a symbolic expression",
        Rule::texpr | Rule::t_unary | Rule::t_idx | Rule::t_call => "an expression",
        Rule::hex_digits => "hex digits",
        _ => return None,
    })
}

/// A reader-facing description of any grammar rule.
fn describe(rule: Rule) -> String {
    if let Some(c) = class(rule) {
        return c.to_string();
    }
    let s = match rule {
        Rule::bool_lit => "`true` or `false`",
        Rule::sym_add_op | Rule::op_add => "`+` or `-`",
        Rule::sym_mul_op => "`*`, `/` or `%`",
        Rule::op_mul => "`*` or `/`",
        Rule::op_or => "`||`",
        Rule::op_and => "`&&`",
        Rule::op_eq => "`==` or `!=`",
        Rule::op_cmp => "a comparison",
        Rule::storage => "`global`, `local` or `register`",
        Rule::header => "`program \"name\"`",
        Rule::symbol_decl => "`symbol`",
        Rule::data_decl => "`data`",
        Rule::signature => "`signature`",
        Rule::const_decl => "`const`",
        Rule::graph => "`graph { … }`",
        Rule::node => "a node",
        Rule::edge => "an edge",
        Rule::wcr => "`wcr`",
        Rule::attrs => "attributes `{ … }`",
        Rule::list_type => "`ints`, `floats` or `strings`",
        other => return format!("{other:?}").replace('_', " "),
    };
    s.to_string()
}
