//! Statements: scoping (`let` is visible after it, in its block and nested blocks; a `for
//! each` variable in its body), conditions that are booleans, iterations over lists, `apply`
//! targets, and `unsafe` layers that can be lowered.

use super::types::{Ty, Want};
use super::{Checker, Cx, Scope, BAD};
use crate::recipe::ast::{self, ApplyMode, Stmt};
use crate::recipe::diag::Diagnostic;
use crate::recipe::resolve::with_suggestion;

/// The check layers a recipe may lower.
const LOWERABLE: [&str; 2] = ["legality", "numerics"];

impl<'a> Checker<'a> {
    /// A block, in a new frame of `scope`.
    pub(super) fn block(&mut self, cx: Cx<'a>, scope: &mut Scope<'a>, b: &'a ast::Block) {
        scope.push();
        for s in &b.stmts {
            self.stmt(cx, scope, s);
        }
        scope.pop();
    }

    fn stmt(&mut self, cx: Cx<'a>, scope: &mut Scope<'a>, s: &'a Stmt) {
        match s {
            Stmt::Call(call) => self.call_stmt(cx, scope, call),
            Stmt::Apply { target, mode, .. } => self.apply(cx, scope, target, mode),
            Stmt::ForEach {
                var, iter, body, ..
            } => {
                let ty = self.expr(cx, scope, iter);
                let elem = match ty {
                    Ty::List(elem) => *elem,
                    Ty::Unknown => Ty::Unknown,
                    other => {
                        self.want(
                            iter.span,
                            &Want::Ty(Ty::List(Box::new(Ty::Unknown))),
                            &other,
                            "`for each`",
                        );
                        Ty::Unknown
                    }
                };
                scope.push();
                scope.bind(&var.name, elem);
                self.block(cx, scope, body);
                scope.pop();
            }
            Stmt::Try { body, .. } => self.block(cx, scope, body),
            Stmt::First { alternatives, .. } => {
                for b in alternatives {
                    self.block(cx, scope, b);
                }
            }
            Stmt::Repeat { max, body, .. } => {
                let ty = self.expr(cx, scope, max);
                self.want(max.span, &Want::Ty(Ty::Int), &ty, "`repeat (max N)`");
                self.block(cx, scope, body);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                let ty = self.expr(cx, scope, cond);
                self.want(cond.span, &Want::Ty(Ty::Bool), &ty, "`if`");
                self.block(cx, scope, then);
                if let Some(b) = otherwise {
                    self.block(cx, scope, b);
                }
            }
            Stmt::Let { name, value, .. } => {
                let ty = self.expr(cx, scope, value);
                scope.bind(&name.name, ty);
            }
            Stmt::Expect { cond, .. } => {
                let ty = self.expr(cx, scope, cond);
                self.want(cond.span, &Want::Ty(Ty::Bool), &ty, "`expect`");
            }
            Stmt::Unsafe {
                layers,
                reason,
                body,
                ..
            } => {
                for layer in layers {
                    self.layer(layer);
                }
                if reason.value.trim().is_empty() {
                    self.out.push(
                        Diagnostic::error(BAD, reason.span, "an `unsafe` block needs a reason")
                            .label("empty reason")
                            .note("the reason is recorded with every step the block runs, for whoever reviews the lock"),
                    );
                }
                self.block(cx, scope, body);
            }
            Stmt::Print { args, .. } => {
                for a in args {
                    self.expr(cx, scope, a);
                }
            }
            Stmt::Note { text, .. } => {
                self.expr(cx, scope, text);
            }
        }
    }

    /// One layer of `unsafe(…)`.
    fn layer(&mut self, layer: &ast::Ident) {
        if LOWERABLE.contains(&layer.name.as_str()) {
            return;
        }
        let d = if matches!(layer.name.as_str(), "structural" | "invariants") {
            Diagnostic::error(BAD, layer.span, "structural invariants cannot be lowered")
                .label("always checked")
                .note("a rewrite that breaks the IR invariants leaves no valid program to run or check; it is always rolled back")
        } else {
            let names: Vec<String> = LOWERABLE.iter().map(|s| s.to_string()).collect();
            with_suggestion(
                Diagnostic::error(BAD, layer.span, format!("`{}` is not a check layer", layer.name))
                    .label("not a layer")
                    .note("`unsafe` lowers `legality` (races, coverage) or `numerics` (output comparison)"),
                &layer.name,
                &names,
            )
        };
        self.out.push(d);
    }

    /// `apply R everywhere | once | at X`.
    fn apply(
        &mut self,
        cx: Cx<'a>,
        scope: &mut Scope<'a>,
        target: &'a ast::Path,
        mode: &'a ApplyMode,
    ) {
        let at = match mode {
            ApplyMode::At(e) => Some((self.expr(cx, scope, e), e.span)),
            ApplyMode::Everywhere(_) | ApplyMode::Once(_) => None,
        };
        self.apply_target(cx, target, at);
    }
}
