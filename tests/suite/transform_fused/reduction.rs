//! ReductionFusion on the expansions of Softmax, LogSoftmax and LayerNormalization.

use super::{
    apply_checked, assert_values, compiled_matches_interpreter, expanded, refused, run, top_maps,
    values,
};
use dmove::ir::{Attr, NodeId, NodeKind, Program, Storage, Subset, SymExpr, Tensor};
use dmove::transform::{lookup, Params};

/// Softmax over the last axis of a row-major `rows × n` matrix, in f64.
fn softmax_by_hand(x: &[f32], n: usize, log: bool) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|row| {
            let max = row.iter().map(|&v| f64::from(v)).fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|&v| (f64::from(v) - max).exp()).sum();
            row.iter()
                .map(move |&v| match log {
                    true => f64::from(v) - max - sum.ln(),
                    false => (f64::from(v) - max).exp() / sum,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The maps directly inside map `id`, with their parameter names.
fn inner_maps(p: &Program, id: NodeId) -> Vec<(NodeId, Vec<String>)> {
    let NodeKind::Map(m) = &p.node(id).expect("exists").kind else {
        panic!("{id} is not a map");
    };
    m.body
        .ordered()
        .into_iter()
        .map(|i| m.body.node(i))
        .filter_map(|n| match &n.kind {
            NodeKind::Map(inner) => {
                Some((n.id, inner.params.iter().map(|q| q.name.clone()).collect()))
            }
            _ => None,
        })
        .collect()
}

fn fusion_site(p: &Program) -> Vec<NodeId> {
    let t = lookup("ReductionFusion").expect("registered");
    let sites = t.candidates(p);
    assert_eq!(sites.len(), 1, "{sites:?}");
    sites[0].clone()
}

#[test]
fn softmax_passes_become_one_map_over_rows_with_register_statistics() {
    let mut p = expanded("Softmax", &[], &[&[2, 3, 4]]);
    let passes: Vec<NodeId> = top_maps(&p).into_iter().map(|(id, _)| id).collect();
    assert_eq!(passes.len(), 5, "init, max, init, sum, normalize");
    let site = fusion_site(&p);
    assert_eq!(site, passes);
    let step = apply_checked(&mut p, "ReductionFusion", &site, &Params::new());
    let maps = top_maps(&p);
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].1, "softmax_rows");
    assert_eq!(step.touched[0], maps[0].0);
    let NodeKind::Map(outer) = &p.node(maps[0].0).expect("exists").kind else {
        panic!("not a map");
    };
    let rows: Vec<&str> = outer.params.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(rows, ["i0", "i1"]);
    let inner = inner_maps(&p, maps[0].0);
    let mut ids: Vec<NodeId> = inner.iter().map(|(id, _)| *id).collect();
    ids.sort();
    assert_eq!(ids, passes, "each pass keeps its id as an inner map");
    assert!(inner.iter().all(|(_, q)| q == &["i2"]));
    assert!(!p.data.contains_key("softmax_max") && !p.data.contains_key("softmax_sum"));
    for r in ["softmax_max_row", "softmax_sum_row"] {
        assert_eq!(p.data[r].storage, Storage::Register);
        assert!(p.data[r].shape.is_empty());
    }
    let x = values(24, 1);
    let out = run(&p, &[("x0", Tensor::f32(vec![2, 3, 4], x.clone()))]);
    assert_values(&out["y0"], &softmax_by_hand(&x, 4, false));
    compiled_matches_interpreter(&p);
}

#[test]
fn log_softmax_fuses_and_compiles() {
    let mut p = expanded("LogSoftmax", &[], &[&[3, 5]]);
    let site = fusion_site(&p);
    apply_checked(&mut p, "ReductionFusion", &site, &Params::new());
    assert_eq!(top_maps(&p).len(), 1);
    let x = values(15, 2);
    let out = run(&p, &[("x0", Tensor::f32(vec![3, 5], x.clone()))]);
    assert_values(&out["y0"], &softmax_by_hand(&x, 5, true));
    compiled_matches_interpreter(&p);
}

