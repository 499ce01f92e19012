//! Pack: store an operand in the blocked order a tiled map walks it, copied once before the map.
//!
//! ```text
//! before:  map [i_tile = 0:M:8, j_tile = 0:N:32] {            // A: f32[M, K]
//!            … map [k = 0:K] { map [i = i_tile:i_tile + 8] { … A[i, k] … } } …
//!          }
//! after:   A_packed: transient f32[M / 8, K, 8]
//!          map [b = 0:M / 8, c1 = 0:K, r = 0:8] parallel { A_packed[b, c1, r] = A[8 * b + r, c1] }
//!          map [i_tile = 0:M:8, j_tile = 0:N:32] {             // keeps its id
//!            … A_packed[i_tile / 8, k, i - i_tile] …
//!          }
//! ```
//! The tiles of one parameter of the site map become the blocks: the dimension of the operand
//! that parameter indexes is split into a block index (outermost) and an offset inside the block
//! (innermost), the other dimensions keep their order in between. A register tile that walks
//! `k` then reads one contiguous run of `8` elements per step instead of 8 rows a whole row
//! apart, which share cache sets and TLB entries once the rows are a page long. The copy reads
//! the operand once; the map then never reads the operand itself. Whether that pays depends on
//! the operand: a constant's copy is folded at build time (free), a runtime operand's is paid on
//! every run — `std::gemm` packs only B, the operand its SIMD lanes walk (on a 2-core Xeon with
//! AVX-512, also packing A was slower: ResNet-18 32 vs 26 ms, MatMul 1024 7.5 vs 7.1 ms).
//!
//! Only what can be rewritten exactly is packed: the tile parameter starts at 0, runs over the
//! dimension's constant extent in constant steps (a step that does not divide it leaves the last
//! block partly filled: it is copied and read only as far as the tiling's clipped last tile
//! reaches, `i_tile:min(i_tile + 8, M)`), every access of the operand inside the map
//! indexes that dimension with a parameter ranging over exactly one tile (`i_tile:i_tile + 8`)
//! or with that tile's range, and the map only reads the operand (no element reads at computed
//! indices, which a layout change would have to rewrite too).

use crate::ir::build::{In, Out, ScopeBuilder};
use crate::ir::{
    DataKind, Dim, Graph, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Program, Range,
    Schedule, Storage, Subset, SymExpr, TExpr,
};
use crate::transform::support::maps::MIN_PARALLEL_WORK;
use crate::transform::support::names::{fresh, taken_names};
use crate::transform::{
    expect_map, refuse, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan,
    Role, Schema, Transformation,
};
use std::collections::BTreeMap;

pub struct Pack;

const SCHEMA: Schema = Schema {
    name: "Pack",
    level: Level::IntraOperator,
    doc: "store an operand blocked by the tiles of a map parameter (block index outermost, offset innermost), copied once before the map",
    site: &[Role::new(
        "map",
        NodeClass::Map,
        "a top-level tiled map that reads the operand",
    )],
    params: &[
        ParamDecl {
            name: "data",
            kind: ParamKind::Data,
            default: Default::Required,
            doc: "the operand to pack (read, not written, by the map)",
        },
        ParamDecl {
            name: "param",
            kind: ParamKind::MapParam,
            default: Default::Required,
            doc: "the tile parameter whose tiles become the blocks, by name or position",
        },
    ],
};

/// What planning found: where the blocks are, how the packed container is declared, and the
/// site's body already pointed at it.
struct Packing {
    data: String,
    packed: String,
    /// The blocked dimension of the operand.
    dim: usize,
    /// The block size (the tile parameter's step).
    block: i64,
    /// The blocked dimension's extent: when the blocks do not divide it, the last block is
    /// partly filled (the rest is never written nor read).
    extent: i64,
    /// The operand's shape, and the packed one: `[extent / block, others…, block]`.
    shape: Vec<SymExpr>,
    packed_shape: Vec<SymExpr>,
    counters: Vec<String>,
    /// The site map's body, reading the packed container.
    body: Graph,
}

/// One blocked dimension being rewritten: `data[…, x, …]` → `packed[tile / block, …, x - tile]`.
struct Blocks<'a> {
    data: &'a str,
    packed: &'a str,
    dim: usize,
    tile: &'a str,
    block: i64,
    extent: i64,
}

