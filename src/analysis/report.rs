//! The result of an analysis: per program, per node and per array, serializable and printable.

use super::caches::Caches;
use super::collect::{Options, Parts};
use super::cost::CostModel;
use super::stats::{Dmd, MissRatio};
use super::{AccessSource, Execution};
use crate::ir::NodeId;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Totals for the program, one node or one array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<NodeId>,
    #[serde(flatten)]
    pub stats: Dmd,
    /// `dmd_warm + dmd_cold`.
    pub dmd: f64,
    /// Floating-point operations (nodes and the program; arrays have none of their own).
    pub flops: Option<u64>,
    /// Bytes moved by memlets (volume × element size of the outer memlets), when known.
    pub bytes_moved: Option<u64>,
    /// FLOPs per byte moved by memlets.
    pub intensity: Option<f64>,
    /// How the arithmetic runs (program and nodes of sources that know their loops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    /// The cost model's time for these accesses (see [`Report::estimate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_ms: Option<f64>,
}

impl Entry {
    pub fn new(
        name: &str,
        id: Option<NodeId>,
        stats: Dmd,
        flops: Option<u64>,
        bytes: Option<u64>,
    ) -> Self {
        Entry {
            name: name.to_string(),
            id,
            dmd: stats.dmd(),
            stats,
            flops,
            bytes_moved: bytes,
            intensity: flops
                .zip(bytes)
                .filter(|(_, b)| *b > 0)
                .map(|(f, b)| f as f64 / b as f64),
            execution: None,
            estimated_ms: None,
        }
    }
}

/// What one cache level takes from the level below it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelTraffic {
    pub name: String,
    pub size_bytes: u64,
    /// How the level was modelled: simulated set-associative over every access (the innermost,
    /// when its associativity is known) or fully associative from reuse distances.
    pub model: String,
    /// Accesses that miss this level (and every level inside it).
    pub misses: u64,
    /// `misses / accesses`.
    pub miss_ratio: f64,
    /// `misses × line`: bytes brought into this level; the last level's is the DRAM traffic.
    pub bytes: u64,
}

impl LevelTraffic {
    /// The traffic of every level of `caches` for accesses `d`.
    pub fn of(caches: &Caches, d: &Dmd) -> Vec<LevelTraffic> {
        (caches.levels.iter().enumerate())
            .map(|(k, l)| {
                let misses = d.level_misses.get(k).copied().unwrap_or(0);
                let model = match l.ways {
                    Some(w) if k == 0 => format!("{w}-way set-associative LRU"),
                    _ => "fully associative LRU".to_string(),
                };
                LevelTraffic {
                    name: l.name.clone(),
                    size_bytes: l.size_bytes,
                    model,
                    misses,
                    miss_ratio: misses as f64 / d.accesses.max(1) as f64,
                    bytes: misses * l.line_bytes,
                }
            })
            .collect()
    }
}

/// A whole analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub program: String,
    /// `elements` or `B-byte lines`.
    pub granularity: String,
    /// The arrays kept by `--only`, when restricted.
    pub only: Option<Vec<String>>,
    /// The SHARDS sampling rate, when sampled (totals are then estimates).
    pub sample_rate: Option<f64>,
    #[serde(flatten)]
    pub total: Entry,
    /// LRU miss ratio at power-of-two capacities (in locations of the granularity).
    pub miss_ratio: Vec<MissRatio>,
    /// The cache hierarchy modelled, when one was (`--machine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches: Option<Caches>,
    /// The program's traffic at each cache level, innermost first (with `caches`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelTraffic>,
    pub nodes: Vec<Entry>,
    pub arrays: Vec<Entry>,
}

impl Report {
    pub(super) fn new(
        src: &dyn AccessSource,
        opts: &Options,
        sample_rate: Option<f64>,
        parts: Parts,
    ) -> Self {
        let node_bytes: Option<u64> = src.nodes().iter().map(|n| n.bytes_moved).sum();
        let total_flops: u64 = parts.node_flops.iter().sum();
        let runs = &parts.node_execution;
        let nodes = src
            .nodes()
            .iter()
            .zip(parts.nodes)
            .zip(&parts.node_flops)
            .enumerate()
            .map(|(k, ((n, d), &f))| Entry {
                execution: runs.get(k).copied(),
                ..Entry::new(&n.label, n.id, d, Some(f), n.bytes_moved)
            })
            .collect();
        let arrays = src
            .arrays()
            .iter()
            .zip(parts.arrays)
            .map(|(a, d)| Entry::new(&a.name, None, d, None, None))
            .collect();
        Report {
            program: src.name(),
            granularity: opts.granularity(),
            only: opts.only.as_ref().map(|o| o.iter().cloned().collect()),
            sample_rate,
            miss_ratio: parts.total.miss_ratio_curve(),
            levels: (opts.caches.as_ref())
                .map_or(Vec::new(), |c| LevelTraffic::of(c, &parts.total)),
            caches: opts.caches.clone(),
            total: Entry {
                execution: (!runs.is_empty()).then(|| runs.iter().copied().sum()),
                ..Entry::new(
                    &src.name(),
                    None,
                    parts.total,
                    Some(total_flops),
                    node_bytes,
                )
            },
            nodes,
            arrays,
        }
    }

