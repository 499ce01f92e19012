//! Read-only views of the IR, registered as Rhai types.
//!
//! `Program` and `Node` are handles: a node is its id, looked up in the program lent to the
//! current call on every access ([`super::world`]), so a view never goes stale silently and
//! has no setter to write through. `Memlet` and `Data` are copies of what the IR holds, also
//! without setters. Symbolic values reach scripts as integers when they are constants and as
//! their text otherwise (`"N * 4"`), so a script can compute with the common case and still
//! see the rest.

use super::world::with_program;
use crate::ir::{Attr, DataDesc, Memlet, Node, NodeId, NodeKind, Program, SymExpr};
use crate::transform::engine::program_hash;
use rhai::{Array, CustomType, Dynamic, Engine, EvalAltResult, Map, TypeBuilder, INT};

type Res<T> = Result<T, Box<EvalAltResult>>;

/// The program lent to the current call.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProgramView;

/// A node, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef(pub NodeId);

/// One memlet: what data moves on an edge, and between which nodes.
#[derive(Clone, Debug)]
pub struct MemletView {
    memlet: Memlet,
    src: NodeId,
    dst: NodeId,
}

/// One data container's descriptor.
#[derive(Clone, Debug)]
pub struct DataView {
    name: String,
    desc: DataDesc,
}

pub fn register(e: &mut Engine) {
    e.build_type::<ProgramView>();
    e.build_type::<NodeRef>();
    e.build_type::<MemletView>();
    e.build_type::<DataView>();
}

/// Reads the lent program, as a script error when none is lent.
fn read<R>(f: impl FnOnce(&Program) -> Res<R>) -> Res<R> {
    with_program(f).map_err(Box::<EvalAltResult>::from)?
}

/// A symbolic value as a script sees it: an integer when constant, its text otherwise.
pub fn sym(e: &SymExpr) -> Dynamic {
    match e.as_int() {
        Some(v) => Dynamic::from_int(v),
        None => Dynamic::from(e.to_string()),
    }
}

fn attr(a: &Attr) -> Dynamic {
    match a {
        Attr::Int(v) => Dynamic::from_int(*v),
        Attr::Float(v) => Dynamic::from_float(*v),
        Attr::Str(s) => Dynamic::from(s.clone()),
        Attr::Ints(v) => Dynamic::from_array(v.iter().map(|x| Dynamic::from_int(*x)).collect()),
        Attr::Floats(v) => Dynamic::from_array(v.iter().map(|x| Dynamic::from_float(*x)).collect()),
        Attr::Strs(v) => Dynamic::from_array(v.iter().map(|s| Dynamic::from(s.clone())).collect()),
    }
}

fn handles(ids: impl IntoIterator<Item = NodeId>) -> Array {
    ids.into_iter()
        .map(|id| Dynamic::from(NodeRef(id)))
        .collect()
}

/// Every node matching `keep`, outer scopes first (the order candidates are listed in).
fn collect(p: &Program, keep: impl Fn(&Node) -> bool) -> Array {
    let mut ids = Vec::new();
    p.graph.walk(&mut |n| {
        if keep(n) {
            ids.push(n.id);
        }
    });
    handles(ids)
}

/// A node id given by a script: a `Node` handle or an integer.
pub fn node_id(v: &Dynamic) -> Res<NodeId> {
    if let Some(n) = v.clone().try_cast::<NodeRef>() {
        return Ok(n.0);
    }
    match v.as_int().ok().and_then(|i| u32::try_from(i).ok()) {
        Some(i) => Ok(NodeId(i)),
        None => Err(format!("expected a node (or its id), found {}", v.type_name()).into()),
    }
}

impl NodeRef {
    fn with<R>(&self, f: impl FnOnce(&Node) -> R) -> Res<R> {
        read(|p| match p.node(self.0) {
            Some(n) => Ok(f(n)),
            None => Err(format!("node {} no longer exists", self.0).into()),
        })
    }

