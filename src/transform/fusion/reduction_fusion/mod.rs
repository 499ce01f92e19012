//! ReductionFusion: run the passes of a row-wise normalization as one map over the rows.
//!
//! ```text
//! before:  map [r = 0:R, c = 0:1] { M[r, c] = -inf }                 M, S: transient f32[R, 1]
//!          map [r = 0:R, c = 0:C] { M[r, 0] (max)= X[r, c] }
//!          map [r = 0:R, c = 0:1] { S[r, c] = 0 }
//!          map [r = 0:R, c = 0:C] { S[r, 0] (+)= exp(X[r, c] - M[r, 0]) }
//!          map [r = 0:R, c = 0:C] { Y[r, c] = exp(X[r, c] - M[r, 0]) / S[r, 0] }
//! after:   map [r = 0:R] {                                  m, s: register f32[]
//!            map [c = 0:1] { m = -inf }
//!            map [c = 0:C] { m (max)= X[r, c] }
//!            map [c = 0:1] { s = 0 }
//!            map [c = 0:C] { s (+)= exp(X[r, c] - m) }
//!            map [c = 0:C] { Y[r, c] = exp(X[r, c] - m) / s }
//!          }
//! ```
//! A row's input is read while it is still in cache, once per pass, instead of the whole tensor
//! being streamed once per pass, and the per-row statistics never touch memory. The passes are
//! recognised by structure (see [`row_passes`]): Softmax, LogSoftmax and
//! LayerNormalization expansions all match. Statistics that are program outputs or used
//! elsewhere stay in memory, written per row. Each pass keeps its id as the inner map; the map
//! over the rows is new.
//!
//! `mode=online` (softmax only) further merges the max pass and the sum pass into one sequential
//! pass with the online rescaling `m' = max(m, x)`, `s' = s·exp(m − m') + exp(x − m')`: two
//! passes over a row in all (see [`online_softmax`]).
//!
//! `mode=welford` (layer normalization) merges the mean pass and the variance pass into one
//! sequential pass with Welford's update of the running mean and sum of squared deviations: two
//! passes over a row in all, without the cancellation of sum-of-squares (see [`welford`]).

mod online_softmax;
mod row_passes;
mod welford;

use crate::ir::rewrite::{substitute_symbols, ScopeEdit};
use crate::ir::{
    DataDesc, DataKind, Graph, MapNode, Memlet, Node, NodeId, NodeKind, Program, Storage, Subset,
};
use crate::transform::support::scope::uses;
use crate::transform::{
    expect_map, refuse, Args, Call, Default, Legality, Level, NodeClass, NotApplicable, ParamDecl,
    ParamKind, Plan, Role, Schema, Transformation,
};
use online_softmax::Pass;
use petgraph::stable_graph::NodeIndex;
use row_passes::{inner_params, row_renaming, RowPlan, MAX_PASSES};
use std::collections::{BTreeMap, BTreeSet};

pub struct ReductionFusion;

/// A further pass of the site (roles 3 to [`MAX_PASSES`] are optional).
const fn further(name: &'static str) -> Role {
    Role::optional(
        name,
        NodeClass::Map,
        "a further pass, after the previous one",
    )
}

const SCHEMA: Schema = Schema {
    name: "ReductionFusion",
    level: Level::InterOperator,
    doc: "run the reduce and normalize passes of a row-wise normalization as one map over rows; per-row statistics become registers",
    site: &[
        Role::new("pass1", NodeClass::Map, "the first pass, in program order"),
        Role::new("pass2", NodeClass::Map, "the second pass, after the first"),
        further("pass3"),
        further("pass4"),
        further("pass5"),
        further("pass6"),
        further("pass7"),
        further("pass8"),
    ],
    params: &[ParamDecl {
        name: "mode",
        kind: ParamKind::Enum {
            values: &["passes", "online", "welford"],
        },
        default: Default::Str("passes"),
        doc: "passes (default): every pass per row; online: softmax's max and sum passes as one pass with online rescaling; welford: layer normalization's mean and variance passes as one pass with Welford's update",
    }],
};

// One role per pass a site may span.
const _: () = assert!(SCHEMA.site.len() == MAX_PASSES);

/// Which statistics passes, if any, merge into one sequential pass.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Passes,
    Online,
    Welford,
}

/// The passes a merging mode found.
enum Found {
    Online(online_softmax::Merge),
    Welford(welford::Merge),
}

impl Mode {
    fn of(t: &ReductionFusion, args: &Args, at: NodeId) -> Result<Mode, NotApplicable> {
        match args.str("mode")? {
            "passes" => Ok(Mode::Passes),
            "online" => Ok(Mode::Online),
            "welford" => Ok(Mode::Welford),
            other => Err(refuse(t, at, format!("unknown mode `{other}`"))),
        }
    }

