//! Calls of built-in functions, against [`builtins::BUILTINS`]: arity, named filters, the types
//! of arguments where the function says (a map, a node, a list, an integer), and the type of the
//! result, which is what makes `for each m in maps()` give `m` the type "a map".

use super::types::{Class, Ty, Want};
use super::{Checker, Cx, Scope, BAD};
use crate::ir::Schedule;
use crate::recipe::ast::{self, ExprKind};
use crate::recipe::builtins::Builtin;
use crate::recipe::diag::Diagnostic;
use crate::recipe::resolve::{self, with_suggestion, UNKNOWN_NAME};

/// The schedule names a `schedule = …` filter accepts.
const SCHEDULES: [&str; 4] = ["sequential", "parallel", "vector", "unrolled"];

impl<'a> Checker<'a> {
    /// A call of a script function: its arguments are checked as expressions and counted
    /// (a script function's parameters are untyped, so its result is unknown).
    pub(super) fn script_call(
        &mut self,
        cx: Cx<'a>,
        scope: &Scope<'a>,
        call: &'a ast::Call,
        arity: usize,
    ) {
        self.args(cx, scope, call);
        if let Some(a) = call.args.iter().find(|a| a.name.is_some()) {
            self.out.push(
                Diagnostic::error(
                    BAD,
                    a.span,
                    "script functions take positional arguments only",
                )
                .label("a named argument"),
            );
        } else if call.args.len() != arity {
            self.out.push(
                Diagnostic::error(
                    BAD,
                    call.span,
                    format!(
                        "`{}` takes {arity} argument(s), {} given",
                        call.callee.text(),
                        call.args.len()
                    ),
                )
                .label("wrong number of arguments"),
            );
        }
    }
}

/// What an argument named `name` (in [`builtins::BUILTINS`]) must be.
fn want(name: &str) -> Want<'static> {
    match name {
        "map" | "in" => Want::Ty(Ty::Node(Class::Map)),
        "node" => Want::Ty(Ty::Node(Class::Any)),
        "list" => Want::Ty(Ty::List(Box::new(Ty::Unknown))),
        "n" | "index" | "depth" | "params" => Want::Ty(Ty::Int),
        "a" | "b" => Want::Number,
        "operator" | "id" => Want::Ty(Ty::Str),
        _ => Want::Any,
    }
}

/// The type of `b`'s result, given its arguments' types.
fn result<'a>(
    b: &Builtin,
    args: &[Ty<'a>],
    operator: Option<&str>,
    pattern: Option<Ty<'a>>,
) -> Ty<'a> {
    let list = |t: Ty<'a>| Ty::List(Box::new(t));
    match b.name {
        "bytes" | "dmd" | "estimate" | "time" => Ty::Float,
        "contraction" | "exists" => Ty::Bool,
        "extent" | "len" | "longest" | "output_params" | "params" | "reductions" | "uses" => {
            Ty::Int
        }
        "innermost" | "outermost" => Ty::Node(Class::Map),
        "loop_order" | "range" | "zeros" => list(Ty::Int),
        "maps" => list(Ty::Node(Class::Map)),
        "matches" => list(pattern.unwrap_or(Ty::Unknown)),
        "max" | "min" => match args {
            [Ty::Int, Ty::Int] => Ty::Int,
            [Ty::Int | Ty::Float, Ty::Int | Ty::Float] => Ty::Float,
            _ => Ty::Unknown,
        },
        "name" => Ty::Str,
        "reads" | "writes" => list(Ty::Str),
        "node" => Ty::Node(Class::Any),
        "ops" => list(Ty::Node(Class::Op(operator.map(str::to_string)))),
        "set" => match args.first() {
            Some(t @ Ty::List(_)) => t.clone(),
            _ => list(Ty::Unknown),
        },
        "tasklets" => list(Ty::Node(Class::Tasklet)),
        _ => Ty::Unknown,
    }
}

