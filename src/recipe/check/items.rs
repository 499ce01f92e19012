//! Items: names declared once, parameters well-formed, `choose` over existing parameters with
//! searchable domains.

use super::types::{self, fits, Ty, Want};
use super::{Checker, Cx, Scope, BAD, DUPLICATE};
use crate::recipe::ast::{self, ChooseBy, Domain, ExprKind, Item, ParamType};
use crate::recipe::builtins;
use crate::recipe::diag::{Diagnostic, Span};
use crate::recipe::resolve::{self, with_suggestion, UNKNOWN_NAME};
use crate::transform;
use std::collections::BTreeMap;

const PARAM: &str = "dmove::recipe::param";

/// The largest search a `choose` may ask for (see docs/recipe-language.md).
const MAX_SEARCH: u128 = 256;

pub(super) fn check(c: &mut Checker<'_>, m: usize) {
    duplicates(c, m);
    let l = c.l;
    let cx = Cx {
        module: m,
        rule: None,
        main: false,
    };
    let mut chosen: BTreeMap<String, Span> = BTreeMap::new();
    for item in &l.modules[m].ast.items {
        match item {
            Item::Param(p) => param(c, cx, p),
            Item::Choose(ch) => choose(c, m, ch, &mut chosen),
            _ => {}
        }
    }
    for p in resolve::params(l, m) {
        if p.default.is_none() && !chosen.contains_key(&p.name.name) {
            c.out.push(
                Diagnostic::error(
                    PARAM,
                    p.name.span,
                    format!("parameter `{}` has no value", p.name.name),
                )
                .label("no default and no `choose`")
                .note("a parameter needs a default (`= v`) unless a `choose` decides it")
                .help(format!("add `= …` or `choose {} by dmd`", p.name.name)),
            );
        }
    }
}

/// Two rules, patterns or params of one name; a rule named like a transformation or built-in.
fn duplicates(c: &mut Checker<'_>, m: usize) {
    let mut seen: BTreeMap<&str, (Span, &str)> = BTreeMap::new();
    for item in &c.l.modules[m].ast.items {
        let (name, what) = match item {
            Item::Rule(r) => (&r.name, "rule"),
            Item::Pattern(p) => (&p.name, "pattern"),
            Item::Param(p) => (&p.name, "parameter"),
            _ => continue,
        };
        if let Some((first, first_what)) = seen.get(name.name.as_str()) {
            c.out.push(
                Diagnostic::error(
                    DUPLICATE,
                    name.span,
                    format!("`{}` is declared twice", name.name),
                )
                .label(format!("this {what}"))
                .also(*first, format!("first declared here, as a {first_what}"))
                .note("rules, patterns and parameters of a file share one namespace"),
            );
            continue;
        }
        seen.insert(&name.name, (name.span, what));
        if what != "rule" {
            continue;
        }
        let shadowed = if transform::lookup(&name.name).is_some() {
            Some("a transformation of the registry")
        } else if builtins::lookup(&name.name).is_some() {
            Some("a built-in function")
        } else {
            None
        };
        if let Some(other) = shadowed {
            c.out.push(
                Diagnostic::error(DUPLICATE, name.span, format!("rule `{}` has the name of {other}", name.name))
                    .label("already taken")
                    .note("a call resolves to one thing; a rule may not hide a transformation or function")
                    .help(format!("rename the rule, e.g. `my_{}`", name.name.to_lowercase())),
            );
        }
    }
}

/// A parameter's expressions resolve, and its default fits its type and choices.
fn param<'a>(c: &mut Checker<'a>, cx: Cx<'a>, p: &'a ast::Param) {
    let scope = Scope::default();
    let ty = types::of_param(p);
    let domain: Vec<&ast::Expr> = match &p.domain {
        Some(Domain::List(items, _)) => items.iter().collect(),
        Some(Domain::Range { lo, hi, .. } | Domain::Pow2 { lo, hi, .. }) => vec![lo, hi],
        None => Vec::new(),
    };
    for e in domain.into_iter().chain(&p.default) {
        let found = c.expr(cx, &scope, e);
        if !fits(&Want::Ty(ty.clone()), &found) {
            c.out.push(
                Diagnostic::error(
                    PARAM,
                    e.span,
                    format!("parameter `{}` is {ty}, but this is {found}", p.name.name),
                )
                .label(format!("expected {ty}"))
                .also(ty_span(p), "the declared type"),
            );
        }
    }
    if let (ParamType::Enum(choices, _), Some(d)) = (&p.ty, &p.default) {
        if let ExprKind::Str(s) = &d.kind {
            if !choices.iter().any(|ch| ch.value == *s) {
                let names: Vec<String> = choices.iter().map(|ch| ch.value.clone()).collect();
                let d = Diagnostic::error(
                    PARAM,
                    d.span,
                    format!("\"{s}\" is not one of the choices of `{}`", p.name.name),
                )
                .label("not a choice")
                .note(format!("choices: {}", names.join(", ")));
                c.out.push(with_suggestion(d, s, &names));
            }
        }
    }
    if let Some(w) = &p.constraint {
        let found = c.expr(cx, &scope, w);
        c.want(w.span, &Want::Ty(Ty::Bool), &found, "a `where` constraint");
    }
}

