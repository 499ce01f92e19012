//! Statements: sequences, `let`, `if`, `for each`, `try`, `first … or`, `repeat … until
//! fixpoint`, `expect`, `unsafe`, `print`, `note`; calls and `apply` are in [`super::apply`].
//!
//! Strategies absorb only silenceable failures, and undo the failed part first: `try` rolls its
//! block back and records a skip, each failed alternative of `first` leaves no trace, and an
//! iteration of `repeat` that fails is undone and ends the loop like one that changes nothing.

use super::describe::{describe, show};
use super::env::Interp;
use super::eval::{binary, eval, truth};
use super::failure::{runtime, Failure, Flow, EXPECT, NO_FIXPOINT};
use super::value::Value;
use super::{ExpectOutcome, ExpectRecord, Skip};
use crate::recipe::ast::{self, BinaryOp, Block, Expr, ExprKind, Stmt};
use crate::recipe::resolve::{self, Callee};
use crate::recipe::{Diagnostic, Span};
use crate::transform::engine::Layer;

impl Interp<'_> {
    /// Runs a block in a new frame of variables.
    pub fn block(&mut self, b: &Block) -> Flow<()> {
        self.env.push();
        let r = b.stmts.iter().try_for_each(|s| self.stmt(s));
        self.env.pop();
        r
    }

    /// Runs statements in the current frame of variables, so their `let`s stay bound after
    /// them (the whole of `main`, or one input of an interactive session).
    pub fn statements(&mut self, stmts: &[Stmt]) -> Flow<()> {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    /// Runs a block as a transaction: a silenceable failure undoes everything it did.
    pub fn transaction(&mut self, b: &Block) -> Flow<()> {
        let mark = self.mark(self.may_commit_many(b));
        match self.block(b) {
            Err(f) if f.is_silenceable() => {
                self.rollback(mark, b.span)?;
                Err(f)
            }
            other => other,
        }
    }

    /// Runs `f` with silenceable failures expected (diagnostics for them stay cheap).
    pub fn silenced<T>(&mut self, f: impl FnOnce(&mut Self) -> Flow<T>) -> Flow<T> {
        self.silenced += 1;
        let r = f(self);
        self.silenced -= 1;
        r
    }

    fn stmt(&mut self, s: &Stmt) -> Flow<()> {
        match s {
            Stmt::Call(call) => self.call_stmt(call),
            Stmt::Apply { target, mode, span } => self.apply(target, mode, *span),
            Stmt::ForEach {
                var, iter, body, ..
            } => self.for_each(var, iter, body),
            Stmt::Try { body, .. } => match self.silenced(|it| it.transaction(body)) {
                Err(f) if f.is_silenceable() => {
                    self.skip(f.diagnostic().span, f.reason());
                    Ok(())
                }
                other => other,
            },
            Stmt::First { alternatives, span } => self.first(alternatives, *span),
            Stmt::Repeat { max, body, span } => self.repeat(max, body, *span),
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                if truth(&eval(self, cond)?, cond.span)? {
                    self.block(then)
                } else if let Some(b) = otherwise {
                    self.block(b)
                } else {
                    Ok(())
                }
            }
            Stmt::Let { name, value, .. } => {
                let v = eval(self, value)?;
                self.remember(&v);
                self.env.bind(&name.name, v);
                Ok(())
            }
            Stmt::Expect {
                cond,
                message,
                span,
            } => self.expect(cond, message.as_ref(), *span),
            Stmt::Unsafe {
                layers,
                reason,
                body,
                ..
            } => self.unsafe_block(layers, reason, body),
            Stmt::Print { args, .. } => {
                let parts = args.iter().map(|a| {
                    let v = eval(self, a)?;
                    Ok(show(self.p, &v))
                });
                let line = parts.collect::<Flow<Vec<String>>>()?.join(" ");
                self.report.printed.push(line);
                Ok(())
            }
            Stmt::Note { text, .. } => {
                let v = eval(self, text)?;
                let shown = show(self.p, &v);
                self.report.notes.push(shown);
                Ok(())
            }
        }
    }

    pub fn skip(&mut self, span: Span, reason: String) {
        self.report.skipped.push(Skip { span, reason });
    }

    /// `for each x in EXPR { … }`: the list is evaluated once; a handle whose node a rewrite in
    /// an earlier iteration removed is skipped (and recorded), not an error.
    fn for_each(&mut self, var: &ast::Ident, iter: &Expr, body: &Block) -> Flow<()> {
        let items = match eval(self, iter)? {
            Value::List(items) => items,
            other => {
                return Err(runtime(
                    iter.span,
                    format!("`for each` needs a list, found {} ({other})", other.kind()),
                ))
            }
        };
        for item in items {
            if let Some(gone) = self.gone(&item) {
                let node = self.described.get(&gone).cloned();
                let node = node.unwrap_or_else(|| describe(self.p, gone));
                let by = match self.removed_by.get(&gone) {
                    Some(k) => format!(" by step {}", k + 1),
                    None => String::new(),
                };
                let reason = format!("{node} was removed{by} before the loop reached it");
                self.skip(iter.span, reason);
                continue;
            }
            self.remember(&item);
            self.env.push();
            self.env.bind(&var.name, item);
            let r = self.block(body);
            self.env.pop();
            r?;
        }
        Ok(())
    }

    /// The first node of a handle (or a match's captures) that is no longer in the program.
    fn gone(&self, v: &Value) -> Option<crate::ir::NodeId> {
        let ids: &[crate::ir::NodeId] = match v {
            Value::Node(id) => std::slice::from_ref(id),
            Value::Match(m) => &m.found.nodes,
            _ => &[],
        };
        ids.iter().copied().find(|id| self.p.node(*id).is_none())
    }

    /// `first { … } or { … }`: the first alternative that succeeds; when all fail, the last
    /// one's failure.
    fn first(&mut self, alternatives: &[Block], span: Span) -> Flow<()> {
        let Some((last, rest)) = alternatives.split_last() else {
            return Err(runtime(span, "`first` needs at least one alternative"));
        };
        for alt in rest {
            match self.silenced(|it| it.transaction(alt)) {
                Err(f) if f.is_silenceable() => continue,
                other => return other,
            }
        }
        self.transaction(last)
    }

    /// `repeat (max N) { … } until fixpoint`: stops when an iteration changes nothing (no step,
    /// or the program is back where the iteration started) or fails silenceably; using all N
    /// iterations without a fixpoint is a warning.
    fn repeat(&mut self, max: &Expr, body: &Block, span: Span) -> Flow<()> {
        let n = match eval(self, max)? {
            Value::Int(n) if n >= 0 => n,
            other => {
                return Err(runtime(
                    max.span,
                    format!("`repeat (max N)` needs an integer N ≥ 0, found {other}"),
                ))
            }
        };
        for _ in 0..n {
            let before = self.report.steps.len();
            match self.silenced(|it| it.transaction(body)) {
                Err(f) if f.is_silenceable() => return Ok(()),
                Err(f) => return Err(f),
                Ok(()) => {}
            }
            let done = &self.report.steps[before..];
            let unchanged = match (done.first(), done.last()) {
                (Some(a), Some(z)) => a.step.hash_before == z.step.hash_after,
                _ => true,
            };
            if unchanged {
                return Ok(());
            }
        }
        let warning = Diagnostic::warning(
            NO_FIXPOINT,
            span,
            format!("`repeat` used all {n} iterations without reaching a fixpoint"),
        )
        .label("still changing the program")
        .help("raise `max`, or check that the body converges");
        self.report.warnings.push(warning);
        Ok(())
    }

    /// `expect C` / `expect C, "message"`.
    fn expect(&mut self, cond: &Expr, message: Option<&ast::Str>, span: Span) -> Flow<()> {
        let text = self.text(cond.span);
        if !self.opts.measure && mentions_time(cond) {
            let why = "it measures time, and this run does not measure (`dmove check` replays without timing)".to_string();
            self.report.expects.push(ExpectRecord {
                span,
                text,
                outcome: ExpectOutcome::NotChecked(why),
            });
            return Ok(());
        }
        let (holds, explained) = match &cond.kind {
            ExprKind::Binary(op, a, b) if is_comparison(*op) => {
                let l = eval(self, a)?;
                let r = eval(self, b)?;
                let holds = truth(&binary(*op, &l, &r, cond.span)?, cond.span)?;
                let rhs = match &b.kind {
                    ExprKind::Int(_)
                    | ExprKind::Float(_)
                    | ExprKind::Bool(_)
                    | ExprKind::Str(_) => self.text(b.span),
                    _ => format!("{} = {}", self.text(b.span), show(self.p, &r)),
                };
                let explained = format!(
                    "{} is {}, which is not {} {rhs}",
                    self.text(a.span),
                    show(self.p, &l),
                    op.symbol()
                );
                (holds, explained)
            }
            _ => {
                let holds = truth(&eval(self, cond)?, cond.span)?;
                (holds, format!("`{text}` is false"))
            }
        };
        if holds {
            self.report.expects.push(ExpectRecord {
                span,
                text,
                outcome: ExpectOutcome::Held,
            });
            return Ok(());
        }
        let d = match message {
            Some(m) => Diagnostic::error(EXPECT, cond.span, m.value.clone()).label(explained),
            None => Diagnostic::error(EXPECT, cond.span, explained).label("does not hold"),
        };
        Err(Failure::definite(d.note(format!(
            "after {} step(s) of this run",
            self.report.steps.len()
        ))))
    }

    /// `unsafe(layers) because "reason" { … }`: the engine's checks with those layers lowered
    /// inside the block, restored after it whatever happens.
    fn unsafe_block(&mut self, layers: &[ast::Ident], reason: &ast::Str, body: &Block) -> Flow<()> {
        let saved = self.engine.checks.clone();
        let mut checks = saved.clone();
        for id in layers {
            let layer = match id.name.as_str() {
                "legality" => Layer::Legality,
                "numerics" => Layer::Numerics,
                "structural" => {
                    return Err(runtime(
                        id.span,
                        "the structural layer is never lowered: an invalid program is always rolled back",
                    ))
                }
                other => {
                    return Err(runtime(
                        id.span,
                        format!("`{other}` is not a check layer (legality, numerics)"),
                    ))
                }
            };
            checks = checks.lower(layer, reason.value.clone());
            let line = format!(
                "{}: {} ({})",
                layer.name(),
                reason.value,
                self.place(id.span)
            );
            if !self.report.lowered.contains(&line) {
                self.report.lowered.push(line);
            }
        }
        self.engine.checks = checks;
        let r = self.block(body);
        self.engine.checks = saved;
        r
    }

    /// Whether running `b` may commit more than one step (then a transaction over it needs a
    /// snapshot). Conservative: rules, `apply` and loops count as many.
    pub fn may_commit_many(&self, b: &Block) -> bool {
        self.steps_bound(&b.stmts) > 1
    }

    /// An upper bound on the steps `stmts` commit, saturating at 2 ("many").
    fn steps_bound(&self, stmts: &[Stmt]) -> usize {
        let one = |s: &Stmt| -> usize {
            match s {
                Stmt::Call(c) => match resolve::callee(self.l, self.env.module, &c.callee) {
                    Ok(Callee::Transformation(_)) => 1,
                    Ok(Callee::Builtin(_)) => 0,
                    _ => 2,
                },
                Stmt::Apply { .. } => 2,
                Stmt::ForEach { body, .. } | Stmt::Repeat { body, .. } => {
                    2 * self.steps_bound(&body.stmts).min(1)
                }
                Stmt::Try { body, .. } | Stmt::Unsafe { body, .. } => self.steps_bound(&body.stmts),
                Stmt::First { alternatives, .. } => (alternatives.iter())
                    .map(|a| self.steps_bound(&a.stmts))
                    .max()
                    .unwrap_or(0),
                Stmt::If {
                    then, otherwise, ..
                } => self
                    .steps_bound(&then.stmts)
                    .max(otherwise.as_ref().map_or(0, |o| self.steps_bound(&o.stmts))),
                Stmt::Let { .. } | Stmt::Expect { .. } | Stmt::Print { .. } | Stmt::Note { .. } => {
                    0
                }
            }
        };
        stmts.iter().map(one).sum::<usize>().min(2)
    }
}

fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
    )
}

/// Whether an expression measures time (`time()`, `baseline.time`).
pub fn mentions_time(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call(c) => {
            c.callee.text() == "time" || c.args.iter().any(|a| mentions_time(&a.value))
        }
        ExprKind::Field(base, field) => {
            let baseline = matches!(&base.kind, ExprKind::Name(p) if p.text() == "baseline");
            (baseline && field.name == "time") || mentions_time(base)
        }
        ExprKind::List(items) => items.iter().any(mentions_time),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => mentions_time(a) || mentions_time(b),
        ExprKind::Unary(_, a) => mentions_time(a),
        _ => false,
    }
}
