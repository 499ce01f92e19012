//! Running a source's accesses through the reuse-distance engine.

use super::caches::Caches;
use super::report::Report;
use super::reuse::ReuseEngine;
use super::set_assoc::SetAssoc;
use super::shards::Sampler;
use super::stats::{Cost, Dmd};
use super::{AccessSource, AnalysisError, Execution, Sink};
use std::collections::BTreeSet;

/// Largest address space given a flat last-access table; beyond it a hash map is used.
const DENSE_LIMIT: u64 = 1 << 28;

/// How to analyze.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// Cache-line size in bytes: addresses are lines (each array starts on a line boundary)
    /// instead of elements.
    pub line: Option<u64>,
    /// Keep only these arrays' accesses (`--only L,R`); `None` keeps all.
    pub only: Option<BTreeSet<String>>,
    /// SHARDS sampling rate in (0, 1]; `None` measures exactly.
    pub sample: Option<f64>,
    /// Count each cache level's misses; needs `line` to be the caches' line size.
    pub caches: Option<Caches>,
}

impl Options {
    /// The granularity in words, for reports.
    pub fn granularity(&self) -> String {
        match self.line {
            Some(b) => format!("{b}-byte lines"),
            None => "elements".to_string(),
        }
    }
}

/// Streams `src` through the engine and aggregates per program, node and array.
pub fn analyze(src: &dyn AccessSource, opts: &Options) -> Result<Report, AnalysisError> {
    let mut c = Collector::new(src, opts)?;
    src.stream(&mut c)?;
    let factor = 1.0 / c.sampler.map_or(1.0, |s| s.rate());
    let mut parts = c.parts;
    if factor != 1.0 {
        for d in parts.all_mut() {
            d.scale(factor);
        }
    }
    let l1 = c.l1.is_some();
    for (d, e) in parts.all_mut().zip(c.exact) {
        d.accesses = e.accesses;
        d.reads = e.reads;
        d.writes = e.writes;
        d.tlb_misses = e.tlb_misses;
        if l1 {
            if d.level_misses.is_empty() {
                d.level_misses.push(0);
            }
            d.level_misses[0] = e.l1_misses;
        }
    }
    Ok(Report::new(src, opts, c.sampler.map(|s| s.rate()), parts))
}

/// Lines in a page: with caches modelled every array starts on a page, as large allocations do
/// (so arrays of the same size map to the innermost level's sets alike, as on the machine).
const PAGE_BYTES: u64 = 4096;

/// What is counted over every access even when the trace is sampled: the accesses (a sample of
/// locations drops a hot location's accesses wholesale, so their count is a poor estimate), the
/// innermost level's simulated misses and the TLB's. One per program, node and array, in [`Parts`]'
/// order; empty when nothing is sampled or simulated (the exact counts are then in [`Parts`]).
#[derive(Clone, Copy, Default)]
struct Exact {
    accesses: u64,
    reads: u64,
    writes: u64,
    l1_misses: u64,
    tlb_misses: u64,
}

/// The data TLB over every access: reuse distances of pages.
struct TlbSim {
    pages: ReuseEngine,
    lines_per_page: u64,
    entries: u64,
    /// The most recent page: touching it again is a hit that leaves the LRU order as it is.
    last: Option<u64>,
}

impl TlbSim {
    /// Whether the access to `line` misses.
    #[inline]
    fn misses(&mut self, line: u64) -> bool {
        let page = line / self.lines_per_page;
        if self.last == Some(page) {
            return false;
        }
        self.last = Some(page);
        let r = self.pages.access(page);
        r.first || r.distance > self.entries
    }
}

/// The accumulators of one analysis.
pub struct Parts {
    pub total: Dmd,
    pub nodes: Vec<Dmd>,
    pub arrays: Vec<Dmd>,
    pub node_flops: Vec<u64>,
    /// Per node; empty when the source knows no loops.
    pub node_execution: Vec<Execution>,
}

impl Parts {
    fn all_mut(&mut self) -> impl Iterator<Item = &mut Dmd> {
        std::iter::once(&mut self.total)
            .chain(self.nodes.iter_mut())
            .chain(self.arrays.iter_mut())
    }
}

struct Collector {
    /// First address of each array.
    base: Vec<u64>,
    elem_bytes: Vec<u64>,
    keep: Vec<bool>,
    line: Option<u64>,
    sampler: Option<Sampler>,
    /// Other locations in a measured distance stand for this many (1/rate when sampling).
    stretch: f64,
    engine: ReuseEngine,
    /// Each cache level's capacity in lines, innermost first (empty without caches).
    capacities: Vec<u64>,
    /// The innermost level, when its associativity is known: simulated over every access.
    l1: Option<SetAssoc>,
    tlb: Option<TlbSim>,
    exact: Vec<Exact>,
    parts: Parts,
}

