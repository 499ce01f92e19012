//! Emitting one scope's dataflow graph as C statements: maps become loop nests with OpenMP
//! pragmas, tasklets become blocks of loads, a computation and stores, and access→access edges
//! become copy loops. Nodes are emitted in [`Graph::ordered`] order, which respects every
//! dependence.

use super::emit::DataInfo;
use super::expr::{self, ctype, flat, from_compute, to_compute, TaskletC, WindowC};
use super::names::{comment_text, Names};
use super::writer::Writer;
use super::{CodegenError, Unlowered};
use crate::check::race::{disjoint_across, LaneReduction};
use crate::ir::{
    BinOp, DType, Dim, Graph, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Precision,
    Schedule, Subset, SymExpr, TExpr, Tasklet, Wcr,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

mod locals;
mod peel;
mod region;
mod simd;

/// One enclosing map while its body is emitted.
struct Level {
    id: NodeId,
    params: Vec<MapParam>,
}

/// Emits the statements of `dm_run`, tracking which loops enclose the current node.
pub(crate) struct Emitter<'a> {
    data: &'a BTreeMap<String, DataInfo>,
    names: &'a mut Names,
    w: Writer,
    /// IR parameter name → C loop variable, for the parameters in scope.
    params: BTreeMap<String, String>,
    levels: Vec<Level>,
    /// The map that opened the OpenMP parallel region (index into `levels`) and how many of its
    /// leading parameters are distributed over threads.
    parallel: Option<(usize, usize)>,
    /// Inside the entry function's parallel region: a parallel map is work-shared (`omp for`)
    /// instead of opening a region of its own, ending without a barrier when `nowait`.
    in_region: bool,
    nowait: bool,
    /// Names used in expressions that are neither bound symbols nor parameters in scope.
    unbound: BTreeSet<String>,
    /// (container, C element index) → the scalar of the enclosing vector loop's SIMD
    /// reduction that writes to that element go to instead.
    lane_reductions: BTreeMap<(String, String), String>,
    /// The clipped tile ends known not to be whole in the code being written (the `else` of a
    /// body emitted twice, see [`peel`]).
    clipped: Vec<peel::Clip>,
}

impl<'a> Emitter<'a> {
    pub fn new(data: &'a BTreeMap<String, DataInfo>, names: &'a mut Names, indent: usize) -> Self {
        Emitter {
            data,
            names,
            w: Writer::indented(indent),
            params: BTreeMap::new(),
            levels: Vec::new(),
            parallel: None,
            in_region: false,
            nowait: false,
            unbound: BTreeSet::new(),
            lane_reductions: BTreeMap::new(),
            clipped: Vec::new(),
        }
    }

    /// The statements written and the unresolved names met on the way.
    pub fn finish(self) -> (String, BTreeSet<String>) {
        (self.w.into_string(), self.unbound)
    }

    fn graph(&mut self, g: &Graph) -> Result<(), CodegenError> {
        g.ordered()
            .into_iter()
            .try_for_each(|idx| self.node(g, idx))
    }

    fn node(&mut self, g: &Graph, idx: NodeIndex) -> Result<(), CodegenError> {
        let node = g.node(idx);
        match &node.kind {
            NodeKind::Access(src) => {
                for e in g.out_edges(idx) {
                    if let NodeKind::Access(dst) = &g.node(e.other).kind {
                        self.copy(node.id, src, dst, &e.memlet.subset)?;
                    }
                }
                Ok(())
            }
            NodeKind::Map(m) => self.map(node, m),
            NodeKind::Tasklet(t) => self.tasklet(g, idx, node, t),
            NodeKind::Library(lib) => Err(CodegenError::NotLowered(vec![Unlowered {
                id: node.id,
                label: node.label.clone(),
                op: lib.op.clone(),
            }])),
        }
    }

