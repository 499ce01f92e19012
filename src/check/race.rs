//! Dependence analysis of a map's iterations, from memlet subsets.
//!
//! Running iterations in parallel (threads or SIMD lanes) is legal when no two of them write the
//! same element without write-conflict resolution and none reads what another writes. The proof
//! is deliberately simple and sound: the loops between the distributed map and an access are
//! folded into per-dimension intervals ([`Subset::propagate`], innermost first), and for every
//! distributed parameter `q` some dimension's interval must move strictly past itself when `q`
//! advances by one step. `min`/`max` bounds, as tiling produces, are handled by bounding them
//! with one of their arguments. Parallelize uses it for legality; the C backend uses it to decide
//! where a resolved write needs an atomic update and where `omp simd` is safe.

use crate::ir::subset::ParamBounds;
use crate::ir::{
    DataDesc, Dim, Graph, MapNode, MapParam, NodeKind, Program, Storage, Subset, SymExpr, Wcr,
};
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
    let global = |_: &str, desc: &DataDesc| desc.storage == Storage::Global;
    collect(&map.body, &[], data, &global, &mut out);
    out
}

/// Every access inside `map`'s body to a container its iterations share: global ones, and
/// local or register ones that also live outside the body (the C backend then declares them
/// outside the loop, so iterations see each other's values — carried state such as an online
/// softmax's running max and sum).
fn shared_accesses(map: &MapNode, p: &Program) -> Vec<BodyAccess> {
    let mut out = Vec::new();
    let shared = |name: &str, desc: &DataDesc| {
        desc.storage == Storage::Global || !private_to_body(p, &map.body, name)
    };
    collect(&map.body, &[], &p.data, &shared, &mut out);
    out
}

/// Number of access nodes of `data` in `g` and its nested scopes.
pub fn access_count(g: &Graph, data: &str) -> usize {
    let mut n = 0;
    g.each(&mut |node| {
        if matches!(&node.kind, NodeKind::Access(d) if d == data) {
            n += 1;
        }
    });
    n
}

/// True when every access node of `data` in the program lies inside `body`, so each iteration
/// of the map owning `body` has its own copy (the C backend declares it there).
pub fn private_to_body(p: &Program, body: &Graph, data: &str) -> bool {
    access_count(&p.graph, data) == access_count(body, data)
}

fn collect(
    g: &Graph,
    inner: &[&MapParam],
    data: &BTreeMap<String, DataDesc>,
    include: &dyn Fn(&str, &DataDesc) -> bool,
    out: &mut Vec<BodyAccess>,
) {
    for idx in g.ordered() {
        match &g.node(idx).kind {
            NodeKind::Map(m) => {
                let mut params = inner.to_vec();
                params.extend(m.params.iter());
                collect(&m.body, &params, data, include, out);
            }
            NodeKind::Tasklet(_) => {
                let edges = g
                    .in_edges(idx)
                    .into_iter()
                    .map(|e| (e, false))
                    .chain(g.out_edges(idx).into_iter().map(|e| (e, true)));
                for (e, write) in edges {
                    let Some(desc) = data.get(&e.memlet.data) else {
                        continue;
                    };
                    if !include(&e.memlet.data, desc) {
                        continue;
                    }
                    out.push(BodyAccess {
                        data: e.memlet.data.clone(),
                        subset: fold(&e.memlet.subset, &desc.shape, inner),
                        wcr: e.memlet.wcr,
                        write,
                    });
                }
            }
            NodeKind::Access(_) | NodeKind::Library(_) => {}
        }
    }
}

/// The subset an access covers over all iterations of the `inner` loops (outermost first).
fn fold(subset: &Subset, shape: &[SymExpr], inner: &[&MapParam]) -> Subset {
    let mut folded = subset.clone();
    for p in inner.iter().rev() {
        let bounds = [ParamBounds {
            name: &p.name,
            range: &p.range,
        }];
        folded = folded.propagate(&bounds, shape);
    }
    folded
}

