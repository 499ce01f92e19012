//! Nodes and memlets of the dataflow graph.

use super::graph::Graph;
use super::subset::{Range, Subset};
use super::sym::SymEnv;
use super::texpr::{BinOp, TExpr, UnOp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A node identity that is unique in its program and survives every edit that does not remove
/// the node, so matches, handles and traces can refer to it across rewrites. It is written
/// `n12` everywhere: text IR, messages and JSON alike (JSON also reads a bare `12`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl std::str::FromStr for NodeId {
    type Err = std::num::ParseIntError;

    /// `n12` or `12`.
    fn from_str(s: &str) -> Result<NodeId, Self::Err> {
        let s = s.trim();
        s.strip_prefix('n').unwrap_or(s).parse().map(NodeId)
    }
}

impl Serialize for NodeId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NodeId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NodeId, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Number(u32),
        }
        match Written::deserialize(d)? {
            Written::Number(n) => Ok(NodeId(n)),
            Written::Text(t) => t
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("`{t}` is not a node id (n12)"))),
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// A node: its stable id, a human label (from the model or the transformation that made it) and
/// what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub label: String,
    pub kind: NodeKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    /// A read or write of one data container, named by the payload.
    Access(String),
    Library(LibraryNode),
    Map(MapNode),
    Tasklet(Tasklet),
}

impl NodeKind {
    pub fn kind_name(&self) -> &'static str {
        match self {
            NodeKind::Access(_) => "access",
            NodeKind::Library(_) => "library",
            NodeKind::Map(_) => "map",
            NodeKind::Tasklet(_) => "tasklet",
        }
    }
}

/// An attribute value of a library node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Attr {
    Int(i64),
    Float(f64),
    Str(String),
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    /// A list of strings (ONNX STRINGS, e.g. the recurrent operators' `activations`).
    Strs(Vec<String>),
}

/// A high-level operator. Inputs arrive on connectors `in0`, `in1`, … and results leave on
/// `out0`, `out1`, …; a missing optional input simply has no edge.
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryNode {
    pub op: String,
    pub attrs: BTreeMap<String, Attr>,
}

impl LibraryNode {
    pub fn input_connector(i: usize) -> String {
        format!("in{i}")
    }

    pub fn output_connector(i: usize) -> String {
        format!("out{i}")
    }

    /// Parses `in3` / `out1` back to the position.
    pub fn connector_index(conn: &str, prefix: &str) -> Option<usize> {
        conn.strip_prefix(prefix)?.parse().ok()
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        match self.attrs.get(name) {
            Some(Attr::Int(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        match self.attrs.get(name) {
            Some(Attr::Float(v)) => Some(*v),
            Some(Attr::Int(v)) => Some(*v as f64),
            _ => None,
        }
    }

    pub fn ints(&self, name: &str) -> Option<&[i64]> {
        match self.attrs.get(name) {
            Some(Attr::Ints(v)) => Some(v),
            _ => None,
        }
    }

    pub fn floats(&self, name: &str) -> Option<&[f64]> {
        match self.attrs.get(name) {
            Some(Attr::Floats(v)) => Some(v),
            _ => None,
        }
    }

    pub fn strs(&self, name: &str) -> Option<&[String]> {
        match self.attrs.get(name) {
            Some(Attr::Strs(v)) => Some(v),
            _ => None,
        }
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        match self.attrs.get(name) {
            Some(Attr::Str(v)) => Some(v),
            _ => None,
        }
    }
}

/// How the iterations of a map are executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Schedule {
    Sequential,
    /// Iterations of the outermost parameter run on parallel threads (OpenMP).
    Parallel,
    /// The innermost parameter runs as SIMD lanes.
    Vector,
    /// The loop body is replicated for every iteration.
    Unrolled,
}

impl Schedule {
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Sequential => "sequential",
            Schedule::Parallel => "parallel",
            Schedule::Vector => "vector",
            Schedule::Unrolled => "unrolled",
        }
    }

