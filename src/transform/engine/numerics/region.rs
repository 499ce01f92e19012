//! The region a step changed, cut out of the original and the rewritten program, so that the
//! numerics layer runs only what the step touched instead of both whole programs.
//!
//! The region is the set of top-level computation nodes (maps, library nodes, tasklets) that
//! differ between the two programs: a node that appeared, disappeared or changed anywhere inside
//! (its own fingerprint or any nested node's, see [`super::super::diff`]) counts as its top-level
//! ancestor, in each program. Everything else must be identical (same nodes, same edges among
//! them, same declarations of every container they or the signature use), so the two programs
//! compute the same outputs exactly when the two regions leave the same values behind.
//!
//! Each side becomes a standalone program ([`super::standalone`]) with one signature for both:
//! - inputs: the containers a region reads at a version written outside it (or never written);
//!   program inputs and transients alike get random values, constants keep their values;
//! - outputs: the containers the ORIGINAL region writes that the program returns or that a node
//!   outside the region reads after it. The rewritten region must write each of them.
//!
//! When that picture does not hold (the rest of the program changed too, the region is not
//! convex, the two regions disagree on what they read before writing), [`isolate`] says why and
//! the numerics layer compares the whole programs instead.

use super::super::diff::Changes;
use super::standalone::{self, Plan};
use crate::ir::{Graph, NodeId, NodeKind, Program};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// Both sides of a region as standalone programs with the same signature.
#[derive(Debug)]
pub(super) struct Region {
    pub original: Program,
    pub rewritten: Program,
    /// The region's top-level computation nodes in the original and in the rewritten program.
    pub before: Vec<NodeId>,
    pub after: Vec<NodeId>,
}

/// What [`isolate`] found.
#[derive(Debug)]
pub(super) enum Isolation {
    Region(Box<Region>),
    /// The original region writes this container, which is read after the region (or returned),
    /// and the rewritten region does not write it: a numerics failure.
    NotWritten(String),
    /// The region cannot stand alone, for this reason: compare whole programs.
    Whole(String),
}

/// Finds the region the rewrite changed (`changes`, found by the engine) and builds both sides
/// as standalone programs.
pub(super) fn isolate(original: &Program, rewritten: &Program, changes: &Changes) -> Isolation {
    match try_isolate(original, rewritten, changes) {
        Ok(i) => i,
        Err(why) => Isolation::Whole(why),
    }
}

fn try_isolate(
    original: &Program,
    rewritten: &Program,
    changes: &Changes,
) -> Result<Isolation, String> {
    let changed = &changes.top_level;
    if original.inputs != rewritten.inputs
        || original.outputs != rewritten.outputs
        || original.symbols != rewritten.symbols
    {
        return Err("the rewrite changed the program's signature or symbols".into());
    }
    let o = Side::new(original, changed)?;
    let r = Side::new(rewritten, changed)?;
    if o.nodes.is_empty() && r.nodes.is_empty() {
        return Err("no computation node changed".into());
    }
    if changes.symbols || !changes.declared.is_empty() {
        same_outside(&o, &r)?;
    } else {
        // The engine's comparison found every node outside `changed` the same, with its body
        // and edges, and every declaration the same: only constant values remain to compare.
        same_constants(&o, &r)?;
        debug_assert_eq!(
            same_outside(&o, &r),
            Ok(()),
            "outside the region, per the changes"
        );
    }
    let inputs = region_inputs(&o, &r)?;
    let outputs = o.read_after();
    if let Some(lost) = outputs.iter().find(|d| !r.writes.contains_key(*d)) {
        return Ok(Isolation::NotWritten(lost.clone()));
    }
    let extra = r.read_after();
    if let Some(d) = extra.iter().find(|d| !o.writes.contains_key(*d)) {
        return Err(format!(
            "the rewritten region also writes `{d}`, which the original region does not \
             and which is read after it"
        ));
    }
    let renamed = standalone::input_names(&inputs, &outputs, original, rewritten);
    let plan = Plan {
        inputs: &inputs,
        outputs: &outputs,
        renamed: &renamed,
    };
    Ok(Isolation::Region(Box::new(Region {
        original: standalone::build(&o, &plan)?,
        rewritten: standalone::build(&r, &plan)?,
        before: o.ids(),
        after: r.ids(),
    })))
}