    /// The passes to merge among `passes` (`None` for `mode=passes`); on failure, the pass to
    /// blame (or `None`) and why.
    fn find(
        self,
        passes: &[Pass],
        registers: &BTreeSet<String>,
    ) -> Result<Option<Found>, (Option<NodeId>, String)> {
        Ok(match self {
            Mode::Passes => None,
            Mode::Online => Some(Found::Online(online_softmax::find(passes, registers)?)),
            Mode::Welford => Some(Found::Welford(welford::find(passes, registers)?)),
        })
    }
}

impl Found {
    /// The merge with the statistics' names replaced by their registers'.
    fn renamed(self, registers: &BTreeMap<String, String>) -> Found {
        match self {
            Found::Online(m) => Found::Online(m.renamed(registers)),
            Found::Welford(m) => Found::Welford(m.renamed(registers)),
        }
    }

    fn merge(&self, passes: &mut Vec<Pass>, fresh_id: &mut dyn FnMut() -> NodeId) {
        match self {
            Found::Online(m) => online_softmax::merge(passes, m, fresh_id),
            Found::Welford(m) => welford::merge(passes, m, fresh_id),
        }
    }
}

/// For a merging mode, finds its passes on the passes as they will be fused (statistics
/// standing for their registers, so refusals name the statistics).
fn find_merge(
    t: &ReductionFusion,
    p: &Program,
    site: &[NodeId],
    plan: &RowPlan,
    mode: Mode,
) -> Result<Option<Found>, NotApplicable> {
    if mode == Mode::Passes {
        return Ok(None);
    }
    let same: BTreeMap<String, String> = plan
        .scalars
        .iter()
        .map(|d| (d.clone(), d.clone()))
        .collect();
    let passes: Vec<Pass> = site
        .iter()
        .map(|&id| {
            let m = expect_map(t, p, id)?.clone();
            let label = p.node(id).map(|n| n.label.clone()).unwrap_or_default();
            Ok((id, label, inner_pass(m, plan, &same)))
        })
        .collect::<Result<_, NotApplicable>>()?;
    mode.find(&passes, &plan.scalars)
        .map_err(|(at, why)| refuse(t, at.unwrap_or(site[0]), why))
}

/// What the rewrite needs, found while planning.
struct Fusion {
    /// The first pass: the scope is found through it.
    first: NodeId,
    /// The passes, in program order.
    site: Vec<NodeId>,
    rows: RowPlan,
    /// The passes a merging mode merges, named by their statistics.
    found: Option<Found>,
}

impl Transformation for ReductionFusion {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut out = Vec::new();
        scope_candidates(self, p, &p.graph, &mut out);
        out
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p,
            site,
            args,
            legality,
        } = call;
        let mode = Mode::of(self, args, site[0])?;
        let rows = row_passes::plan(self, p, site, legality)?;
        let found = find_merge(self, p, site, &rows, mode)?;
        let f = Fusion {
            first: site[0],
            site: site.to_vec(),
            rows,
            found,
        };
        Ok(Plan::new(move |p| fuse(p, f)))
    }
}

/// The rewrite: registers declared, the passes and their links replaced by one map over the
/// rows whose body runs the passes (merged as planned) in order, unused statistics dropped.
fn fuse(p: &mut Program, f: Fusion) -> Result<Vec<NodeId>, NotApplicable> {
    let Fusion {
        first,
        site,
        rows,
        found,
    } = f;
    let registers = declare_registers(p, &rows);
    let found = found.map(|x| x.renamed(&registers));
    let mut edit =
        (p.edit(first)).ok_or_else(|| refuse(&ReductionFusion, first, "no such node"))?;
    let (passes, wiring) = take_passes(&mut edit, &site, &rows)?;
    let label = common_label(passes.iter().map(|(_, l, _)| l.as_str()));
    let (schedule, min_work) = (passes.first().map(|(_, _, m)| (m.schedule, m.min_work)))
        .ok_or_else(|| refuse(&ReductionFusion, first, "no passes"))?;
    let mut inner: Vec<Pass> = passes
        .into_iter()
        .map(|(id, label, m)| (id, label, inner_pass(m, &rows, &registers)))
        .collect();
    if let Some(found) = &found {
        found.merge(&mut inner, &mut || edit.fresh_id());
    }
    let mut placed = Vec::new();
    let mut body = {
        let mut b = edit.builder();
        for (id, label, m) in inner {
            let scalars = scalar_use(&m.body, &registers);
            placed.push((b.map_node(id, &label, m), scalars));
        }
        b.graph
    };
    wire_registers(&mut body, &placed, &mut || edit.fresh_id());
    let outer_id = edit.fresh_id();
    let g = &mut *edit.graph;
    let fused = g.add_node(Node {
        id: outer_id,
        label: format!("{label}_rows"),
        kind: NodeKind::Map(MapNode {
            params: rows.rows.clone(),
            schedule,
            min_work,
            body,
        }),
    });
    let mut seen: Vec<(NodeIndex, bool, String)> = Vec::new();
    for (other, incoming, m) in wiring {
        let key = (other, incoming, m.data.clone());
        if !seen.contains(&key) {
            seen.push(key);
            match incoming {
                true => g.add_edge(other, fused, m),
                false => g.add_edge(fused, other, m),
            };
        }
    }
    edit.refresh_boundary(fused);
    add_missing_writes(&mut edit, fused);
    for d in rows.scalars {
        if uses(&p.graph, &d) == (0, 0) {
            p.data.remove(&d);
        }
    }
    let mut touched = vec![outer_id];
    touched.extend_from_slice(&site);
    Ok(touched)
}

