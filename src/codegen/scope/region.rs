//! One OpenMP parallel region for the entry function.
//!
//! A region per parallel map costs a fork and a join each time, and on a loaded machine every
//! join waits for the slowest, possibly descheduled, thread; a run of the demo encoder had about
//! a hundred of them. Instead the top level of `dm_run` runs inside one `#pragma omp parallel`:
//! each parallel map becomes a work-shared `#pragma omp for`, and each run of sequential
//! statements between them a `#pragma omp single`. `single` rather than `masked`: whichever
//! thread arrives first runs the statements, so a descheduled thread delays nothing it does not
//! have to, and `single` carries its own barrier, which can be dropped (`nowait`) like a loop's.
//!
//! A construct ends in a barrier only when a later construct, before the next barrier, reads
//! what it (or an earlier construct since the last barrier) writes or writes what it reads or
//! writes; otherwise it gets `nowait`. The decision comes from the memlets on the top-level
//! nodes (what each construct reads and writes, by container and subset), never from labels.
//! The region's end is a barrier, so the last construct never needs its own.
//!
//! A top-level node with a parallel map nested inside it (a parallel loop under a sequential
//! one) cannot be work-shared from inside a `single`; it closes the region and keeps its own,
//! as before. Top-level scalars and locals are declared before the region, so they are shared;
//! everything declared inside a loop body stays private to the iteration.

use super::{distributes, distributes_awake, Emitter};
use crate::codegen::emit::{Class, DataInfo};
use crate::codegen::CodegenError;
use crate::ir::{Graph, NodeKind, Subset};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// What one construct of the region touches: container and subset (`None`: all of it).
#[derive(Clone, Debug, Default)]
struct Accesses {
    reads: Vec<(String, Option<Subset>)>,
    writes: Vec<(String, Option<Subset>)>,
}

impl Accesses {
    fn extend(&mut self, other: &Accesses) {
        self.reads.extend(other.reads.iter().cloned());
        self.writes.extend(other.writes.iter().cloned());
    }

    /// Whether running `self` and `later` without a barrier between them could race: one
    /// writes an element the other reads or writes.
    fn conflicts(&self, later: &Accesses) -> bool {
        let meet = |a: &[(String, Option<Subset>)], b: &[(String, Option<Subset>)]| {
            a.iter().any(|(da, sa)| {
                b.iter().any(|(db, sb)| {
                    da == db
                        && match (sa, sb) {
                            (Some(x), Some(y)) => !x.provably_disjoint(y),
                            _ => true,
                        }
                })
            })
        };
        meet(&self.writes, &later.reads)
            || meet(&self.writes, &later.writes)
            || meet(&self.reads, &later.writes)
    }
}

/// One work-shared construct of the region.
#[derive(Debug)]
enum Construct {
    /// A parallel map, as `#pragma omp for`.
    Loop(NodeIndex),
    /// Consecutive sequential statements, as `#pragma omp single`.
    Single(Vec<NodeIndex>),
}

/// A stretch of the entry function's top level, in program order.
#[derive(Debug)]
enum Segment {
    /// Constructs inside one parallel region, each with whether it may skip its barrier.
    Region(Vec<(Construct, bool)>),
    /// Statements emitted as they are, outside any region.
    Plain(Vec<NodeIndex>),
}

/// How a top-level node takes part in the region.
enum Role {
    /// A parallel map with parameters: work-shared.
    Shared,
    /// Sequential code: run by one thread.
    Sequential,
    /// Contains a parallel map below its top: stays outside the region.
    Outside,
    /// Emits no code (an access node that is not the source of a copy).
    Silent,
}

fn role(g: &Graph, idx: NodeIndex) -> Role {
    match &g.node(idx).kind {
        NodeKind::Map(m) if distributes(m) => Role::Shared,
        NodeKind::Map(m) => {
            let mut nested = false;
            m.body.walk(&mut |n| {
                nested |= matches!(&n.kind, NodeKind::Map(inner) if distributes(inner));
            });
            if nested {
                Role::Outside
            } else {
                Role::Sequential
            }
        }
        NodeKind::Access(_) => {
            let copies = g
                .out_edges(idx)
                .iter()
                .any(|e| matches!(g.node(e.other).kind, NodeKind::Access(_)));
            if copies {
                Role::Sequential
            } else {
                Role::Silent
            }
        }
        NodeKind::Tasklet(_) | NodeKind::Library(_) => Role::Sequential,
    }
}

/// What the code emitted for top-level node `idx` reads and writes.
fn accesses(g: &Graph, idx: NodeIndex, data: &BTreeMap<String, DataInfo>) -> Accesses {
    let mut acc = Accesses::default();
    let node = g.node(idx);
    if let NodeKind::Access(src) = &node.kind {
        for e in g.out_edges(idx) {
            if let NodeKind::Access(dst) = &g.node(e.other).kind {
                let subset = Some(e.memlet.subset.clone());
                acc.reads.push((src.clone(), subset.clone()));
                acc.writes.push((dst.clone(), subset));
            }
        }
        return acc;
    }
    let edge = |m: &crate::ir::Memlet| (m.data.clone(), Some(m.subset.clone()));
    acc.reads
        .extend(g.in_edges(idx).iter().map(|e| edge(e.memlet)));
    acc.writes
        .extend(g.out_edges(idx).iter().map(|e| edge(e.memlet)));
    if let NodeKind::Map(m) = &node.kind {
        // A container the body touches without an outer memlet (a transient used only inside
        // the map) is shared unless it is declared per iteration: count it as read and written
        // whole.
        let outer: BTreeSet<&String> = acc
            .reads
            .iter()
            .chain(&acc.writes)
            .map(|(d, _)| d)
            .collect();
        let hidden: Vec<String> = m
            .body
            .data_used()
            .into_iter()
            .filter(|d| !outer.contains(d))
            .filter(|d| match data.get(d) {
                Some(info) => {
                    !info.private_to(node.id) && !matches!(info.class, Class::Constant { .. })
                }
                None => true,
            })
            .collect();
        for d in hidden {
            acc.reads.push((d.clone(), None));
            acc.writes.push((d, None));
        }
    }
    acc
}