fn is_access(g: &Graph, idx: NodeIndex) -> bool {
    matches!(g.node(idx).kind, NodeKind::Access(_))
}

/// One program's view of the region.
pub(super) struct Side<'a> {
    pub p: &'a Program,
    /// The region's top-level computation nodes.
    pub nodes: BTreeSet<NodeIndex>,
    /// Per container, the access nodes the region reads whose value comes from outside it.
    pub inputs: BTreeMap<String, Vec<NodeIndex>>,
    /// Per container, the region nodes that write it.
    pub writes: BTreeMap<String, Vec<NodeIndex>>,
}

impl<'a> Side<'a> {
    fn new(p: &'a Program, changed: &BTreeSet<NodeId>) -> Result<Side<'a>, String> {
        let g = &p.graph;
        let nodes: BTreeSet<NodeIndex> = (g.node_indices())
            .filter(|&i| !is_access(g, i) && changed.contains(&g.node(i).id))
            .collect();
        let mut side = Side {
            p,
            nodes,
            inputs: BTreeMap::new(),
            writes: BTreeMap::new(),
        };
        for &n in &side.nodes {
            for e in g.in_edges(n) {
                let writers = g.in_edges(e.other);
                let inside = (writers.iter())
                    .filter(|w| side.nodes.contains(&w.other))
                    .count();
                if inside == 0 {
                    let versions = side.inputs.entry(e.memlet.data.clone()).or_default();
                    if !versions.contains(&e.other) {
                        versions.push(e.other);
                    }
                } else if inside < writers.len() {
                    return Err(format!(
                        "{} is written both inside and outside the region",
                        g.node(e.other).id
                    ));
                }
            }
            for e in g.out_edges(n) {
                let writers = side.writes.entry(e.memlet.data.clone()).or_default();
                if !writers.contains(&n) {
                    writers.push(n);
                }
            }
        }
        side.convex()?;
        Ok(side)
    }

    fn ids(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = self
            .nodes
            .iter()
            .map(|&i| self.p.graph.node(i).id)
            .collect();
        v.sort();
        v
    }

    /// The region can run as one block: no outside operation lies on a path from the region
    /// back into it (a computation node, or a copy between two access nodes).
    fn convex(&self) -> Result<(), String> {
        let g = &self.p.graph;
        let after = reach(g, &self.nodes, true);
        let before = reach(g, &self.nodes, false);
        for &i in after.intersection(&before) {
            if self.nodes.contains(&i) {
                continue;
            }
            let copy = || g.in_edges(i).iter().any(|e| is_access(g, e.other));
            if !is_access(g, i) || copy() {
                return Err(format!(
                    "the region is not convex: {} runs between its nodes",
                    g.node(i).id
                ));
            }
        }
        Ok(())
    }

    /// Containers the region writes that the program returns or that an outside node reads
    /// after the region's writers (a reader with a path to a writer ran before it).
    fn read_after(&self) -> BTreeSet<String> {
        let g = &self.p.graph;
        let mut out = BTreeSet::new();
        for (data, writers) in &self.writes {
            if self.p.outputs.contains(data) {
                out.insert(data.clone());
                continue;
            }
            let earlier = reach(g, &writers.iter().copied().collect(), false);
            let read = (g.node_indices())
                .filter(|&i| matches!(&g.node(i).kind, NodeKind::Access(d) if d == data))
                .flat_map(|i| g.out_edges(i))
                .any(|e| !self.nodes.contains(&e.other) && !earlier.contains(&e.other));
            if read {
                out.insert(data.clone());
            }
        }
        out
    }

    /// Top-level edges with neither end in the region, as comparable text.
    fn outside_edges(&self) -> Vec<String> {
        let g = &self.p.graph;
        let mut v: Vec<String> = (g.edges())
            .filter(|e| !self.nodes.contains(&e.from) && !self.nodes.contains(&e.to))
            .map(|e| {
                let (s, t) = (g.node(e.from).id, g.node(e.to).id);
                format!("{s} -> {t} {:?}", e.memlet)
            })
            .collect();
        v.sort();
        v
    }

    /// Containers used outside the region: on edges between outside nodes and inside outside
    /// maps (an access node touching only the region is the region's).
    fn used_outside(&self) -> BTreeSet<String> {
        let g = &self.p.graph;
        let mut used: BTreeSet<String> = (g.edges())
            .filter(|e| !self.nodes.contains(&e.from) && !self.nodes.contains(&e.to))
            .map(|e| e.memlet.data.clone())
            .collect();
        for i in g.node_indices().filter(|i| !self.nodes.contains(i)) {
            if let NodeKind::Map(m) = &g.node(i).kind {
                used.extend(m.body.data_used());
            }
        }
        used
    }
}

/// Nodes reachable from `from` over at least one edge forward (along edges) or backward.
fn reach(g: &Graph, from: &BTreeSet<NodeIndex>, forward: bool) -> BTreeSet<NodeIndex> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<NodeIndex> = from.iter().copied().collect();
    while let Some(i) = todo.pop() {
        let next: Vec<NodeIndex> = if forward {
            g.successors(i).collect()
        } else {
            g.predecessors(i).collect()
        };
        for next in next {
            if seen.insert(next) {
                todo.push(next);
            }
        }
    }
    seen
}

