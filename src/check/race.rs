//! Dependence analysis of a map's iterations, from memlet subsets.
//!
//! Running a map's iterations in parallel is legal when no two iterations write the same element
//! without write-conflict resolution, and no iteration reads an element another one writes. Both
//! are decided per parameter: a write is *private* along parameter `p` when some dimension of the
//! written subset starts at an affine function of `p` alone with coefficient `c` and spans at most
//! `|c| · step(p)` elements, so distinct values of `p` touch disjoint slices.
//! The same test tells the C backend when a resolved (wcr) write needs an atomic update.

use crate::ir::subset::ParamBounds;
use crate::ir::{DataDesc, Dim, Graph, MapNode, MapParam, NodeKind, Storage, Subset, SymExpr, Wcr};
use std::collections::BTreeMap;

/// One access inside a map body, with its subset propagated over the maps nested inside.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyAccess {
    pub data: String,
    pub subset: Subset,
    pub wcr: Option<Wcr>,
    pub write: bool,
}

/// Every access to a global container inside `map`'s body (at any depth).
pub fn body_accesses(map: &MapNode, data: &BTreeMap<String, DataDesc>) -> Vec<BodyAccess> {
    let mut out = Vec::new();
    collect(&map.body, &[], data, &mut out);
    out
}

fn collect(
    g: &Graph,
    inner: &[&MapParam],
    data: &BTreeMap<String, DataDesc>,
    out: &mut Vec<BodyAccess>,
) {
    for idx in g.ordered() {
        match &g.node(idx).kind {
            NodeKind::Map(m) => {
                let mut params = inner.to_vec();
                params.extend(m.params.iter());
                collect(&m.body, &params, data, out);
            }
            NodeKind::Tasklet(_) => {
                let bounds: Vec<ParamBounds> = inner
                    .iter()
                    .map(|p| ParamBounds {
                        name: &p.name,
                        range: &p.range,
                    })
                    .collect();
                let edges = g
                    .in_edges(idx)
                    .into_iter()
                    .map(|e| (e, false))
                    .chain(g.out_edges(idx).into_iter().map(|e| (e, true)));
                for (e, write) in edges {
                    let Some(desc) = data.get(&e.memlet.data) else {
                        continue;
                    };
                    if desc.storage != Storage::Global {
                        continue;
                    }
                    out.push(BodyAccess {
                        data: e.memlet.data.clone(),
                        subset: e.memlet.subset.propagate(&bounds, &desc.shape),
                        wcr: e.memlet.wcr,
                        write,
                    });
                }
            }
            NodeKind::Access(_) | NodeKind::Library(_) => {}
        }
    }
}

/// True when iterations that differ in `param` touch disjoint parts of `subset`.
pub fn private_along(subset: &Subset, param: &MapParam, all: &[MapParam]) -> bool {
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    let Some(step) = param.range.step.as_int() else {
        return false;
    };
    subset.0.iter().any(|dim| {
        let (start, len) = match dim {
            Dim::Index(e) => (e.clone(), Some(1)),
            Dim::Range(r) => (r.start.clone(), max_len(&r.start, &r.end)),
        };
        let Some((coeffs, _)) = start.affine_in(&names) else {
            return false;
        };
        let c = coeffs.get(&param.name).copied().unwrap_or(0);
        let alone = coeffs.iter().all(|(n, k)| *k == 0 || *n == param.name);
        matches!(len, Some(l) if c != 0 && alone && l <= c.abs() * step)
    })
}

/// An upper bound on `end - start`, seeing through `min(a, b) ≤ a, b`.
fn max_len(start: &SymExpr, end: &SymExpr) -> Option<i64> {
    match end {
        SymExpr::Min(a, b) => [max_len(start, a), max_len(start, b)]
            .into_iter()
            .flatten()
            .min(),
        _ => (end - start).as_int(),
    }
}

/// Why running a map's iterations in parallel would be wrong, if it would.
pub fn parallel_conflict(map: &MapNode, data: &BTreeMap<String, DataDesc>) -> Option<String> {
    let accesses = body_accesses(map, data);
    for a in accesses.iter().filter(|a| a.write) {
        // Conflicting subsets of the same container written or read elsewhere in the body.
        for b in accesses
            .iter()
            .filter(|b| b.data == a.data && b.subset != a.subset)
        {
            if b.write || a.wcr.is_none() || b.wcr.is_none() {
                return Some(format!(
                    "`{}` is written as {}{} and accessed as {}{} in the same body: iterations may depend on each other",
                    a.data, a.data, a.subset, b.data, b.subset
                ));
            }
        }
        if a.wcr.is_some() {
            continue;
        }
        if let Some(p) = map
            .params
            .iter()
            .find(|p| !private_along(&a.subset, p, &map.params))
        {
            return Some(format!(
                "the body writes {}{} without write-conflict resolution, and iterations that differ only in `{}` write the same elements",
                a.data, a.subset, p.name
            ));
        }
    }
    None
}

/// True when a resolved write inside parallel `map` can collide across its iterations, so the
/// generated code must update atomically.
pub fn needs_atomic(subset: &Subset, map_params: &[MapParam]) -> bool {
    !map_params
        .iter()
        .all(|p| private_along(subset, p, map_params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Range;

    fn param(name: &str, range: Range) -> MapParam {
        MapParam {
            name: name.into(),
            range,
        }
    }

    #[test]
    fn tiles_are_private_along_their_tile_parameter() {
        let it = param(
            "it",
            Range {
                start: 0.into(),
                end: 100.into(),
                step: 32.into(),
            },
        );
        let j = param("j", Range::upto(8));
        let s = SymExpr::sym;
        let tile = Subset(vec![
            Dim::Range(Range::new(s("it"), (s("it") + 32).min(100.into()))),
            Dim::Index(s("j")),
        ]);
        let all = [it.clone(), j.clone()];
        assert!(private_along(&tile, &it, &all));
        assert!(private_along(&tile, &j, &all));
        let too_wide = Subset(vec![
            Dim::Range(Range::new(s("it"), s("it") + 33)),
            Dim::Index(s("j")),
        ]);
        assert!(!private_along(&too_wide, &it, &all));
        let reduction = Subset(vec![Dim::Index(s("j"))]);
        assert!(needs_atomic(&reduction, &all));
    }
}
