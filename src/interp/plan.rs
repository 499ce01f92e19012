//! Compilation of map scopes and tasklets into plans, shared by the interpreter and the
//! data-movement trace so both visit element accesses in exactly the same program order.
//!
//! A map is compiled once per execution into a small tree of steps whose index expressions refer
//! to parameter *slots* instead of names (affine ones as coefficient lists), so the inner loop does
//! no map lookups. Program symbols are substituted at compile time. A tasklet's plan also fixes
//! its compute type (`ir::Precision`) and which connectors are read by element at computed indices
//! (windows); evaluating them is the interpreter's business (`super::texec`).

use super::texec::CExpr;
use super::InterpError;
use crate::ir::sym::{floor_div_int, floor_mod_int};
use crate::ir::{
    DType, DataDesc, Dim, Graph, MapNode, NodeId, NodeKind, Precision, Range, Subset, SymEnv,
    SymExpr, TExpr, Tasklet, Wcr,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

/// Most map parameters that can be nested (the size of the slot array a walk needs).
pub(crate) const MAX_SLOTS: usize = 64;

/// An index expression over parameter slots.
#[derive(Debug)]
pub(crate) enum CIdx {
    Affine {
        terms: Vec<(usize, i64)>,
        constant: i64,
    },
    /// An affine index clamped into a window (`max(min(p, hi), lo)` or `min(max(p, lo), hi)`),
    /// what padded convolutions and pools read at: evaluated without walking a tree.
    Clamped {
        terms: Vec<(usize, i64)>,
        constant: i64,
        /// The bound applied first, then the outer one.
        inner: i64,
        outer: i64,
        /// `max(min(p, inner), outer)`; else `min(max(p, inner), outer)`.
        max_outside: bool,
    },
    Tree(CTree),
}

#[derive(Debug)]
pub(crate) enum CTree {
    Int(i64),
    Slot(usize),
    Add(Vec<CTree>),
    Mul(Vec<CTree>),
    FloorDiv(Box<CTree>, Box<CTree>),
    Mod(Box<CTree>, Box<CTree>),
    Min(Box<CTree>, Box<CTree>),
    Max(Box<CTree>, Box<CTree>),
}

impl CIdx {
    pub(crate) fn eval(&self, s: &[i64]) -> Option<i64> {
        match self {
            CIdx::Affine { terms, constant } => Some(affine(terms, *constant, s)),
            CIdx::Clamped {
                terms,
                constant,
                inner,
                outer,
                max_outside,
            } => {
                let v = affine(terms, *constant, s);
                Some(if *max_outside {
                    v.min(*inner).max(*outer)
                } else {
                    v.max(*inner).min(*outer)
                })
            }
            CIdx::Tree(t) => t.eval(s),
        }
    }

    /// Whether the value can change with slot `slot` alone.
    pub(crate) fn uses(&self, slot: usize) -> bool {
        match self {
            CIdx::Affine { terms, .. } | CIdx::Clamped { terms, .. } => {
                terms.iter().any(|&(s, c)| s == slot && c != 0)
            }
            CIdx::Tree(t) => t.uses(slot),
        }
    }

    /// The constant 1 (the step of a single-index dimension).
    fn one() -> CIdx {
        CIdx::Affine {
            terms: Vec::new(),
            constant: 1,
        }
    }
}

/// `constant + Σ coefficient · slot`.
#[inline]
fn affine(terms: &[(usize, i64)], constant: i64, s: &[i64]) -> i64 {
    terms.iter().fold(constant, |acc, (slot, c)| {
        acc.wrapping_add(c.wrapping_mul(s[*slot]))
    })
}

impl CTree {
    fn uses(&self, slot: usize) -> bool {
        match self {
            CTree::Int(_) => false,
            CTree::Slot(s) => *s == slot,
            CTree::Add(t) | CTree::Mul(t) => t.iter().any(|x| x.uses(slot)),
            CTree::FloorDiv(a, b) | CTree::Mod(a, b) | CTree::Min(a, b) | CTree::Max(a, b) => {
                a.uses(slot) || b.uses(slot)
            }
        }
    }

    fn eval(&self, s: &[i64]) -> Option<i64> {
        Some(match self {
            CTree::Int(v) => *v,
            CTree::Slot(i) => s[*i],
            CTree::Add(t) => t
                .iter()
                .try_fold(0i64, |a, x| Some(a.wrapping_add(x.eval(s)?)))?,
            CTree::Mul(t) => t
                .iter()
                .try_fold(1i64, |a, x| Some(a.wrapping_mul(x.eval(s)?)))?,
            CTree::FloorDiv(a, b) => floor_div_int(a.eval(s)?, b.eval(s)?)?,
            CTree::Mod(a, b) => floor_mod_int(a.eval(s)?, b.eval(s)?)?,
            CTree::Min(a, b) => a.eval(s)?.min(b.eval(s)?),
            CTree::Max(a, b) => a.eval(s)?.max(b.eval(s)?),
        })
    }
}

/// One element access: container slot and per-dimension indices.
#[derive(Debug)]
pub(crate) struct CAccess {
    pub(crate) data: usize,
    pub(crate) dims: Vec<CIdx>,
}

/// The subset a connector read by element (`conn[i, j]`) covers: per dimension
/// `[start, end, step]`. Which element is read is only known when the tasklet runs.
#[derive(Debug)]
pub(crate) struct CWindow {
    pub(crate) conn: String,
    pub(crate) data: usize,
    pub(crate) dims: Vec<[CIdx; 3]>,
}

impl CWindow {
    /// The first element of the subset, per dimension.
    pub(crate) fn start(&self) -> impl ExactSizeIterator<Item = &CIdx> + Clone {
        self.dims.iter().map(|[start, _, _]| start)
    }

    /// Whether the subset holds no element at slots `s` (or has bounds that do not evaluate),
    /// so that no element read through it can succeed.
    pub(crate) fn is_empty(&self, s: &[i64]) -> bool {
        self.dims
            .iter()
            .any(|[start, end, _]| match (start.eval(s), end.eval(s)) {
                (Some(lo), Some(hi)) => hi <= lo,
                _ => true,
            })
    }
}

/// How a tasklet's connectors are reached while its expressions are compiled.
struct Conns<'a> {
    /// Plain inputs: position among the loaded values.
    slots: &'a BTreeMap<String, usize>,
    /// Element reads: position among the windows.
    windows: &'a BTreeMap<String, usize>,
    precision: Precision,
}

