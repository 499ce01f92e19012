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

use crate::check::race::disjoint_across;
use crate::ir::build::{hull, In, Out, ScopeBuilder};
use crate::ir::rewrite::ScopeEdit;
use crate::ir::{
    DataDesc, DataKind, Dim, Graph, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Program,
    Range, Schedule, Storage, Subset, SymEnv, SymExpr, TExpr,
};
use crate::transform::support::maps::trip_bound;
use crate::transform::support::names::{fresh, taken_names};
use crate::transform::{
    all_maps, expect_map, refuse, Call, Default, Legality, Level, NodeClass, NotApplicable,
    ParamDecl, ParamKind, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;

/// Largest local buffer, in elements: it lives in the stack frame of the enclosing loop.
const MAX_LOCAL_ELEMENTS: i64 = 1 << 16;

pub struct LocalStorage;

const SCHEMA: Schema = Schema {
    name: "LocalStorage",
    level: Level::IntraOperator,
    doc: "stage what a nested map reads or writes of a container in a local buffer, copied in and out",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "a nested map (inside at least one other map) that uses the container",
    )],
    params: &[ParamDecl {
        name: "data",
        kind: ParamKind::Data,
        default: Default::Required,
        doc: "the global container to stage",
    }],
};

/// The staging plan for one container.
struct Staging {
    data: String,
    /// The region the nested map touches, in the enclosing scope's terms.
    region: Subset,
    /// Per dimension: the first index (the buffer's shape holds the extents).
    starts: Vec<SymExpr>,
    written: bool,
    /// Ids of the enclosing maps, outermost first.
    enclosing: Vec<NodeId>,
    /// The buffer's (fresh) name and declaration, and the copy maps' (fresh) counters.
    local: String,
    local_desc: DataDesc,
    counters: Vec<String>,
}

impl Transformation for LocalStorage {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        all_maps(p)
            .into_iter()
            .filter(|&id| enclosing(&p.graph, id).is_some_and(|chain| !chain.is_empty()))
            .map(|id| vec![id])
            .collect()
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p,
            site,
            args,
            legality,
        } = call;
        let id = site[0];
        expect_map(self, p, id)?;
        let staging = self.staging(p, id, args.str("data")?, legality)?;
        Ok(Plan::new(move |p| stage(p, id, staging)))
    }
}

impl LocalStorage {
    /// Works out what to stage, or says why it cannot be staged; overlapping write-backs from
    /// the threads of an enclosing parallel map are a legality condition.
    fn staging(
        &self,
        p: &Program,
        id: NodeId,
        data: &str,
        legality: &mut Legality,
    ) -> Result<Staging, NotApplicable> {
        let no = |r: String| refuse(self, id, r);
        let desc =
            (p.data.get(data)).ok_or_else(|| no(format!("no container `{data}` is declared")))?;
        if desc.storage != Storage::Global {
            return Err(no(format!(
                "`{data}` already has {} storage",
                desc.storage.name()
            )));
        }
        let chain = enclosing(&p.graph, id).ok_or_else(|| no("no such node".into()))?;
        if chain.is_empty() {
            return Err(no(
                "the map is at the top level: there is no enclosing map whose iterations would reuse a staged buffer"
                    .into(),
            ));
        }
        let (g, idx) = p
            .graph
            .locate(id)
            .ok_or_else(|| no("no such node".into()))?;
        let ins = g.in_edges(idx);
        let outs = g.out_edges(idx);
        let ins = ins.iter().filter(|e| e.memlet.data == data);
        let outs: Vec<&Memlet> = (outs.iter())
            .filter(|e| e.memlet.data == data)
            .map(|e| e.memlet)
            .collect();
        let written = !outs.is_empty();
        let region = (ins.map(|e| &e.memlet.subset))
            .chain(outs.iter().map(|m| &m.subset))
            .cloned()
            .reduce(|a, b| hull(&a, &b, &desc.shape))
            .ok_or_else(|| no(format!("the map neither reads nor writes `{data}`")))?;
        if region.is_element() {
            return Err(no(format!(
                "the map touches the single element {data}{region}: nothing to stage"
            )));
        }
        let (starts, extents) = buffer(data, &region, &p.symbol_values()).map_err(no)?;
        if written {
            legality.holds(disjoint_writes(&chain, data, &region, &desc.shape).map_err(no))?;
        }
        let taken = taken_names(p);
        let local = p.fresh_data_name(&format!("{data}_local"));
        let mut local_desc = desc.clone();
        local_desc.shape = extents.iter().map(|&e| SymExpr::Int(e)).collect();
        local_desc.kind = DataKind::Transient;
        local_desc.storage = Storage::Local;
        let counters = (0..extents.len())
            .map(|d| fresh(&format!("c{d}"), &taken))
            .collect();
        Ok(Staging {
            data: data.to_string(),
            region,
            starts,
            written,
            enclosing: chain.iter().map(|(id, _)| *id).collect(),
            local,
            local_desc,
            counters,
        })
    }
}