    pub fn from_name(name: &str) -> Option<Schedule> {
        [
            Schedule::Sequential,
            Schedule::Parallel,
            Schedule::Vector,
            Schedule::Unrolled,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// One map parameter: `name` ranges over `range`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapParam {
    pub name: String,
    pub range: Range,
}

/// A parallel loop scope. Its body is a dataflow graph executed once per point of the iteration
/// space; edges on the map node itself carry the union of what all iterations move.
#[derive(Clone, Debug, PartialEq)]
pub struct MapNode {
    pub params: Vec<MapParam>,
    pub schedule: Schedule,
    /// For a parallel map: the estimated work (iterations times tasklets run per iteration,
    /// see [`Graph::work`]) below which it runs on one thread, because waking threads and
    /// joining them would cost more than the loop; 0 runs it in parallel whatever its size.
    /// Other schedules ignore it.
    pub min_work: u64,
    pub body: Graph,
}

impl MapNode {
    /// Iterations times the work of one execution of the body (see [`Graph::work`]).
    pub fn work(&self) -> Option<u64> {
        self.work_in(&mut SymEnv::new())
    }

    /// [`MapNode::work`] inside maps whose parameters `outer` holds at their first value: a
    /// range that depends on them (a tile's `t:min(t + 8, N)`) counts the trips of that first
    /// iteration, which is exact when the tile divides its extent.
    pub(crate) fn work_in(&self, outer: &mut SymEnv) -> Option<u64> {
        let mut trips: u64 = 1;
        for p in &self.params {
            let len = p.range.len().eval(outer).ok()?.max(0);
            trips = trips.checked_mul(u64::try_from(len).ok()?)?;
            let first = p.range.start.eval(outer).ok()?;
            outer.insert(p.name.clone(), first);
        }
        let body = self.body.work_in(outer);
        for p in &self.params {
            outer.remove(&p.name);
        }
        body?.checked_mul(trips)
    }
}

/// A scalar computation: each output connector is assigned an expression over the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Tasklet {
    pub inputs: Vec<String>,
    pub outputs: Vec<(String, TExpr)>,
}

impl Tasklet {
    /// The estimated work of one execution: 1, plus [`CALL_WORK`] for every transcendental
    /// function or power it evaluates (a GELU's `erf`, a Softmax's `exp`), which costs about as
    /// much as that many arithmetic operations. Schedules compare it with `min_work`.
    pub fn work(&self) -> u64 {
        let mut calls = 0u64;
        for (_, e) in &self.outputs {
            e.visit(&mut |x| {
                let costly = match x {
                    TExpr::Unary(op, _) => !matches!(
                        op,
                        UnOp::Neg
                            | UnOp::Not
                            | UnOp::Abs
                            | UnOp::Floor
                            | UnOp::Ceil
                            | UnOp::Recip
                            | UnOp::Round
                            | UnOp::Sqrt
                    ),
                    TExpr::Binary(op, _, _) => matches!(op, BinOp::Pow | BinOp::Fmod),
                    _ => false,
                };
                calls += u64::from(costly);
            });
        }
        1 + CALL_WORK * calls
    }
}

/// The work a tasklet's transcendental function call adds (see [`Tasklet::work`]).
pub const CALL_WORK: u64 = 8;

/// How concurrent or repeated writes to the same element combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Wcr {
    Sum,
    Prod,
    Max,
    Min,
}

impl Wcr {
    pub fn name(self) -> &'static str {
        match self {
            Wcr::Sum => "sum",
            Wcr::Prod => "prod",
            Wcr::Max => "max",
            Wcr::Min => "min",
        }
    }

    pub fn from_name(name: &str) -> Option<Wcr> {
        [Wcr::Sum, Wcr::Prod, Wcr::Max, Wcr::Min]
            .into_iter()
            .find(|w| w.name() == name)
    }

    /// Combines the stored value with a newly written one.
    pub fn combine(self, old: f32, new: f32) -> f32 {
        match self {
            Wcr::Sum => old + new,
            Wcr::Prod => old * new,
            Wcr::Max => old.max(new),
            Wcr::Min => old.min(new),
        }
    }

    /// Combines in double precision (containers of `f64` and integer types).
    pub fn combine_f64(self, old: f64, new: f64) -> f64 {
        match self {
            Wcr::Sum => old + new,
            Wcr::Prod => old * new,
            Wcr::Max => old.max(new),
            Wcr::Min => old.min(new),
        }
    }

    /// Whether accumulations into a `dtype` container may be split into per-lane shares that
    /// are combined at the end (a SIMD reduction): floats of at least single precision, whose
    /// reassociation changes only rounding. Narrow floats combine through helpers on bit
    /// patterns, and integer maxima have no infinity to start from.
    pub fn reassociable_in(self, dtype: super::DType) -> bool {
        matches!(dtype, super::DType::F32 | super::DType::F64)
    }

    /// The neutral element, used to initialise accumulators.
    pub fn identity(self) -> f32 {
        match self {
            Wcr::Sum => 0.0,
            Wcr::Prod => 1.0,
            Wcr::Max => f32::NEG_INFINITY,
            Wcr::Min => f32::INFINITY,
        }
    }
}

/// An edge: a movement of `subset` of container `data`, optionally combined on write.
#[derive(Clone, Debug, PartialEq)]
pub struct Memlet {
    pub data: String,
    pub subset: Subset,
    pub wcr: Option<Wcr>,
    pub src_conn: Option<String>,
    pub dst_conn: Option<String>,
}

impl Memlet {
    pub fn new(data: impl Into<String>, subset: Subset) -> Self {
        Memlet {
            data: data.into(),
            subset,
            wcr: None,
            src_conn: None,
            dst_conn: None,
        }
    }

    pub fn with_wcr(mut self, wcr: Option<Wcr>) -> Self {
        self.wcr = wcr;
        self
    }

    pub fn from_conn(mut self, conn: impl Into<String>) -> Self {
        self.src_conn = Some(conn.into());
        self
    }

    pub fn to_conn(mut self, conn: impl Into<String>) -> Self {
        self.dst_conn = Some(conn.into());
        self
    }
}
