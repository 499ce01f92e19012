//! Fresh names for the parameters and containers a rewrite introduces.

use crate::ir::{NodeKind, Program};

/// Every map parameter name used anywhere, plus symbols and containers.
pub(crate) fn taken_names(p: &Program) -> Vec<String> {
    let mut names: Vec<String> = p.symbols.keys().chain(p.data.keys()).cloned().collect();
    p.graph.each(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            names.extend(m.params.iter().map(|q| q.name.clone()));
        }
    });
    names
}

/// `base`, or `base_2`, `base_3`, … — the first not in `taken`. At most `taken.len() + 1`
/// candidates are tried (each taken name rules out one), so the search always ends.
pub(crate) fn fresh(base: &str, taken: &[String]) -> String {
    let free = |n: &str| taken.iter().all(|t| t != n);
    if free(base) {
        return base.to_string();
    }
    (2..=taken.len() + 1)
        .map(|k| format!("{base}_{k}"))
        .find(|n| free(n))
        .unwrap_or_else(|| format!("{base}_{}", taken.len() + 2))
}