/// Outside the region, both programs are the same: nodes, edges and the declarations (and
/// constant values) of every container used there or in the signature.
fn same_outside(o: &Side, r: &Side) -> Result<(), String> {
    let outside = |s: &Side| -> BTreeMap<NodeId, NodeIndex> {
        let g = &s.p.graph;
        (g.node_indices())
            .filter(|&i| !is_access(g, i) && !s.nodes.contains(&i))
            .map(|i| (g.node(i).id, i))
            .collect()
    };
    let (out_o, out_r) = (outside(o), outside(r));
    let ids = |m: &BTreeMap<NodeId, NodeIndex>| m.keys().copied().collect::<Vec<_>>();
    if ids(&out_o) != ids(&out_r) {
        return Err("the nodes outside the region differ".into());
    }
    for (id, &i) in &out_o {
        if o.p.graph.node(i) != r.p.graph.node(out_r[id]) {
            return Err(format!("{id}, outside the region, changed"));
        }
    }
    if o.outside_edges() != r.outside_edges() {
        return Err("the rewrite changed edges outside the region".into());
    }
    let mut shared = o.used_outside();
    shared.extend(r.used_outside());
    shared.extend(o.p.inputs.iter().chain(&o.p.outputs).cloned());
    for d in &shared {
        if o.p.data.get(d) != r.p.data.get(d) || o.p.constants.get(d) != r.p.constants.get(d) {
            return Err(format!(
                "the rewrite changed the declaration of `{d}`, which is used outside the region"
            ));
        }
    }
    Ok(())
}

/// The constant values either program uses are the same (the check of [`same_outside`] that
/// the engine's comparison of the two programs does not make).
fn same_constants(o: &Side, r: &Side) -> Result<(), String> {
    match (o.p.constants.iter()).find(|(d, c)| r.p.constants.get(*d).is_some_and(|x| x != *c)) {
        Some((d, _)) => Err(format!("the rewrite changed the value of constant `{d}`")),
        None => Ok(()),
    }
}

