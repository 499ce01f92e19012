//! Execution of map scopes and tasklets.
//!
//! A map is compiled once per execution into a small tree of steps whose index expressions refer
//! to parameter *slots* instead of names (affine ones as coefficient lists), so the inner loop does
//! no map lookups. Program symbols are substituted at compile time.

use super::texec::{store, CExpr, CWindow, Eval};
use super::{run_library, InterpError};
use crate::ir::{
    DType, Dim, Graph, MapNode, NodeId, NodeKind, Precision, Program, Range, Subset, SymEnv,
    SymExpr, TExpr, Tasklet, Tensor, Wcr,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::BTreeMap;

/// The interpreter state: every container's current value.
pub(super) struct Frame<'p> {
    p: &'p Program,
    env: &'p SymEnv,
    store: BTreeMap<String, Tensor>,
}

impl<'p> Frame<'p> {
    pub(super) fn new(p: &'p Program, env: &'p SymEnv, store: BTreeMap<String, Tensor>) -> Self {
        Frame { p, env, store }
    }

    pub(super) fn into_store(self) -> BTreeMap<String, Tensor> {
        self.store
    }

    /// Runs a top-level graph: library nodes directly, maps and tasklets through compiled plans.
    pub(super) fn run_graph(&mut self, g: &Graph) -> Result<(), InterpError> {
        for idx in g.ordered() {
            let node = g.node(idx);
            match &node.kind {
                NodeKind::Access(_) => {}
                NodeKind::Library(_) => run_library(g, idx, &mut self.store)?,
                NodeKind::Map(_) | NodeKind::Tasklet(_) => {
                    let mut c = Compiler {
                        env: self.env,
                        slots: Vec::new(),
                        data: self.p.data.keys().cloned().collect(),
                        dtypes: self.p.data.values().map(|d| d.dtype).collect(),
                    };
                    let step = c.node(g, idx)?;
                    self.execute(&c.data, &step)?;
                }
            }
        }
        Ok(())
    }

    fn execute(&mut self, names: &[String], step: &Step) -> Result<(), InterpError> {
        let mut bufs: Vec<Tensor> = names
            .iter()
            .map(|n| {
                self.store
                    .remove(n)
                    .unwrap_or_else(|| Tensor::f32(vec![0], vec![]))
            })
            .collect();
        let mut slots = vec![0i64; 64];
        let result = run_step(step, &mut slots, &mut bufs, names);
        for (n, t) in names.iter().zip(bufs) {
            self.store.insert(n.clone(), t);
        }
        result
    }
}

/// An index expression over parameter slots.
#[derive(Debug)]
pub(super) enum CIdx {
    Affine {
        terms: Vec<(usize, i64)>,
        constant: i64,
    },
    Tree(CTree),
}

#[derive(Debug)]
pub(super) enum CTree {
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
    pub(super) fn eval(&self, s: &[i64]) -> Option<i64> {
        match self {
            CIdx::Affine { terms, constant } => {
                Some(terms.iter().fold(*constant, |acc, (slot, c)| {
                    acc.wrapping_add(c.wrapping_mul(s[*slot]))
                }))
            }
            CIdx::Tree(t) => t.eval(s),
        }
    }
}

impl CTree {
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
            CTree::FloorDiv(a, b) => {
                let (a, b) = (a.eval(s)?, b.eval(s)?);
                SymExpr::Int(a).floor_div(SymExpr::Int(b)).as_int()?
            }
            CTree::Mod(a, b) => {
                let (a, b) = (a.eval(s)?, b.eval(s)?);
                SymExpr::Int(a).modulo(SymExpr::Int(b)).as_int()?
            }
            CTree::Min(a, b) => a.eval(s)?.min(b.eval(s)?),
            CTree::Max(a, b) => a.eval(s)?.max(b.eval(s)?),
        })
    }
}