    fn info(&self, data: &str) -> Result<&'a DataInfo, CodegenError> {
        let all: &'a BTreeMap<String, DataInfo> = self.data;
        all.get(data).ok_or_else(|| CodegenError::BadData {
            data: data.to_string(),
            message: "is used but never declared".into(),
        })
    }

    fn c_sym(&mut self, e: &SymExpr) -> String {
        let (params, unbound) = (&self.params, &mut self.unbound);
        expr::sym(e, &mut |s| lookup(params, unbound, s))
    }

    fn c_texpr(&mut self, e: &TExpr, cx: &TaskletC) -> String {
        let (params, unbound) = (&self.params, &mut self.unbound);
        expr::texpr(e, cx, &mut |s| lookup(params, unbound, s))
    }

    /// Copies `subset` of `src` into the same subset of `dst` (a no-op between two versions of
    /// the same container).
    fn copy(
        &mut self,
        id: NodeId,
        src: &str,
        dst: &str,
        subset: &Subset,
    ) -> Result<(), CodegenError> {
        if src == dst {
            return Ok(());
        }
        let (s, d) = (self.info(src)?, self.info(dst)?);
        if subset.rank() != s.shape.len() || subset.rank() != d.shape.len() {
            return Err(malformed(
                id,
                format!("copy {subset} does not fit both containers"),
            ));
        }
        self.w.line(format!("/* {id} copy */"));
        self.w.open("{");
        let mut parts = Vec::new();
        let mut loops = 0;
        for dim in &subset.0 {
            match dim {
                Dim::Index(e) => parts.push(self.c_sym(e)),
                Dim::Range(r) => {
                    let v = self.names.fresh("p_", "copy");
                    self.for_loop(&v, &r.start, &r.end, &r.step);
                    parts.push(v);
                    loops += 1;
                }
            }
        }
        let value = s.element(&flat(&parts, &s.shape));
        let value = if s.dtype == d.dtype {
            value
        } else {
            let p = Precision::of([s.dtype, d.dtype]);
            from_compute(&to_compute(&value, s.dtype, p), d.dtype, p)
        };
        self.w
            .line(format!("{} = {value};", d.element(&flat(&parts, &d.shape))));
        for _ in 0..=loops {
            self.w.close();
        }
        Ok(())
    }

    fn for_loop(&mut self, var: &str, start: &SymExpr, end: &SymExpr, step: &SymExpr) {
        let (a, b, s) = (self.c_sym(start), self.c_sym(end), self.c_sym(step));
        self.w.open(format!(
            "for (int64_t {var} = {a}; {var} < {b}; {var} += {s}) {{"
        ));
    }

    /// A map: its whole tiles apart from a clipped last one where that helps (see [`peel`]).
    fn map(&mut self, node: &Node, m: &MapNode) -> Result<(), CodegenError> {
        match self.map_peeled(node, m) {
            Some(emitted) => emitted,
            None => self.map_loops(node, m),
        }
    }

    /// One `for` per parameter, outermost first, with the schedule's pragma; then the locals of
    /// this scope and the body.
    fn map_loops(&mut self, node: &Node, m: &MapNode) -> Result<(), CodegenError> {
        // A top-level map inside the region is one of its loops exactly when it reaches the
        // awake threshold (`region::plan` makes it so); everywhere else `min_work` decides.
        let shared = match self.in_region && self.levels.is_empty() {
            true => distributes_awake(m),
            false => distributes(m),
        };
        let parallel_here = self.parallel.is_none() && shared;
        let collapse = if parallel_here {
            self.distributed_count(node.id, m)
        } else {
            0
        };
        let mut lane_reductions = match m.schedule {
            Schedule::Vector => simd::of(m, self.data),
            _ => Vec::new(),
        };
        let simd = m.schedule == Schedule::Vector && self.simd_safe(node.id, m, &lane_reductions);
        self.w.line(format!(
            "/* {} map {} ({}) */",
            node.id,
            comment_text(&node.label),
            m.schedule.name()
        ));
        if m.schedule == Schedule::Parallel && !m.params.is_empty() && !shared {
            self.w.line(format!(
                "/* one thread: estimated work below min_work {} */",
                m.min_work
            ));
        }
        if m.schedule == Schedule::Vector && !simd {
            self.w
                .line("/* no omp simd: lanes might write the same element */");
        }
        if m.params.is_empty() {
            self.w.open("{");
        }
        let last = m.params.len().saturating_sub(1);
        let mut reductions = Vec::new();
        for (j, p) in m.params.iter().enumerate() {
            let var = self.names.fresh("p_", &p.name);
            if j == 0 && parallel_here {
                self.w.line(self.work_sharing(collapse));
            }
            if j == last && simd {
                let writes = std::mem::take(&mut lane_reductions);
                let (opened, clauses) = self.open_lane_reductions(node.id, writes)?;
                reductions = opened;
                self.w.line(format!("#pragma omp simd{clauses}"));
            }
            if j == last && m.schedule == Schedule::Unrolled {
                self.w.line("#pragma GCC unroll 16");
            }
            self.for_loop(&var, &p.range.start, &p.range.end, &p.range.step);
            self.params.insert(p.name.clone(), var);
        }
        self.levels.push(Level {
            id: node.id,
            params: m.params.clone(),
        });
        if parallel_here {
            self.parallel = Some((self.levels.len() - 1, collapse));
        }
        let path: Vec<NodeId> = self.levels.iter().map(|l| l.id).collect();
        self.body_peeled(&path, &m.body, &m.params)?;
        let atomic = self.combines_atomic(&reductions)?;
        self.levels.pop();
        if parallel_here {
            self.parallel = None;
        }
        for p in &m.params {
            self.params.remove(&p.name);
        }
        self.w.close();
        self.close_lane_reductions(reductions, atomic)?;
        for _ in 1..m.params.len().max(1) {
            self.w.close();
        }
        Ok(())
    }

    /// The pragma of a parallel map's outermost loop: a region of its own, or work-shared
    /// inside the entry function's region.
    fn work_sharing(&self, collapse: usize) -> String {
        let mut pragma = String::from(match self.in_region {
            true => "#pragma omp for",
            false => "#pragma omp parallel for",
        });
        if collapse > 1 {
            pragma.push_str(&format!(" collapse({collapse})"));
        }
        if self.in_region && self.nowait {
            pragma.push_str(" nowait");
        }
        pragma
    }

    /// `omp simd` promises no dependences between lanes, so it is only emitted when every write
    /// in the body provably goes to a distinct element per value of the innermost parameter.
    /// Accumulations into an element the lanes share are SIMD reductions (see [`simd`]).
    fn simd_safe(&self, id: NodeId, m: &MapNode, reductions: &[LaneReduction]) -> bool {
        match m.params.split_last() {
            Some((lane, _)) => {
                self.writes_disjoint(id, &m.body, std::slice::from_ref(lane), &[], reductions)
            }
            None => false,
        }
    }

    /// How many leading parameters of a parallel map to distribute over threads: as many as
    /// can be collapsed, but no more than keep every write thread-disjoint (so a reduction
    /// parameter stays sequential inside each thread instead of costing atomics); when even
    /// the first parameter conflicts, atomics are unavoidable and all collapsible ones are used.
    fn distributed_count(&self, id: NodeId, m: &MapNode) -> usize {
        let max = collapsible(&m.params);
        (1..=max)
            .rev()
            .find(|&k| {
                let rest: Vec<&MapParam> = m.params[k..].iter().collect();
                self.writes_disjoint(id, &m.body, &m.params[..k], &rest, &[])
            })
            .unwrap_or(max)
    }

    /// Whether every write in `body` (of map `id`) to a container not private to the map is
    /// disjoint across values of `distributed`; `around` are the map's own parameters that vary
    /// inside one thread or lane. The SIMD reductions in `reduced` are skipped.
    fn writes_disjoint(
        &self,
        id: NodeId,
        body: &Graph,
        distributed: &[MapParam],
        around: &[&MapParam],
        reduced: &[LaneReduction],
    ) -> bool {
        let mut writes = Vec::new();
        collect_writes(body, &mut around.to_vec(), &mut writes);
        let skipped =
            |m: &Memlet| (reduced.iter()).any(|r| r.data == m.data && r.subset == m.subset);
        writes
            .iter()
            .filter(|(memlet, _)| !skipped(memlet))
            .all(|(memlet, inner)| match self.data.get(&memlet.data) {
                Some(d) => {
                    d.private_to(id)
                        || disjoint_across(&memlet.subset, &sym_shape(d), distributed, inner)
                }
                None => false,
            })
    }

    /// Loads every input connector read as a whole value into a `const` local, describes the
    /// subsets of connectors read by element, then computes and stores every output in the
    /// tasklet's compute type.
    fn tasklet(
        &mut self,
        g: &Graph,
        idx: NodeIndex,
        node: &Node,
        t: &Tasklet,
    ) -> Result<(), CodegenError> {
        self.w.line(format!(
            "/* {} tasklet {} */",
            node.id,
            comment_text(&node.label)
        ));
        self.w.open("{");
        let exprs = || t.outputs.iter().map(|(_, e)| e);
        let by_element: BTreeSet<String> = exprs()
            .flat_map(TExpr::element_reads)
            .map(|(c, _)| c)
            .collect();
        let plain: BTreeSet<String> = exprs().flat_map(TExpr::plain_inputs).collect();
        let mut dtypes = Vec::new();
        let mut locals = Names::default();
        let mut ins: BTreeMap<String, (String, DType)> = BTreeMap::new();
        let mut windows: BTreeMap<String, WindowC<'a>> = BTreeMap::new();
        for e in g.in_edges(idx) {
            let conn = e
                .memlet
                .dst_conn
                .as_ref()
                .filter(|c| t.inputs.contains(c))
                .ok_or_else(|| {
                    malformed(
                        node.id,
                        format!("in-edge on unknown connector {:?}", e.memlet.dst_conn),
                    )
                })?;
            let d = self.info(&e.memlet.data)?;
            dtypes.push(d.dtype);
            if by_element.contains(conn) {
                windows.insert(conn.clone(), self.window(node.id, d, &e.memlet.subset)?);
                if !plain.contains(conn) {
                    ins.insert(conn.clone(), (String::new(), d.dtype));
                    continue;
                }
            }
            let flat = self.element_index(node.id, d, &e.memlet.subset)?;
            let c = locals.fresh("c_", conn);
            self.w.line(format!(
                "const {} {c} = {};",
                ctype(d.dtype),
                d.element(&flat)
            ));
            ins.insert(conn.clone(), (c, d.dtype));
        }
        if let Some(missing) = t.inputs.iter().find(|c| !ins.contains_key(*c)) {
            return Err(malformed(
                node.id,
                format!("input connector `{missing}` is not connected"),
            ));
        }
        for e in g.out_edges(idx) {
            dtypes.push(self.info(&e.memlet.data)?.dtype);
        }
        let precision = Precision::of(dtypes);
        let values: BTreeMap<String, String> = ins
            .iter()
            .filter(|(k, _)| plain.contains(*k))
            .map(|(k, (c, d))| (k.clone(), to_compute(c, *d, precision)))
            .collect();
        let cx = TaskletC {
            precision,
            inputs: &values,
            windows: &windows,
        };
        for e in g.out_edges(idx) {
            let expr = t
                .outputs
                .iter()
                .find(|(n, _)| Some(n) == e.memlet.src_conn.as_ref())
                .map(|(_, x)| x)
                .ok_or_else(|| {
                    malformed(
                        node.id,
                        format!("out-edge on unknown connector {:?}", e.memlet.src_conn),
                    )
                })?;
            if let Some(unknown) = expr.inputs().into_iter().find(|c| !ins.contains_key(c)) {
                return Err(malformed(
                    node.id,
                    format!("expression reads unknown input `{unknown}`"),
                ));
            }
            if let Some((c, n)) = expr
                .element_reads()
                .into_iter()
                .find(|(c, n)| windows.get(c).map(|w| w.dims.len()) != Some(*n))
            {
                return Err(malformed(
                    node.id,
                    format!("element read of `{c}` with {n} index(es) does not fit its memlet"),
                ));
            }
            let d = self.info(&e.memlet.data)?;
            let flat = self.element_index(node.id, d, &e.memlet.subset)?;
            let (lhs, reduced) = self.target(&e.memlet.data, d.element(&flat), &flat);
            let atomic =
                e.memlet.wcr.is_some() && !reduced && self.shared_conflict(d, &e.memlet.subset);
            if let Some((x, y)) =
                multiply_accumulate(expr, e.memlet.wcr, d.dtype, precision, atomic)
            {
                let (x, y) = (self.c_texpr(x, &cx), self.c_texpr(y, &cx));
                let fma = expr::fma(precision);
                self.w.line(format!("{lhs} = {fma}({x}, {y}, {lhs});"));
                continue;
            }
            let value = match expr {
                TExpr::Input(c) if ins[c].1 == d.dtype => ins[c].0.clone(),
                _ => from_compute(&self.c_texpr(expr, &cx), d.dtype, precision),
            };
            self.store(d, &lhs, e.memlet.wcr, &value, atomic);
        }
        self.w.close();
        Ok(())
    }

    /// The subset a connector read by element covers (see [`WindowC`]).
    fn window(
        &mut self,
        id: NodeId,
        d: &'a DataInfo,
        subset: &Subset,
    ) -> Result<WindowC<'a>, CodegenError> {
        check_rank(id, d, subset)?;
        Ok(WindowC::new(d, subset, &mut |e| self.c_sym(e)))
    }

    /// Whether threads of the enclosing parallel region may update the same element.
    fn shared_conflict(&self, d: &DataInfo, subset: &Subset) -> bool {
        let Some((at, k)) = self.parallel else {
            return false;
        };
        let region = &self.levels[at];
        if d.private_to(region.id) {
            return false;
        }
        let inner: Vec<&MapParam> = region.params[k..]
            .iter()
            .chain(self.levels[at + 1..].iter().flat_map(|l| l.params.iter()))
            .collect();
        !disjoint_across(subset, &sym_shape(d), &region.params[..k], &inner)
    }

    /// Writes `value` to the C lvalue `lhs` (an element of `d`, or a reduction's scalar).
    fn store(&mut self, d: &DataInfo, lhs: &str, wcr: Option<Wcr>, value: &str, atomic: bool) {
        let tag = expr::tag(d.dtype);
        match wcr {
            None => self.w.line(format!("{lhs} = {value};")),
            Some(op @ (Wcr::Sum | Wcr::Prod)) if !d.dtype.is_narrow_float() => {
                if atomic {
                    self.w.line("#pragma omp atomic");
                }
                let sign = if op == Wcr::Sum { '+' } else { '*' };
                self.w.line(format!("{lhs} {sign}= {value};"));
            }
            Some(op) => {
                let name = op.name();
                if atomic {
                    self.w
                        .line(format!("dm_atomic_{name}_{tag}(&{lhs}, {value});"));
                } else {
                    self.w
                        .line(format!("{lhs} = dm_{name}_{tag}({lhs}, {value});"));
                }
            }
        }
    }

    /// The row-major flat index of a single-element subset.
    fn element_index(
        &mut self,
        id: NodeId,
        d: &DataInfo,
        subset: &Subset,
    ) -> Result<String, CodegenError> {
        check_rank(id, d, subset)?;
        let mut parts = Vec::new();
        for dim in &subset.0 {
            match dim {
                Dim::Index(e) => parts.push(self.c_sym(e)),
                Dim::Range(_) => {
                    return Err(malformed(
                        id,
                        format!("tasklet memlet {subset} is not one element"),
                    ))
                }
            }
        }
        Ok(flat(&parts, &d.shape))
    }
}