impl Transformation for Pack {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let packing = self.packing(p, id, args.str("data")?, args.int("param")?)?;
        Ok(Plan::new(move |p| pack(p, id, packing)))
    }
}

impl Pack {
    fn packing(
        &self,
        p: &Program,
        id: NodeId,
        data: &str,
        pos: i64,
    ) -> Result<Packing, NotApplicable> {
        let no = |r: String| refuse(self, id, r);
        let map = expect_map(self, p, id)?;
        let idx = (p.graph.index_of(id)).ok_or_else(|| {
            no("the map is nested: Pack copies the operand before a top-level map".into())
        })?;
        let prm = usize::try_from(pos)
            .ok()
            .and_then(|k| map.params.get(k))
            .ok_or_else(|| {
                no(format!(
                    "position {pos} is outside the map's {} parameters",
                    map.params.len()
                ))
            })?;
        let block = tile_step(prm).map_err(no)?;
        let desc =
            (p.data.get(data)).ok_or_else(|| no(format!("no container `{data}` is declared")))?;
        if desc.storage != Storage::Global {
            return Err(no(format!("`{data}` has {} storage", desc.storage.name())));
        }
        if (p.graph.out_edges(idx).iter()).any(|e| e.memlet.data == data) {
            return Err(no(format!(
                "the map writes `{data}`; only operands it reads are packed"
            )));
        }
        if !(p.graph.in_edges(idx).iter()).any(|e| e.memlet.data == data) {
            return Err(no(format!("the map does not read `{data}`")));
        }
        let dim = blocked_dim(&map.body, data, &prm.name).map_err(no)?;
        let extent = match desc.shape[dim].as_int() {
            Some(e) if Some(e) == prm.range.end.as_int() => e,
            _ => {
                return Err(no(format!(
                    "`{}` = {} does not cover dimension {dim} of `{data}` (extent {})",
                    prm.name, prm.range, desc.shape[dim]
                )))
            }
        };
        let packed = p.fresh_data_name(&format!("{data}_packed"));
        let blocks = Blocks {
            data,
            packed: &packed,
            dim,
            tile: &prm.name,
            block,
            extent,
        };
        let mut body = map.body.clone();
        redirect(&mut body, &blocks, &mut BTreeMap::new()).map_err(no)?;
        let mut packed_shape = vec![SymExpr::Int((extent + block - 1) / block)];
        packed_shape.extend(others(&desc.shape, dim).cloned());
        packed_shape.push(SymExpr::Int(block));
        let taken = taken_names(p);
        Ok(Packing {
            data: data.to_string(),
            packed,
            dim,
            block,
            extent,
            shape: desc.shape.clone(),
            packed_shape,
            counters: (0..=desc.rank())
                .map(|d| fresh(&format!("c{d}"), &taken))
                .collect(),
            body,
        })
    }
}

/// The entries of `items` other than the one at `dim`, in order.
fn others<T>(items: &[T], dim: usize) -> impl Iterator<Item = &T> {
    (items.iter().enumerate())
        .filter(move |(d, _)| *d != dim)
        .map(|(_, x)| x)
}

/// The block size of a tile parameter: its constant step, from 0.
fn tile_step(prm: &MapParam) -> Result<i64, String> {
    match (prm.range.start.as_int(), prm.range.step.as_int()) {
        (Some(0), Some(step)) if step >= 2 => Ok(step),
        _ => Err(format!(
            "`{}` = {} is not a tile parameter (from 0 in constant steps of at least 2): tile the map first",
            prm.name, prm.range
        )),
    }
}

/// The one dimension of `data` whose indices inside `body` mention the tile parameter.
fn blocked_dim(body: &Graph, data: &str, tile: &str) -> Result<usize, String> {
    let mut dims = Vec::new();
    visit_memlets(body, data, &mut |m| {
        for (d, dim) in m.subset.0.iter().enumerate() {
            if dim.free_symbols().iter().any(|s| s == tile) && !dims.contains(&d) {
                dims.push(d);
            }
        }
    });
    match dims.as_slice() {
        [d] => Ok(*d),
        [] => Err(format!(
            "no access of `{data}` inside the map depends on `{tile}`: its tiles do not block `{data}`"
        )),
        _ => Err(format!(
            "accesses of `{data}` depend on `{tile}` in dimensions {dims:?}; one blocked dimension is packed"
        )),
    }
}

