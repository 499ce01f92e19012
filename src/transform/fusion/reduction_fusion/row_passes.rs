//! The analysis behind ReductionFusion: a sequence of maps read as the passes of a row-wise
//! normalization (reductions into per-row statistics, then element-wise passes that read them).
//!
//! The passes are matched structurally, never by operator name. Every pass has the same number
//! of parameters; the *row* parameters are the positions that every reduction's resolved write
//! keeps, the others are the pass's *inner* parameters. Fusing runs, per row, each pass over its
//! inner parameters in order. That reordering is legal exactly when every container one pass
//! writes and another pass touches is accessed at one element per row (the same element in
//! every pass, distinct for distinct rows): then no row ever sees another row's values.

use crate::ir::{
    DataKind, Graph, MapNode, MapParam, NodeId, NodeKind, Program, Storage, Subset, SymExpr,
};
use crate::transform::support::maps::{access_count, first_nested_map, tasklet_accesses};
use crate::transform::{expect_map, refuse, Legality, NotApplicable, Transformation};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// The largest number of passes a candidate spans (a normalization needs at most six:
/// two statistics with their initialisations, a per-row step and the element-wise pass).
pub(crate) const MAX_PASSES: usize = 8;

/// A checked site: what the rewrite needs.
pub(crate) struct RowPlan {
    /// Row parameters, named and ranged as in the first pass.
    pub rows: Vec<MapParam>,
    /// Positions of the row parameters in every pass's parameter list.
    pub row_positions: Vec<usize>,
    /// Per-row statistics that live only in these passes: they become register scalars.
    pub scalars: BTreeSet<String>,
    /// Access nodes of the scope that only link passes; they disappear with the fusion.
    pub interior: Vec<NodeIndex>,
}

/// One access of a container by a pass, with its subset renamed to the first pass's row names.
struct PassAccess {
    pass: NodeId,
    subset: Subset,
    write: bool,
    reduces: bool,
}

/// Checks that `site` (two or more maps of one scope, in program order: the schema's roles and
/// the candidate runs guarantee at least two) are fusable row passes. Structural: one scope,
/// program order, innermost maps with one parameter count, a reduction keeping the same row
/// parameters, no name clash, something carried by row. Legality (through `legality`): equal
/// row ranges, containers shared between passes accessed at one element per row, and no node
/// between the passes.
pub(crate) fn plan(
    t: &dyn Transformation,
    p: &Program,
    site: &[NodeId],
    legality: &mut Legality,
) -> Result<RowPlan, NotApplicable> {
    let first = site[0];
    let maps: Vec<&MapNode> = site
        .iter()
        .map(|&id| expect_map(t, p, id))
        .collect::<Result<_, _>>()?;
    let (g, _) = p
        .graph
        .locate(first)
        .ok_or_else(|| refuse(t, first, "no such node"))?;
    let idxs = scope_indices(t, g, site)?;
    innermost_alike(t, site, &maps)?;
    let row_positions = row_positions(t, site, &maps)?;
    let rows: Vec<MapParam> = (row_positions.iter())
        .filter_map(|&k| maps[0].params.get(k).cloned())
        .collect();
    rows_agree(t, site, &maps, (&row_positions, &rows), legality)?;
    let accesses = gather(site, &maps, &row_positions, &rows);
    let (shared, not_row_local) = row_local(t, site, &maps, &row_positions, &rows, &accesses);
    legality.holds(not_row_local.map_or(Ok(()), Err))?;
    let pos = |id: NodeId| site.iter().position(|s| *s == id).unwrap_or(0);
    let carried = shared.iter().any(|d| {
        let a = &accesses[d];
        a.iter()
            .filter(|x| x.reduces)
            .any(|r| a.iter().any(|x| !x.write && pos(x.pass) > pos(r.pass)))
    });
    if !carried {
        return Err(refuse(
            t,
            first,
            "no pass reads a per-row result of an earlier reduction: nothing is carried by row",
        ));
    }
    let interior = interior_nodes(g, &idxs);
    legality.holds(between_check(t, first, g, &idxs, &interior))?;
    let scalars = registers(p, g, &maps, &interior, shared);
    Ok(RowPlan {
        rows,
        row_positions,
        scalars,
        interior,
    })
}