/// True when iterations that differ in any of `distributed` write disjoint elements of
/// `subset`, whatever the parameters in `inner` (the loops inside, outermost first) do.
pub fn disjoint_across(
    subset: &Subset,
    shape: &[SymExpr],
    distributed: &[MapParam],
    inner: &[&MapParam],
) -> bool {
    let folded = fold(subset, shape, inner);
    distributed
        .iter()
        .all(|q| folded.0.iter().any(|dim| separates(dim, q, distributed)))
}

/// Whether this dimension's interval, as a function of `q` alone among the distributed
/// parameters, is disjoint for distinct values of `q`.
fn separates(dim: &Dim, q: &MapParam, distributed: &[MapParam]) -> bool {
    let (lo, hi) = match dim {
        Dim::Index(e) => (e.clone(), e + 1),
        Dim::Range(r) => (r.start.clone(), r.end.clone()),
    };
    let mentions = |name: &str| lo.mentions(name) || hi.mentions(name);
    if !mentions(&q.name)
        || distributed
            .iter()
            .any(|o| o.name != q.name && mentions(&o.name))
    {
        return false;
    }
    let next = |e: &SymExpr| {
        e.substitute(
            &q.name,
            &(SymExpr::sym(q.name.as_str()) + q.range.step.clone()),
        )
    };
    let (lo_next, hi_next) = (next(&lo), next(&hi));
    let increasing = provably_nonneg(&(&lo_next - &hi), 4) && provably_nonneg(&(&lo_next - &lo), 4);
    let decreasing = provably_nonneg(&(&lo - &hi_next), 4) && provably_nonneg(&(&lo - &lo_next), 4);
    increasing || decreasing
}

/// A sound (incomplete) test for `e ≥ 0`: constants are decided; otherwise a term `−c·min(a, b)`
/// is bounded below by `−c·a` or `−c·b` (and `+c·max(a, b)` by `+c·a` or `+c·b`) and the bound
/// tried instead, up to `depth` replacements.
pub fn provably_nonneg(e: &SymExpr, depth: u8) -> bool {
    let e = e.simplify();
    if let Some(v) = e.as_int() {
        return v >= 0;
    }
    if depth == 0 {
        return false;
    }
    let terms = match &e {
        SymExpr::Add(t) => t.clone(),
        other => vec![other.clone()],
    };
    for (i, term) in terms.iter().enumerate() {
        let (coef, atom) = match term {
            SymExpr::Mul(f) if f.len() == 2 => match (&f[0], &f[1]) {
                (SymExpr::Int(c), atom) => (*c, atom),
                _ => continue,
            },
            atom => (1, atom),
        };
        let options = match atom {
            SymExpr::Min(a, b) if coef < 0 => [a, b],
            SymExpr::Max(a, b) if coef > 0 => [a, b],
            _ => continue,
        };
        for bound in options {
            let mut replaced = terms.clone();
            replaced[i] = bound.as_ref() * coef;
            if provably_nonneg(&SymExpr::Add(replaced), depth - 1) {
                return true;
            }
        }
    }
    false
}

/// Why running the iterations of `map` (a map of `p`, or one with the same body) in parallel
/// would be wrong, if it would.
pub fn parallel_conflict(map: &MapNode, p: &Program) -> Option<String> {
    let accesses = shared_accesses(map, p);
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
        let colliding = map
            .params
            .iter()
            .find(|q| !a.subset.0.iter().any(|dim| separates(dim, q, &map.params)));
        if let Some(p) = colliding {
            return Some(format!(
                "the body writes {}{} without write-conflict resolution, and iterations that differ only in `{}` write the same elements",
                a.data, a.subset, p.name
            ));
        }
    }
    None
}

/// One accumulation of a vector map that its lanes share: a SIMD reduction (see
/// [`lane_reductions`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LaneReduction {
    pub data: String,
    pub subset: Subset,
    pub wcr: Wcr,
}