    /// Adds `model`'s time estimate to the program and each node; the analysis must have
    /// counted the model's caches (`Options::caches`), else nothing is added.
    pub fn estimate(&mut self, model: &CostModel) {
        if self.caches.as_ref() != Some(&model.caches) {
            return;
        }
        for e in std::iter::once(&mut self.total).chain(self.nodes.iter_mut()) {
            e.estimated_ms = Some(model.estimate_ms(e));
        }
    }

    /// The report as text tables.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let t = &self.total;
        let _ = writeln!(
            out,
            "{}: {} accesses at {} granularity{}{}",
            self.program,
            t.stats.accesses,
            self.granularity,
            self.only
                .as_ref()
                .map_or(String::new(), |o| format!(", only {}", o.join(","))),
            self.sample_rate.map_or(String::new(), |r| format!(
                ", SHARDS-sampled at rate {r:.4} (estimates)"
            )),
        );
        let _ = writeln!(
            out,
            "DMD {:.6e} = warm {:.6e} + cold {:.6e} ({} first accesses)",
            t.dmd, t.stats.dmd_warm, t.stats.dmd_cold, t.stats.first_accesses
        );
        out.push_str("\nper node:\n");
        out.push_str(&table(&self.nodes));
        out.push_str("\nper array:\n");
        out.push_str(&table(&self.arrays));
        out.push_str("\nprogram:\n");
        out.push_str(&table(std::slice::from_ref(t)));
        if let Some(ms) = self.total.estimated_ms {
            let _ = writeln!(
                out,
                "\nestimated time {ms:.3} ms on one thread (accesses and misses × this machine's measured costs)"
            );
        }
        if let Some(c) = &self.caches {
            let _ = writeln!(
                out,
                "\ncaches ({}; arrays page-aligned, no write-backs):",
                c.source
            );
            let _ = writeln!(
                out,
                "  {:<6} {:>12} {:>14} {:>10} {:>14}  model",
                "level", "size", "misses", "miss ratio", "MB in"
            );
            for l in &self.levels {
                let _ = writeln!(
                    out,
                    "  {:<6} {:>12} {:>14} {:>10.4} {:>14.3}  {}",
                    l.name,
                    l.size_bytes,
                    l.misses,
                    l.miss_ratio,
                    l.bytes as f64 / 1e6,
                    l.model
                );
            }
        }
        out.push_str("\nLRU miss ratio by capacity:\n");
        for m in &self.miss_ratio {
            let _ = writeln!(out, "  {:>12}  {:.4}", m.capacity, m.ratio);
        }
        out.push_str("\nreuse-distance histogram (warm accesses):\n");
        let mut lo = 1u64;
        for (k, n) in t.stats.histogram.iter().enumerate() {
            let hi = 1u64 << k;
            let _ = writeln!(out, "  {:>12}  {n}", format!("{lo}..{hi}"));
            lo = hi + 1;
        }
        out
    }
}

fn table(rows: &[Entry]) -> String {
    let mut out = format!(
        "  {:<6} {:<24} {:>12} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8}\n",
        "id", "name", "accesses", "first", "dmd_warm", "dmd_cold", "dmd", "flops", "bytes", "AI"
    );
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for e in rows {
        let _ = writeln!(
            out,
            "  {:<6} {:<24} {:>12} {:>10} {:>12.4e} {:>12.4e} {:>12.4e} {:>12} {:>12} {:>8}",
            e.id.map_or("-".to_string(), |i| i.to_string()),
            e.name,
            e.stats.accesses,
            e.stats.first_accesses,
            e.stats.dmd_warm,
            e.stats.dmd_cold,
            e.dmd,
            opt(e.flops),
            opt(e.bytes_moved),
            e.intensity.map_or("-".to_string(), |v| format!("{v:.3}")),
        );
    }
    out
}
