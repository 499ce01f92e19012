//! Data-movement analysis: exact data movement distance (DMD) from LRU reuse distances.
//!
//! The model: memory is a hierarchy in which an access costs the square root of its LRU reuse
//! distance — the number of distinct locations touched since the previous access to the same
//! location, counting itself (in `a b b c a` the second `b` has distance 1, the second `a` 3).
//! DMD = Σ over accesses of sqrt(distance). It ranks programs and parameters by data movement
//! without running them, at every cache size at once.
//!
//! # The cold-access convention
//!
//! A first access to a location has no previous access. Here it gets the distance
//! *number of distinct locations touched so far, counting itself*: the k-th distinct location
//! touched costs sqrt(k). This is the LRU stack depth the location would have if all memory
//! started out stacked in order of first use below everything touched — data that was never
//! touched comes from further away the larger the footprint already is. It only depends on the
//! footprint M (the cold total is Σ_{k=1..M} sqrt(k) for the whole trace), and every report
//! keeps it apart: `dmd_warm` excludes first accesses, `dmd_cold` is exactly what this
//! convention charges them, and `first_accesses` counts them, so any other convention (e.g.
//! "every first access costs sqrt(M)") can be recomputed from the report. Miss-ratio curves
//! count first accesses as misses at every capacity.
//!
//! # Where accesses come from
//!
//! An [`AccessSource`] streams accesses (node, array, flat element index, read or write) into a
//! [`Sink`] without materialising the trace: [`trace::IrTrace`] walks a lowered program in the
//! interpreter's order, and [`kernels::Kernel`] generates the built-in kernels' loop nests.
//! [`collect::analyze`] maps them to addresses (elements, or cache lines with `line`),
//! optionally samples them ([`shards`]), measures reuse distances ([`reuse`]) and aggregates per
//! program, node and array ([`report`]).
//!
//! # Element reads at data-dependent indices
//!
//! A tasklet may read `conn[i, j]`, one element of its connector's subset at indices computed
//! from values (Gather, GatherElements). A trace has no values, so [`trace::IrTrace`] counts each
//! such connector as one read per tasklet execution, of the *first* element of the subset (none
//! if the subset is empty, as no read from it can succeed), placed after the plain reads. The
//! counts match the interpreter when each such connector is read once per execution (as in the
//! built-in operators); the interpreter reads lazily, so a connector read twice in an expression
//! or only inside one branch of a `select` differs. The addresses are not the real ones:
//! executions sharing a window all hit its first element, so the gathered array's footprint and
//! reuse distances usually come out smaller (exact when every index is 0). Treat the DMD of
//! programs with element reads as an approximation.

pub mod caches;
pub mod choose;
pub mod collect;
pub mod cost;
pub mod fit;
pub mod kernels;
pub mod report;
pub mod reuse;
pub mod set_assoc;
pub mod shards;
mod simd;
pub mod stats;
pub mod svg;
pub mod trace;
mod walk;

pub use collect::{analyze, Options};
pub use report::Report;

use crate::ir::NodeId;

/// A data container as the analysis sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    pub name: String,
    pub elements: u64,
    pub elem_bytes: u64,
}

/// A node (or kernel phase) accesses are attributed to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// The IR node, for traces of programs.
    pub id: Option<NodeId>,
    pub label: String,
    /// Bytes moved by the node's outer memlets (volume × element size), when known.
    pub bytes_moved: Option<u64>,
}

/// Receives a stream of accesses.
pub trait Sink {
    /// One element access: `node` and `array` index into the source's lists.
    fn access(&mut self, node: usize, array: usize, index: u64, write: bool);
    /// Floating-point operations performed by `node`.
    fn flops(&mut self, node: usize, flops: u64);
    /// A run of an innermost loop of `node` (or one execution outside any loop) performing
    /// `flops`, whether it can run as SIMD lanes, and how many loop runs it stands for (a
    /// fraction when the compiler interchanges it with its enclosing loop, see
    /// [`simd`]); sources that know no loops never call it.
    fn loop_run(&mut self, node: usize, flops: u64, vector: bool, runs: f64) {
        let _ = (node, flops, vector, runs);
    }
    /// Whether [`Sink::loop_run`] is wanted: judging each loop costs work per loop entry that
    /// only the cost model uses.
    fn counts_loops(&self) -> bool {
        false
    }
}

/// How the arithmetic of a program or node runs, as the innermost loops show it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Execution {
    /// FLOPs in loops that can run as SIMD lanes.
    pub vector_flops: u64,
    /// FLOPs in loops that cannot (reductions into one element, strided or computed accesses).
    pub scalar_flops: u64,
    /// Innermost-loop runs (each costs a loop's setup, whatever its length) as the compiled code
    /// runs them.
    pub loop_runs: f64,
}

impl std::iter::Sum for Execution {
    fn sum<I: Iterator<Item = Execution>>(iter: I) -> Execution {
        iter.fold(Execution::default(), |a, b| Execution {
            vector_flops: a.vector_flops + b.vector_flops,
            scalar_flops: a.scalar_flops + b.scalar_flops,
            loop_runs: a.loop_runs + b.loop_runs,
        })
    }
}

impl Execution {
    pub fn add(&mut self, flops: u64, vector: bool, runs: f64) {
        if vector {
            self.vector_flops += flops;
        } else {
            self.scalar_flops += flops;
        }
        self.loop_runs += runs;
    }
}

/// Something that can stream its element accesses in program order.
pub trait AccessSource {
    fn name(&self) -> String;
    fn arrays(&self) -> &[ArrayInfo];
    fn nodes(&self) -> &[NodeInfo];
    fn stream(&self, sink: &mut dyn Sink) -> Result<(), AnalysisError>;
}

/// Why an analysis could not be done.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AnalysisError {
    #[error("cannot lower the program for tracing: {0}")]
    Expand(#[from] crate::ops::expand::ExpandError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Interp(#[from] crate::interp::InterpError),
    #[error(
        "container `{name}` has shape dimension `{dim}` that does not evaluate to a size: {reason}"
    )]
    #[diagnostic(help(
        "bind every symbol, e.g. `--dim {name}=64`, or pick a size with `--sweep`"
    ))]
    Shape {
        name: String,
        dim: String,
        reason: String,
    },
    #[error("node {0} is a library node that could not be lowered to maps and tasklets")]
    Library(NodeId),
    #[error("no built-in kernel is called `{0}`")]
    #[diagnostic(help("kernels: matmul, matmul-tiled, matmul-recursive, attention, conv2d, fft"))]
    UnknownKernel(String),
    #[error("kernel `{kernel}`: parameter `{param}`: {message}")]
    KernelParam {
        kernel: String,
        param: String,
        message: String,
    },
    #[error("`--only` names `{0}`, which is not an array of this program")]
    #[diagnostic(help("arrays: {1}"))]
    UnknownArray(String, String),
    #[error("{0}")]
    BadOption(String),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Caches(#[from] caches::CachesError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    UnknownTransformation(#[from] crate::transform::UnknownTransformation),
    #[error("{transformation} applies to none of the {count} candidates at {site}: {reasons}")]
    NoCandidate {
        transformation: String,
        site: String,
        count: usize,
        reasons: String,
    },
    #[error("the sweep needs at least two sizes to fit a leading term; got {0}")]
    ShortSweep(usize),
}