/// Edges between the passes and nodes that stay in the scope: (other node, into the passes?,
/// memlet).
type Wiring = Vec<(NodeIndex, bool, Memlet)>;

/// Removes the passes and the interior links from the scope; returns the passes (id, label,
/// map) in site order and their edges to the nodes that stay.
fn take_passes(
    edit: &mut ScopeEdit<'_>,
    site: &[NodeId],
    rows: &RowPlan,
) -> Result<(Vec<Pass>, Wiring), NotApplicable> {
    let g = &mut *edit.graph;
    let idxs = (site.iter())
        .map(|&id| {
            let missing = || refuse(&ReductionFusion, id, "the pass is not in the scope");
            g.index_of(id).ok_or_else(missing)
        })
        .collect::<Result<Vec<NodeIndex>, _>>()?;
    let wiring = external_wiring(g, &idxs, &rows.interior);
    let mut passes = Vec::new();
    for (&i, &id) in idxs.iter().zip(site) {
        let node =
            (g.remove_node(i)).ok_or_else(|| refuse(&ReductionFusion, id, "pass vanished"))?;
        match node.kind {
            NodeKind::Map(m) => passes.push((node.id, node.label, m)),
            _ => return Err(refuse(&ReductionFusion, node.id, "not a map")),
        }
    }
    for &i in &rows.interior {
        g.remove_node(i);
    }
    Ok((passes, wiring))
}

/// Per scope, the longest run of at most [`MAX_PASSES`] consecutive maps starting at each map
/// that checks; runs do not overlap.
fn scope_candidates(t: &ReductionFusion, p: &Program, g: &Graph, out: &mut Vec<Vec<NodeId>>) {
    let maps: Vec<(NodeId, &MapNode)> = g
        .ordered()
        .into_iter()
        .filter_map(|i| match &g.node(i).kind {
            NodeKind::Map(m) => Some((g.node(i).id, m)),
            _ => None,
        })
        .collect();
    let ids: Vec<NodeId> = maps.iter().map(|(id, _)| *id).collect();
    let mut start = 0;
    while start < ids.len() {
        let last = (ids.len() - 1).min(start + MAX_PASSES - 1);
        let found = (start + 1..=last).rev().find(|&end| {
            let strict = &mut Legality::new(false);
            row_passes::plan(t, p, &ids[start..=end], strict).is_ok()
        });
        match found {
            Some(end) => {
                out.push(ids[start..=end].to_vec());
                start = end + 1;
            }
            None => start += 1,
        }
    }
    for (_, m) in maps {
        scope_candidates(t, p, &m.body, out);
    }
}

/// Declares one register per statistic that becomes a scalar, by the statistic's name.
fn declare_registers(p: &mut Program, plan: &RowPlan) -> BTreeMap<String, String> {
    let mut registers = BTreeMap::new();
    for d in &plan.scalars {
        let name = p.fresh_data_name(&format!("{d}_row"));
        let Some(dtype) = p.data.get(d).map(|x| x.dtype) else {
            continue;
        };
        let mut desc = DataDesc::new(dtype, Vec::new(), DataKind::Transient);
        desc.storage = Storage::Register;
        p.data.insert(name.clone(), desc);
        registers.insert(d.clone(), name);
    }
    registers
}

/// The edges between the passes and nodes that stay in the scope.
fn external_wiring(g: &Graph, passes: &[NodeIndex], interior: &[NodeIndex]) -> Wiring {
    let outside = |i: NodeIndex| !passes.contains(&i) && !interior.contains(&i);
    let mut wiring = Vec::new();
    for &i in passes {
        for e in g.in_edges(i) {
            if outside(e.other) {
                wiring.push((e.other, true, e.memlet.clone()));
            }
        }
        for e in g.out_edges(i) {
            if outside(e.other) {
                wiring.push((e.other, false, e.memlet.clone()));
            }
        }
    }
    wiring
}

