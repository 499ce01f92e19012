//! Expressions: every name resolves (a variable, a parameter, `baseline`), every field is a
//! capture of the match's pattern, operators get operands of the right kind — as far as types
//! are known.

use super::types::{fits, Ty, Want};
use super::{Checker, Cx, Scope, BAD};
use crate::recipe::ast::{self, BinaryOp, Expr, ExprKind, UnaryOp};
use crate::recipe::diag::{Diagnostic, Span};
use crate::recipe::resolve::{self, unknown, with_suggestion, UNKNOWN_NAME};

/// The fields of `baseline`.
const BASELINE: [&str; 3] = ["dmd", "bytes", "time"];

impl<'a> Checker<'a> {
    /// Checks `e` and returns its type.
    pub(super) fn expr(&mut self, cx: Cx<'a>, scope: &Scope<'a>, e: &'a Expr) -> Ty<'a> {
        match &e.kind {
            ExprKind::Int(_) => Ty::Int,
            ExprKind::Float(_) => Ty::Float,
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::Str(_) => Ty::Str,
            ExprKind::List(items) => {
                let tys: Vec<Ty<'a>> = items.iter().map(|i| self.expr(cx, scope, i)).collect();
                let elem = tys.into_iter().find(Ty::is_known).unwrap_or(Ty::Unknown);
                Ty::List(Box::new(elem))
            }
            ExprKind::Name(path) => self.name(cx, scope, path),
            ExprKind::Wildcard => {
                self.out.push(
                    Diagnostic::error(BAD, e.span, "`_` is not a value")
                        .label("only in patterns")
                        .note("`_` stands for \"any\" in pattern properties (`shape = [_, 64]`) and inputs (`op Add(_, mm)`)"),
                );
                Ty::Unknown
            }
            ExprKind::Field(base, field) => {
                let ty = self.expr(cx, scope, base);
                self.field(&ty, base.span, field)
            }
            ExprKind::Index(base, index) => {
                let ty = self.expr(cx, scope, base);
                let at = self.expr(cx, scope, index);
                self.want(index.span, &Want::Ty(Ty::Int), &at, "an index");
                match ty {
                    Ty::List(elem) => *elem,
                    Ty::Unknown => Ty::Unknown,
                    other => {
                        self.mistyped(
                            base.span,
                            &Want::Ty(Ty::List(Box::new(Ty::Unknown))),
                            &other,
                            "indexing `[…]`",
                        );
                        Ty::Unknown
                    }
                }
            }
            ExprKind::Call(call) => self.expr_call(cx, scope, call),
            ExprKind::Unary(op, inner) => {
                let ty = self.expr(cx, scope, inner);
                match op {
                    UnaryOp::Neg => {
                        self.want(inner.span, &Want::Number, &ty, "`-`");
                        if ty.is_known() && ty.may_be_number() {
                            ty
                        } else {
                            Ty::Unknown
                        }
                    }
                    UnaryOp::Not => {
                        self.want(inner.span, &Want::Ty(Ty::Bool), &ty, "`not`");
                        Ty::Bool
                    }
                }
            }
            ExprKind::Binary(op, lhs, rhs) => {
                let a = self.expr(cx, scope, lhs);
                let b = self.expr(cx, scope, rhs);
                self.binary(*op, (&a, lhs.span), (&b, rhs.span))
            }
        }
    }

    /// Reports a mismatch between what `span` holds and what `what` needs, when certain.
    pub(super) fn want(&mut self, span: Span, want: &Want<'_>, found: &Ty<'_>, what: &str) {
        if !fits(want, found) {
            self.mistyped(span, want, found, what);
        }
    }

    fn mistyped(&mut self, span: Span, want: &Want<'_>, found: &Ty<'_>, what: &str) {
        self.out.push(
            Diagnostic::error(BAD, span, format!("{what} needs {want}, found {found}"))
                .label(format!("this is {found}")),
        );
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        (a, sa): (&Ty<'a>, Span),
        (b, sb): (&Ty<'a>, Span),
    ) -> Ty<'a> {
        let what = format!("`{}`", op.symbol());
        match op {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                self.want(sa, &Want::Number, a, &what);
                self.want(sb, &Want::Number, b, &what);
                match (a, b) {
                    (Ty::Int, Ty::Int) => Ty::Int,
                    (Ty::Float, Ty::Int | Ty::Float) | (Ty::Int, Ty::Float) => Ty::Float,
                    _ => Ty::Unknown,
                }
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                self.want(sa, &Want::Number, a, &what);
                self.want(sb, &Want::Number, b, &what);
                Ty::Bool
            }
            BinaryOp::Eq | BinaryOp::Ne => Ty::Bool,
            BinaryOp::And | BinaryOp::Or => {
                self.want(sa, &Want::Ty(Ty::Bool), a, &what);
                self.want(sb, &Want::Ty(Ty::Bool), b, &what);
                Ty::Bool
            }
        }
    }

    /// A variable, a parameter (`tile`, `cpu::tile`) or `baseline`.
    pub(super) fn name(&mut self, cx: Cx<'a>, scope: &Scope<'a>, path: &ast::Path) -> Ty<'a> {
        let word = path.last().name.as_str();
        if path.segments.len() == 1 {
            if let Some(ty) = scope.get(word) {
                return ty.clone();
            }
        }
        if let Some((m, p)) = resolve::param(self.l, cx.module, path) {
            self.record(cx, m, &p.name.name);
            return super::types::of_param(p);
        }
        if path.segments.len() == 1 && word == "baseline" {
            return Ty::Baseline;
        }
        let d = match resolve::owner(self.l, cx.module, path) {
            Err(d) => d,
            Ok((m, _)) if path.segments.len() > 1 => {
                let names: Vec<String> = resolve::params(self.l, m)
                    .map(|p| p.name.name.clone())
                    .collect();
                unknown(
                    path,
                    format!(
                        "module {} has no parameter `{word}`",
                        self.l.modules[m].name
                    ),
                    "not a parameter of that module",
                    &names,
                )
            }
            Ok(_) => {
                let mut names = scope.names();
                names.extend(resolve::params(self.l, cx.module).map(|p| p.name.name.clone()));
                names.push("baseline".to_string());
                unknown(
                    path,
                    format!("no variable or parameter is named `{word}`"),
                    "not defined here",
                    &names,
                )
                .note("a name is a rule parameter, a `let` or `for each` variable before this point, a `param`, or `baseline`")
            }
        };
        self.report(cx.module, path, d);
        Ty::Unknown
    }