/// The factors of a product summed into a floating-point element in its own type, which C
/// writes as one fused multiply-add (`fmaf(x, y, acc)`: one rounding instead of two) instead of
/// `acc += x * y`. ISO C mode (`-std=c11`) forbids the compiler to contract it by itself, and a
/// contraction's FMAs are half the instructions of its multiply and add, so this is the form the
/// inner loop of every MatMul, Conv and Einsum takes. Atomic updates keep `+=` (`omp atomic`
/// has no fused form).
fn multiply_accumulate(
    expr: &TExpr,
    wcr: Option<Wcr>,
    dtype: DType,
    precision: Precision,
    atomic: bool,
) -> Option<(&TExpr, &TExpr)> {
    let same_type = matches!(
        (dtype, precision),
        (DType::F32, Precision::F32) | (DType::F64, Precision::F64)
    );
    match expr {
        TExpr::Binary(BinOp::Mul, x, y) if wcr == Some(Wcr::Sum) && same_type && !atomic => {
            Some((x, y))
        }
        _ => None,
    }
}

fn lookup(params: &BTreeMap<String, String>, unbound: &mut BTreeSet<String>, s: &str) -> String {
    match params.get(s) {
        Some(c) => c.clone(),
        None => {
            unbound.insert(s.to_string());
            "0".to_string()
        }
    }
}

