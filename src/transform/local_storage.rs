//! LocalStorage: stage the part of a container a nested map uses in a local buffer.
//!
//! ```text
//! before:  map [i_tile = 0:M:8] {
//!            map [i = i_tile:min(i_tile + 8, M), k = 0:K] { … A[i, k] … }
//!          }
//! after:   map [i_tile = 0:M:8] {                          A_local: local f32[8, K]
//!            map [c0 = i_tile:min(i_tile + 8, M), c1 = 0:K] { A_local[c0 - i_tile, c1] = A[c0, c1] }
//!            map [i = …, k = 0:K] { … A_local[i - i_tile, k] … }         // keeps its id
//!            (if the map writes A: copy A_local back to A[i_tile:min(i_tile + 8, M), 0:K])
//!          }
//! ```
//! The staged region is the nested map's outer memlet for the container, so it is exactly what
//! the map touches in one iteration of the enclosing map; the buffer's shape is that region's
//! largest extent (a clipped tile counts as its tile size), and the copies use the actual extent.
//! A buffer that is written is also copied in first, so elements the map does not write go back
//! unchanged. Writing back is a plain store, so when an enclosing map is parallel the staged
//! regions of different threads must be disjoint.

use super::map_support::trip_bound;
use super::map_tiling::{fresh, taken_names};
use super::{
    expect_map, refuse, Level, NotApplicable, ParamSpec, ParamValue, Params, Transformation,
};
use crate::check::race::disjoint_across;
use crate::ir::build::{hull, In, Out};
use crate::ir::{
    DataKind, Dim, Graph, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Program, Range,
    Schedule, Storage, Subset, SymExpr, TExpr,
};

/// Largest local buffer, in elements: it lives in the stack frame of the enclosing loop.
const MAX_LOCAL_ELEMENTS: i64 = 1 << 16;

pub struct LocalStorage;

/// The staging plan for one container.
struct Plan {
    data: String,
    /// The region the nested map touches, in the enclosing scope's terms.
    region: Subset,
    /// Per dimension: the first index and the buffer extent (1 for an index).
    starts: Vec<SymExpr>,
    extents: Vec<i64>,
    written: bool,
    /// Ids of the enclosing maps, outermost first.
    enclosing: Vec<NodeId>,
}

impl Transformation for LocalStorage {
    fn name(&self) -> &'static str {
        "LocalStorage"
    }

    fn level(&self) -> Level {
        Level::IntraOperator
    }

    fn doc(&self) -> &'static str {
        "stage what a nested map reads or writes of a container in a local buffer, copied in and out"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "data",
            kind: "str",
            doc: "the global container to stage",
        }]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::all_maps(p)
            .into_iter()
            .filter(|&id| enclosing(&p.graph, id).is_some_and(|chain| !chain.is_empty()))
            .map(|id| vec![id])
            .collect()
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        let id = site[0];
        expect_map(self, p, id)?;
        plan(p, id, params)
            .map(|_| ())
            .map_err(|r| refuse(self, id, r))
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let id = site[0];
        let plan = plan(p, id, params).map_err(|r| refuse(self, id, r))?;
        let taken = taken_names(p);
        let local = p.fresh_data_name(&format!("{}_local", plan.data));
        let mut desc = p.data[&plan.data].clone();
        desc.shape = plan.extents.iter().map(|&e| SymExpr::Int(e)).collect();
        desc.kind = DataKind::Transient;
        desc.storage = Storage::Local;
        p.data.insert(local.clone(), desc);
        let counters: Vec<String> = (0..plan.extents.len())
            .map(|d| fresh(&format!("c{d}"), &taken))
            .collect();

        let mut edit = p.edit(id).ok_or_else(|| refuse(self, id, "no such node"))?;
        let n = edit.idx;
        if let NodeKind::Map(m) = &mut edit.graph.node_mut(n).kind {
            rebase(&mut m.body, &plan.data, &local, &plan.starts);
        }
        let label = edit.graph.node(n).label.clone();
        let whole = Subset::full(
            &plan
                .extents
                .iter()
                .map(|&e| SymExpr::Int(e))
                .collect::<Vec<_>>(),
        );
        let mut touched = vec![id];
        // Copy in: global region → buffer, before the map.
        let copy_in = copy_map(&mut edit.builder(), &plan, &counters, &local, true);
        // A map that only writes (or accumulates into) the container has no input edge for it:
        // the copy reads the value from outside the enclosing map.
        let src = match edit
            .graph
            .in_edges(n)
            .iter()
            .find(|e| e.memlet.data == plan.data)
        {
            Some(e) => e.other,
            None => access(&mut edit, &plan.data),
        };
        let ci_id = edit.fresh_id();
        let ci = edit.graph.add_node(Node {
            id: ci_id,
            label: format!("{label}_{}_in", plan.data),
            kind: NodeKind::Map(copy_in),
        });
        edit.graph
            .add_edge(src, ci, Memlet::new(plan.data.clone(), plan.region.clone()));
        let staged = access(&mut edit, &local);
        edit.graph
            .add_edge(ci, staged, Memlet::new(local.clone(), whole.clone()));
        edit.graph
            .add_edge(staged, n, Memlet::new(local.clone(), whole.clone()));
        touched.push(ci_id);
        if plan.written {
            // Copy out: buffer → global region, after the map.
            let dst = edit
                .graph
                .out_edges(n)
                .iter()
                .find(|e| e.memlet.data == plan.data)
                .map(|e| e.other)
                .ok_or_else(|| refuse(self, id, "the map's output edge vanished"))?;
            let copy_out = copy_map(&mut edit.builder(), &plan, &counters, &local, false);
            let result = access(&mut edit, &local);
            edit.graph
                .add_edge(n, result, Memlet::new(local.clone(), whole.clone()));
            let co_id = edit.fresh_id();
            let co = edit.graph.add_node(Node {
                id: co_id,
                label: format!("{label}_{}_out", plan.data),
                kind: NodeKind::Map(copy_out),
            });
            edit.graph
                .add_edge(result, co, Memlet::new(local.clone(), whole));
            edit.graph
                .add_edge(co, dst, Memlet::new(plan.data.clone(), plan.region.clone()));
            touched.push(co_id);
        }
        // The map no longer moves the global container itself; the enclosing maps may now
        // read it (the copy-in), innermost first.
        edit.refresh_boundary(n);
        for outer in plan.enclosing.iter().rev() {
            if let Some(mut e) = p.edit(*outer) {
                let idx = e.idx;
                e.refresh_boundary(idx);
            }
        }
        Ok(touched)
    }
}