/// Greedy barrier placement: a construct keeps its barrier only when the next one conflicts
/// with something run since the last barrier. Placing each barrier as late as possible
/// separates every conflicting pair with the fewest barriers.
fn barriers(constructs: &[Accesses]) -> Vec<bool> {
    let mut pending = Accesses::default();
    (0..constructs.len())
        .map(|i| {
            pending.extend(&constructs[i]);
            match constructs.get(i + 1) {
                Some(next) if pending.conflicts(next) => {
                    pending = Accesses::default();
                    false
                }
                _ => true,
            }
        })
        .collect()
}

/// Splits the top level of `g` into regions and plain stretches.
fn plan(g: &Graph, data: &BTreeMap<String, DataInfo>) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut pending: Vec<(Construct, Accesses)> = Vec::new();
    let flush = |pending: &mut Vec<(Construct, Accesses)>, segments: &mut Vec<Segment>| {
        let items = std::mem::take(pending);
        if items.iter().any(|(c, _)| matches!(c, Construct::Loop(_))) {
            let items = awake_loops(g, data, items);
            let accs: Vec<Accesses> = items.iter().map(|(_, a)| a.clone()).collect();
            let nowait = barriers(&accs);
            segments.push(Segment::Region(
                items.into_iter().map(|(c, _)| c).zip(nowait).collect(),
            ));
        } else {
            let nodes = items
                .into_iter()
                .flat_map(|(c, _)| match c {
                    Construct::Single(nodes) => nodes,
                    Construct::Loop(idx) => vec![idx],
                })
                .collect();
            segments.push(Segment::Plain(nodes));
        }
    };
    for idx in g.ordered() {
        match role(g, idx) {
            Role::Silent => {}
            Role::Shared => pending.push((Construct::Loop(idx), accesses(g, idx, data))),
            Role::Sequential => {
                let acc = accesses(g, idx, data);
                match pending.last_mut() {
                    Some((Construct::Single(nodes), a)) => {
                        nodes.push(idx);
                        a.extend(&acc);
                    }
                    _ => pending.push((Construct::Single(vec![idx]), acc)),
                }
            }
            Role::Outside => {
                flush(&mut pending, &mut segments);
                segments.push(Segment::Plain(vec![idx]));
            }
        }
    }
    flush(&mut pending, &mut segments);
    segments
}

/// The constructs of a region that opens anyway, with each parallel map that reaches
/// [`super::AWAKE_MIN_WORK`] taken out of its `single` as a loop of its own.
fn awake_loops(
    g: &Graph,
    data: &BTreeMap<String, DataInfo>,
    items: Vec<(Construct, Accesses)>,
) -> Vec<(Construct, Accesses)> {
    let mut out: Vec<(Construct, Accesses)> = Vec::new();
    for (construct, acc) in items {
        let Construct::Single(nodes) = construct else {
            out.push((construct, acc));
            continue;
        };
        for idx in nodes {
            let acc = accesses(g, idx, data);
            let awake = matches!(&g.node(idx).kind, NodeKind::Map(m) if distributes_awake(m));
            match (awake, out.last_mut()) {
                (true, _) => out.push((Construct::Loop(idx), acc)),
                (false, Some((Construct::Single(run), a))) => {
                    run.push(idx);
                    a.extend(&acc);
                }
                (false, _) => out.push((Construct::Single(vec![idx]), acc)),
            }
        }
    }
    out
}

impl Emitter<'_> {
    /// The top level of `dm_run`: parallel maps work-shared inside one region (see the module
    /// documentation), everything else as it is.
    pub fn entry(&mut self, g: &Graph) -> Result<(), CodegenError> {
        for segment in plan(g, self.data) {
            match segment {
                Segment::Plain(nodes) => {
                    for idx in nodes {
                        self.node(g, idx)?;
                    }
                }
                Segment::Region(constructs) => self.region(g, constructs)?,
            }
        }
        Ok(())
    }

    fn region(
        &mut self,
        g: &Graph,
        constructs: Vec<(Construct, bool)>,
    ) -> Result<(), CodegenError> {
        self.w.line("#pragma omp parallel");
        self.w.open("{");
        self.in_region = true;
        for (construct, nowait) in constructs {
            match construct {
                Construct::Loop(idx) => {
                    self.nowait = nowait;
                    self.node(g, idx)?;
                }
                Construct::Single(nodes) => {
                    self.w.line(if nowait {
                        "#pragma omp single nowait"
                    } else {
                        "#pragma omp single"
                    });
                    self.w.open("{");
                    for idx in nodes {
                        self.node(g, idx)?;
                    }
                    self.w.close();
                }
            }
        }
        self.in_region = false;
        self.w.close();
        Ok(())
    }
}