/// A compiled scope: a map's parameters (slot and `[start, end, step]`) around its body, or one
/// tasklet.
#[derive(Debug)]
pub(crate) enum Step {
    Map {
        params: Vec<(usize, [CIdx; 3])>,
        body: Vec<Step>,
    },
    Tasklet(TaskletStep),
}

/// A tasklet's element accesses: inputs in in-edge order, then outputs (with their write-conflict
/// resolution and value) in out-edge order — the order both the interpreter and the data-movement
/// trace follow. Element reads (`windows`) happen while the outputs' values are evaluated, at
/// indices only known then.
#[derive(Debug)]
pub(crate) struct TaskletStep {
    pub(crate) node: NodeId,
    /// The compute type, from the element types of every container the tasklet touches.
    pub(crate) precision: Precision,
    /// Connectors read as whole values, loaded before evaluation.
    pub(crate) inputs: Vec<CAccess>,
    /// Connectors read by element at computed indices.
    pub(crate) windows: Vec<CWindow>,
    pub(crate) outputs: Vec<(CAccess, Option<Wcr>, CExpr)>,
}

/// Turns IR scopes into steps, assigning a slot to every map parameter in scope.
pub(crate) struct Compiler<'e> {
    env: &'e SymEnv,
    slots: Vec<String>,
    data: Vec<String>,
    /// Element type of each container, by the position in `data`.
    dtypes: Vec<DType>,
}

impl<'e> Compiler<'e> {
    /// A compiler for scopes of a program with symbol values `env` and containers `data`; an
    /// access's container slot is the container's position there.
    pub(crate) fn new(env: &'e SymEnv, data: &BTreeMap<String, DataDesc>) -> Self {
        Compiler {
            env,
            slots: Vec::new(),
            data: data.keys().cloned().collect(),
            dtypes: data.values().map(|d| d.dtype).collect(),
        }
    }

    /// The container names, indexed by an access's `data` slot.
    pub(crate) fn data(&self) -> &[String] {
        &self.data
    }

