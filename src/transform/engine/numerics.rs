//! The numerics layer: the rewritten program must compute what the original computed.
//!
//! Only the region the step changed runs ([`region`]): its original and rewritten sides, cut
//! out as standalone programs with one signature, run on the same deterministic random inputs
//! and must leave the same values in every container read after the region. Each side runs in
//! the reference interpreter when its work fits the interpreter's budget, and as compiled C
//! otherwise (a small program: one map, not the model). When the region cannot be cut out, the
//! whole programs are compared the same way, and the record says why.
//!
//! Compiled-C outputs of original sides (and of whole originals) are kept by program hash; a
//! successful step's outputs become the next step's original outputs, so a sequence of steps
//! on the same map compiles each version once (the C compile itself is cached by content too).

// The region modules live beside this file; they are declared here so that the engine module
// itself needs no change.
mod region;
mod standalone;

use super::diff::program_hash;
use super::{Checks, Refusal};
use crate::check::{compare_outputs, random_inputs, same_outputs, NumericsError};
use crate::codegen::Compiled;
use crate::ir::{Graph, NodeId, NodeKind, Program, Range, SymEnv, SymExpr, Tensor};
use region::{Isolation, Region};
use std::collections::BTreeMap;

/// How many programs' C outputs an engine keeps.
const CACHE_ENTRIES: usize = 4;

type Values = BTreeMap<String, Tensor>;

/// Compiled-C outputs of recent programs, keyed by program hash (most recent last).
#[derive(Debug, Default)]
pub(super) struct OutputCache {
    entries: Vec<(String, Values, Values)>,
}

impl OutputCache {
    /// The outputs of program `hash` on exactly these inputs, if kept.
    fn get(&self, hash: &str, inputs: &Values) -> Option<Values> {
        self.entries
            .iter()
            .find(|(h, i, _)| h == hash && i == inputs)
            .map(|(_, _, o)| o.clone())
    }

    pub fn hashes(&self) -> Vec<String> {
        self.entries.iter().map(|(h, _, _)| h.clone()).collect()
    }

    fn put(&mut self, hash: &str, inputs: &Values, outputs: Values) {
        self.entries.retain(|(h, _, _)| h != hash);
        self.entries
            .push((hash.to_string(), inputs.clone(), outputs));
        if self.entries.len() > CACHE_ENTRIES {
            self.entries.remove(0);
        }
    }
}

/// One comparison of a rewrite against its original.
pub(super) struct Run<'a> {
    pub original: &'a Program,
    pub original_hash: &'a str,
    /// What the step changed, node by node.
    pub changes: &'a super::diff::Changes,
    pub rewritten: &'a Program,
    pub rewritten_hash: &'a str,
    pub checks: &'a Checks,
}

/// Why the numerics layer refused.
#[derive(Debug)]
pub(super) enum Failure {
    Numerics(Box<NumericsError>),
    /// The check could not run (too large for the interpreter and not runnable as C).
    Unchecked(String),
}

impl Failure {
    pub fn refusal(self, transformation: &str, node: NodeId) -> Refusal {
        let transformation = transformation.to_string();
        match self {
            Failure::Numerics(error) => Refusal::Numerics {
                transformation,
                node,
                error,
            },
            Failure::Unchecked(message) => Refusal::Unchecked {
                transformation,
                node,
                message,
            },
        }
    }
}

