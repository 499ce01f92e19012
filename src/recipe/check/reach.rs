//! Which parameters a run reads: those referred to from the bodies that run — the root's
//! `main`, every module's declarations and `choose` items, and the rules they call,
//! transitively. A used module's own `main` never runs, so what only it reads is not read:
//! `--set` on such a parameter would change nothing, and is refused.

use super::{Body, Checker};
use crate::recipe::ast::Item;
use crate::recipe::modules::Loaded;
use std::collections::BTreeSet;

/// `(module, name)` of every parameter a run of `l`'s root reads.
pub fn params_read(l: &Loaded) -> BTreeSet<(usize, String)> {
    let c = Checker::run(l);
    let is_rule = |m: usize, name: &str| {
        (l.modules[m].ast.items.iter()).any(|i| matches!(i, Item::Rule(r) if r.name.name == name))
    };
    let mut reached: BTreeSet<Body> = (0..l.modules.len()).map(Body::Declarations).collect();
    reached.insert(Body::Main(0));
    let mut todo: Vec<Body> = reached.iter().cloned().collect();
    let mut read = BTreeSet::new();
    while let Some(body) = todo.pop() {
        for (_, (m, name)) in c.refs.iter().filter(|(from, _)| *from == body) {
            if is_rule(*m, name) {
                let callee = Body::Rule(*m, name.clone());
                if reached.insert(callee.clone()) {
                    todo.push(callee);
                }
            } else {
                read.insert((*m, name.clone()));
            }
        }
    }
    read
}