/// Every pass is an innermost map with as many parameters as the first.
fn innermost_alike(
    t: &dyn Transformation,
    site: &[NodeId],
    maps: &[&MapNode],
) -> Result<(), NotApplicable> {
    let (first, count) = (site[0], maps[0].params.len());
    for (&id, m) in site.iter().zip(maps) {
        if let Some(inner) = first_nested_map(&m.body) {
            return Err(refuse(
                t,
                id,
                format!("the body contains map {inner}: only innermost maps are passes"),
            ));
        }
        if m.params.len() != count {
            return Err(refuse(
                t,
                id,
                format!(
                    "the map has {} parameters but map {first} has {count}",
                    m.params.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Every pass runs its row parameters over the first pass's ranges (legality: the fused map
/// runs the first's) and no inner parameter takes a row parameter's name (the renaming would
/// capture it).
fn rows_agree(
    t: &dyn Transformation,
    site: &[NodeId],
    maps: &[&MapNode],
    (row_positions, rows): (&[usize], &[MapParam]),
    legality: &mut Legality,
) -> Result<(), NotApplicable> {
    let first = site[0];
    let row_names: BTreeSet<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    for (&id, m) in site.iter().zip(maps) {
        for (&k, row) in row_positions.iter().zip(rows) {
            let Some(q) = m.params.get(k).filter(|q| q.range != row.range) else {
                continue;
            };
            legality.holds(Err(refuse(
                t,
                id,
                format!(
                    "row parameter `{}` runs over {} here but `{}` runs over {} in map {first}",
                    q.name, q.range, row.name, row.range
                ),
            )))?;
        }
        if let Some(q) = inner_params(m, row_positions)
            .iter()
            .find(|q| row_names.contains(q.name.as_str()))
        {
            return Err(refuse(
                t,
                id,
                format!(
                    "inner parameter `{}` has the name of a row parameter of map {first}",
                    q.name
                ),
            ));
        }
    }
    Ok(())
}

/// The shared statistics that become registers: global transients used only by the passes and
/// the links between them.
fn registers(
    p: &Program,
    g: &Graph,
    maps: &[&MapNode],
    interior: &[NodeIndex],
    shared: Vec<String>,
) -> BTreeSet<String> {
    shared
        .into_iter()
        .filter(|d| {
            let Some(desc) = p.data.get(d) else {
                return false;
            };
            let inside: usize = maps.iter().map(|m| access_count(&m.body, d)).sum::<usize>()
                + interior
                    .iter()
                    .filter(|&&i| matches!(&g.node(i).kind, NodeKind::Access(x) if x == d))
                    .count();
            desc.kind == DataKind::Transient
                && desc.storage == Storage::Global
                && access_count(&p.graph, d) == inside
        })
        .collect()
}

/// The site's nodes in their scope, distinct and in program order.
fn scope_indices(
    t: &dyn Transformation,
    g: &Graph,
    site: &[NodeId],
) -> Result<Vec<NodeIndex>, NotApplicable> {
    let order = g.ordered();
    let mut last: Option<(usize, NodeId)> = None;
    let mut idxs = Vec::new();
    for &id in site {
        let idx = g.index_of(id).ok_or_else(|| {
            refuse(
                t,
                id,
                format!("the map is not in the scope of map {}", site[0]),
            )
        })?;
        let pos = order.iter().position(|&i| i == idx).unwrap_or(usize::MAX);
        if let Some((prev_pos, prev)) = last {
            if pos <= prev_pos {
                return Err(refuse(
                    t,
                    id,
                    format!(
                        "the map does not run after map {prev}: passes are listed in program order"
                    ),
                ));
            }
        }
        last = Some((pos, id));
        idxs.push(idx);
    }
    Ok(idxs)
}

/// The parameters of `m` that are not at row positions.
pub(crate) fn inner_params(m: &MapNode, row_positions: &[usize]) -> Vec<MapParam> {
    m.params
        .iter()
        .enumerate()
        .filter(|(k, _)| !row_positions.contains(k))
        .map(|(_, q)| q.clone())
        .collect()
}

/// Row names of the first pass for the row parameters of `m` (the renaming applied to it).
pub(crate) fn row_renaming(
    m: &MapNode,
    row_positions: &[usize],
    rows: &[MapParam],
) -> BTreeMap<String, SymExpr> {
    row_positions
        .iter()
        .zip(rows)
        .filter_map(|(&k, r)| Some((m.params.get(k)?.name.clone(), SymExpr::sym(r.name.as_str()))))
        .collect()
}

/// The positions every reduction keeps: the parameters its resolved write mentions.
fn row_positions(
    t: &dyn Transformation,
    site: &[NodeId],
    maps: &[&MapNode],
) -> Result<Vec<usize>, NotApplicable> {
    let mut found: Option<(NodeId, Vec<usize>)> = None;
    for (&id, m) in site.iter().zip(maps) {
        for a in tasklet_accesses(&m.body) {
            let Some(kept) =
                reduction_keeps(m, &a.memlet.subset, a.write && a.memlet.wcr.is_some())
            else {
                continue;
            };
            match &found {
                None => found = Some((id, kept)),
                Some((other, rows)) if *rows != kept => {
                    let names = |v: &[usize]| {
                        v.iter()
                            .map(|&k| m.params[k].name.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    return Err(refuse(
                        t,
                        id,
                        format!(
                            "the reduction into `{}` keeps parameters [{}], but the one in map {other} keeps positions {rows:?}",
                            a.memlet.data,
                            names(&kept)
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    match found {
        Some((_, rows)) if !rows.is_empty() => Ok(rows),
        Some((id, _)) => Err(refuse(
            t,
            id,
            "the reduction keeps no parameter: there are no rows to fuse over",
        )),
        None => Err(refuse(
            t,
            site[0],
            "no map of the site reduces (a resolved write leaving a parameter out)",
        )),
    }
}

/// For a resolved write, the positions of the parameters it mentions when it leaves some out.
fn reduction_keeps(m: &MapNode, subset: &Subset, resolved: bool) -> Option<Vec<usize>> {
    if !resolved {
        return None;
    }
    let mentioned = subset.free_symbols();
    let kept: Vec<usize> = (0..m.params.len())
        .filter(|&k| mentioned.contains(&m.params[k].name))
        .collect();
    (kept.len() < m.params.len()).then_some(kept)
}

/// Every tasklet access of every pass, by container, subsets in the first pass's row names.
fn gather(
    site: &[NodeId],
    maps: &[&MapNode],
    row_positions: &[usize],
    rows: &[MapParam],
) -> BTreeMap<String, Vec<PassAccess>> {
    let mut out: BTreeMap<String, Vec<PassAccess>> = BTreeMap::new();
    for (&id, m) in site.iter().zip(maps) {
        let rename = row_renaming(m, row_positions, rows);
        for a in tasklet_accesses(&m.body) {
            let subset = a
                .memlet
                .subset
                .map_exprs(&|e| e.substitute_all(&|s| rename.get(s).cloned()));
            let reduces =
                a.write && reduction_keeps(m, &a.memlet.subset, a.memlet.wcr.is_some()).is_some();
            out.entry(a.memlet.data.clone())
                .or_default()
                .push(PassAccess {
                    pass: id,
                    subset,
                    write: a.write,
                    reduces,
                });
        }
    }
    out
}

/// Containers one pass writes and another touches, and the first of them that is not accessed
/// at one element per row, the same in every pass (reordering the passes by row is then not
/// known to be legal).
fn row_local(
    t: &dyn Transformation,
    site: &[NodeId],
    maps: &[&MapNode],
    row_positions: &[usize],
    rows: &[MapParam],
    accesses: &BTreeMap<String, Vec<PassAccess>>,
) -> (Vec<String>, Option<NotApplicable>) {
    let mut shared = Vec::new();
    let mut problem = None;
    for (d, list) in accesses {
        let passes: BTreeSet<NodeId> = list.iter().map(|a| a.pass).collect();
        if passes.len() < 2 || !list.iter().any(|a| a.write) {
            continue;
        }
        if problem.is_none() {
            problem = one_element(d, list, site, maps, row_positions, rows)
                .err()
                .map(|(pass, why)| refuse(t, pass, why));
        }
        shared.push(d.clone());
    }
    (shared, problem)
}

/// Every access of `d` in `list` reaches the same one element per row; otherwise the pass to
/// blame and why.
fn one_element(
    d: &str,
    list: &[PassAccess],
    site: &[NodeId],
    maps: &[&MapNode],
    row_positions: &[usize],
    rows: &[MapParam],
) -> Result<(), (NodeId, String)> {
    let mut element: Option<(NodeId, Vec<SymExpr>)> = None;
    for a in list {
        let Some(m) = (site.iter().position(|s| *s == a.pass)).and_then(|k| maps.get(k)) else {
            continue;
        };
        let inner = inner_params(m, row_positions);
        let e = row_element(&a.subset, &inner, rows).ok_or_else(|| {
            let at = format!("{d}{}", a.subset);
            (
                a.pass,
                format!("`{d}` is accessed at {at} here, not at one element per row"),
            )
        })?;
        match &element {
            None => element = Some((a.pass, e)),
            Some((other, want)) if *want != e => {
                return Err((
                    a.pass,
                    format!(
                        "`{d}` is accessed at {d}{} here but at {d}{} in map {other}",
                        Subset::element(e),
                        Subset::element(want.clone())
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The element a subset reaches in one row: inner parameters with a single iteration are fixed
/// at their start; no other inner parameter may remain, and every row parameter must index its
/// own dimension (constants elsewhere), so distinct rows reach distinct elements.
fn row_element(subset: &Subset, inner: &[MapParam], rows: &[MapParam]) -> Option<Vec<SymExpr>> {
    let fixed: BTreeMap<String, SymExpr> = inner
        .iter()
        .filter(|q| q.range.len().as_int() == Some(1))
        .map(|q| (q.name.clone(), q.range.start.clone()))
        .collect();
    let mut idx = Vec::new();
    for dim in &subset.0 {
        if dim.len().as_int() != Some(1) {
            return None;
        }
        idx.push(
            dim.first()
                .substitute_all(&|s| fixed.get(s).cloned())
                .simplify(),
        );
    }
    let mut seen = BTreeSet::new();
    for e in &idx {
        let row = rows.iter().find(|r| *e == SymExpr::sym(r.name.as_str()));
        match (row, e.as_int()) {
            (Some(r), _) if seen.insert(r.name.clone()) => {}
            (None, Some(_)) => {}
            _ => return None,
        }
    }
    (seen.len() == rows.len()).then_some(idx)
}

/// Access nodes whose every edge joins two passes' boundaries (the links between them).
fn interior_nodes(g: &Graph, passes: &[NodeIndex]) -> Vec<NodeIndex> {
    g.ordered()
        .into_iter()
        .filter(|&i| {
            let ins = g.in_edges(i);
            let outs = g.out_edges(i);
            matches!(g.node(i).kind, NodeKind::Access(_))
                && !(ins.is_empty() && outs.is_empty())
                && !ins.is_empty()
                && ins.iter().chain(&outs).all(|e| passes.contains(&e.other))
        })
        .collect()
}

/// Refuses when a node outside the passes both depends on one pass and feeds another: the
/// fused map could then be neither before nor after it.
fn between_check(
    t: &dyn Transformation,
    first: NodeId,
    g: &Graph,
    passes: &[NodeIndex],
    interior: &[NodeIndex],
) -> Result<(), NotApplicable> {
    let inside = |i: &NodeIndex| passes.contains(i) || interior.contains(i);
    let step = |i: NodeIndex, forward: bool| -> Vec<NodeIndex> {
        if forward {
            g.successors(i).collect()
        } else {
            g.predecessors(i).collect()
        }
    };
    let reach = |forward: bool| {
        let mut seen: BTreeSet<NodeIndex> = BTreeSet::new();
        let mut stack: Vec<NodeIndex> = passes
            .iter()
            .chain(interior)
            .flat_map(|&s| step(s, forward))
            .filter(|i| !inside(i))
            .collect();
        while let Some(i) = stack.pop() {
            if seen.insert(i) {
                stack.extend(step(i, forward));
            }
        }
        seen
    };
    let (after, before) = (reach(true), reach(false));
    let between = after
        .intersection(&before)
        .filter(|i| !inside(i))
        .min_by_key(|&&i| (matches!(g.node(i).kind, NodeKind::Access(_)), g.node(i).id));
    match between {
        Some(&i) => Err(refuse(
            t,
            first,
            format!(
                "node {} ({} node) depends on one pass and another depends on it, so the passes cannot run as one map",
                g.node(i).id,
                g.node(i).kind.kind_name()
            ),
        )),
        None => Ok(()),
    }
}