    /// The memlets on this node's incoming (`incoming`) or outgoing edges, in its scope.
    fn memlets(&self, incoming: bool) -> Res<Array> {
        read(|p| {
            let (g, idx) = (p.graph.locate(self.0))
                .ok_or_else(|| format!("node {} no longer exists", self.0))?;
            let edges = if incoming {
                g.in_edges(idx)
            } else {
                g.out_edges(idx)
            };
            Ok(edges
                .into_iter()
                .map(|e| {
                    let other = g.node(e.other).id;
                    let (src, dst) = if incoming {
                        (other, self.0)
                    } else {
                        (self.0, other)
                    };
                    Dynamic::from(MemletView {
                        memlet: e.memlet.clone(),
                        src,
                        dst,
                    })
                })
                .collect())
        })
    }

    /// The map whose body directly holds this node (`()` at the top level).
    fn scope(&self) -> Res<Dynamic> {
        read(|p| {
            if p.graph.index_of(self.0).is_some() {
                return Ok(Dynamic::UNIT);
            }
            let mut owner = None;
            p.graph.walk(&mut |n| {
                if let NodeKind::Map(m) = &n.kind {
                    if m.body.index_of(self.0).is_some() {
                        owner = Some(n.id);
                    }
                }
            });
            owner
                .map(|id| Dynamic::from(NodeRef(id)))
                .ok_or_else(|| format!("node {} no longer exists", self.0).into())
        })
    }
}