/// A new access node of `data` in the edited scope.
fn access(
    edit: &mut crate::ir::rewrite::ScopeEdit<'_>,
    data: &str,
) -> petgraph::stable_graph::NodeIndex {
    let id = edit.fresh_id();
    edit.graph.add_node(Node {
        id,
        label: data.to_string(),
        kind: NodeKind::Access(data.to_string()),
    })
}

/// Works out what to stage, or says why it cannot be staged.
fn plan(p: &Program, id: NodeId, params: &Params) -> Result<Plan, String> {
    let data = match params.get("data") {
        Some(ParamValue::Str(d)) => d.clone(),
        Some(other) => {
            return Err(format!(
                "parameter `data` must be a container name, not {other}"
            ))
        }
        None => return Err("parameter `data` (the container to stage) is required".into()),
    };
    let desc = p
        .data
        .get(&data)
        .ok_or_else(|| format!("no container `{data}` is declared"))?;
    if desc.storage != Storage::Global {
        return Err(format!(
            "`{data}` already has {} storage",
            desc.storage.name()
        ));
    }
    let chain = enclosing(&p.graph, id).ok_or("no such node")?;
    if chain.is_empty() {
        return Err(
            "the map is at the top level: there is no enclosing map whose iterations would reuse a staged buffer"
                .into(),
        );
    }
    let (g, idx) = p.graph.locate(id).ok_or("no such node")?;
    let ins: Vec<Subset> = g
        .in_edges(idx)
        .iter()
        .filter(|e| e.memlet.data == data)
        .map(|e| e.memlet.subset.clone())
        .collect();
    let outs: Vec<&Memlet> = g
        .out_edges(idx)
        .iter()
        .filter(|e| e.memlet.data == data)
        .map(|e| e.memlet)
        .collect();
    let written = !outs.is_empty();
    let region = ins
        .iter()
        .chain(outs.iter().map(|m| &m.subset))
        .cloned()
        .reduce(|a, b| hull(&a, &b, &desc.shape))
        .ok_or_else(|| format!("the map neither reads nor writes `{data}`"))?;
    if region.is_element() {
        return Err(format!(
            "the map touches the single element {data}{region}: nothing to stage"
        ));
    }
    let env = p.symbol_values();
    let mut starts = Vec::new();
    let mut extents = Vec::new();
    for (d, dim) in region.0.iter().enumerate() {
        let (start, extent) = match dim {
            Dim::Index(e) => (e.clone(), Some(1)),
            Dim::Range(r) if r.step == SymExpr::Int(1) => (r.start.clone(), trip_bound(r, &env)),
            Dim::Range(r) => {
                return Err(format!(
                    "dimension {d} of {data}{region} has step {}; only dense regions are staged",
                    r.step
                ))
            }
        };
        let extent = extent.ok_or_else(|| {
            format!(
                "dimension {d} of {data}{region} has extent {}, which no constant bounds",
                dim.len()
            )
        })?;
        starts.push(start);
        extents.push(extent.max(1));
    }
    let elements: i64 = extents.iter().product();
    if elements > MAX_LOCAL_ELEMENTS {
        return Err(format!(
            "staging {data}{region} needs {elements} elements, more than the {MAX_LOCAL_ELEMENTS} a local buffer may hold"
        ));
    }
    if written {
        for (k, (_, m)) in chain.iter().enumerate() {
            if m.schedule != Schedule::Parallel {
                continue;
            }
            let inner: Vec<&MapParam> = chain[k + 1..]
                .iter()
                .flat_map(|(_, x)| x.params.iter())
                .collect();
            if !disjoint_across(&region, &desc.shape, &m.params, &inner) {
                return Err(format!(
                    "threads of an enclosing parallel map would write overlapping copies of {data}{region}"
                ));
            }
        }
    }
    Ok(Plan {
        data,
        region,
        starts,
        extents,
        written,
        enclosing: chain.iter().map(|(id, _)| *id).collect(),
    })
}