impl Run<'_> {
    /// Compares the region the step changed (the whole programs when the region cannot be cut
    /// out); `Ok` says how, in words, for the step's record. A comparison that cannot run is a
    /// failure: an unchecked step is never kept silently.
    pub fn compare(&self, cache: &mut OutputCache) -> Result<String, Failure> {
        if self.original_hash == self.rewritten_hash {
            return Ok("program unchanged".to_string());
        }
        if let Some(why) = crate::check::UnboundSymbols::of(self.original) {
            return Err(Failure::Unchecked(why.to_string()));
        }
        match region::isolate(self.original, self.rewritten, self.changes) {
            Isolation::Region(r) => self.region(cache, &r),
            Isolation::NotWritten(data) => Err(numerics(NumericsError::Differs {
                output: data,
                max_abs_error: f64::INFINITY,
                worst: None,
                detail: ": the rewritten region no longer writes it, but it is read after \
                         the region"
                    .into(),
            })),
            Isolation::Whole(why) => self.whole(cache, &why),
        }
    }

    /// Runs both sides of the region on the same random inputs and compares what the original
    /// side leaves behind. An original side that cannot run on random values (an index
    /// computed elsewhere, say) falls back to the whole programs.
    fn region(&self, cache: &mut OutputCache, r: &Region) -> Result<String, Failure> {
        let all = match shared_inputs(r, self.checks.seed) {
            Ok(v) => v,
            Err(e) => return self.whole(cache, &format!("no random inputs for the region: {e}")),
        };
        let budget = self.checks.numerics_budget;
        let (want, how_before) = match run_side(&r.original, &all, budget, cache, true) {
            Ok(x) => x,
            Err(e) => {
                let why = format!("the original region does not run on random inputs: {e}");
                return self.whole(cache, &why);
            }
        };
        let (got, how_after) =
            run_side(&r.rewritten, &all, budget, cache, false).map_err(SideError::rewritten)?;
        compare_outputs(&got, &want).map_err(|e| numerics(in_region(e, r)))?;
        // The next step on the same region starts from this side: keep what it computed.
        cache.put(
            &program_hash(&r.rewritten),
            &inputs_of(&r.rewritten, &all),
            got,
        );
        Ok(record(r, &how_before, &how_after))
    }

    /// The whole-program comparison: in the interpreter when the original fits its budget,
    /// otherwise both as compiled C.
    fn whole(&self, cache: &mut OutputCache, why: &str) -> Result<String, Failure> {
        let budget = self.checks.numerics_budget;
        let w = work(self.original);
        if w.is_some_and(|w| w <= budget) {
            let inputs = random_inputs(self.original, self.checks.seed).map_err(numerics)?;
            same_outputs(self.original, self.rewritten, &inputs).map_err(numerics)?;
            return Ok(format!("whole program, reference interpreter ({why})"));
        }
        let too_big = format!(
            "about {} tasklet executions exceed the interpreter budget of {budget}",
            w.map_or("unknown".to_string(), |w| w.to_string())
        );
        let inputs = random_inputs(self.original, self.checks.seed).map_err(numerics)?;
        let want = match cache.get(self.original_hash, &inputs) {
            Some(o) => o,
            None => match run_c(self.original, &inputs) {
                Ok(o) => o,
                Err(e) => {
                    return Err(Failure::Unchecked(format!(
                        "{too_big}, and the original cannot run as compiled C: {e}"
                    )))
                }
            },
        };
        let got = run_c(self.rewritten, &inputs).map_err(|e| {
            Failure::Unchecked(format!(
                "the rewritten program cannot run as compiled C: {e}"
            ))
        })?;
        cache.put(self.original_hash, &inputs, want.clone());
        compare_outputs(&got, &want).map_err(numerics)?;
        cache.put(self.rewritten_hash, &inputs, got);
        Ok(format!("whole program, compiled C; {too_big} ({why})"))
    }
}

/// Random values for every input of either side (one value per name, the original's first).
fn shared_inputs(r: &Region, seed: u64) -> Result<Values, NumericsError> {
    let mut all = random_inputs(&r.original, seed)?;
    for (name, t) in random_inputs(&r.rewritten, seed)? {
        all.entry(name).or_insert(t);
    }
    Ok(all)
}

/// The values of `p`'s own inputs (C refuses unexpected ones).
fn inputs_of(p: &Program, all: &Values) -> Values {
    (p.inputs.iter())
        .filter_map(|n| all.get(n).map(|t| (n.clone(), t.clone())))
        .collect()
}

/// A difference found in the region, naming the region's nodes.
fn in_region(e: NumericsError, r: &Region) -> NumericsError {
    match e {
        NumericsError::Differs {
            output,
            max_abs_error,
            worst,
            detail,
        } => NumericsError::Differs {
            output,
            max_abs_error,
            worst,
            detail: format!("{detail} (after the region {})", ids(&r.before)),
        },
        other => other,
    }
}

fn ids(v: &[NodeId]) -> String {
    let v: Vec<String> = v.iter().map(|n| n.to_string()).collect();
    v.join(", ")
}

/// `region of 2 nodes (1 after), reference interpreter`.
fn record(r: &Region, before: &Method, after: &Method) -> String {
    let count = |n: usize| match n {
        1 => "1 node".to_string(),
        n => format!("{n} nodes"),
    };
    let mut size = format!("region of {}", count(r.before.len()));
    if r.after.len() != r.before.len() {
        size.push_str(&format!(" ({} after)", r.after.len()));
    }
    if before.name() == after.name() {
        format!("{size}, {}", after.describe())
    } else {
        format!(
            "{size}, original in {}, rewritten in {}",
            before.describe(),
            after.describe()
        )
    }
}

/// How one side of a region ran.
enum Method {
    Interpreter,
    Compiled {
        work: Option<u64>,
    },
    /// Outputs kept from an earlier step whose rewritten region was this one.
    Kept,
}

