//! Blocks and statements.

use super::{fail, mismatch, Builder, Rule, SYNTAX};

/// Longest `else if` chain accepted: each link nests the tree one level deeper.
pub const MAX_ELSE_IF: usize = 64;
use crate::recipe::ast::{ApplyMode, Block, Call, Stmt};
use crate::recipe::diag::{Diagnostic, Span};
use pest::iterators::Pair;

impl<'i> Builder<'i> {
    /// A `block` pair: `{ stmt … }`, one statement per line.
    pub(super) fn block(&self, p: Pair<'i, Rule>) -> Result<Block, Box<Diagnostic>> {
        let span = self.span(&p);
        let stmts = (self.kids(&p).all().into_iter())
            .map(|s| self.stmt(s))
            .collect::<Result<Vec<_>, _>>()?;
        let spans: Vec<Span> = stmts.iter().map(Stmt::span).collect();
        self.one_per_line(&spans, "statement")?;
        Ok(Block { stmts, span })
    }

    /// A `stmt` pair.
    pub(super) fn stmt(&self, p: Pair<'i, Rule>) -> Result<Stmt, Box<Diagnostic>> {
        let p = self.kids(&p).need("a statement")?;
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        Ok(match p.as_rule() {
            Rule::call => Stmt::Call(self.call(p)?),
            Rule::apply_stmt => {
                let target = self.path(&kids.need_rule(Rule::callee)?);
                let mode = kids.need("how to apply")?;
                let mode = match mode.as_rule() {
                    Rule::mode_everywhere => ApplyMode::Everywhere(self.span(&mode)),
                    Rule::mode_once => ApplyMode::Once(self.span(&mode)),
                    _ => ApplyMode::At(self.expr(self.kids(&mode).need("a site")?)?),
                };
                Stmt::Apply { target, mode, span }
            }
            Rule::for_stmt => Stmt::ForEach {
                var: self.ident(&kids.need_rule(Rule::ident)?),
                iter: self.expr(kids.need("what to iterate")?)?,
                body: self.block(kids.need_rule(Rule::block)?)?,
                span,
            },
            Rule::try_stmt => Stmt::Try {
                body: self.block(kids.need_rule(Rule::block)?)?,
                span,
            },
            Rule::first_stmt => Stmt::First {
                alternatives: (kids.all().into_iter())
                    .map(|b| self.block(b))
                    .collect::<Result<_, _>>()?,
                span,
            },
            Rule::repeat_stmt => Stmt::Repeat {
                max: self.expr(kids.need("an iteration limit")?)?,
                body: self.block(kids.need_rule(Rule::block)?)?,
                span,
            },
            Rule::if_stmt => self.if_stmt(p)?,
            Rule::let_stmt => Stmt::Let {
                name: self.ident(&kids.need_rule(Rule::ident)?),
                value: self.expr(kids.need("a value")?)?,
                span,
            },
            Rule::expect_stmt => Stmt::Expect {
                cond: self.expr(kids.need("a condition")?)?,
                message: kids.next().map(|m| self.string(&m)).transpose()?,
                span,
            },
            Rule::unsafe_stmt => {
                let mut layers = Vec::new();
                while let Some(w) = kids.take(Rule::word) {
                    layers.push(self.ident(&w));
                }
                Stmt::Unsafe {
                    layers,
                    reason: self.string(&kids.need_rule(Rule::string)?)?,
                    body: self.block(kids.need_rule(Rule::block)?)?,
                    span,
                }
            }
            Rule::print_stmt => Stmt::Print {
                args: (kids.all().into_iter())
                    .map(|e| self.expr(e))
                    .collect::<Result<_, _>>()?,
                span,
            },
            Rule::note_stmt => Stmt::Note {
                text: self.expr(kids.need("a note")?)?,
                span,
            },
            other => return Err(mismatch(span, &format!("a statement, not {other:?}"))),
        })
    }

    /// `if C { … } else if C { … } else { … }`; an `else if` is an `else` block holding the
    /// nested `if`, which spans from its `if` to the end of the chain.
    fn if_stmt(&self, p: Pair<'i, Rule>) -> Result<Stmt, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let cond = self.expr(kids.need("a condition")?)?;
        let then = self.block(kids.need_rule(Rule::block)?)?;
        let mut arms = Vec::new();
        while let Some(arm) = kids.take(Rule::else_if) {
            if arms.len() == MAX_ELSE_IF {
                return fail(
                    Diagnostic::error(
                        SYNTAX,
                        self.span(&arm),
                        format!("more than {MAX_ELSE_IF} `else if` in one chain"),
                    )
                    .label("one too many")
                    .help("split the chain with a nested `if` in an `else` block, or into rules"),
                );
            }
            // The nested `if` starts at its keyword, after `else`.
            let start = (arm.clone().into_inner())
                .find(|k| k.as_rule() == Rule::kw_if)
                .map_or(self.span(&arm).start, |k| k.as_span().start());
            let mut parts = self.kids(&arm);
            let cond = self.expr(parts.need("a condition")?)?;
            let then = self.block(parts.need_rule(Rule::block)?)?;
            arms.push((start, cond, then));
        }
        let mut otherwise = match kids.take(Rule::else_block) {
            Some(e) => Some(self.block(self.kids(&e).need_rule(Rule::block)?)?),
            None => None,
        };
        for (start, cond, then) in arms.into_iter().rev() {
            let nested = Stmt::If {
                cond,
                then,
                otherwise,
                span: Span { start, ..span },
            };
            otherwise = Some(Block {
                span: nested.span(),
                stmts: vec![nested],
            });
        }
        Ok(Stmt::If {
            cond,
            then,
            otherwise,
            span,
        })
    }

    /// A `call` pair: `T(args)`, `mod::rule(x)`.
    fn call(&self, p: Pair<'i, Rule>) -> Result<Call, Box<Diagnostic>> {
        let span = self.span(&p);
        let callee = self.path(&self.kids(&p).need_rule(Rule::callee)?);
        Ok(Call {
            callee,
            args: self.args(p)?,
            span,
        })
    }
}
