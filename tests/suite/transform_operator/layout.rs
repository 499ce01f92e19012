//! ChannelsLast: a region of NCHW operators rewritten channels-last, with the transposes between
//! its operators cancelled.

use super::{applied, assert_reason, model, node, ops, refused, same_results, values};
use dmove::ir::{Attr, Program, SymExpr};
use dmove::onnx::{AttrValue, ModelBuilder};
use dmove::transform::Params;

fn pads1() -> Vec<(&'static str, AttrValue)> {
    vec![("pads", AttrValue::Ints(vec![1, 1, 1, 1]))]
}

/// `Y = GlobalAveragePool(Mul(Conv(Relu(Conv(X))) + Relu(Conv(X)), g))` with `g: [4, 1, 1]`.
fn residual_net() -> Program {
    model(
        ModelBuilder::new("residual", 17)
            .input("X", [1, 3, 6, 5])
            .initializer("W1", &[4, 3, 3, 3], values(108, 0.1))
            .initializer("B1", &[4], values(4, 0.3))
            .initializer("W2", &[4, 4, 3, 3], values(144, 0.07))
            .initializer("g", &[4, 1, 1], values(4, 0.5))
            .node("Conv", &["X", "W1", "B1"], &["T1"], pads1())
            .node("Relu", &["T1"], &["A"], vec![])
            .node("Conv", &["A", "W2"], &["T2"], pads1())
            .node("Add", &["T2", "A"], &["S"], vec![])
            .node("Mul", &["S", "g"], &["M"], vec![])
            .node("GlobalAveragePool", &["M"], &["Y"], vec![])
            .output("Y", [1, 4, 1, 1]),
    )
}

fn count(p: &Program, op: &str) -> usize {
    ops(p).iter().filter(|o| *o == op).count()
}

#[test]
fn residual_region_runs_channels_last_with_one_transpose_in_and_one_out() {
    let mut p = residual_net();
    let original = p.clone();
    let first = node(&p, "Conv", 0);
    let step = applied(&mut p, "ChannelsLast", &[first], &Params::new());
    assert_eq!(
        ops(&p),
        [
            "Transpose",
            "NhwcConv",
            "Relu",
            "NhwcConv",
            "Add",
            "Mul",
            "ReduceMean",
            "Transpose"
        ],
        "every transpose between two operators of the region cancelled"
    );
    assert_eq!(count(&p, "Transpose"), 2);
    // The region's operators keep their ids; the constant operand is permuted to [1, 1, 1, 4].
    assert_eq!(node(&p, "NhwcConv", 0), first);
    assert!(step.touched.contains(&first));
    let g = p
        .data
        .keys()
        .find(|k| k.starts_with("g_nhwc"))
        .expect("permuted constant");
    assert_eq!(p.data[g].shape, [1, 1, 1, 4].map(SymExpr::Int));
    let a = p.data.keys().find(|k| k.starts_with("A_nhwc")).expect("A");
    assert_eq!(p.data[a].shape, [1, 6, 5, 4].map(SymExpr::Int));
    same_results(&original, &p);
    // The channels-last operators' expansions compute the same numbers.
    let mut lowered = p.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    same_results(&original, &lowered);
}

#[test]
fn transposes_already_in_the_model_cancel_with_the_region_boundary() {
    // An NHWC model's usual import: transpose to NCHW, convolve, transpose back.
    let mut p = model(
        ModelBuilder::new("nhwc_model", 17)
            .input("X", [1, 5, 4, 3])
            .initializer("W", &[2, 3, 3, 3], values(54, 0.1))
            .node(
                "Transpose",
                &["X"],
                &["Xc"],
                vec![("perm", AttrValue::Ints(vec![0, 3, 1, 2]))],
            )
            .node("Conv", &["Xc", "W"], &["T"], pads1())
            .node("Sigmoid", &["T"], &["S"], vec![])
            .node(
                "Transpose",
                &["S"],
                &["Y"],
                vec![("perm", AttrValue::Ints(vec![0, 2, 3, 1]))],
            )
            .output("Y", [1, 5, 4, 2]),
    );
    let original = p.clone();
    let conv = node(&p, "Conv", 0);
    applied(&mut p, "ChannelsLast", &[conv], &Params::new());
    // In: the model's NHWC→NCHW and the region's NCHW→NHWC are the identity. Out: the region's
    // NHWC→NCHW and the model's NCHW→NHWC compose to the identity, but Y is the program's
    // output, so one copy (an identity transpose) writes it.
    assert_eq!(ops(&p), ["NhwcConv", "Sigmoid", "Transpose"]);
    let t = node(&p, "Transpose", 0);
    assert_eq!(
        super::attrs(&p, t).get("perm"),
        Some(&Attr::Ints(vec![0, 1, 2, 3]))
    );
    same_results(&original, &p);
}