impl CIdx {
    /// The constant 1 (the step of a single-index dimension).
    fn one() -> CIdx {
        CIdx::Affine {
            terms: Vec::new(),
            constant: 1,
        }
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

/// One element access: container slot and per-dimension indices.
#[derive(Debug)]
struct CAccess {
    data: usize,
    dims: Vec<CIdx>,
}

#[derive(Debug)]
enum Step {
    Map {
        params: Vec<(usize, [CIdx; 3])>,
        body: Vec<Step>,
    },
    Tasklet {
        node: NodeId,
        precision: Precision,
        /// Connectors read as whole values, loaded before evaluation.
        inputs: Vec<CAccess>,
        /// Connectors read by element at computed indices.
        windows: Vec<CWindow>,
        outputs: Vec<(CAccess, Option<Wcr>, CExpr)>,
    },
}

/// Turns IR scopes into steps, assigning a slot to every map parameter in scope.
struct Compiler<'e> {
    env: &'e SymEnv,
    slots: Vec<String>,
    data: Vec<String>,
    /// Element type of each container, by the position in `data`.
    dtypes: Vec<DType>,
}

impl Compiler<'_> {
    fn node(&mut self, g: &Graph, idx: NodeIndex) -> Result<Step, InterpError> {
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
        if self.slots.len() > 64 {
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
        Ok(Step::Tasklet {
            node: id,
            precision,
            inputs,
            windows,
            outputs,
        })
    }

    fn dtype_of(&self, id: NodeId, data: &str) -> Result<DType, InterpError> {
        self.data
            .iter()
            .position(|d| d == data)
            .map(|i| self.dtypes[i])
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
        let CAccess { data: slot, .. } = self.access(id, data, subset)?;
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

    fn access(
        &self,
        id: NodeId,
        data: &str,
        subset: &crate::ir::Subset,
    ) -> Result<CAccess, InterpError> {
        let slot =
            self.data
                .iter()
                .position(|d| d == data)
                .ok_or_else(|| InterpError::Unsupported {
                    node: id,
                    message: format!("memlet on undeclared container `{data}`"),
                })?;
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
        if let Some((coeffs, rest)) = e.affine_in(&names) {
            if let Some(constant) = rest.as_int() {
                let terms = coeffs
                    .into_iter()
                    .map(|(n, c)| (self.slot(&n), c))
                    .collect();
                return Ok(CIdx::Affine { terms, constant });
            }
        }
        Ok(CIdx::Tree(self.tree(id, &e)?))
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

fn run_step(
    step: &Step,
    s: &mut [i64],
    bufs: &mut [Tensor],
    names: &[String],
) -> Result<(), InterpError> {
    match step {
        Step::Map { params, body } => run_params(params, body, 0, s, bufs, names),
        Step::Tasklet {
            node,
            precision,
            inputs,
            windows,
            outputs,
        } => {
            let mut vals = [0f64; 16];
            let mut heap;
            let vals: &mut [f64] = if inputs.len() <= 16 {
                &mut vals[..inputs.len()]
            } else {
                heap = vec![0f64; inputs.len()];
                &mut heap
            };
            for (v, a) in vals.iter_mut().zip(inputs) {
                let off = offset(*node, a, s, bufs, names)?;
                *v = precision.round(bufs[a.data].get_f64(off));
            }
            let cx = Eval {
                node: *node,
                precision: *precision,
                inputs: vals,
                windows,
                slots: s,
                bufs,
            };
            let results = outputs
                .iter()
                .map(|(_, _, e)| e.eval(&cx))
                .collect::<Result<Vec<f64>, _>>()?;
            for ((a, wcr, _), x) in outputs.iter().zip(results) {
                let off = offset(*node, a, s, bufs, names)?;
                store(&mut bufs[a.data], off, *wcr, x);
            }
            Ok(())
        }
    }
}

fn run_params(
    params: &[(usize, [CIdx; 3])],
    body: &[Step],
    k: usize,
    s: &mut [i64],
    bufs: &mut [Tensor],
    names: &[String],
) -> Result<(), InterpError> {
    let Some((slot, [start, end, step])) = params.get(k) else {
        for st in body {
            run_step(st, s, bufs, names)?;
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
        run_params(params, body, k + 1, s, bufs, names)?;
        v += st;
    }
    Ok(())
}

/// Row-major flat offset of an access, bounds-checked per dimension.
fn offset(
    node: NodeId,
    a: &CAccess,
    s: &[i64],
    bufs: &[Tensor],
    names: &[String],
) -> Result<usize, InterpError> {
    let shape = &bufs[a.data].shape;
    let mut off = 0usize;
    let mut bad = false;
    let mut index = Vec::with_capacity(a.dims.len());
    for (d, e) in a.dims.iter().enumerate() {
        let v = e.eval(s).unwrap_or(-1);
        index.push(v);
        let extent = shape.get(d).copied().unwrap_or(0);
        if v < 0 || v as usize >= extent {
            bad = true;
        } else {
            off = off * extent + v as usize;
        }
    }
    if bad || a.dims.len() != shape.len() {
        return Err(InterpError::OutOfBounds {
            node,
            data: names[a.data].clone(),
            index,
            shape: shape.clone(),
        });
    }
    Ok(off)
}
