//! The numerics layer: the rewritten program must compute what the original computed.
//!
//! Both run on the same deterministic random inputs. Small programs run in the reference
//! interpreter; when one run would exceed the interpreter's budget and every symbol has a
//! value, both run as compiled C instead (two compiles, each cached by content). The original's
//! C outputs are kept by program hash, and a successful step's outputs become the next step's
//! original outputs, so a sequence of steps compiles each program once.

use super::{Checks, Refusal};
use crate::check::{compare_outputs, random_inputs, same_outputs, NumericsError};
use crate::codegen::Compiled;
use crate::ir::{Graph, NodeId, NodeKind, Program, Range, SymEnv, SymExpr, Tensor};
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
    pub rewritten: &'a Program,
    pub rewritten_hash: &'a str,
    pub checks: &'a Checks,
}

/// Why the numerics layer refused.
pub(super) enum Failure {
    Numerics(Box<NumericsError>),
    /// The rewritten program could not be compiled or run as C.
    Compiled(String),
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
            Failure::Compiled(message) => Refusal::CompiledCheck {
                transformation,
                node,
                message,
            },
        }
    }
}

impl Run<'_> {
    /// Compares outputs; `Ok` carries what was done, in words, for the step's record.
    pub fn compare(&self, cache: &mut OutputCache) -> Result<String, Failure> {
        let budget = self.checks.numerics_budget;
        let w = work(self.original);
        if w.is_some_and(|w| w <= budget) {
            let inputs = random_inputs(self.original, self.checks.seed).map_err(numerics)?;
            same_outputs(self.original, self.rewritten, &inputs).map_err(numerics)?;
            return Ok("numerics".to_string());
        }
        let too_big = format!(
            "about {} tasklet executions exceed the interpreter budget of {budget}",
            w.map_or("unknown".to_string(), |w| w.to_string())
        );
        if !self.checks.compiled {
            return Ok(format!(
                "numerics skipped: {too_big}, and compiled C checks are off"
            ));
        }
        let unbound: Vec<&str> = (self.original.symbols.iter())
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.as_str())
            .collect();
        if !unbound.is_empty() {
            return Ok(format!(
                "numerics skipped: {too_big}, and compiled C needs values for {}",
                unbound.join(", ")
            ));
        }
        let inputs = random_inputs(self.original, self.checks.seed).map_err(numerics)?;
        let want = match cache.get(self.original_hash, &inputs) {
            Some(o) => o,
            None => match run_c(self.original, &inputs) {
                Ok(o) => o,
                Err(e) => {
                    return Ok(format!(
                    "numerics skipped: {too_big}, and the original cannot run as compiled C: {e}"
                ))
                }
            },
        };
        let got = run_c(self.rewritten, &inputs).map_err(|e| Failure::Compiled(e.to_string()))?;
        cache.put(self.original_hash, &inputs, want.clone());
        compare_outputs(&got, &want).map_err(numerics)?;
        cache.put(self.rewritten_hash, &inputs, got);
        Ok(format!("numerics (compiled C; {too_big})"))
    }
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
    for n in g.g.node_weights() {
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
