//! Calls of rules and transformations, and `apply` targets.
//!
//! A transformation call is checked against its [`Schema`]: positional arguments fill the site
//! roles in order, named arguments are role or parameter names, required roles and parameters
//! must be there, role arguments must be nodes of the role's class and literal parameter values
//! must fit their [`ParamKind`]. A rule call is checked against the rule's typed parameters.

use super::types::{fits, value_word, Class, Ty, Want};
use super::{Checker, Cx, Scope, BAD};
use crate::recipe::ast::{self, ExprKind};
use crate::recipe::builtins::Builtin;
use crate::recipe::diag::{Diagnostic, Span};
use crate::recipe::modules::Loaded;
use crate::recipe::patterns::int;
use crate::recipe::resolve::{self, with_suggestion, Callee, UNKNOWN_NAME};
use crate::transform::{Default, ParamDecl, ParamKind, Schema, Transformation};
use std::collections::BTreeMap;

/// The words that type a rule parameter without naming a pattern: node classes, then value
/// types.
pub const TYPE_WORDS: [&str; 10] = [
    "map", "op", "tasklet", "data", "node", "int", "float", "bool", "string", "list",
];

/// The type a rule parameter declares: a node class, a value type or a pattern.
pub(super) fn param_type<'a>(
    l: &'a Loaded,
    m: usize,
    p: &ast::RuleParam,
) -> Result<Ty<'a>, Box<Diagnostic>> {
    if let [word] = p.ty.segments.as_slice() {
        if let Some(c) = Class::from_word(&word.name) {
            return Ok(Ty::Node(c));
        }
        if let Some(t) = value_word(&word.name) {
            return Ok(t);
        }
    }
    let (owner, name) = resolve::owner(l, m, &p.ty).map_err(Box::new)?;
    if let Some(decl) = resolve::patterns(l, owner).find(|d| d.name.name == name.name) {
        return Ok(Ty::Match(decl));
    }
    let mut names: Vec<String> = resolve::patterns(l, owner)
        .map(|d| d.name.name.clone())
        .collect();
    names.extend(TYPE_WORDS.iter().map(|w| w.to_string()));
    Err(Box::new(
        resolve::unknown(&p.ty, format!("no type or pattern is named `{}`", p.ty.text()), "not a type", &names)
            .note("a rule parameter is typed by a pattern, a node class (map, op, tasklet, data, node) or a value type (int, float, bool, string, list)"),
    ))
}

impl<'a> Checker<'a> {
    /// A call statement: a rule or a transformation.
    pub(super) fn call_stmt(&mut self, cx: Cx<'a>, scope: &Scope<'a>, call: &'a ast::Call) {
        match resolve::callee(self.l, cx.module, &call.callee) {
            Ok(Callee::Rule { module, rule }) => self.rule_call(cx, scope, call, module, rule),
            Ok(Callee::Transformation(t)) => self.transformation(cx, scope, call, t),
            Ok(Callee::Script { arity, .. }) => self.script_call(cx, scope, call, arity),
            Ok(Callee::Builtin(b)) => {
                self.builtin(cx, scope, call, b);
                self.out.push(
                    Diagnostic::error(
                        BAD,
                        call.callee.span,
                        format!(
                            "`{}` is a built-in function, not a rule or transformation",
                            b.name
                        ),
                    )
                    .label("its value would be discarded")
                    .note("a statement rewrites the program; a function only computes a value")
                    .help(format!(
                        "use its value: `let x = {}(…)` or `print {}(…)`",
                        b.name, b.name
                    )),
                );
            }
            Err(d) => {
                self.report(cx.module, &call.callee, d);
                self.args(cx, scope, call);
            }
        }
    }