/// The maps enclosing `id` with their ids, outermost first; `None` when `id` is not in `g`.
fn enclosing(g: &Graph, id: NodeId) -> Option<Vec<(NodeId, &MapNode)>> {
    if g.index_of(id).is_some() {
        return Some(Vec::new());
    }
    g.g.node_weights().find_map(|n| match &n.kind {
        NodeKind::Map(m) => enclosing(&m.body, id).map(|mut rest| {
            rest.insert(0, (n.id, m));
            rest
        }),
        _ => None,
    })
}

/// Redirects every use of `data` in `g` (at any depth) to `local`, shifted by `starts`.
fn rebase(g: &mut Graph, data: &str, local: &str, starts: &[SymExpr]) {
    for m in g.g.edge_weights_mut() {
        if m.data == data {
            m.data = local.to_string();
            m.subset = Subset(
                m.subset
                    .0
                    .iter()
                    .zip(starts)
                    .map(|(dim, s)| dim.map_exprs(&|e| (e - s).simplify()))
                    .collect(),
            );
        }
    }
    for n in g.g.node_weights_mut() {
        match &mut n.kind {
            NodeKind::Access(d) if d == data => {
                *d = local.to_string();
                n.label = local.to_string();
            }
            NodeKind::Map(m) => rebase(&mut m.body, data, local, starts),
            _ => {}
        }
    }
}

/// `map [c… over the region] { local[c… - start…] = data[c…] }` (or the reverse when
/// `!inward`): the copy covers the actual region, however much of the buffer that fills.
fn copy_map(
    b: &mut crate::ir::build::ScopeBuilder<'_>,
    plan: &Plan,
    counters: &[String],
    local: &str,
    inward: bool,
) -> MapNode {
    let mut params = Vec::new();
    let mut global_idx = Vec::new();
    let mut local_idx = Vec::new();
    for ((dim, start), c) in plan.region.0.iter().zip(&plan.starts).zip(counters) {
        match dim {
            Dim::Index(e) => {
                global_idx.push(e.clone());
                local_idx.push(SymExpr::Int(0));
            }
            Dim::Range(r) => {
                // Over the region itself (a tile range keeps its `min` form, which bounds it).
                params.push(MapParam {
                    name: c.clone(),
                    range: Range::new(r.start.clone(), r.end.clone()),
                });
                global_idx.push(SymExpr::sym(c.as_str()));
                local_idx.push((SymExpr::sym(c.as_str()) - start).simplify());
            }
        }
    }
    let (from, from_idx, to, to_idx) = if inward {
        (plan.data.as_str(), global_idx, local, local_idx)
    } else {
        (local, local_idx, plan.data.as_str(), global_idx)
    };
    b.tasklet(
        "copy",
        vec![In("v", from, Subset::element(from_idx))],
        vec![Out(
            "o",
            to,
            Subset::element(to_idx),
            None,
            TExpr::input("v"),
        )],
    );
    MapNode {
        params,
        schedule: Schedule::Sequential,
        body: std::mem::take(&mut b.graph),
    }
}