/// A memlet subset must have one dimension per dimension of its container.
fn check_rank(id: NodeId, d: &DataInfo, subset: &Subset) -> Result<(), CodegenError> {
    if subset.rank() == d.shape.len() {
        return Ok(());
    }
    Err(malformed(
        id,
        format!(
            "subset {subset} has rank {} but the container has {}",
            subset.rank(),
            d.shape.len()
        ),
    ))
}

fn malformed(id: NodeId, message: String) -> CodegenError {
    CodegenError::Malformed { id, message }
}

fn sym_shape(d: &DataInfo) -> Vec<SymExpr> {
    d.shape.iter().map(|&n| SymExpr::from(n)).collect()
}

/// Whether a parallel map hands its iterations to threads: it has parameters and its estimated
/// work reaches its `min_work` (work that cannot be estimated runs in parallel, as asked).
fn distributes(m: &MapNode) -> bool {
    shares_above(m, m.min_work)
}

/// The work from which a parallel map inside a region that other maps opened anyway is
/// work-shared although it is below its `min_work`. There the threads are awake, and sharing
/// the loop costs one barrier — the barrier that ends the `single` it would otherwise run in —
/// a microsecond or two, far below 16384 tasklets; `min_work` prices waking them, which only
/// opening the region does. Measured on MobileNetV2 (2 threads, medians of 30, five
/// alternating runs): 8.7 ms with every map below 262144 on one thread, 8.2–8.4 ms sharing
/// those above 65536, 16384 or 4096 alike.
const AWAKE_MIN_WORK: u64 = 16384;