/// The writes of the tasklets directly in `m`'s body that every value of its last parameter
/// (the lanes) makes to the same element and that can run as a SIMD reduction, each lane
/// accumulating a share combined at the end: a write-conflict resolution reassociable in the
/// container's type (`dtype` gives it; `Wcr::reassociable_in`), into a container the body does
/// not also read (a lane would see a partial value). `Vectorize` admits these writes and the C
/// backend emits them as `omp simd reduction`; both ask here.
pub fn lane_reductions(
    m: &MapNode,
    dtype: impl Fn(&str) -> Option<crate::ir::DType>,
) -> Vec<LaneReduction> {
    let Some(lane) = m.params.last() else {
        return Vec::new();
    };
    let g = &m.body;
    let tasklets =
        || (g.node_indices()).filter(|&i| matches!(g.node(i).kind, NodeKind::Tasklet(_)));
    let read: std::collections::BTreeSet<&str> = tasklets()
        .flat_map(|i| g.in_edges(i))
        .map(|e| e.memlet.data.as_str())
        .collect();
    let mut out = Vec::new();
    for e in tasklets().flat_map(|i| g.out_edges(i)) {
        let memlet = e.memlet;
        let reassociable = |w: &Wcr| dtype(&memlet.data).is_some_and(|d| w.reassociable_in(d));
        let Some(wcr) = memlet.wcr.filter(reassociable) else {
            continue;
        };
        if !memlet.subset.free_symbols().contains(&lane.name)
            && !read.contains(memlet.data.as_str())
        {
            out.push(LaneReduction {
                data: memlet.data.clone(),
                subset: memlet.subset.clone(),
                wcr,
            });
        }
    }
    out
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

    fn s(n: &str) -> SymExpr {
        SymExpr::sym(n)
    }

    #[test]
    fn reduction_index_collides_and_row_index_does_not() {
        let i = param("i", Range::upto(8));
        let k = param("k", Range::upto(8));
        let shape = [SymExpr::Int(8)];
        let row = Subset::element([s("i")]);
        assert!(disjoint_across(
            &row,
            &shape,
            std::slice::from_ref(&i),
            &[&k]
        ));
        assert!(!disjoint_across(
            &row,
            &shape,
            std::slice::from_ref(&k),
            &[]
        ));
        let skew = Subset::element([s("i") + s("k")]);
        assert!(!disjoint_across(&skew, &[SymExpr::Int(16)], &[i], &[&k]));
    }

    #[test]
    fn tiles_with_min_bounds_are_disjoint() {
        let ii = param("ii", Range::upto(4));
        let it = param(
            "it",
            Range::new(s("ii") * 32, (s("ii") * 32 + 32).min(100.into())),
        );
        let shape = [SymExpr::Int(100)];
        let sub = Subset::element([s("it")]);
        assert!(disjoint_across(&sub, &shape, &[ii], &[&it]));
    }

    #[test]
    fn proves_simple_inequalities() {
        assert!(provably_nonneg(&SymExpr::Int(0), 1));
        assert!(!provably_nonneg(&SymExpr::Int(-1), 1));
        let e = s("q") * 32 + 32 - (s("q") * 32 + 32).min(s("n"));
        assert!(provably_nonneg(&e, 2));
        assert!(!provably_nonneg(&s("q"), 2));
    }

    #[test]
    fn parallel_conflict_names_the_colliding_parameter() {
        use crate::ir::{DType, DataKind, Memlet, Node, NodeId, TExpr, Tasklet};
        let mut data = BTreeMap::new();
        data.insert(
            "Y".to_string(),
            DataDesc::new(DType::F32, vec![SymExpr::Int(8)], DataKind::Output),
        );
        let mut body = Graph::default();
        let t = body.add_node(Node {
            id: NodeId(0),
            label: "t".into(),
            kind: NodeKind::Tasklet(Tasklet {
                inputs: vec![],
                outputs: vec![("y".into(), TExpr::Const(1.0))],
            }),
        });
        let y = body.add_node(Node {
            id: NodeId(1),
            label: "Y".into(),
            kind: NodeKind::Access("Y".into()),
        });
        body.add_edge(
            t,
            y,
            Memlet::new("Y", Subset::element([s("i")])).from_conn("y"),
        );
        let map = MapNode {
            params: vec![param("i", Range::upto(8)), param("k", Range::upto(8))],
            schedule: crate::ir::Schedule::Sequential,
            min_work: 0,
            body,
        };
        let mut p = Program::new("conflict");
        p.data = data.into();
        let why = parallel_conflict(&map, &p).expect("conflict");
        assert!(why.contains("differ only in `k`"), "{why}");
    }
}