/// A pass as an inner map: row parameters renamed to the first pass's and dropped from its
/// parameter list, statistics redirected to their registers.
fn inner_pass(mut m: MapNode, plan: &RowPlan, registers: &BTreeMap<String, String>) -> MapNode {
    let rename = row_renaming(&m, &plan.row_positions, &plan.rows);
    let params = inner_params(&m, &plan.row_positions);
    substitute_symbols(&mut m.body, &|s| rename.get(s).cloned());
    for n in m.body.nodes_mut() {
        if let NodeKind::Access(d) = &n.kind {
            if let Some(r) = registers.get(d) {
                n.kind = NodeKind::Access(r.clone());
                n.label = r.clone();
            }
        }
    }
    for e in m.body.memlets_mut() {
        if let Some(r) = registers.get(&e.data) {
            e.data = r.clone();
            e.subset = Subset::default();
        }
    }
    MapNode {
        params,
        schedule: m.schedule,
        min_work: m.min_work,
        body: m.body,
    }
}

/// How an inner map uses each register: (register, reads it, its write memlet if it writes).
type RegisterUse = Vec<(String, bool, Option<Memlet>)>;

fn scalar_use(body: &Graph, registers: &BTreeMap<String, String>) -> RegisterUse {
    let mut out = Vec::new();
    for r in registers.values() {
        let mut reads = false;
        let mut write = None;
        for i in body.ordered() {
            if !matches!(&body.node(i).kind, NodeKind::Access(d) if d == r) {
                continue;
            }
            reads |= !body.out_edges(i).is_empty();
            if let Some(e) = body.in_edges(i).first() {
                write = Some(Memlet::new(r.clone(), Subset::default()).with_wcr(e.memlet.wcr));
            }
        }
        if reads || write.is_some() {
            out.push((r.clone(), reads, write));
        }
    }
    out
}

/// Orders the inner maps through the registers: each reader follows the latest writer, each
/// writer produces a new version (access node) of the register.
fn wire_registers(
    body: &mut Graph,
    placed: &[(NodeIndex, RegisterUse)],
    fresh_id: &mut dyn FnMut() -> NodeId,
) {
    let mut latest: BTreeMap<String, NodeIndex> = BTreeMap::new();
    for (map, scalars) in placed {
        for (r, reads, write) in scalars {
            let prior = latest.get(r).copied();
            if let Some(src) =
                prior.filter(|_| *reads || write.as_ref().is_some_and(|w| w.wcr.is_some()))
            {
                body.add_edge(src, *map, Memlet::new(r.clone(), Subset::default()));
            }
            if let Some(w) = write {
                let dst = body.add_node(Node {
                    id: fresh_id(),
                    label: r.clone(),
                    kind: NodeKind::Access(r.clone()),
                });
                body.add_edge(*map, dst, w.clone());
                latest.insert(r.clone(), dst);
            }
        }
    }
}

/// Gives every container the fused map writes an access node after it when none remained
/// (its last version was a link between passes that was removed).
fn add_missing_writes(edit: &mut ScopeEdit<'_>, fused: NodeIndex) {
    let NodeKind::Map(m) = &edit.graph.node(fused).kind else {
        return;
    };
    let boundary = crate::ir::build::outer_memlets(m, edit.data);
    let have: Vec<String> = edit
        .graph
        .out_edges(fused)
        .iter()
        .map(|e| e.memlet.data.clone())
        .collect();
    for (d, (subset, wcr)) in boundary.writes {
        if have.contains(&d) {
            continue;
        }
        let id = edit.fresh_id();
        let dst = edit.graph.add_node(Node {
            id,
            label: d.clone(),
            kind: NodeKind::Access(d.clone()),
        });
        edit.graph
            .add_edge(fused, dst, Memlet::new(d, subset).with_wcr(wcr));
    }
}

/// The longest common prefix of the labels without trailing underscores (`softmax_max`,
/// `softmax_sum` → `softmax`); the first label when they share none.
fn common_label<'a>(mut labels: impl Iterator<Item = &'a str>) -> String {
    let first = labels.next().unwrap_or("rows");
    let mut len = first.len();
    for l in labels {
        len = first
            .bytes()
            .zip(l.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    while !first.is_char_boundary(len) {
        len -= 1;
    }
    let prefix = first[..len].trim_end_matches('_');
    match prefix.is_empty() {
        true => first.to_string(),
        false => prefix.to_string(),
    }
}
