//! The header: a recipe (the root) names itself and has a `main`; versions are semver; the
//! `requires dmove` range must admit the running dmove.

use super::{Checker, DUPLICATE};
use crate::recipe::ast::Item;
use crate::recipe::diag::{Diagnostic, Span};

const VERSION: &str = "dmove::recipe::version";
const SYNTAX: &str = "dmove::recipe::syntax";

/// The version of the running dmove.
const DMOVE: &str = env!("CARGO_PKG_VERSION");

pub(super) fn check(c: &mut Checker<'_>, m: usize) {
    let module = &c.l.modules[m];
    let file = &module.ast;
    let start = Span::new(module.file, file.span.start, file.span.start);
    let mains: Vec<Span> = (file.items.iter())
        .filter_map(|i| match i {
            Item::Main(r) => Some(r.span),
            _ => None,
        })
        .collect();
    if m == 0 {
        if file.header.is_none() {
            c.out.push(
                Diagnostic::error(SYNTAX, start, "this recipe has no header")
                    .label("expected `recipe \"NAME\" version \"X.Y.Z\"` here")
                    .note("the header names the recipe in reports and lock files; only a module (a file used with `use`) may leave it out")
                    .help("start the file with `recipe \"NAME\" version \"0.1.0\"`"),
            );
        }
        if mains.is_empty() {
            c.out.push(
                Diagnostic::error(SYNTAX, start, "this recipe has no `main` block")
                    .label("the recipe starts here")
                    .note("`dmove run` executes `main`; only a module (a file used with `use`) may leave it out")
                    .help("add `main { … }` with the steps to run"),
            );
        }
    }
    if let [first, rest @ ..] = mains.as_slice() {
        for again in rest {
            c.out.push(
                Diagnostic::error(DUPLICATE, *again, "a second `main` block")
                    .label("declared again here")
                    .also(*first, "first declared here")
                    .note("a file has one `main`: what `dmove run` executes"),
            );
        }
    }
    let Some(h) = &file.header else { return };
    if let Err(e) = semver::Version::parse(&h.version.value) {
        c.out.push(
            Diagnostic::error(
                VERSION,
                h.version.span,
                format!("`{}` is not a semantic version", h.version.value),
            )
            .label("not MAJOR.MINOR.PATCH")
            .note(format!(
                "{e}; lock files record the recipe's version, so it must compare"
            ))
            .help("write it as `\"1.0.0\"`"),
        );
    }
    let Some(req) = &h.requires else { return };
    match semver::VersionReq::parse(&req.value) {
        Err(e) => c.out.push(
            Diagnostic::error(
                VERSION,
                req.span,
                format!("`{}` is not a version range", req.value),
            )
            .label("not a semver range")
            .note(e.to_string())
            .help("e.g. `requires dmove \">=0.1, <0.3\"`"),
        ),
        Ok(range) => {
            let running = semver::Version::parse(DMOVE).ok();
            if running.is_some_and(|v| !range.matches(&v)) {
                c.out.push(
                    Diagnostic::error(
                        VERSION,
                        req.span,
                        format!("this recipe requires dmove {}, but this is dmove {DMOVE}", req.value),
                    )
                    .label(format!("dmove {DMOVE} is not in this range"))
                    .note("the recipe was written for other versions, whose transformations or checks may differ")
                    .help(format!("run it with a dmove in {}, or widen the range if it works with {DMOVE}", req.value)),
                );
            }
        }
    }
}