/// [`distributes`] inside a region opened anyway: the threshold is at most [`AWAKE_MIN_WORK`].
fn distributes_awake(m: &MapNode) -> bool {
    shares_above(m, m.min_work.min(AWAKE_MIN_WORK))
}

fn shares_above(m: &MapNode, min_work: u64) -> bool {
    m.schedule == Schedule::Parallel
        && !m.params.is_empty()
        && m.work().is_none_or(|w| w >= min_work)
}

/// Leading parameters whose ranges do not depend on each other: they form one rectangular
/// iteration space that OpenMP may collapse.
fn collapsible(params: &[MapParam]) -> usize {
    let mut k = 1;
    while k < params.len() {
        let earlier = &params[..k];
        let r = &params[k].range;
        let depends = [&r.start, &r.end, &r.step]
            .iter()
            .any(|e| earlier.iter().any(|p| e.mentions(&p.name)));
        if depends {
            break;
        }
        k += 1;
    }
    k
}

/// Every element write in `g` and nested scopes (edges into access nodes that do not leave a
/// map, whose writes are collected inside it), with the parameters of the maps around it.
fn collect_writes<'g>(
    g: &'g Graph,
    inner: &mut Vec<&'g MapParam>,
    out: &mut Vec<(&'g Memlet, Vec<&'g MapParam>)>,
) {
    for idx in g.node_indices() {
        match &g.node(idx).kind {
            NodeKind::Map(m) => {
                let depth = inner.len();
                inner.extend(m.params.iter());
                collect_writes(&m.body, inner, out);
                inner.truncate(depth);
            }
            _ => {
                for e in g.out_edges(idx) {
                    if matches!(g.node(e.other).kind, NodeKind::Access(_)) {
                        out.push((e.memlet, inner.clone()));
                    }
                }
            }
        }
    }
}
