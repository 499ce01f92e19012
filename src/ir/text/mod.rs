//! The textual IR: a readable, diff-friendly, round-trippable form of a whole [`Program`].
//!
//! ```text
//! program "mm"
//!
//! symbol N = 8
//!
//! data A: f32[N, 4] input
//! data B: f32[4, 8] const
//! data C: f32[N, 8] output
//! data t: f32[] transient register
//!
//! signature (A) -> (C)
//!
//! const B: f32[4, 8] = sha256:9c1f…e04a (32 values)   # digest shortened here
//!
//! graph {
//!   n0 access A
//!   n1 access B
//!   n2 map "acc" [i = 0:N, j = 0:8, k = 0:4] parallel {
//!     n3 access A
//!     n4 access B
//!     n5 tasklet "fma" (a, b) { c = a * b }
//!     n6 access C
//!     n3 -> n5 A[i, k] -> a
//!     n4 -> n5 B[k, j] -> b
//!     n5 -> n6 c -> C[i, j] wcr sum
//!   }
//!   n7 access C
//!   n0 -> n2 A[0:N, 0:4]
//!   n1 -> n2 B[0:4, 0:8]
//!   n2 -> n7 C[0:N, 0:8] wcr sum
//! }
//! ```
//!
//! Names are bare when they are identifiers (`[A-Za-z_][A-Za-z0-9_.]*`, not a keyword) and
//! quoted otherwise; labels and the program name are always quoted. Node ids are authoritative:
//! a parsed program has exactly the ids in the text. Symbolic and tasklet expressions use the
//! `Display` syntax of [`SymExpr`] and [`TExpr`], and parse back to trees that print the same.
//! Floats print in a form that reads back exactly (including `nan`, `inf`, `-inf`). Layout is
//! free (the parser ignores whitespace and newlines) and `#` starts a comment.
//!
//! [`print`] elides constants of more than 16 elements as `sha256:<digest> (<n> values)`;
//! [`print_exact`] writes them as `hex:<little-endian bytes>`, so that
//! `print_exact(parse(print_exact(p)).program) == print_exact(p)`.

mod error;
mod expr;
pub(crate) mod lex;
mod parse;
mod print;
mod values;

/// The pest parser, kept private so the generated `Rule` enum is not part of the API.
mod grammar {
    #[derive(pest_derive::Parser)]
    #[grammar = "grammar/ir.pest"]
    pub struct IrParser;
}

pub use error::{ErrorKind, ParseError};
pub use lex::{is_ident, quote};
pub use parse::{parse, parse_named, Parsed};
pub use print::{
    hash_graph_line, node_digest, print, print_exact, print_for_hash, print_hash_header,
    print_hash_header_with, print_node, scope_digest, DeclLines,
};
pub use values::INLINE_LIMIT;

use crate::ir::sym::SymExpr;
use crate::ir::texpr::TExpr;
use grammar::Rule;

/// Parses a whole-input expression of `rule` with `convert`, attaching the source to errors.
fn parse_whole<T>(
    rule: Rule,
    src: &str,
    convert: fn(pest::iterators::Pair<Rule>, usize) -> Result<T, error::Fault>,
) -> Result<T, ParseError> {
    parse::parse_rule(rule, src)
        .and_then(|top| {
            let inner =
                top.clone().into_inner().next().ok_or_else(|| {
                    error::Fault::invalid("expression", top.as_span(), "empty input")
                })?;
            convert(inner, 0)
        })
        .map_err(|f| f.into_error("<expr>", src))
}

impl std::str::FromStr for SymExpr {
    type Err = ParseError;

    /// Parses the `Display` syntax (`4*k + 1`, `min(n, 8)`, `n / 2`); not simplified.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_whole(Rule::sym_expr_only, s, expr::sym_expr)
    }
}

impl std::str::FromStr for TExpr {
    type Err = ParseError;

    /// Parses the `Display` syntax (`a * b + 1.0`, `select(a > 0.0, a, 0.0)`, `idx(i + 1)`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_whole(Rule::texpr_only, s, expr::texpr)
    }
}