/// Per dimension of `region`, its first index and the buffer extent that bounds it (1 for an
/// index), or why no bounded dense buffer holds it.
fn buffer(data: &str, region: &Subset, env: &SymEnv) -> Result<(Vec<SymExpr>, Vec<i64>), String> {
    let mut starts = Vec::new();
    let mut extents = Vec::new();
    for (d, dim) in region.0.iter().enumerate() {
        let (start, extent) = match dim {
            Dim::Index(e) => (e.clone(), Some(1)),
            Dim::Range(r) if r.step == SymExpr::Int(1) => (r.start.clone(), trip_bound(r, env)),
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
    Ok((starts, extents))
}

/// The threads of every parallel map in `chain` write back disjoint copies of `region`.
fn disjoint_writes(
    chain: &[(NodeId, &MapNode)],
    data: &str,
    region: &Subset,
    shape: &[SymExpr],
) -> Result<(), String> {
    for (k, (_, m)) in chain.iter().enumerate() {
        if m.schedule != Schedule::Parallel {
            continue;
        }
        let inner: Vec<&MapParam> = (chain.get(k + 1..).unwrap_or(&[]).iter())
            .flat_map(|(_, x)| x.params.iter())
            .collect();
        if !disjoint_across(region, shape, &m.params, &inner) {
            return Err(format!(
                "threads of an enclosing parallel map would write overlapping copies of {data}{region}"
            ));
        }
    }
    Ok(())
}

/// Declares the buffer, points map `id` at it and wires the copy-in (and copy-out) maps around
/// it; then refreshes the boundaries of the map and of its enclosing maps.
fn stage(p: &mut Program, id: NodeId, st: Staging) -> Result<Vec<NodeId>, NotApplicable> {
    p.data.insert(st.local.clone(), st.local_desc.clone());
    let mut edit = (p.edit(id)).ok_or_else(|| refuse(&LocalStorage, id, "no such node"))?;
    let n = edit.idx;
    if let NodeKind::Map(m) = &mut edit.graph.node_mut(n).kind {
        rebase(&mut m.body, &st.data, &st.local, &st.starts);
    }
    let label = edit.graph.node(n).label.clone();
    let whole = Subset::full(&st.local_desc.shape);
    let mut touched = vec![id];
    // Copy in: global region → buffer, before the map.
    let copy_in = copy_map(&mut edit.builder(), &st, true);
    // A map that only writes (or accumulates into) the container has no input edge for it:
    // the copy reads the value from outside the enclosing map.
    let src = match (edit.graph.in_edges(n).iter()).find(|e| e.memlet.data == st.data) {
        Some(e) => e.other,
        None => access(&mut edit, &st.data),
    };
    let (ci_id, ci) = add_map(&mut edit, format!("{label}_{}_in", st.data), copy_in);
    (edit.graph).add_edge(src, ci, Memlet::new(st.data.clone(), st.region.clone()));
    let staged = access(&mut edit, &st.local);
    (edit.graph).add_edge(ci, staged, Memlet::new(st.local.clone(), whole.clone()));
    (edit.graph).add_edge(staged, n, Memlet::new(st.local.clone(), whole.clone()));
    touched.push(ci_id);
    if st.written {
        // Copy out: buffer → global region, after the map.
        let dst = (edit.graph.out_edges(n).iter())
            .find(|e| e.memlet.data == st.data)
            .map(|e| e.other)
            .ok_or_else(|| refuse(&LocalStorage, id, "the map's output edge vanished"))?;
        let copy_out = copy_map(&mut edit.builder(), &st, false);
        let result = access(&mut edit, &st.local);
        (edit.graph).add_edge(n, result, Memlet::new(st.local.clone(), whole.clone()));
        let (co_id, co) = add_map(&mut edit, format!("{label}_{}_out", st.data), copy_out);
        (edit.graph).add_edge(result, co, Memlet::new(st.local.clone(), whole));
        (edit.graph).add_edge(co, dst, Memlet::new(st.data.clone(), st.region.clone()));
        touched.push(co_id);
    }
    // The map no longer moves the global container itself; the enclosing maps may now
    // read it (the copy-in), innermost first.
    edit.refresh_boundary(n);
    for outer in st.enclosing.iter().rev() {
        if let Some(mut e) = p.edit(*outer) {
            let idx = e.idx;
            e.refresh_boundary(idx);
        }
    }
    Ok(touched)
}

/// A new map node in the edited scope, with its fresh id.
fn add_map(edit: &mut ScopeEdit<'_>, label: String, map: MapNode) -> (NodeId, NodeIndex) {
    let id = edit.fresh_id();
    let idx = edit.graph.add_node(Node {
        id,
        label,
        kind: NodeKind::Map(map),
    });
    (id, idx)
}

/// A new access node of `data` in the edited scope.
fn access(edit: &mut ScopeEdit<'_>, data: &str) -> NodeIndex {
    let id = edit.fresh_id();
    edit.graph.add_node(Node {
        id,
        label: data.to_string(),
        kind: NodeKind::Access(data.to_string()),
    })
}

/// The maps enclosing `id` with their ids, outermost first; `None` when `id` is not in `g`.
fn enclosing(g: &Graph, id: NodeId) -> Option<Vec<(NodeId, &MapNode)>> {
    if g.index_of(id).is_some() {
        return Some(Vec::new());
    }
    g.nodes().find_map(|n| match &n.kind {
        NodeKind::Map(m) => enclosing(&m.body, id).map(|mut rest| {
            rest.insert(0, (n.id, m));
            rest
        }),
        _ => None,
    })
}

/// Redirects every use of `data` in `g` (at any depth) to `local`, shifted by `starts`.
fn rebase(g: &mut Graph, data: &str, local: &str, starts: &[SymExpr]) {
    for m in g.memlets_mut() {
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
    for n in g.nodes_mut() {
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
fn copy_map(b: &mut ScopeBuilder<'_>, st: &Staging, inward: bool) -> MapNode {
    let mut params = Vec::new();
    let mut global_idx = Vec::new();
    let mut local_idx = Vec::new();
    for ((dim, start), c) in st.region.0.iter().zip(&st.starts).zip(&st.counters) {
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
        (st.data.as_str(), global_idx, st.local.as_str(), local_idx)
    } else {
        (st.local.as_str(), local_idx, st.data.as_str(), global_idx)
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
        min_work: 0,
        body: std::mem::take(&mut b.graph),
    }
}
