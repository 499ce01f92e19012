//! What an interactive session parses: one input of declarations and statements in any order
//! (`dmove repl` types them as they come), and a lone expression to evaluate.

use super::{mismatch, Builder, Rule};
use crate::recipe::ast::{Entry, Expr};
use crate::recipe::diag::{Diagnostic, Span};
use pest::iterators::Pair;

impl<'i> Builder<'i> {
    /// A `session_input` pair: items and statements, one per line.
    pub(super) fn session_input(&self, p: Pair<'i, Rule>) -> Result<Vec<Entry>, Box<Diagnostic>> {
        let mut entries = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        for part in self.kids(&p).all() {
            match part.as_rule() {
                Rule::EOI => {}
                Rule::stmt => {
                    let stmt = self.stmt(part)?;
                    spans.push(stmt.span());
                    entries.push(Entry::Stmt(stmt));
                }
                _ => {
                    spans.push(self.span(&part));
                    entries.push(Entry::Item(self.item(part)?));
                }
            }
        }
        self.one_per_line(&spans, "statement or declaration")?;
        Ok(entries)
    }

    /// A `session_expr` pair: the expression inside.
    pub(super) fn session_expr(&self, p: Pair<'i, Rule>) -> Result<Expr, Box<Diagnostic>> {
        let span = self.span(&p);
        let inner = (self.kids(&p).all().into_iter()).find(|k| k.as_rule() == Rule::expr);
        let inner = inner.ok_or_else(|| mismatch(span, "an expression"))?;
        self.expr(inner)
    }
}
