//! LayoutTransform on the 4-D statistics of a channel Softmax.

use super::{
    apply_checked, assert_values, compiled_matches_interpreter, expanded, refused, rejected, run,
    values,
};
use dmove::ir::text::print;
use dmove::ir::{Attr, NodeId, NodeKind, Program, SymExpr, Tensor};
use dmove::onnx::{import, ImportOptions, ModelBuilder};
use dmove::transform::{ParamValue, Params};

/// The first top-level access node of `data`.
fn access(p: &Program, data: &str) -> NodeId {
    p.graph
        .ordered()
        .into_iter()
        .map(|i| p.graph.node(i))
        .find(|n| matches!(&n.kind, NodeKind::Access(d) if d == data))
        .unwrap_or_else(|| panic!("no access node of {data}"))
        .id
}

fn to(layout: &str) -> Params {
    Params::from([("to".to_string(), ParamValue::Str(layout.into()))])
}

/// Every subset on `data` in the program, as text.
fn subsets(p: &Program, data: &str) -> Vec<String> {
    fn walk(g: &dmove::ir::Graph, data: &str, out: &mut Vec<String>) {
        for m in g.edges().map(|e| e.memlet) {
            if m.data == data {
                out.push(m.subset.to_string());
            }
        }
        for n in g.nodes() {
            if let NodeKind::Map(m) = &n.kind {
                walk(&m.body, data, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&p.graph, data, &mut out);
    out.sort();
    out.dedup();
    out
}

/// Softmax over the channels of an NCHW tensor, in f64.
fn channel_softmax(x: &[f32], [n, c, hw]: [usize; 3]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for b in 0..n {
        for s in 0..hw {
            let at = |k: usize| (b * c + k) * hw + s;
            let max = (0..c).map(|k| f64::from(x[at(k)])).fold(f64::MIN, f64::max);
            let sum: f64 = (0..c).map(|k| (f64::from(x[at(k)]) - max).exp()).sum();
            for k in 0..c {
                y[at(k)] = (f64::from(x[at(k)]) - max).exp() / sum;
            }
        }
    }
    y
}

#[test]
fn channels_last_permutes_the_shape_and_every_access_and_back() {
    let mut p = expanded("Softmax", &[("axis", Attr::Int(1))], &[&[2, 3, 2, 2]]);
    let original = print(&p);
    let at = access(&p, "softmax_max");
    let dims = |p: &Program| p.data["softmax_max"].shape.clone();
    assert_eq!(dims(&p), [2, 1, 2, 2].map(SymExpr::Int));
    apply_checked(&mut p, "LayoutTransform", &[at], &to("nhwc"));
    assert_eq!(dims(&p), [2, 2, 2, 1].map(SymExpr::Int));
    let seen = subsets(&p, "softmax_max");
    assert!(seen.contains(&"[i0, i2, i3, 0]".to_string()), "{seen:?}");
    assert!(
        seen.contains(&"[0:2, 0:2, 0:2, 0:1]".to_string()),
        "{seen:?}"
    );
    assert!(!seen.contains(&"[i0, 0, i2, i3]".to_string()), "{seen:?}");
    let x = values(24, 4);
    let out = run(&p, &[("x0", Tensor::f32(vec![2, 3, 2, 2], x.clone()))]);
    assert_values(&out["y0"], &channel_softmax(&x, [2, 3, 4]));
    compiled_matches_interpreter(&p);
    apply_checked(&mut p, "LayoutTransform", &[at], &to("nchw"));
    assert_eq!(print(&p), original, "NCHW after NHWC is the identity");
}

#[test]
fn refuses_containers_whose_layout_is_fixed() {
    let mut p = expanded("Softmax", &[("axis", Attr::Int(1))], &[&[2, 3, 2, 2]]);
    let x = access(&p, "x0");
    let why = refused(&mut p, "LayoutTransform", &[x], &to("nhwc"), x);
    assert_eq!(
        why,
        "`x0` is a program input, not a transient: the signature fixes its layout"
    );
    let at = access(&p, "softmax_max");
    let why = rejected(&mut p, "LayoutTransform", &[at], &to("nwhc"));
    assert_eq!(
        why,
        "LayoutTransform: parameter `to` expects one of nhwc, nchw, found the name `nwhc`"
    );

    let mut p = expanded("Softmax", &[], &[&[2, 3, 4]]);
    let at = access(&p, "softmax_sum");
    let why = refused(&mut p, "LayoutTransform", &[at], &to("nhwc"), at);
    assert_eq!(
        why,
        "`softmax_sum` has rank 3; layouts NCHW and NHWC are 4-D"
    );
}

#[test]
fn refuses_a_transient_an_operator_reads() {
    let model = ModelBuilder::new("relu_pool", 17)
        .input("X", [1, 2, 4, 4])
        .node("Relu", &["X"], &["T"], vec![])
        .node("Softmax", &["T"], &["Y"], vec![])
        .output("Y", [1, 2, 4, 4])
        .build();
    let mut p = import(&model, &ImportOptions::default()).expect("imports");
    let at = access(&p, "T");
    let why = refused(&mut p, "LayoutTransform", &[at], &to("nhwc"), at);
    let relu = p
        .graph
        .ordered()
        .into_iter()
        .map(|i| p.graph.node(i))
        .find(|n| matches!(&n.kind, NodeKind::Library(l) if l.op == "Relu"))
        .expect("a Relu node")
        .id;
    assert_eq!(
        why,
        format!("`T` is accessed by the Relu library node {relu}, which fixes its layout")
    );
}