/// `choose`: existing parameters, each chosen once, searchable domains, a bounded search.
fn choose(c: &mut Checker<'_>, m: usize, ch: &ast::Choose, chosen: &mut BTreeMap<String, Span>) {
    let l = c.l;
    let searched = !matches!(ch.by, ChooseBy::Fixed(_));
    let mut space: Option<u128> = Some(1);
    for id in &ch.params {
        let Some(p) = resolve::params(l, m).find(|p| p.name.name == id.name) else {
            let names: Vec<String> = resolve::params(l, m).map(|p| p.name.name.clone()).collect();
            let d = Diagnostic::error(
                UNKNOWN_NAME,
                id.span,
                format!("no parameter is named `{}`", id.name),
            )
            .label("not a parameter of this file")
            .note("`choose` decides parameters declared with `param` in the same file");
            c.out.push(with_suggestion(d, &id.name, &names));
            continue;
        };
        if let Some(first) = chosen.get(&id.name) {
            c.out.push(
                Diagnostic::error(
                    DUPLICATE,
                    id.span,
                    format!("parameter `{}` is chosen twice", id.name),
                )
                .label("chosen again here")
                .also(*first, "first chosen here")
                .note("each parameter is decided by one `choose`"),
            );
        } else {
            chosen.insert(id.name.clone(), id.span);
        }
        if !searched {
            continue;
        }
        let size = domain_size(p);
        if size.is_none() && p.domain.is_none() {
            c.out.push(
                Diagnostic::error(PARAM, id.span, format!("parameter `{}` has no domain to search", id.name))
                    .label("searched here")
                    .also(p.name.span, "declared without `in …`")
                    .note("`by dmd` and `by bench` try every value of the domain; an int or float parameter needs one")
                    .help(format!("declare it as `param {}: … in pow2(8..64)` or `in [..]`", id.name)),
            );
        }
        space = space.zip(size).map(|(a, b)| a.saturating_mul(b));
    }
    if let ChooseBy::Bench { reps: Some(r), .. } = &ch.by {
        if !matches!(r.kind, ExprKind::Int(k) if k >= 1) {
            c.out.push(
                Diagnostic::error(BAD, r.span, "`reps` is a positive integer")
                    .label("not a positive integer")
                    .note("a benchmark runs the program `reps` times and keeps the median"),
            );
        }
    }
    if let Some(n) = space.filter(|n| searched && *n > MAX_SEARCH) {
        c.out.push(
            Diagnostic::error(
                PARAM,
                ch.span,
                format!("this search tries {n} combinations, more than {MAX_SEARCH}"),
            )
            .label("too large a search")
            .note("each combination runs `main` on a copy of the program")
            .help("narrow the domains, or split the parameters into several `choose`s"),
        );
    }
}

/// How many values a parameter's domain has, when its bounds are literals.
fn domain_size(p: &ast::Param) -> Option<u128> {
    let int = |e: &ast::Expr| match e.kind {
        ExprKind::Int(v) => Some(v),
        _ => None,
    };
    match (&p.ty, &p.domain) {
        (ParamType::Bool(_), None) => Some(2),
        (ParamType::Enum(v, _), None) => Some(v.len() as u128),
        (_, Some(Domain::List(items, _))) => Some(items.len() as u128),
        (ParamType::Int(_), Some(Domain::Range { lo, hi, .. })) => {
            let (lo, hi) = (int(lo)?, int(hi)?);
            Some(u128::try_from(i128::from(hi) - i128::from(lo) + 1).unwrap_or(0))
        }
        (ParamType::Int(_), Some(Domain::Pow2 { lo, hi, .. })) => {
            let (lo, hi) = (int(lo)?, int(hi)?);
            Some(
                (0..63)
                    .map(|k| 1i64 << k)
                    .filter(|v| (lo..=hi).contains(v))
                    .count() as u128,
            )
        }
        _ => None,
    }
}

/// The span of a parameter's declared type.
fn ty_span(p: &ast::Param) -> Span {
    match &p.ty {
        ParamType::Int(s) | ParamType::Float(s) | ParamType::Bool(s) | ParamType::Enum(_, s) => *s,
    }
}