    /// `m.capture` on a match, `baseline.dmd`.
    fn field(&mut self, base: &Ty<'a>, base_span: Span, field: &ast::Ident) -> Ty<'a> {
        match base {
            Ty::Unknown => Ty::Unknown,
            Ty::Match(p) => match p.captures.iter().find(|c| c.name.name == field.name) {
                Some(c) => Ty::Node(super::types::Class::of_capture(c)),
                None => {
                    let names: Vec<String> =
                        p.captures.iter().map(|c| c.name.name.clone()).collect();
                    let d = Diagnostic::error(
                        UNKNOWN_NAME,
                        field.span,
                        format!("pattern `{}` has no capture `{}`", p.name.name, field.name),
                    )
                    .label("not a capture")
                    .also(p.name.span, "the pattern")
                    .note(format!("its captures: {}", names.join(", ")));
                    self.out.push(with_suggestion(d, &field.name, &names));
                    Ty::Unknown
                }
            },
            Ty::Baseline if BASELINE.contains(&field.name.as_str()) => Ty::Float,
            Ty::Baseline => {
                let names: Vec<String> = BASELINE.iter().map(|s| s.to_string()).collect();
                let d = Diagnostic::error(UNKNOWN_NAME, field.span, format!("`baseline` has no field `{}`", field.name))
                    .label("not a field of baseline")
                    .note("baseline.dmd, baseline.bytes and baseline.time measure the program before the recipe");
                self.out.push(with_suggestion(d, &field.name, &names));
                Ty::Unknown
            }
            other => {
                self.out.push(
                    Diagnostic::error(BAD, base_span, format!("`.{}` needs a match or `baseline`, found {other}", field.name))
                        .label(format!("this is {other}"))
                        .note("fields are the captures of a match (`m.mm`) and the measures of `baseline`"),
                );
                Ty::Unknown
            }
        }
    }
}