    /// Compiles a map (with everything nested in it) or a tasklet.
    pub(crate) fn node(&mut self, g: &Graph, idx: NodeIndex) -> Result<Step, InterpError> {
        let node = g.node(idx);
        match &node.kind {
            NodeKind::Map(m) => self.map(node.id, m),
            NodeKind::Tasklet(t) => self.tasklet(g, idx, t),
            _ => Err(InterpError::Unsupported {
                node: node.id,
                message: format!("a {} node inside a map scope", node.kind.kind_name()),
            }),
        }
    }

    fn map(&mut self, id: NodeId, m: &MapNode) -> Result<Step, InterpError> {
        let depth = self.slots.len();
        let mut params = Vec::new();
        for prm in &m.params {
            let r: &Range = &prm.range;
            let bounds = [
                self.idx(id, &r.start)?,
                self.idx(id, &r.end)?,
                self.idx(id, &r.step)?,
            ];
            self.slots.push(prm.name.clone());
            params.push((self.slots.len() - 1, bounds));
        }
        if self.slots.len() > MAX_SLOTS {
            return Err(InterpError::Unsupported {
                node: id,
                message: "more than 64 nested map parameters".into(),
            });
        }
        let mut body = Vec::new();
        for inner in m.body.ordered() {
            if !matches!(m.body.node(inner).kind, NodeKind::Access(_)) {
                body.push(self.node(&m.body, inner)?);
            }
        }
        self.slots.truncate(depth);
        Ok(Step::Map { params, body })
    }

    fn tasklet(&mut self, g: &Graph, idx: NodeIndex, t: &Tasklet) -> Result<Step, InterpError> {
        let id = g.node(idx).id;
        let exprs = || t.outputs.iter().map(|(_, e)| e);
        let plain: Vec<String> = exprs().flat_map(TExpr::plain_inputs).collect();
        let by_element: Vec<String> = exprs()
            .flat_map(TExpr::element_reads)
            .map(|(c, _)| c)
            .collect();
        let mut dtypes = Vec::new();
        let mut inputs = Vec::new();
        let mut windows = Vec::new();
        let mut conn_slot: BTreeMap<String, usize> = BTreeMap::new();
        let mut conn_window: BTreeMap<String, usize> = BTreeMap::new();
        for e in g.in_edges(idx) {
            let conn = e.memlet.dst_conn.clone().unwrap_or_default();
            dtypes.push(self.dtype_of(id, &e.memlet.data)?);
            if by_element.contains(&conn) {
                conn_window.insert(conn.clone(), windows.len());
                windows.push(self.window(id, &conn, &e.memlet.data, &e.memlet.subset)?);
            }
            if plain.contains(&conn) || !by_element.contains(&conn) {
                conn_slot.insert(conn, inputs.len());
                inputs.push(self.access(id, &e.memlet.data, &e.memlet.subset)?);
            }
        }
        for e in g.out_edges(idx) {
            dtypes.push(self.dtype_of(id, &e.memlet.data)?);
        }
        let precision = Precision::of(dtypes);
        let conns = Conns {
            slots: &conn_slot,
            windows: &conn_window,
            precision,
        };
        let mut outputs = Vec::new();
        for e in g.out_edges(idx) {
            let conn = e.memlet.src_conn.clone().unwrap_or_default();
            let expr = t
                .outputs
                .iter()
                .find(|(n, _)| *n == conn)
                .map(|(_, x)| x)
                .ok_or_else(|| InterpError::Unsupported {
                    node: id,
                    message: format!("out-edge on unknown connector `{conn}`"),
                })?;
            let value = self.expr(id, expr, &conns)?;
            outputs.push((
                self.access(id, &e.memlet.data, &e.memlet.subset)?,
                e.memlet.wcr,
                value,
            ));
        }
        Ok(Step::Tasklet(TaskletStep {
            node: id,
            precision,
            inputs,
            windows,
            outputs,
        }))
    }

    fn dtype_of(&self, id: NodeId, data: &str) -> Result<DType, InterpError> {
        Ok(self.dtypes[self.data_slot(id, data)?])
    }