impl CustomType for ProgramView {
    fn build(mut b: TypeBuilder<Self>) {
        b.with_name("Program")
            .with_get("name", |_: &mut Self| read(|p| Ok(p.name.clone())))
            .with_get("inputs", |_: &mut Self| read(|p| Ok(strings(&p.inputs))))
            .with_get("outputs", |_: &mut Self| read(|p| Ok(strings(&p.outputs))))
            .with_get("hash", |_: &mut Self| read(|p| Ok(program_hash(p))))
            .with_fn("nodes", |_: &mut Self| read(|p| Ok(collect(p, |_| true))))
            .with_fn("maps", |_: &mut Self| {
                read(|p| Ok(collect(p, |n| matches!(n.kind, NodeKind::Map(_)))))
            })
            .with_fn("operators", |_: &mut Self| {
                read(|p| Ok(collect(p, |n| matches!(n.kind, NodeKind::Library(_)))))
            })
            .with_fn("node", |_: &mut Self, id: Dynamic| {
                let id = node_id(&id)?;
                read(|p| match p.node(id) {
                    Some(_) => Ok(NodeRef(id)),
                    None => Err(format!("the program has no node {id}").into()),
                })
            })
            .with_fn("data", |_: &mut Self, name: &str| {
                read(|p| match p.data.get(name) {
                    Some(desc) => Ok(DataView {
                        name: name.to_string(),
                        desc: desc.clone(),
                    }),
                    None => Err(format!("the program declares no data `{name}`").into()),
                })
            })
            .with_fn("data_names", |_: &mut Self| {
                read(|p| Ok(strings(p.data.keys())))
            })
            .with_fn("symbols", |_: &mut Self| {
                read(|p| {
                    let mut m = Map::new();
                    for (k, v) in &p.symbols {
                        m.insert(k.into(), v.map_or(Dynamic::UNIT, Dynamic::from_int));
                    }
                    Ok(m)
                })
            })
            .with_fn("to_string", |_: &mut Self| {
                read(|p| Ok(format!("program `{}`", p.name)))
            });
    }
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Array {
    items
        .into_iter()
        .map(|s| Dynamic::from(s.clone()))
        .collect()
}

impl CustomType for NodeRef {
    fn build(mut b: TypeBuilder<Self>) {
        b.with_name("Node")
            .with_get("id", |n: &mut Self| n.0 .0 as INT)
            .with_get("kind", |n: &mut Self| {
                n.with(|x| x.kind.kind_name().to_string())
            })
            .with_get("label", |n: &mut Self| n.with(|x| x.label.clone()))
            .with_get("op", |n: &mut Self| {
                n.with(|x| match &x.kind {
                    NodeKind::Library(l) => Dynamic::from(l.op.clone()),
                    _ => Dynamic::UNIT,
                })
            })
            .with_get("attrs", |n: &mut Self| {
                n.with(|x| {
                    let mut m = Map::new();
                    if let NodeKind::Library(l) = &x.kind {
                        for (k, v) in &l.attrs {
                            m.insert(k.into(), attr(v));
                        }
                    }
                    m
                })
            })
            .with_get("data", |n: &mut Self| {
                n.with(|x| match &x.kind {
                    NodeKind::Access(d) => Dynamic::from(d.clone()),
                    _ => Dynamic::UNIT,
                })
            })
            .with_get("schedule", |n: &mut Self| {
                n.with(|x| match &x.kind {
                    NodeKind::Map(m) => Dynamic::from(m.schedule.name().to_string()),
                    _ => Dynamic::UNIT,
                })
            })
            .with_get("params", |n: &mut Self| {
                n.with(|x| match &x.kind {
                    NodeKind::Map(m) => (m.params.iter())
                        .map(|prm| {
                            let mut d = Map::new();
                            d.insert("name".into(), Dynamic::from(prm.name.clone()));
                            d.insert("start".into(), sym(&prm.range.start));
                            d.insert("end".into(), sym(&prm.range.end));
                            d.insert("step".into(), sym(&prm.range.step));
                            d.insert("extent".into(), sym(&prm.range.len()));
                            let mut used: Vec<String> =
                                [&prm.range.start, &prm.range.end, &prm.range.step]
                                    .iter()
                                    .flat_map(|e| e.free_symbols())
                                    .collect();
                            used.sort();
                            used.dedup();
                            d.insert("symbols".into(), strings(&used).into());
                            Dynamic::from_map(d)
                        })
                        .collect::<Array>(),
                    _ => Array::new(),
                })
            })
            .with_fn("inputs", |n: &mut Self| n.memlets(true))
            .with_fn("outputs", |n: &mut Self| n.memlets(false))
            .with_fn("body", |n: &mut Self| {
                n.with(|x| match &x.kind {
                    NodeKind::Map(m) => {
                        handles(m.body.ordered().into_iter().map(|i| m.body.node(i).id))
                    }
                    _ => Array::new(),
                })
            })
            .with_fn("scope", |n: &mut Self| n.scope())
            .with_fn("to_string", |n: &mut Self| {
                n.with(|x| format!("{} ({} `{}`)", x.id, x.kind.kind_name(), x.label))
            })
            .with_fn("==", |a: &mut Self, b: Self| *a == b)
            .with_fn("!=", |a: &mut Self, b: Self| *a != b);
    }
}

impl CustomType for MemletView {
    fn build(mut b: TypeBuilder<Self>) {
        b.with_name("Memlet")
            .with_get("data", |m: &mut Self| m.memlet.data.clone())
            .with_get("subset", |m: &mut Self| m.memlet.subset.to_string())
            .with_get("volume", |m: &mut Self| sym(&m.memlet.subset.volume()))
            .with_get("wcr", |m: &mut Self| match m.memlet.wcr {
                Some(w) => Dynamic::from(w.name().to_string()),
                None => Dynamic::UNIT,
            })
            .with_get("src", |m: &mut Self| NodeRef(m.src))
            .with_get("dst", |m: &mut Self| NodeRef(m.dst))
            .with_get("src_conn", |m: &mut Self| opt(&m.memlet.src_conn))
            .with_get("dst_conn", |m: &mut Self| opt(&m.memlet.dst_conn))
            .with_fn("to_string", |m: &mut Self| {
                format!("{}{}", m.memlet.data, m.memlet.subset)
            });
    }
}

fn opt(s: &Option<String>) -> Dynamic {
    s.clone().map_or(Dynamic::UNIT, Dynamic::from)
}

impl CustomType for DataView {
    fn build(mut b: TypeBuilder<Self>) {
        b.with_name("Data")
            .with_get("name", |d: &mut Self| d.name.clone())
            .with_get("dtype", |d: &mut Self| d.desc.dtype.name().to_string())
            .with_get("shape", |d: &mut Self| {
                d.desc.shape.iter().map(sym).collect::<Array>()
            })
            .with_get("kind", |d: &mut Self| d.desc.kind.name().to_string())
            .with_get("storage", |d: &mut Self| d.desc.storage.name().to_string())
            .with_get("elements", |d: &mut Self| sym(&d.desc.elements()))
            .with_get("element_bytes", |d: &mut Self| {
                d.desc.dtype.size_bytes() as INT
            })
            .with_fn("to_string", |d: &mut Self| {
                let shape: Vec<String> = d.desc.shape.iter().map(|s| s.to_string()).collect();
                format!("{}: {}[{}]", d.name, d.desc.dtype.name(), shape.join(", "))
            });
    }
}