#[test]
fn layer_norm_keeps_its_statistic_outputs_in_memory_and_the_variance_in_a_register() {
    let mut p = expanded(
        "LayerNormalization",
        &[("epsilon", Attr::Float(1e-5))],
        &[&[2, 3, 4], &[4], &[4]],
    );
    let site = fusion_site(&p);
    assert_eq!(
        site.len(),
        6,
        "mean, variance (with inits), invstd, normalize"
    );
    apply_checked(&mut p, "ReductionFusion", &site, &Params::new());
    assert_eq!(top_maps(&p).len(), 1);
    assert_eq!(
        p.data["layernormalization_var_row"].storage,
        Storage::Register
    );
    assert!(!p.data.contains_key("layernormalization_var"));
    let (x, g, b) = (values(24, 1), values(4, 2), values(4, 3));
    let out = run(
        &p,
        &[
            ("x0", Tensor::f32(vec![2, 3, 4], x.clone())),
            ("x1", Tensor::f32(vec![4], g.clone())),
            ("x2", Tensor::f32(vec![4], b.clone())),
        ],
    );
    let (mut y, mut means, mut invs) = (Vec::new(), Vec::new(), Vec::new());
    for row in x.chunks(4) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / 4.0;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / 4.0;
        let inv = 1.0 / (var + 1e-5).sqrt();
        for (c, &v) in row.iter().enumerate() {
            y.push((f64::from(v) - mean) * inv * f64::from(g[c]) + f64::from(b[c]));
        }
        means.push(mean);
        invs.push(inv);
    }
    assert_values(&out["y0"], &y);
    assert_values(&out["y1"], &means);
    assert_values(&out["y2"], &invs);
    compiled_matches_interpreter(&p);
}

#[test]
fn refuses_passes_that_carry_nothing_by_row() {
    let mut p = expanded("Softmax", &[], &[&[2, 3, 4]]);
    let passes: Vec<NodeId> = top_maps(&p).into_iter().map(|(id, _)| id).collect();
    let why = refused(
        &mut p,
        "ReductionFusion",
        &passes[..2],
        &Params::new(),
        passes[0],
    );
    assert_eq!(
        why,
        "no pass reads a per-row result of an earlier reduction: nothing is carried by row"
    );
}

#[test]
fn refuses_passes_out_of_program_order() {
    let mut p = expanded("Softmax", &[], &[&[2, 3, 4]]);
    let passes: Vec<NodeId> = top_maps(&p).into_iter().map(|(id, _)| id).collect();
    let site = [passes[1], passes[0]];
    let why = refused(&mut p, "ReductionFusion", &site, &Params::new(), passes[0]);
    assert_eq!(
        why,
        format!(
            "the map does not run after map {}: passes are listed in program order",
            passes[1]
        )
    );
}

#[test]
fn refuses_a_site_that_skips_a_pass_in_between() {
    let mut p = expanded("Softmax", &[], &[&[2, 3, 4]]);
    let passes: Vec<NodeId> = top_maps(&p).into_iter().map(|(id, _)| id).collect();
    let site = [passes[1], passes[4]];
    let why = refused(&mut p, "ReductionFusion", &site, &Params::new(), passes[1]);
    assert_eq!(
        why,
        format!(
            "node {} (map node) depends on one pass and another depends on it, so the passes cannot run as one map",
            passes[3]
        )
    );
}

#[test]
fn refuses_a_statistic_read_at_another_row() {
    let mut p = expanded("Softmax", &[], &[&[2, 3, 4]]);
    let passes: Vec<NodeId> = top_maps(&p).into_iter().map(|(id, _)| id).collect();
    // The normalization reads the maximum of row (i0, 0) instead of its own row (i0, i1).
    let (g, idx) = p.graph.locate_mut(passes[4]).expect("exists");
    let NodeKind::Map(norm) = &mut g.node_mut(idx).kind else {
        panic!("not a map");
    };
    for m in norm.body.memlets_mut() {
        if m.data == "softmax_max" {
            m.subset = Subset::element([SymExpr::sym("i0"), SymExpr::Int(0), SymExpr::Int(0)]);
        }
    }
    let why = refused(
        &mut p,
        "ReductionFusion",
        &passes,
        &Params::new(),
        passes[4],
    );
    assert_eq!(
        why,
        "`softmax_max` is accessed at softmax_max[i0, 0, 0] here, not at one element per row"
    );
}
