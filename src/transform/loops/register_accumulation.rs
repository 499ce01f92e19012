//! RegisterAccumulation: accumulate a reduction in a register and write the result once.
//!
//! ```text
//! before:  map [i = 0:M, j = 0:N, k = 0:K] { C[i, j] (+)= A[i, k] * B[k, j] }
//! after:   map [i = 0:M, j = 0:N] {                  // keeps the id and schedule
//!            acc = 0                                 // acc: register f32[], the wcr's identity
//!            map [k = 0:K] { acc (+)= A[i, k] * B[k, j] }
//!            C[i, j] (+)= acc                        // one resolved write per element
//!          }
//! ```
//! The parameters that index the resolved write stay outside; the ones it does not mention are
//! the reduction and move to an inner sequential map. Each output element then costs one memory
//! update instead of K, and when the outer map is parallel the threads no longer need atomics.
//! The write keeps its resolution, so whatever the container held before (a zero or a bias) is
//! still combined with the sum. Only the floating-point order of the sum changes.

use crate::ir::{
    DType, DataDesc, DataKind, Graph, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Program,
    Schedule, Storage, Subset, TExpr, Tasklet, Wcr,
};
use crate::transform::support::maps::{first_nested_map, tasklet_accesses, ElementAccess};
use crate::transform::{
    expect_map, refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema,
    Transformation,
};

pub struct RegisterAccumulation;

const SCHEMA: Schema = Schema {
    name: "RegisterAccumulation",
    level: Level::IntraOperator,
    doc: "sum a reduction into a register initialised to the identity and write each result once",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "an innermost map with one resolved (wcr) write",
    )],
    params: &[],
};

/// What the rewrite needs to know about the reduction.
struct Reduction {
    data: String,
    subset: Subset,
    wcr: Wcr,
    kept: Vec<MapParam>,
    reduced: Vec<MapParam>,
}

impl Transformation for RegisterAccumulation {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let id = site[0];
        let red = self.reduction(p, expect_map(self, p, id)?, id, legality)?;
        let dtype = (p.data.get(&red.data))
            .map(|d| d.dtype)
            .ok_or_else(|| refuse(self, id, format!("no container `{}` is declared", red.data)))?;
        let acc = p.fresh_data_name(&format!("{}_acc", red.data));
        Ok(Plan::new(move |p| accumulate(p, id, &red, &acc, dtype)))
    }
}

/// Declares the register `acc`, moves the reduced parameters of map `id` into an inner map
/// that accumulates into it, and writes the register once per kept point.
fn accumulate(
    p: &mut Program,
    id: NodeId,
    red: &Reduction,
    acc: &str,
    dtype: DType,
) -> Result<Vec<NodeId>, NotApplicable> {
    let t = &RegisterAccumulation;
    let mut desc = DataDesc::new(dtype, Vec::new(), DataKind::Transient);
    desc.storage = Storage::Register;
    p.data.insert(acc.to_string(), desc);

    let mut edit = p.edit(id).ok_or_else(|| refuse(t, id, "no such node"))?;
    let label = edit.graph.node(edit.idx).label.clone();
    let NodeKind::Map(outer) = &mut edit.graph.node_mut(edit.idx).kind else {
        return Err(refuse(t, id, "not a map"));
    };
    let mut body = std::mem::take(&mut outer.body);
    outer.params = red.kept.clone();
    redirect(&mut body, &red.data, acc);
    let inner = MapNode {
        params: red.reduced.clone(),
        schedule: Schedule::Sequential,
        min_work: 0,
        body,
    };
    let mut ids = || edit.fresh_id();
    let inner_id = ids();
    let new_body = staged_body(&label, red, acc, inner_id, inner, &mut ids);
    if let NodeKind::Map(outer) = &mut edit.graph.node_mut(edit.idx).kind {
        outer.body = new_body;
    }
    // The inner map reads the body's other inputs through access nodes created here.
    let mut inner_edit = p
        .edit(inner_id)
        .ok_or_else(|| refuse(t, id, "the new inner map vanished"))?;
    let idx = inner_edit.idx;
    inner_edit.refresh_boundary(idx);
    Ok(vec![id, inner_id])
}