/// Containers either region reads before writing them, excluding constants. A container that
/// one region reads from outside and the other does not is allowed only when neither region
/// writes it (otherwise the two would start from different values).
fn region_inputs(o: &Side, r: &Side) -> Result<BTreeSet<String>, String> {
    let mut inputs = BTreeSet::new();
    for d in o.inputs.keys().chain(r.inputs.keys()) {
        let constant =
            |s: &Side| (s.p.data.get(d)).is_some_and(|x| x.kind == crate::ir::DataKind::Constant);
        if constant(o) || constant(r) {
            continue;
        }
        let both = o.inputs.contains_key(d) && r.inputs.contains_key(d);
        let written = o.writes.contains_key(d) || r.writes.contains_key(d);
        if !both && written {
            return Err(format!(
                "only one of the two regions reads `{d}` before writing it"
            ));
        }
        inputs.insert(d.clone());
    }
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::super::{Failure, OutputCache, Run};
    use super::{isolate, Isolation};
    use crate::check::NumericsError;
    use crate::ir::text::parse;
    use crate::ir::{NodeId, Program};
    use crate::transform::engine::diff::changes;
    use crate::transform::engine::{program_hash, Checks};

    /// `X → double → T → inc → U → half → Y`, each map elementwise over 8 elements.
    const CHAIN: &str = r#"
program "chain"
data X: f32[8] input
data T: f32[8] transient
data U: f32[8] transient
data Y: f32[8] output
signature (X) -> (Y)
graph {
  n0 access X
  n1 map "double" [i = 0:8] sequential {
    n2 access X
    n3 tasklet "mul" (a) { b = a * 2.0 }
    n4 access T
    n2 -> n3 X[i] -> a
    n3 -> n4 b -> T[i]
  }
  n5 access T
  n6 map "inc" [i = 0:8] sequential {
    n7 access T
    n8 tasklet "add" (a) { b = a + 1.0 }
    n9 access U
    n7 -> n8 T[i] -> a
    n8 -> n9 b -> U[i]
  }
  n10 access U
  n11 map "half" [i = 0:8] sequential {
    n12 access U
    n13 tasklet "scale" (a) { b = a * 0.5 }
    n14 access Y
    n12 -> n13 U[i] -> a
    n13 -> n14 b -> Y[i]
  }
  n15 access Y
  n0 -> n1 X[0:8]
  n1 -> n5 T[0:8]
  n5 -> n6 T[0:8]
  n6 -> n10 U[0:8]
  n10 -> n11 U[0:8]
  n11 -> n15 Y[0:8]
}
"#;

    /// `C = 0` (outside every region below), then `C[i, j] += A[i, k] * B[k, j]`.
    const MATMUL: &str = r#"
program "mm"
data A: f32[2, 3] input
data B: f32[3, 4] input
data C: f32[2, 4] output
signature (A, B) -> (C)
graph {
  n0 map "init" [i = 0:2, j = 0:4] sequential {
    n1 tasklet "zero" () { c = 0.0 }
    n2 access C
    n1 -> n2 c -> C[i, j]
  }
  n3 access C
  n4 access A
  n5 access B
  n6 map "acc" [i = 0:2, j = 0:4, k = 0:3] sequential {
    n7 access A
    n8 access B
    n9 tasklet "fma" (a, b) { c = a * b }
    n10 access C
    n7 -> n9 A[i, k] -> a
    n8 -> n9 B[k, j] -> b
    n9 -> n10 c -> C[i, j] wcr sum
  }
  n11 access C
  n0 -> n3 C[0:2, 0:4]
  n3 -> n6 C[0:2, 0:4]
  n4 -> n6 A[0:2, 0:3]
  n5 -> n6 B[0:3, 0:4]
  n6 -> n11 C[0:2, 0:4] wcr sum
}
"#;

    fn program(src: &str) -> Program {
        match parse(src) {
            Ok(p) => p.program,
            Err(e) => panic!("{:?}", miette::Report::new(e)),
        }
    }

    /// `src` with each `(from, to)` replaced (each must occur).
    fn edited(src: &str, edits: &[(&str, &str)]) -> Program {
        let mut s = src.to_string();
        for (from, to) in edits {
            assert!(s.contains(from), "`{from}` is not in the program");
            s = s.replace(from, to);
        }
        program(&s)
    }

    fn check(before: &Program, after: &Program, budget: u64) -> Result<String, Failure> {
        let checks = Checks {
            numerics_budget: budget,
            ..Checks::default()
        };
        let (hb, ha) = (program_hash(before), program_hash(after));
        let changed = changes(before, after);
        let run = Run {
            original: before,
            original_hash: &hb,
            changes: &changed,
            rewritten: after,
            rewritten_hash: &ha,
            checks: &checks,
        };
        run.compare(&mut OutputCache::default())
    }

    fn region(before: &Program, after: &Program) -> super::Region {
        match isolate(before, after, &changes(before, after)) {
            Isolation::Region(r) => *r,
            other => panic!("no region: {other:?}"),
        }
    }

    fn differs(r: Result<String, Failure>) -> (String, String) {
        match r {
            Err(Failure::Numerics(e)) => match *e {
                NumericsError::Differs { output, detail, .. } => (output, detail),
                other => panic!("{other:?}"),
            },
            other => panic!("expected a numerics failure, got {other:?}"),
        }
    }

    #[test]
    fn the_region_of_a_changed_map_is_that_map_alone() {
        let before = program(CHAIN);
        let after = edited(CHAIN, &[("b = a * 2.0", "b = a + a")]);
        let r = region(&before, &after);
        assert_eq!(
            (r.before.as_slice(), r.after.as_slice()),
            (&[NodeId(1)][..], &[NodeId(1)][..])
        );
        for side in [&r.original, &r.rewritten] {
            assert_eq!(*side.inputs, ["X"]);
            assert_eq!(*side.outputs, ["T"]);
            assert!(side.node(NodeId(6)).is_none() && side.node(NodeId(11)).is_none());
            assert!(!side.data.contains_key("U") && !side.data.contains_key("Y"));
        }
        assert_eq!(
            check(&before, &after, 2_000_000).expect("equivalent"),
            "region of 1 node, reference interpreter"
        );
    }

    #[test]
    fn a_large_region_runs_as_compiled_c() {
        let before = program(CHAIN);
        let after = edited(CHAIN, &[("b = a + 1.0", "b = 1.0 + a")]);
        assert_eq!(
            check(&before, &after, 0).expect("equivalent"),
            "region of 1 node, compiled C (about 8 tasklet executions)"
        );
    }

    #[test]
    fn a_rewrite_that_breaks_the_region_output_is_caught() {
        let before = program(CHAIN);
        let after = edited(CHAIN, &[("b = a + 1.0", "b = a + 2.0")]);
        let (output, detail) = differs(check(&before, &after, 2_000_000));
        assert_eq!(output, "U");
        assert!(detail.contains("after the region n6"), "{detail}");
        // The same through compiled C.
        let (output, _) = differs(check(&before, &after, 0));
        assert_eq!(output, "U");
    }

    #[test]
    fn a_rewrite_that_stops_writing_a_container_read_downstream_is_caught() {
        let before = program(CHAIN);
        let after = edited(
            CHAIN,
            &[
                ("data U:", "data V: f32[8] transient\ndata U:"),
                ("n4 access T", "n4 access V"),
                ("n3 -> n4 b -> T[i]", "n3 -> n4 b -> V[i]"),
                ("n1 -> n5 T[0:8]", "n16 access V\n  n1 -> n16 V[0:8]"),
            ],
        );
        assert!(
            matches!(isolate(&before, &after, &changes(&before, &after)), Isolation::NotWritten(d) if d == "T")
        );
        let (output, detail) = differs(check(&before, &after, 2_000_000));
        assert_eq!(output, "T");
        assert!(detail.contains("no longer writes it"), "{detail}");
    }

    #[test]
    fn an_accumulator_initialised_outside_the_region_is_copied_in() {
        let before = program(MATMUL);
        let after = edited(MATMUL, &[("c = a * b", "c = b * a")]);
        let r = region(&before, &after);
        assert_eq!(r.before, [NodeId(6)]);
        assert_eq!(*r.original.inputs, ["A", "B", "C.in"]);
        assert_eq!(*r.original.outputs, ["C"]);
        assert_eq!(
            check(&before, &after, 2_000_000).expect("equivalent"),
            "region of 1 node, reference interpreter"
        );
        assert!(check(&before, &after, 0)
            .expect("equivalent")
            .starts_with("region of 1 node, compiled C"));
        // Dropping the resolution loses the value from before the region (and the sum).
        let plain = edited(
            MATMUL,
            &[
                ("c -> C[i, j] wcr sum", "c -> C[i, j]"),
                ("n6 -> n11 C[0:2, 0:4] wcr sum", "n6 -> n11 C[0:2, 0:4]"),
            ],
        );
        assert_eq!(differs(check(&before, &plain, 2_000_000)).0, "C");
    }

    #[test]
    fn a_region_that_is_not_convex_falls_back_to_the_whole_program() {
        let before = program(CHAIN);
        let after = edited(
            CHAIN,
            &[("b = a * 2.0", "b = a + a"), ("b = a * 0.5", "b = 0.5 * a")],
        );
        match isolate(&before, &after, &changes(&before, &after)) {
            Isolation::Whole(why) => assert!(why.contains("not convex: n6"), "{why}"),
            other => panic!("{other:?}"),
        }
        let how = check(&before, &after, 2_000_000).expect("equivalent");
        assert!(
            how.starts_with("whole program, reference interpreter (the region is not convex"),
            "{how}"
        );
        let broken = edited(
            CHAIN,
            &[("b = a * 2.0", "b = a + a"), ("b = a * 0.5", "b = a")],
        );
        assert_eq!(differs(check(&before, &broken, 2_000_000)).0, "Y");
    }

    #[test]
    fn an_unchanged_program_needs_no_run() {
        let p = program(CHAIN);
        assert_eq!(check(&p, &p, 0).expect("same"), "program unchanged");
    }
}
