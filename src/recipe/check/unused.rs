//! Warnings for parameters and rules of the root recipe that nothing uses. Modules are
//! libraries, so their unused items are not warned about: a recipe uses the part it needs.
//!
//! The references were recorded while checking bodies ([`Checker::record`]); a rule that only
//! calls itself is still unused.

use super::Checker;
use crate::recipe::ast::Item;
use crate::recipe::diag::Diagnostic;

const UNUSED: &str = "dmove::recipe::unused";

pub(super) fn warn(c: &mut Checker<'_>) {
    let root = &c.l.modules[0].ast;
    let chosen: Vec<&str> = (root.items.iter())
        .filter_map(|i| match i {
            Item::Choose(ch) => Some(ch.params.iter().map(|p| p.name.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    for item in &root.items {
        let used = |name: &str| c.used(0, name);
        let d = match item {
            Item::Param(p) if !used(&p.name.name) && !chosen.contains(&p.name.name.as_str()) => {
                Diagnostic::warning(UNUSED, p.name.span, format!("parameter `{}` is never used", p.name.name))
                    .label("declared here")
                    .note("no rule or `main` reads it, and no `choose` decides it, so its value changes nothing")
                    .help("use it, or remove it")
            }
            Item::Rule(r) if !used(&r.name.name) => {
                Diagnostic::warning(UNUSED, r.name.span, format!("rule `{}` is never used", r.name.name))
                    .label("declared here")
                    .note("nothing calls or applies it, so it never runs")
                    .help(format!("call it from `main` (`{}(…)` or `apply {} everywhere`), or remove it", r.name.name, r.name.name))
            }
            _ => continue,
        };
        c.out.push(d);
    }
}