/// Calls `f` on every memlet of `data` in `g` and its nested scopes.
fn visit_memlets(g: &Graph, data: &str, f: &mut dyn FnMut(&Memlet)) {
    for e in g.edges().filter(|e| e.memlet.data == data) {
        f(e.memlet);
    }
    for n in g.nodes() {
        if let NodeKind::Map(m) = &n.kind {
            visit_memlets(&m.body, data, f);
        }
    }
}

/// The packed subset of one access: dimension `dim` becomes the block `tile / block` in front
/// and the offset in the tile at the end. The offset is exact only for an index that is a
/// parameter ranging over one whole tile, or for that tile's range.
fn blocked(s: &Subset, b: &Blocks, ranges: &BTreeMap<String, Range>) -> Result<Subset, String> {
    let (dim, tile, block) = (b.dim, b.tile, b.block);
    let t = SymExpr::sym(tile);
    let whole_end = (&t + block).simplify();
    let clipped_end = whole_end.clone().min(SymExpr::Int(b.extent));
    let clipped = |end: &SymExpr| match end {
        SymExpr::Min(x, y) => {
            (**x == whole_end && **y == SymExpr::Int(b.extent))
                || (**y == whole_end && **x == SymExpr::Int(b.extent))
        }
        _ => false,
    };
    let one_tile = |r: &Range| {
        r.start == t && (r.end == whole_end || clipped(&r.end)) && r.step == SymExpr::Int(1)
    };
    let offset = match &s.0[dim] {
        Dim::Range(r) if one_tile(r) && r.end == whole_end => Dim::Range(Range::upto(block)),
        Dim::Range(r) if one_tile(r) => Dim::Range(Range::upto((&clipped_end - &t).simplify())),
        Dim::Index(SymExpr::Sym(q)) if ranges.get(q).is_some_and(one_tile) => {
            Dim::Index((SymExpr::sym(q.as_str()) - &t).simplify())
        }
        other => {
            return Err(format!(
                "{}{s} cannot be packed: dimension {dim} is {other}, not one tile of `{tile}` ({tile}:{tile} + {block})",
                b.data
            ))
        }
    };
    let mut dims = vec![Dim::Index(t.floor_div(SymExpr::Int(block)))];
    dims.extend(others(&s.0, dim).cloned());
    dims.push(offset);
    Ok(Subset(dims))
}

/// Declares the packed container, points the map's body at it and puts the copy before it.
fn pack(p: &mut Program, id: NodeId, pk: Packing) -> Result<Vec<NodeId>, NotApplicable> {
    let lost = |r: &str| refuse(&Pack, id, r);
    let mut desc = (p.data.get(&pk.data).cloned()).ok_or_else(|| lost("the operand vanished"))?;
    desc.shape = pk.packed_shape.clone();
    desc.kind = DataKind::Transient;
    p.data.insert(pk.packed.clone(), desc);
    let mut edit = p.edit(id).ok_or_else(|| lost("no such node"))?;
    let n = edit.idx;
    let copy = copy_map(&mut edit.builder(), &pk);
    if let NodeKind::Map(m) = &mut edit.graph.node_mut(n).kind {
        m.body = pk.body;
    }
    let src = (edit.graph.in_edges(n).iter())
        .find(|e| e.memlet.data == pk.data)
        .map(|e| e.other)
        .ok_or_else(|| lost("the map's input edge vanished"))?;
    let copy_id = edit.fresh_id();
    let c = edit.graph.add_node(Node {
        id: copy_id,
        label: format!("{}_pack", pk.data),
        kind: NodeKind::Map(copy),
    });
    let packed_id = edit.fresh_id();
    let packed = edit.graph.add_node(Node {
        id: packed_id,
        label: pk.packed.clone(),
        kind: NodeKind::Access(pk.packed.clone()),
    });
    let whole = Subset::full(&pk.packed_shape);
    let operand = Memlet::new(pk.data.clone(), Subset::full(&pk.shape));
    (edit.graph).add_edge(src, c, operand);
    (edit.graph).add_edge(c, packed, Memlet::new(pk.packed.clone(), whole.clone()));
    (edit.graph).add_edge(packed, n, Memlet::new(pk.packed.clone(), whole));
    edit.refresh_boundary(n);
    Ok(vec![id, copy_id])
}