    /// The position of container `data` in `self.data`.
    fn data_slot(&self, id: NodeId, data: &str) -> Result<usize, InterpError> {
        self.data
            .iter()
            .position(|d| d == data)
            .ok_or_else(|| InterpError::Unsupported {
                node: id,
                message: format!("memlet on undeclared container `{data}`"),
            })
    }

    /// The subset a connector read by element may touch, per dimension `[start, end, step]`.
    fn window(
        &self,
        id: NodeId,
        conn: &str,
        data: &str,
        subset: &Subset,
    ) -> Result<CWindow, InterpError> {
        let slot = self.data_slot(id, data)?;
        let dims = subset
            .0
            .iter()
            .map(|d| {
                Ok(match d {
                    Dim::Index(e) => [self.idx(id, e)?, self.idx(id, &(e + 1))?, CIdx::one()],
                    Dim::Range(r) => [
                        self.idx(id, &r.start)?,
                        self.idx(id, &r.end)?,
                        self.idx(id, &r.step)?,
                    ],
                })
            })
            .collect::<Result<_, InterpError>>()?;
        Ok(CWindow {
            conn: conn.to_string(),
            data: slot,
            dims,
        })
    }

    fn access(&self, id: NodeId, data: &str, subset: &Subset) -> Result<CAccess, InterpError> {
        let slot = self.data_slot(id, data)?;
        let dims = subset
            .0
            .iter()
            .map(|d| self.idx(id, d.first()))
            .collect::<Result<_, _>>()?;
        Ok(CAccess { data: slot, dims })
    }