impl<'a> Checker<'a> {
    /// Checks a call of built-in `b` and returns the type of its result.
    pub(super) fn builtin(
        &mut self,
        cx: Cx<'a>,
        scope: &Scope<'a>,
        call: &'a ast::Call,
        b: &'static Builtin,
    ) -> Ty<'a> {
        let positional: Vec<&ast::Arg> = call.args.iter().filter(|a| a.name.is_none()).collect();
        if !(b.required..=b.args.len()).contains(&positional.len()) {
            let arity = match (b.required, b.args.len()) {
                (0, 0) => "no arguments".to_string(),
                (r, n) if r == n => format!("{n} argument(s) ({})", b.args.join(", ")),
                (r, n) => format!("{r} to {n} arguments ({})", b.args.join(", ")),
            };
            self.out.push(
                Diagnostic::error(
                    BAD,
                    call.span,
                    format!(
                        "`{}` takes {arity}, but {} are given",
                        b.name,
                        positional.len()
                    ),
                )
                .label("wrong number of arguments")
                .note(format!("`{}`: {}", b.name, b.doc)),
            );
        }
        let mut tys = Vec::new();
        let mut operator = None;
        let mut pattern = None;
        for (k, arg) in positional.iter().enumerate() {
            let name = b.args.get(k).copied().unwrap_or("");
            if name == "pattern" {
                pattern = self.pattern_arg(cx, arg);
                continue;
            }
            if let ExprKind::Str(s) = &arg.value.kind {
                operator = (name == "operator").then_some(s.as_str());
            }
            let ty = self.expr(cx, scope, &arg.value);
            self.want(
                arg.value.span,
                &want(name),
                &ty,
                &format!("argument `{name}` of `{}`", b.name),
            );
            tys.push(ty);
        }
        let mut seen: Vec<&str> = Vec::new();
        for arg in call.args.iter() {
            let Some(n) = &arg.name else { continue };
            if seen.contains(&n.name.as_str()) {
                self.out.push(
                    Diagnostic::error(BAD, arg.span, format!("filter `{}` is given twice", n.name))
                        .label("given again here"),
                );
            }
            seen.push(&n.name);
            if !b.named.contains(&n.name.as_str()) {
                let names: Vec<String> = b.named.iter().map(|s| s.to_string()).collect();
                let listing = if names.is_empty() {
                    format!("`{}` takes no named arguments", b.name)
                } else {
                    format!("`{}` filters: {}", b.name, names.join(", "))
                };
                let d = Diagnostic::error(
                    UNKNOWN_NAME,
                    n.span,
                    format!("`{}` has no filter `{}`", b.name, n.name),
                )
                .label("not a filter of this function")
                .note(listing);
                self.out.push(with_suggestion(d, &n.name, &names));
                self.expr(cx, scope, &arg.value);
            } else if n.name == "schedule" {
                self.schedule_filter(cx, scope, &arg.value);
            } else {
                let ty = self.expr(cx, scope, &arg.value);
                self.want(
                    arg.value.span,
                    &want(&n.name),
                    &ty,
                    &format!("filter `{}` of `{}`", n.name, b.name),
                );
            }
        }
        result(b, &tys, operator, pattern)
    }

    /// `matches(P)`: a pattern name; the type of its matches.
    fn pattern_arg(&mut self, cx: Cx<'a>, arg: &'a ast::Arg) -> Option<Ty<'a>> {
        let ExprKind::Name(path) = &arg.value.kind else {
            self.out.push(
                Diagnostic::error(BAD, arg.value.span, "`matches` takes the name of a pattern")
                    .label("not a pattern name")
                    .help("e.g. `matches(matmul_add)`"),
            );
            return None;
        };
        match resolve::pattern(self.l, cx.module, path) {
            Ok((_, decl)) => Some(Ty::Match(decl)),
            Err(d) => {
                self.report(cx.module, path, d);
                None
            }
        }
    }

    /// `schedule = parallel` (a bare schedule name, or a string).
    fn schedule_filter(&mut self, cx: Cx<'a>, scope: &Scope<'a>, v: &'a ast::Expr) {
        let word = match &v.kind {
            ExprKind::Name(p) if p.segments.len() == 1 && scope.get(&p.last().name).is_none() => {
                p.last().name.as_str()
            }
            ExprKind::Str(s) => s.as_str(),
            _ => {
                let ty = self.expr(cx, scope, v);
                self.want(v.span, &Want::Ty(Ty::Str), &ty, "filter `schedule`");
                return;
            }
        };
        if Schedule::from_name(word).is_none() {
            let names: Vec<String> = SCHEDULES.iter().map(|s| s.to_string()).collect();
            let d = Diagnostic::error(BAD, v.span, format!("`{word}` is not a schedule"))
                .label("not a schedule")
                .note(format!("schedules: {}", SCHEDULES.join(", ")));
            self.out.push(with_suggestion(d, word, &names));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::builtins;

    /// Every built-in has a result type, so a new one cannot be added without teaching the
    /// checker what it returns.
    #[test]
    fn every_builtin_has_a_result_type() {
        for b in builtins::BUILTINS {
            let args = vec![Ty::Int; b.args.len()];
            let r = result(b, &args, None, Some(Ty::Int));
            assert!(r.is_known(), "{} has no result type", b.name);
        }
    }
}