/// Renames `data` to the packed container in `g` (any depth) with blocked subsets, or says
/// which access cannot be blocked. `ranges` holds the parameters of the enclosing maps inside
/// the site. An element read at computed indices is refused: its indices would need the same
/// rewrite, inside the tasklet.
fn redirect(g: &mut Graph, b: &Blocks, ranges: &mut BTreeMap<String, Range>) -> Result<(), String> {
    let mut rewritten = Vec::new();
    for e in g.edges().filter(|e| e.memlet.data == b.data) {
        if let (Some(conn), NodeKind::Tasklet(t)) = (&e.memlet.dst_conn, &g.node(e.to).kind) {
            if (t.outputs.iter()).any(|(_, x)| x.element_reads().iter().any(|(c, _)| c == conn)) {
                return Err(format!(
                    "tasklet `{}` reads `{}` at computed indices",
                    g.node(e.to).label,
                    b.data
                ));
            }
        }
        rewritten.push((e.id, blocked(&e.memlet.subset, b, ranges)?));
    }
    for (e, subset) in rewritten {
        let m = g.memlet_mut(e);
        m.data = b.packed.to_string();
        m.subset = subset;
    }
    for n in g.nodes_mut() {
        match &mut n.kind {
            NodeKind::Access(d) if d == b.data => {
                *d = b.packed.to_string();
                n.label = b.packed.to_string();
            }
            NodeKind::Map(m) => {
                let saved = ranges.clone();
                ranges.extend(m.params.iter().map(|q| (q.name.clone(), q.range.clone())));
                redirect(&mut m.body, b, ranges)?;
                *ranges = saved;
            }
            _ => {}
        }
    }
    Ok(())
}

/// `map [b] parallel { map [c…, r] { packed[b, c…, r] = data[…, block * b + r, …] } }`: one
/// block per parallel iteration, so each thread copies whole blocks with plain inner loops
/// (a collapsed loop over every counter would recompute each index by division).
fn copy_map(b: &mut ScopeBuilder<'_>, pk: &Packing) -> MapNode {
    let shape = &pk.packed_shape;
    let var = |k: usize| SymExpr::sym(pk.counters[k].as_str());
    let rank = pk.shape.len();
    let mut others = (1..rank).map(var);
    let source: Vec<SymExpr> = (0..rank)
        .map(|d| match d == pk.dim {
            true => (SymExpr::Int(pk.block) * var(0) + var(rank)).simplify(),
            false => others.next().unwrap_or(SymExpr::Int(0)),
        })
        .collect();
    let mut inner: Vec<(&str, Range)> = (pk.counters[1..].iter().zip(&shape[1..]))
        .map(|(c, extent)| (c.as_str(), Range::upto(extent.clone())))
        .collect();
    if pk.extent % pk.block != 0 {
        // The last block holds what is left of the dimension.
        let left = (SymExpr::Int(pk.extent) - SymExpr::Int(pk.block) * var(0)).simplify();
        if let Some((_, r)) = inner.last_mut() {
            r.end = SymExpr::Int(pk.block).min(left);
        }
    }
    b.map(
        &format!("{}_pack_block", pk.data),
        inner,
        Schedule::Sequential,
        |s| {
            s.tasklet(
                "copy",
                vec![In("v", &pk.data, Subset::element(source))],
                vec![Out(
                    "o",
                    &pk.packed,
                    Subset::element((0..=rank).map(var)),
                    None,
                    TExpr::input("v"),
                )],
            );
        },
    );
    MapNode {
        params: vec![MapParam {
            name: pk.counters[0].clone(),
            range: Range::upto(shape[0].clone()),
        }],
        schedule: Schedule::Parallel,
        min_work: MIN_PARALLEL_WORK,
        body: std::mem::take(&mut b.graph),
    }
}