impl Method {
    fn name(&self) -> &'static str {
        match self {
            Method::Interpreter => "reference interpreter",
            Method::Compiled { .. } => "compiled C",
            Method::Kept => "outputs kept from the previous step",
        }
    }

    fn describe(&self) -> String {
        match self {
            Method::Interpreter | Method::Kept => self.name().to_string(),
            Method::Compiled { work: Some(w), .. } => {
                format!("compiled C (about {w} tasklet executions)")
            }
            Method::Compiled { work: None, .. } => self.name().to_string(),
        }
    }
}

/// Why one side of a region could not run.
enum SideError {
    Interp(crate::interp::InterpError),
    Compiled(crate::codegen::CodegenError),
    /// Library nodes (interpreter only) with more work than the interpreter budget.
    TooBig(String),
}

impl std::fmt::Display for SideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SideError::Interp(e) => write!(f, "{e}"),
            SideError::Compiled(e) => write!(f, "as compiled C: {e}"),
            SideError::TooBig(m) => f.write_str(m),
        }
    }
}

impl SideError {
    /// The rewritten side failing is the step's failure.
    fn rewritten(self) -> Failure {
        match self {
            SideError::Interp(e) => numerics(NumericsError::Rewritten(e)),
            SideError::Compiled(e) => Failure::Unchecked(format!(
                "the rewritten region cannot run as compiled C: {e}"
            )),
            SideError::TooBig(m) => Failure::Unchecked(format!("the rewritten region: {m}")),
        }
    }
}

/// Runs `p` on its share of `all`: in the interpreter when its work fits `budget` (or it
/// holds library nodes, which only the interpreter runs), else as compiled C, reusing kept
/// outputs of an original side.
fn run_side(
    p: &Program,
    all: &Values,
    budget: u64,
    cache: &mut OutputCache,
    original: bool,
) -> Result<(Values, Method), SideError> {
    let inputs = inputs_of(p, all);
    // Only an original side is looked up and kept here (the caller keeps a rewritten side's
    // outputs once they passed the comparison).
    let hash = original.then(|| program_hash(p));
    if let Some(out) = hash.as_ref().and_then(|h| cache.get(h, &inputs)) {
        return Ok((out, Method::Kept));
    }
    let w = work(p);
    let mut library = false;
    p.graph
        .each(&mut |n| library |= matches!(n.kind, NodeKind::Library(_)));
    let (out, method) = if w.is_some_and(|w| w <= budget) {
        let out = crate::interp::run(p, &inputs).map_err(SideError::Interp)?;
        (out, Method::Interpreter)
    } else if library {
        return Err(SideError::TooBig(format!(
            "it holds library nodes, which only the interpreter runs, and about {} tasklet \
                 executions exceed its budget of {budget}",
            w.map_or("unknown".to_string(), |w| w.to_string())
        )));
    } else {
        let out = run_c(p, &inputs).map_err(SideError::Compiled)?;
        (out, Method::Compiled { work: w })
    };
    if let Some(hash) = &hash {
        cache.put(hash, &inputs, out.clone());
    }
    Ok((out, method))
}

fn numerics(e: NumericsError) -> Failure {
    Failure::Numerics(Box::new(e))
}

fn run_c(p: &Program, inputs: &Values) -> Result<Values, crate::codegen::CodegenError> {
    Compiled::build(p)?.run(inputs)
}

/// Tasklet executions of one run, when all ranges are constant.
pub fn work(p: &Program) -> Option<u64> {
    let env = p.symbol_values();
    graph_work(&p.graph, &env)
}

fn graph_work(g: &Graph, env: &SymEnv) -> Option<u64> {
    let mut total: u64 = 0;
    for n in g.nodes() {
        total = total.checked_add(match &n.kind {
            NodeKind::Map(m) => {
                let mut points: u64 = 1;
                for prm in &m.params {
                    // Ranges that depend on outer parameters (tiles) count their largest extent.
                    let len = prm.range.len();
                    let len = len.eval(env).ok().or_else(|| max_extent(&prm.range, env))?;
                    points = points.checked_mul(u64::try_from(len.max(0)).ok()?)?;
                }
                points.checked_mul(graph_work(&m.body, env)?.max(1))?
            }
            NodeKind::Tasklet(_) => 1,
            NodeKind::Library(_) | NodeKind::Access(_) => 0,
        })?;
    }
    Some(total)
}

/// For a tile range `t : min(t + T, N)`, the tile size `T`.
fn max_extent(r: &Range, env: &SymEnv) -> Option<i64> {
    match &r.end {
        SymExpr::Min(a, _) => (a.as_ref() - &r.start).eval(env).ok(),
        _ => None,
    }
}