    fn expr(&self, id: NodeId, e: &TExpr, conns: &Conns) -> Result<CExpr, InterpError> {
        let bx = |x: &TExpr| self.expr(id, x, conns).map(Box::new);
        let unconnected = |n: &str| InterpError::Unsupported {
            node: id,
            message: format!("tasklet reads unconnected input `{n}`"),
        };
        Ok(match e {
            TExpr::Const(v) => CExpr::Const(conns.precision.round(*v)),
            TExpr::Input(n) => CExpr::Input(*conns.slots.get(n).ok_or_else(|| unconnected(n))?),
            TExpr::Index(x) => CExpr::Index(self.idx(id, x)?),
            TExpr::Unary(op, x) => CExpr::Unary(*op, bx(x)?),
            TExpr::Binary(op, a, b) => CExpr::Binary(*op, bx(a)?, bx(b)?),
            TExpr::Select(c, a, b) => CExpr::Select(bx(c)?, bx(a)?, bx(b)?),
            TExpr::Element(n, idx) => CExpr::Element(
                *conns.windows.get(n).ok_or_else(|| unconnected(n))?,
                idx.iter()
                    .map(|x| self.expr(id, x, conns))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    /// Compiles an index: program symbols become constants, parameters become slots.
    fn idx(&self, id: NodeId, e: &SymExpr) -> Result<CIdx, InterpError> {
        let e = e.substitute_all(&|s| self.env.get(s).map(|v| SymExpr::Int(*v)));
        let names: Vec<&str> = self.slots.iter().map(String::as_str).collect();
        if let Some((terms, constant)) = self.affine(&e, &names) {
            return Ok(CIdx::Affine { terms, constant });
        }
        if let Some(clamped) = self.clamped(&e, &names) {
            return Ok(clamped);
        }
        Ok(CIdx::Tree(self.tree(id, &e)?))
    }

    /// `e` as coefficients of parameter slots and a constant, when it is affine in them.
    fn affine(&self, e: &SymExpr, names: &[&str]) -> Option<(Vec<(usize, i64)>, i64)> {
        let (coeffs, rest) = e.affine_in(names)?;
        let constant = rest.as_int()?;
        let terms = coeffs
            .into_iter()
            .map(|(n, c)| (self.slot(&n), c))
            .collect();
        Some((terms, constant))
    }

    /// `e` as [`CIdx::Clamped`] when it is an affine index between two constant bounds.
    fn clamped(&self, e: &SymExpr, names: &[&str]) -> Option<CIdx> {
        let bounded = |a: &SymExpr, b: &SymExpr| match (a.as_int(), b.as_int()) {
            (None, Some(v)) => Some((a.clone(), v)),
            (Some(v), None) => Some((b.clone(), v)),
            _ => None,
        };
        let (max_outside, (inside, outer)) = match e {
            SymExpr::Max(a, b) => (true, bounded(a, b)?),
            SymExpr::Min(a, b) => (false, bounded(a, b)?),
            _ => return None,
        };
        let (p, inner) = match (&inside, max_outside) {
            (SymExpr::Min(a, b), true) | (SymExpr::Max(a, b), false) => bounded(a, b)?,
            _ => return None,
        };
        let (terms, constant) = self.affine(&p, names)?;
        Some(CIdx::Clamped {
            terms,
            constant,
            inner,
            outer,
            max_outside,
        })
    }

    /// The innermost slot holding parameter `name`.
    fn slot(&self, name: &str) -> usize {
        self.slots.iter().rposition(|s| s == name).unwrap_or(0)
    }

    fn tree(&self, id: NodeId, e: &SymExpr) -> Result<CTree, InterpError> {
        let bx = |x: &SymExpr| self.tree(id, x).map(Box::new);
        let all = |t: &[SymExpr]| {
            t.iter()
                .map(|x| self.tree(id, x))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match e {
            SymExpr::Int(v) => CTree::Int(*v),
            SymExpr::Sym(s) if self.slots.contains(s) => CTree::Slot(self.slot(s)),
            SymExpr::Sym(s) => {
                return Err(InterpError::Index {
                    node: id,
                    message: format!(
                        "`{s}` is neither a bound symbol nor a map parameter in scope"
                    ),
                })
            }
            SymExpr::Add(t) => CTree::Add(all(t)?),
            SymExpr::Mul(t) => CTree::Mul(all(t)?),
            SymExpr::FloorDiv(a, b) => CTree::FloorDiv(bx(a)?, bx(b)?),
            SymExpr::Mod(a, b) => CTree::Mod(bx(a)?, bx(b)?),
            SymExpr::Min(a, b) => CTree::Min(bx(a)?, bx(b)?),
            SymExpr::Max(a, b) => CTree::Max(bx(a)?, bx(b)?),
        })
    }
}

/// Visits every tasklet execution of `step` in program order (map parameters nested in order,
/// body steps in order), with the parameter slots set for that execution.
pub(crate) fn walk<E>(
    step: &Step,
    s: &mut [i64],
    visit: &mut impl FnMut(&TaskletStep, &[i64]) -> Result<(), E>,
) -> Result<(), E> {
    match step {
        Step::Map { params, body } => walk_params(params, body, 0, s, visit),
        Step::Tasklet(t) => visit(t, s),
    }
}

fn walk_params<E>(
    params: &[(usize, [CIdx; 3])],
    body: &[Step],
    k: usize,
    s: &mut [i64],
    visit: &mut impl FnMut(&TaskletStep, &[i64]) -> Result<(), E>,
) -> Result<(), E> {
    let Some((slot, [start, end, step])) = params.get(k) else {
        for st in body {
            walk(st, s, visit)?;
        }
        return Ok(());
    };
    let (Some(lo), Some(hi), Some(st)) = (start.eval(s), end.eval(s), step.eval(s)) else {
        return Ok(());
    };
    let st = st.max(1);
    let mut v = lo;
    while v < hi {
        s[*slot] = v;
        walk_params(params, body, k + 1, s, visit)?;
        v += st;
    }
    Ok(())
}

/// Row-major flat offset of the element at indices `dims` (one per dimension, evaluated at
/// slots `s`) in a container of `shape`, or the out-of-range index.
pub(crate) fn flat_offset<'a>(
    dims: impl ExactSizeIterator<Item = &'a CIdx> + Clone,
    s: &[i64],
    shape: &[usize],
) -> Result<usize, Vec<i64>> {
    let mut off = 0usize;
    let mut bad = dims.len() != shape.len();
    for (d, e) in dims.clone().enumerate() {
        let v = e.eval(s).unwrap_or(-1);
        let extent = shape.get(d).copied().unwrap_or(0);
        if v < 0 || v as usize >= extent {
            bad = true;
        } else {
            off = off * extent + v as usize;
        }
    }
    if bad {
        return Err(dims.map(|e| e.eval(s).unwrap_or(-1)).collect());
    }
    Ok(off)
}