    /// A call inside an expression: a built-in function.
    pub(super) fn expr_call(
        &mut self,
        cx: Cx<'a>,
        scope: &Scope<'a>,
        call: &'a ast::Call,
    ) -> Ty<'a> {
        let what = match resolve::callee(self.l, cx.module, &call.callee) {
            Ok(Callee::Builtin(b)) => return self.builtin(cx, scope, call, b),
            Ok(Callee::Script { arity, .. }) => {
                self.script_call(cx, scope, call, arity);
                return Ty::Unknown;
            }
            Ok(Callee::Rule { .. }) => "a rule",
            Ok(Callee::Transformation(_)) => "a transformation",
            Err(d) => {
                self.report(cx.module, &call.callee, d);
                self.args(cx, scope, call);
                return Ty::Unknown;
            }
        };
        self.out.push(
            Diagnostic::error(BAD, call.callee.span, format!("`{}` is {what}, which has no value", call.callee.text()))
                .label("not a function")
                .note("rules and transformations are statements: they rewrite the program and return nothing")
                .help("call it on its own line"),
        );
        self.args(cx, scope, call);
        Ty::Unknown
    }

    /// Checks the argument expressions of a call that cannot be checked further.
    pub(super) fn args(&mut self, cx: Cx<'a>, scope: &Scope<'a>, call: &'a ast::Call) {
        for a in &call.args {
            self.expr(cx, scope, &a.value);
        }
    }

    fn rule_call(
        &mut self,
        cx: Cx<'a>,
        scope: &Scope<'a>,
        call: &'a ast::Call,
        m: usize,
        rule: &'a ast::Rule,
    ) {
        self.record(cx, m, &rule.name.name);
        let names: Vec<String> = rule.params.iter().map(|p| p.name.name.clone()).collect();
        let signature = (rule.params.iter())
            .map(|p| format!("{}: {}", p.name.name, p.ty.text()))
            .collect::<Vec<_>>()
            .join(", ");
        let mut given: Vec<Option<Span>> = vec![None; rule.params.len()];
        let mut positional = 0;
        for arg in &call.args {
            let found = self.expr(cx, scope, &arg.value);
            let slot = match &arg.name {
                None => {
                    positional += 1;
                    if positional > rule.params.len() {
                        self.out.push(
                            Diagnostic::error(
                                BAD,
                                arg.span,
                                format!(
                                    "rule `{}` takes {} argument(s), but more are given",
                                    rule.name.name,
                                    rule.params.len()
                                ),
                            )
                            .label("one too many")
                            .also(
                                rule.name.span,
                                format!("rule {}({signature})", rule.name.name),
                            ),
                        );
                        continue;
                    }
                    positional - 1
                }
                Some(n) => match names.iter().position(|p| *p == n.name) {
                    Some(k) => k,
                    None => {
                        let d = Diagnostic::error(
                            UNKNOWN_NAME,
                            n.span,
                            format!("rule `{}` has no parameter `{}`", rule.name.name, n.name),
                        )
                        .label("not a parameter of the rule")
                        .also(
                            rule.name.span,
                            format!("rule {}({signature})", rule.name.name),
                        );
                        self.out.push(with_suggestion(d, &n.name, &names));
                        continue;
                    }
                },
            };
            if let Some(first) = given[slot] {
                self.out.push(
                    Diagnostic::error(
                        BAD,
                        arg.span,
                        format!("parameter `{}` is given twice", names[slot]),
                    )
                    .label("given again here")
                    .also(first, "first given here"),
                );
                continue;
            }
            given[slot] = Some(arg.span);
            if let Ok(want) = param_type(self.l, m, &rule.params[slot]) {
                let what = format!("parameter `{}` of rule `{}`", names[slot], rule.name.name);
                self.want(arg.value.span, &Want::Ty(want), &found, &what);
            }
        }
        let missing: Vec<&str> = (names.iter().zip(&given))
            .filter(|(_, g)| g.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        if !missing.is_empty() {
            self.out.push(
                Diagnostic::error(
                    BAD,
                    call.span,
                    format!("rule `{}` needs {}", rule.name.name, quoted(&missing)),
                )
                .label("missing argument(s)")
                .also(
                    rule.name.span,
                    format!("rule {}({signature})", rule.name.name),
                ),
            );
        }
    }

    fn transformation(
        &mut self,
        cx: Cx<'a>,
        scope: &Scope<'a>,
        call: &'a ast::Call,
        t: &'static dyn Transformation,
    ) {
        let s = t.schema();
        let mut roles: Vec<Option<Span>> = vec![None; s.site.len()];
        let mut params: BTreeMap<&str, Span> = BTreeMap::new();
        let mut positional = 0;
        for arg in &call.args {
            let found = self.expr(cx, scope, &arg.value);
            let Some(n) = &arg.name else {
                positional += 1;
                if positional > s.site.len() {
                    self.too_many(s, arg);
                } else {
                    self.role(s, positional - 1, arg, &found, &mut roles);
                }
                continue;
            };
            if let Some(k) = s.site.iter().position(|r| r.name == n.name) {
                self.role(s, k, arg, &found, &mut roles);
            } else if let Some(d) = s.params.iter().find(|d| d.name == n.name) {
                match params.get(d.name) {
                    Some(first) => self.out.push(
                        Diagnostic::error(
                            BAD,
                            arg.span,
                            format!("parameter `{}` is given twice", d.name),
                        )
                        .label("given again here")
                        .also(*first, "first given here"),
                    ),
                    None => {
                        params.insert(d.name, arg.span);
                        self.param_value(s, d, arg, &found);
                    }
                }
            } else {
                let names: Vec<String> = (s.site.iter().map(|r| r.name))
                    .chain(s.params.iter().map(|d| d.name))
                    .map(str::to_string)
                    .collect();
                let d = Diagnostic::error(
                    UNKNOWN_NAME,
                    n.span,
                    format!("{} has no role or parameter `{}`", s.name, n.name),
                )
                .label("not a role or parameter of this transformation")
                .note(accepted(s));
                self.out.push(with_suggestion(d, &n.name, &names));
            }
        }
        for (role, given) in s.site.iter().zip(&roles) {
            if given.is_none() && !role.optional {
                let help = format!(
                    "pass {} as `{} = …` or positionally",
                    role.class.describe(),
                    role.name
                );
                self.missing(s, call, ("its", role.name, "role"), role.doc, help);
            }
        }
        for d in s.params {
            if d.default == Default::Required && !params.contains_key(d.name) {
                let help = format!("add `{} = …`: {}", d.name, d.kind.describe());
                self.missing(s, call, ("parameter", d.name, ""), d.doc, help);
            }
        }
    }

    /// "T needs its `consumer` role" / "T needs parameter `tiles`", with the schema's doc line.
    fn missing(
        &mut self,
        s: &Schema,
        call: &ast::Call,
        (before, name, after): (&str, &str, &str),
        doc: &str,
        help: String,
    ) {
        let what = format!("{before} `{name}` {after}");
        self.out.push(
            Diagnostic::error(
                BAD,
                call.span,
                format!("{} needs {}", s.name, what.trim_end()),
            )
            .label(format!("no `{name}` given"))
            .note(format!("`{name}`: {doc}"))
            .help(help),
        );
    }

    fn too_many(&mut self, s: &Schema, arg: &ast::Arg) {
        self.out.push(
            Diagnostic::error(
                BAD,
                arg.span,
                format!(
                    "{} takes {} positional argument(s), one per site role",
                    s.name,
                    s.site.len()
                ),
            )
            .label("no role left for this argument")
            .note(accepted(s))
            .help("parameters are given by name: `name = value`"),
        );
    }

    /// An argument filling role `k`: given once, and a node of the role's class.
    fn role(
        &mut self,
        s: &Schema,
        k: usize,
        arg: &ast::Arg,
        found: &Ty<'_>,
        roles: &mut [Option<Span>],
    ) {
        let role = &s.site[k];
        if let Some(first) = roles[k] {
            self.out.push(
                Diagnostic::error(
                    BAD,
                    arg.span,
                    format!("the `{}` role of {} is given twice", role.name, s.name),
                )
                .label("given again here")
                .also(first, "first given here"),
            );
            return;
        }
        roles[k] = Some(arg.span);
        let fits = match found {
            Ty::Node(c) => c.may_fill(&role.class),
            Ty::Unknown => true,
            _ => false,
        };
        if !fits {
            let mut d = Diagnostic::error(
                BAD,
                arg.value.span,
                format!(
                    "the `{}` role of {} needs {}, found {found}",
                    role.name,
                    s.name,
                    role.class.describe()
                ),
            )
            .label(format!("this is {found}"))
            .note(format!("`{}`: {}", role.name, role.doc));
            if let Ty::Match(p) = found {
                let first = p.captures.first().map_or("x", |c| c.name.name.as_str());
                d = d.help(format!(
                    "pass one of the match's captures, e.g. `{}.{first}`",
                    expr_text(&arg.value)
                ));
            }
            self.out.push(d);
        }
    }

    /// A parameter value: its type, and for literals its domain.
    fn param_value(&mut self, s: &Schema, d: &ParamDecl, arg: &ast::Arg, found: &Ty<'_>) {
        let v = &arg.value;
        let bad = |found: String| {
            Diagnostic::error(
                BAD,
                v.span,
                format!(
                    "parameter `{}` of {} expects {}, found {found}",
                    d.name,
                    s.name,
                    d.kind.describe()
                ),
            )
            .label("does not fit the parameter")
            .note(format!("`{}`: {}", d.name, d.doc))
        };
        let want = match d.kind {
            ParamKind::Int { .. } => Want::Ty(Ty::Int),
            ParamKind::Ints { .. } => Want::Ty(Ty::List(Box::new(Ty::Int))),
            ParamKind::Bool => Want::Ty(Ty::Bool),
            ParamKind::Enum { .. } | ParamKind::Data | ParamKind::Implementation => {
                Want::Ty(Ty::Str)
            }
            ParamKind::MapParam => Want::Any,
        };
        let map_param_ok = !matches!(d.kind, ParamKind::MapParam)
            || matches!(found, Ty::Int | Ty::Str | Ty::Unknown);
        if !fits(&want, found) || !map_param_ok {
            self.out.push(bad(found.to_string()));
            return;
        }
        let in_range = |x: i64, min: i64, max: i64| (min..=max).contains(&x);
        match (&d.kind, &v.kind) {
            (ParamKind::Int { min, max }, _) => {
                if let Some(x) = int(v).filter(|x| !in_range(*x, *min, *max)) {
                    self.out.push(bad(format!("{x}")));
                }
            }
            (ParamKind::Ints { min, max, .. }, ExprKind::List(items)) => {
                if items.is_empty() {
                    self.out.push(bad("an empty list".to_string()));
                }
                for item in items {
                    if let Some(x) = int(item).filter(|x| !in_range(*x, *min, *max)) {
                        self.out
                            .push(bad(format!("the entry {x}")).label("out of range"));
                    }
                }
            }
            (ParamKind::Enum { values }, ExprKind::Str(given))
                if !values.contains(&given.as_str()) =>
            {
                let names: Vec<String> = values.iter().map(|v| v.to_string()).collect();
                self.out
                    .push(with_suggestion(bad(format!("\"{given}\"")), given, &names));
            }
            _ => {}
        }
    }

    /// `apply R …`: a transformation applicable without arguments, or a rule of one
    /// pattern- or node-typed parameter; `at X` fits it.
    pub(super) fn apply_target(
        &mut self,
        cx: Cx<'a>,
        target: &'a ast::Path,
        at: Option<(Ty<'a>, Span)>,
    ) {
        match resolve::callee(self.l, cx.module, target) {
            Ok(Callee::Transformation(t)) => {
                let s = t.schema();
                for d in s.params.iter().filter(|d| d.default == Default::Required) {
                    self.out.push(
                        Diagnostic::error(BAD, target.span, format!("`apply` cannot give {} its required parameter `{}`", s.name, d.name))
                            .label("needs arguments")
                            .note(format!("`{}`: {}", d.name, d.doc))
                            .help(format!("call it at each site instead: `for each m in maps() {{ {}(m, {} = …) }}`", s.name, d.name)),
                    );
                }
                if let (Some((ty, span)), Some(role)) = (at, s.site.first()) {
                    let fits = match &ty {
                        Ty::Node(c) => c.may_fill(&role.class),
                        Ty::Unknown | Ty::Match(..) => true,
                        _ => false,
                    };
                    if !fits {
                        let what = format!("`apply {} at`", s.name);
                        self.out.push(
                            Diagnostic::error(
                                BAD,
                                span,
                                format!("{what} needs {}, found {ty}", role.class.describe()),
                            )
                            .label(format!("this is {ty}"))
                            .note(format!("`{}`: {}", role.name, role.doc)),
                        );
                    }
                }
            }
            Ok(Callee::Rule { module, rule }) => {
                self.record(cx, module, &rule.name.name);
                let ty = match rule.params.as_slice() {
                    [p] => param_type(self.l, module, p).unwrap_or(Ty::Unknown),
                    _ => Ty::Int,
                };
                if !matches!(ty, Ty::Node(_) | Ty::Match(..) | Ty::Unknown) {
                    self.out.push(
                        Diagnostic::error(BAD, target.span, format!("`apply` needs a rule with one node- or pattern-typed parameter; `{}` has {}", rule.name.name, describe_params(rule)))
                            .label("cannot be applied")
                            .also(rule.name.span, "declared here")
                            .note("`apply` finds the sites itself: the matches of the parameter's pattern, or every node of its class")
                            .help("call the rule directly with its arguments"),
                    );
                } else if let Some((found, span)) = at {
                    let what = format!("`apply {} at`", rule.name.name);
                    self.want(span, &Want::Ty(ty), &found, &what);
                }
            }
            Ok(Callee::Builtin(&Builtin { name, .. }) | Callee::Script { name, .. }) => {
                self.out.push(
                    Diagnostic::error(
                        BAD,
                        target.span,
                        format!("`{name}` is a function; `apply` runs a rule or transformation"),
                    )
                    .label("not a rule or transformation"),
                )
            }
            Err(mut d) => {
                if resolve::pattern(self.l, cx.module, target).is_ok() {
                    d = d.label("a pattern, not a rule").help(format!(
                        "apply a rule whose parameter has type `{}`: `rule r(m: {}) {{ … }}`",
                        target.text(),
                        target.text()
                    ));
                }
                self.report(cx.module, target, d);
            }
        }
    }
}

/// `roles: …; parameters: …` of a schema.
fn accepted(s: &Schema) -> String {
    let roles: Vec<String> = (s.site.iter())
        .map(|r| format!("{}{}", r.name, if r.optional { " (optional)" } else { "" }))
        .collect();
    let params: Vec<&str> = s.params.iter().map(|d| d.name).collect();
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "{}: site roles {}; parameters {}",
        s.name,
        list(roles),
        list(params.into_iter().map(str::to_string).collect())
    )
}

fn describe_params(rule: &ast::Rule) -> String {
    match rule.params.as_slice() {
        [] => "no parameters".to_string(),
        [p] => format!("`{}: {}`", p.name.name, p.ty.text()),
        more => format!("{} parameters", more.len()),
    }
}

/// `"a"`, `"a" and "b"`.
fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    q.join(" and ")
}

/// A short rendering of a simple expression, for help lines.
fn expr_text(e: &ast::Expr) -> String {
    match &e.kind {
        ExprKind::Name(p) => p.text(),
        _ => "m".to_string(),
    }
}
