//! Fresh names for the parameters and containers a rewrite introduces.

use crate::ir::{NodeKind, Program};
use std::collections::HashSet;

/// Every map parameter name used anywhere, plus symbols and containers (a set: a long program
/// has many `i_tile_k`, and [`fresh`] probes it once per `k`), borrowed from the program.
pub(crate) fn taken_names(p: &Program) -> HashSet<&str> {
    let mut names: HashSet<&str> = (p.symbols.keys().chain(p.data.keys()))
        .map(String::as_str)
        .collect();
    p.graph.each(&mut |n| {
        if let NodeKind::Map(m) = &n.kind {
            names.extend(m.params.iter().map(|q| q.name.as_str()));
        }
    });
    names
}

/// `base`, or `base_2`, `base_3`, … — the first not in `taken`. At most `taken.len() + 1`
/// candidates are tried (each taken name rules out one), so the search always ends.
pub(crate) fn fresh(base: &str, taken: &HashSet<&str>) -> String {
    let free = |n: &str| !taken.contains(n);
    if free(base) {
        return base.to_string();
    }
    (2..=taken.len() + 1)
        .map(|k| format!("{base}_{k}"))
        .find(|n| free(n))
        .unwrap_or_else(|| format!("{base}_{}", taken.len() + 2))
}