#[test]
fn concat_on_channels_follows_the_channels_to_the_last_axis() {
    let mut p = model(
        ModelBuilder::new("concat", 17)
            .input("X", [1, 2, 4, 4])
            .initializer("W", &[3, 2, 1, 1], values(6, 0.3))
            .node("Conv", &["X", "W"], &["T"], vec![])
            .node("Relu", &["T"], &["R"], vec![])
            .node(
                "Concat",
                &["T", "R"],
                &["Y"],
                vec![("axis", AttrValue::Int(1))],
            )
            .output("Y", [1, 6, 4, 4]),
    );
    let original = p.clone();
    let conv = node(&p, "Conv", 0);
    applied(&mut p, "ChannelsLast", &[conv], &Params::new());
    let concat = node(&p, "Concat", 0);
    assert_eq!(super::attrs(&p, concat).get("axis"), Some(&Attr::Int(3)));
    assert_eq!(count(&p, "Transpose"), 2);
    same_results(&original, &p);
}

/// A pooled convolution: `op` (a 2×2 window pooling, `extra` attributes) → Relu → Conv,
/// on a 6×6 image; the result is `side`×`side`.
fn pooled(op: &str, extra: Vec<(&str, AttrValue)>, side: i64) -> Program {
    let mut attrs = vec![("kernel_shape", AttrValue::Ints(vec![2, 2]))];
    attrs.extend(extra);
    model(
        ModelBuilder::new("pooled", 17)
            .input("X", [1, 2, 6, 6])
            .initializer("W", &[2, 2, 3, 3], values(36, 0.1))
            .node(op, &["X"], &["P"], attrs)
            .node("Relu", &["P"], &["R"], vec![])
            .node("Conv", &["R", "W"], &["Y"], vec![])
            .output("Y", [1, 2, side, side]),
    )
}

#[test]
fn window_pools_join_the_region() {
    for (op, nhwc) in [
        ("MaxPool", "NhwcMaxPool"),
        ("AveragePool", "NhwcAveragePool"),
    ] {
        let mut p = pooled(op, vec![("pads", AttrValue::Ints(vec![1, 0, 0, 1]))], 4);
        let original = p.clone();
        let conv = node(&p, "Conv", 0);
        applied(&mut p, "ChannelsLast", &[conv], &Params::new());
        assert_eq!(
            ops(&p),
            ["Transpose", nhwc, "Relu", "NhwcConv", "Transpose"]
        );
        same_results(&original, &p);
    }
}

#[test]
fn refused_where_the_layout_cannot_change() {
    // LpPool has no channels-last operator: a region cannot start there, and one started at
    // the Conv stops before it (transposes around the Conv only).
    let mut p = pooled("LpPool", vec![], 3);
    let pool = node(&p, "LpPool", 0);
    let r = refused(&mut p, "ChannelsLast", &[pool], &Params::new());
    assert_reason(&r, pool, "LpPool has no channels-last form");
    let original = p.clone();
    let relu = node(&p, "Relu", 0);
    applied(&mut p, "ChannelsLast", &[relu], &Params::new());
    assert_eq!(
        ops(&p),
        ["LpPool", "Transpose", "Relu", "NhwcConv", "Transpose"]
    );
    same_results(&original, &p);
}

#[test]
fn refused_on_tensors_that_are_not_4d_and_on_regions_without_layout() {
    // A 1-D convolution (rank-3 tensors).
    let mut p = model(
        ModelBuilder::new("conv1d", 17)
            .input("X", [1, 2, 7])
            .initializer("W", &[3, 2, 3], values(18, 0.2))
            .node("Conv", &["X", "W"], &["Y"], vec![])
            .output("Y", [1, 3, 5]),
    );
    let conv = node(&p, "Conv", 0);
    let r = refused(&mut p, "ChannelsLast", &[conv], &Params::new());
    assert_reason(&r, conv, "rank 3; NCHW ↔ NHWC applies to 4-D tensors");
    // Only element-wise operators: channels-last would add transposes and gain nothing.
    let mut p = model(
        ModelBuilder::new("eltwise", 17)
            .input("X", [1, 2, 3, 3])
            .node("Relu", &["X"], &["R"], vec![])
            .node("Sigmoid", &["R"], &["Y"], vec![])
            .output("Y", [1, 2, 3, 3]),
    );
    let relu = node(&p, "Relu", 0);
    let r = refused(&mut p, "ChannelsLast", &[relu], &Params::new());
    assert_reason(&r, relu, "only element-wise operators");
    // BatchNormalization says what to do instead.
    let mut p = model(
        ModelBuilder::new("bn", 17)
            .input("X", [1, 2, 3, 3])
            .initializer("s", &[2], values(2, 0.5))
            .initializer("b", &[2], values(2, 0.5))
            .initializer("m", &[2], values(2, 0.5))
            .initializer("v", &[2], vec![1.0, 2.0])
            .node(
                "BatchNormalization",
                &["X", "s", "b", "m", "v"],
                &["Y"],
                vec![],
            )
            .output("Y", [1, 2, 3, 3]),
    );
    let bn = node(&p, "BatchNormalization", 0);
    let r = refused(&mut p, "ChannelsLast", &[bn], &Params::new());
    assert_reason(&r, bn, "BatchNormIntoConv");
}