impl Collector {
    fn new(src: &dyn AccessSource, opts: &Options) -> Result<Self, AnalysisError> {
        let arrays = src.arrays();
        if opts.line == Some(0) {
            return Err(AnalysisError::BadOption(
                "the cache-line size must be a positive number of bytes".into(),
            ));
        }
        if let Some(c) = &opts.caches {
            if opts.line != Some(c.line_bytes()) {
                return Err(AnalysisError::BadOption(format!(
                    "the caches have {}-byte lines: analyze at that granularity (`--line {}`)",
                    c.line_bytes(),
                    c.line_bytes()
                )));
            }
        }
        if let Some(only) = &opts.only {
            if let Some(bad) = only.iter().find(|n| !arrays.iter().any(|a| &a.name == *n)) {
                let names: Vec<&str> = arrays.iter().map(|a| a.name.as_str()).collect();
                return Err(AnalysisError::UnknownArray(bad.clone(), names.join(", ")));
            }
        }
        let sampler = opts
            .sample
            .map(|r| {
                Sampler::new(r).ok_or_else(|| {
                    AnalysisError::BadOption(format!("sampling rate {r} is not in (0, 1]"))
                })
            })
            .transpose()?;
        let page = match (&opts.caches, opts.line) {
            (Some(_), Some(line)) => (PAGE_BYTES / line).max(1),
            _ => 1,
        };
        let mut base = Vec::with_capacity(arrays.len());
        let mut next = 0u64;
        for a in arrays {
            next = next.next_multiple_of(page);
            base.push(next);
            next += match opts.line {
                Some(b) => (a.elements * a.elem_bytes).div_ceil(b),
                None => a.elements,
            };
        }
        let l1 = opts.caches.as_ref().and_then(|c| {
            let level = &c.levels[0];
            let ways = level.ways?;
            SetAssoc::new(level.size_bytes / (level.line_bytes * ways), ways)
        });
        let tlb = (opts.caches.as_ref()).and_then(|c| {
            let t = c.tlb.as_ref()?;
            let lines_per_page = t.page_bytes / c.line_bytes();
            let pages = next.div_ceil(lines_per_page);
            Some(TlbSim {
                pages: if pages <= DENSE_LIMIT {
                    ReuseEngine::dense(pages)
                } else {
                    ReuseEngine::sparse()
                },
                lines_per_page,
                entries: t.entries,
                last: None,
            })
        });
        let exact = if sampler.is_some() || l1.is_some() || tlb.is_some() {
            vec![Exact::default(); 1 + src.nodes().len() + arrays.len()]
        } else {
            Vec::new()
        };
        let engine = if sampler.is_none() && next <= DENSE_LIMIT {
            ReuseEngine::dense(next)
        } else {
            ReuseEngine::sparse()
        };
        Ok(Collector {
            base,
            elem_bytes: arrays.iter().map(|a| a.elem_bytes).collect(),
            keep: arrays
                .iter()
                .map(|a| opts.only.as_ref().is_none_or(|o| o.contains(&a.name)))
                .collect(),
            line: opts.line,
            stretch: 1.0 / sampler.map_or(1.0, |s| s.rate()),
            sampler,
            engine,
            capacities: opts.caches.as_ref().map_or(Vec::new(), Caches::capacities),
            l1,
            tlb,
            exact,
            parts: Parts {
                total: Dmd::default(),
                nodes: vec![Dmd::default(); src.nodes().len()],
                arrays: vec![Dmd::default(); arrays.len()],
                node_flops: vec![0; src.nodes().len()],
                node_execution: Vec::new(),
            },
        })
    }
}

impl Sink for Collector {
    #[inline]
    fn access(&mut self, node: usize, array: usize, index: u64, write: bool) {
        if !self.keep[array] {
            return;
        }
        let addr = self.base[array]
            + match self.line {
                Some(b) => index * self.elem_bytes[array] / b,
                None => index,
            };
        if !self.exact.is_empty() {
            let missed = self.l1.as_mut().is_some_and(|c| !c.access(addr));
            let tlb_missed = self.tlb.as_mut().is_some_and(|t| t.misses(addr));
            let nodes = self.parts.nodes.len();
            for k in [0, 1 + node, 1 + nodes + array] {
                let e = &mut self.exact[k];
                e.accesses += 1;
                e.reads += u64::from(!write);
                e.writes += u64::from(write);
                e.l1_misses += u64::from(missed);
                e.tlb_misses += u64::from(tlb_missed);
            }
        }
        if self.sampler.is_some_and(|s| !s.keeps(addr)) {
            return;
        }
        let r = self.engine.access(addr);
        // The location itself is always counted; the others stand for 1/rate locations each.
        let distance = 1.0 + (r.distance - 1) as f64 * self.stretch;
        let cost = Cost::of(distance, r.first).in_caches(distance, &self.capacities);
        self.parts.total.record(&cost, write);
        self.parts.nodes[node].record(&cost, write);
        self.parts.arrays[array].record(&cost, write);
    }

    fn flops(&mut self, node: usize, flops: u64) {
        self.parts.node_flops[node] += flops;
    }

    /// Only with caches modelled: the loops feed the cost model, which needs them.
    fn counts_loops(&self) -> bool {
        !self.capacities.is_empty()
    }

    fn loop_run(&mut self, node: usize, flops: u64, vector: bool, runs: f64) {
        let e = &mut self.parts.node_execution;
        if e.is_empty() {
            e.resize(self.parts.node_flops.len(), Execution::default());
        }
        e[node].add(flops, vector, runs);
    }
}