impl RegisterAccumulation {
    /// Checks the map is an innermost map with one resolved write that some parameters do not
    /// index; that write being the container's only use is a legality condition.
    fn reduction(
        &self,
        p: &Program,
        map: &MapNode,
        id: NodeId,
        legality: &mut Legality,
    ) -> Result<Reduction, NotApplicable> {
        let no = |r: String| refuse(self, id, r);
        if let Some(inner) = first_nested_map(&map.body) {
            return Err(no(format!(
                "the body contains map {inner}: only innermost maps are rewritten"
            )));
        }
        let accesses = tasklet_accesses(&map.body);
        let m = resolved_write(&accesses).map_err(no)?;
        let storage = p.data.get(&m.data).map(|d| d.storage);
        if storage != Some(Storage::Global) {
            return Err(no(format!(
                "`{}` is not a global container, so it already stays out of memory",
                m.data
            )));
        }
        let uses = accesses.iter().filter(|a| a.memlet.data == m.data).count();
        legality.holds(if uses == 1 {
            Ok(())
        } else {
            Err(no(format!(
                "the body accesses `{}` {uses} times; the reduction must be its only use",
                m.data
            )))
        })?;
        let mentioned = m.subset.free_symbols();
        let (kept, reduced): (Vec<MapParam>, Vec<MapParam>) = map
            .params
            .iter()
            .cloned()
            .partition(|q| mentioned.contains(&q.name));
        if reduced.is_empty() {
            return Err(no(format!(
                "the write {}{} uses every map parameter: no parameter is reduced",
                m.data, m.subset
            )));
        }
        if kept.is_empty() {
            return Err(no(format!(
                "the write {}{} uses no map parameter: there is no element to accumulate per iteration",
                m.data, m.subset
            )));
        }
        independent(&kept, &reduced).map_err(no)?;
        Ok(Reduction {
            data: m.data.clone(),
            subset: m.subset.clone(),
            wcr: m.wcr.ok_or_else(|| no("unresolved write".to_string()))?,
            kept,
            reduced,
        })
    }
}

/// The one resolved (wcr) write among `accesses`.
fn resolved_write<'g>(accesses: &[ElementAccess<'g>]) -> Result<&'g Memlet, String> {
    let resolved: Vec<&Memlet> = accesses
        .iter()
        .filter(|a| a.write && a.memlet.wcr.is_some())
        .map(|a| a.memlet)
        .collect();
    match resolved.as_slice() {
        [] => Err("the body makes no resolved (wcr) write: nothing accumulates".into()),
        [m] => Ok(*m),
        many => {
            let list: Vec<String> = many
                .iter()
                .map(|m| format!("{}{}", m.data, m.subset))
                .collect();
            Err(format!(
                "the body makes {} resolved writes ({}); expected one",
                many.len(),
                list.join(", ")
            ))
        }
    }
}

/// No kept range mentions a reduced parameter (the kept ones stay in the outer map).
fn independent(kept: &[MapParam], reduced: &[MapParam]) -> Result<(), String> {
    for k in kept {
        if let Some(r) = reduced.iter().find(|r| {
            [&k.range.start, &k.range.end, &k.range.step]
                .iter()
                .any(|e| e.mentions(&r.name))
        }) {
            return Err(format!(
                "the range of `{}` depends on reduced parameter `{}`",
                k.name, r.name
            ));
        }
    }
    Ok(())
}

/// Points the body's resolved write of `data` at the register `acc` instead.
fn redirect(body: &mut Graph, data: &str, acc: &str) {
    for n in body.nodes_mut() {
        if matches!(&n.kind, NodeKind::Access(d) if d == data) {
            n.kind = NodeKind::Access(acc.to_string());
            n.label = acc.to_string();
        }
    }
    for m in body.memlets_mut() {
        if m.data == data {
            m.data = acc.to_string();
            m.subset = Subset::default();
        }
    }
}

/// `acc = identity → inner map (acc ⊕= …) → C[s] ⊕= acc`, ordered through the register's
/// access nodes.
fn staged_body(
    label: &str,
    red: &Reduction,
    acc: &str,
    inner_id: NodeId,
    inner: MapNode,
    ids: &mut dyn FnMut() -> NodeId,
) -> Graph {
    let mut g = Graph::default();
    let mut add = |g: &mut Graph, label: String, kind: NodeKind| {
        g.add_node(Node {
            id: ids(),
            label,
            kind,
        })
    };
    let tasklet = |inputs: Vec<String>, value: TExpr| {
        NodeKind::Tasklet(Tasklet {
            inputs,
            outputs: vec![("o".to_string(), value)],
        })
    };
    let access = |d: &str| NodeKind::Access(d.to_string());
    let scalar = || Memlet::new(acc, Subset::default());
    let init = add(
        &mut g,
        format!("{label}_init"),
        tasklet(Vec::new(), TExpr::Const(f64::from(red.wcr.identity()))),
    );
    let fresh = add(&mut g, acc.to_string(), access(acc));
    g.add_edge(init, fresh, scalar().from_conn("o"));
    let reduce = g.add_node(Node {
        id: inner_id,
        label: format!("{label}_reduce"),
        kind: NodeKind::Map(inner),
    });
    g.add_edge(fresh, reduce, scalar());
    let summed = add(&mut g, acc.to_string(), access(acc));
    g.add_edge(reduce, summed, scalar().with_wcr(Some(red.wcr)));
    let write = add(
        &mut g,
        format!("{label}_write"),
        tasklet(vec!["a".to_string()], TExpr::input("a")),
    );
    g.add_edge(summed, write, scalar().to_conn("a"));
    let out = add(&mut g, red.data.clone(), access(&red.data));
    g.add_edge(
        write,
        out,
        Memlet::new(red.data.clone(), red.subset.clone())
            .with_wcr(Some(red.wcr))
            .from_conn("o"),
    );
    g
}
