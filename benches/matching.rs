//! Matching on a 100,000-node program: a full enumeration, and incremental updates after small
//! rewrites. Run with `cargo bench --bench matching`.
//!
//! The program is ~14,300 independent blocks `X·W → t → (+ b) → y` of library nodes; every
//! third block uses Gemm instead of MatMul and every fifth has a second reader of `t`, so the
//! `matmul_add` pattern has both matches and near misses everywhere.

use dmove::ir::{DType, DataKind, LibraryNode, Memlet, Node, NodeId, NodeKind, Program, Storage};
use dmove::ir::{Subset, SymExpr};
use dmove::pattern::library::builtin;
use dmove::pattern::{find_all, Change, Matcher};
use std::collections::BTreeMap;
use std::time::Instant;

const NODES: usize = 100_000;

fn program() -> (Program, Vec<NodeId>) {
    let mut p = Program::new("big");
    let producers = p.build(|b| {
        let mut producers = Vec::new();
        let none = BTreeMap::new;
        let mut k = 0;
        while b.graph.node_count() < NODES {
            let mut declare = |n: &str, kind| {
                let shape = vec![SymExpr::Int(4), SymExpr::Int(4)];
                b.declare(&format!("{n}{k}"), DType::F32, shape, kind, Storage::Global)
            };
            let [x, w, bias, t, y, z] = [
                ("x", DataKind::Input),
                ("w", DataKind::Input),
                ("b", DataKind::Input),
                ("t", DataKind::Transient),
                ("y", DataKind::Output),
                ("z", DataKind::Output),
            ]
            .map(|(n, kind)| declare(n, kind));
            let op = if k % 3 == 0 { "Gemm" } else { "MatMul" };
            producers.push(b.library("mm", op, none(), &[Some(&x), Some(&w)], &[&t]));
            b.library("add", "Add", none(), &[Some(&t), Some(&bias)], &[&y]);
            if k % 5 == 0 {
                b.library("relu", "Relu", none(), &[Some(&t)], &[&z]);
            }
            k += 1;
        }
        producers
    });
    (p, producers)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Flips a library node's operator between MatMul and Gemm (a rewrite that touches one node).
fn flip(p: &mut Program, id: NodeId) -> Change {
    if let Some((g, idx)) = p.graph.locate_mut(id) {
        if let NodeKind::Library(l) = &mut g.node_mut(idx).kind {
            l.op = if l.op == "Gemm" { "MatMul" } else { "Gemm" }.to_string();
        }
    }
    Change {
        touched: vec![id],
        modified: vec![id],
        ..Change::default()
    }
}

/// Adds a second reader of the access node `t` (a rewrite that adds nodes).
fn add_reader(p: &mut Program, t: NodeId) -> Change {
    let (relu, out) = (p.fresh_id(), p.fresh_id());
    let data = match p.node(t).map(|n| &n.kind) {
        Some(NodeKind::Access(d)) => d.clone(),
        _ => return Change::default(),
    };
    let g = &mut p.graph;
    let Some(ti) = g.index_of(t) else {
        return Change::default();
    };
    let r = g.add_node(Node {
        id: relu,
        label: "extra".into(),
        kind: NodeKind::Library(LibraryNode {
            op: "Relu".into(),
            attrs: BTreeMap::new(),
        }),
    });
    let o = g.add_node(Node {
        id: out,
        label: data.clone(),
        kind: NodeKind::Access(data.clone()),
    });
    let full = Subset::full(&[SymExpr::Int(4), SymExpr::Int(4)]);
    g.add_edge(
        ti,
        r,
        Memlet::new(data.clone(), full.clone()).to_conn("in0"),
    );
    g.add_edge(r, o, Memlet::new(data, full).from_conn("out0"));
    Change {
        added: vec![relu, out],
        modified: vec![t],
        ..Change::default()
    }
}

fn main() {
    let t = Instant::now();
    let (mut p, producers) = program();
    let nodes = p.graph.node_count();
    println!("program: {nodes} nodes, built in {:.0} ms", ms(t));
    let pattern = builtin("matmul_add").expect("built-in pattern");

    let reps = 5;
    let mut best = f64::INFINITY;
    let mut count = 0;
    for _ in 0..reps {
        let t = Instant::now();
        count = find_all(&pattern, &p).len();
        best = best.min(ms(t));
    }
    println!("full match (find_all): {best:.1} ms, {count} matches (best of {reps})");
    let t = Instant::now();
    let mut matcher = Matcher::new(pattern.clone(), &p);
    println!("Matcher::new (index + full match): {:.1} ms", ms(t));

    let updates = 200;
    let step = producers.len() / updates;
    let mut total = 0.0;
    for k in 0..updates {
        let change = flip(&mut p, producers[k * step]);
        let t = Instant::now();
        matcher.update(&p, &change);
        total += ms(t);
    }
    println!(
        "incremental update, operator changed: {:.3} ms per update ({updates} updates)",
        total / updates as f64
    );
    let mut total = 0.0;
    let mut access: Vec<NodeId> = Vec::new();
    for &id in producers.iter().step_by(step).take(updates) {
        if let Some((g, idx)) = p.graph.locate(id) {
            access.extend(g.out_edges(idx).iter().map(|e| g.node(e.other).id));
        }
    }
    for &t_id in &access {
        let change = add_reader(&mut p, t_id);
        let t = Instant::now();
        matcher.update(&p, &change);
        total += ms(t);
    }
    println!(
        "incremental update, reader added: {:.3} ms per update ({} updates)",
        total / access.len() as f64,
        access.len()
    );
    let agree = matcher.matches() == find_all(&pattern, &p);
    println!("incremental matches agree with a full match: {agree}");
}
