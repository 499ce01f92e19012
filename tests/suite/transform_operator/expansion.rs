//! Expand, and Conv's im2col implementation against the reference on awkward shapes.

use super::{applied, node, ops, params, rejected, same_results};
use dmove::check::{random_inputs, same_outputs, single_op_program};
use dmove::ir::validate::validate;
use dmove::ir::{Attr, DType, NodeKind, Program, SymExpr};
use dmove::ops::expand::expand_node;
use dmove::ops::TensorType;
use dmove::transform::{ParamValue, Params};
use std::collections::BTreeMap;

fn ty(shape: &[usize]) -> Option<TensorType> {
    Some(TensorType::new(
        DType::F32,
        shape.iter().map(|&d| SymExpr::from(d)).collect(),
    ))
}

/// One Conv node over inputs of the given shapes (bias when `b` is given).
fn conv(x: &[usize], w: &[usize], b: Option<usize>, attrs: &[(&str, Attr)]) -> Program {
    conv_op("Conv", x, w, b, attrs)
}

/// One node of convolution operator `op` (Conv or NhwcConv).
fn conv_op(
    op: &str,
    x: &[usize],
    w: &[usize],
    b: Option<usize>,
    attrs: &[(&str, Attr)],
) -> Program {
    let attrs: BTreeMap<String, Attr> = attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let mut inputs = vec![ty(x), ty(w)];
    if let Some(m) = b {
        inputs.push(ty(&[m]));
    }
    single_op_program(op, attrs, &inputs, &[]).expect("valid conv")
}

/// Input shape, weight shape, bias size and attributes of one convolution.
type ConvCase<'a> = (Vec<usize>, Vec<usize>, Option<usize>, Vec<(&'a str, Attr)>);

fn map_labels(p: &Program) -> Vec<String> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| {
        if matches!(n.kind, NodeKind::Map(_)) {
            v.push(n.label.clone());
        }
    });
    v
}

fn im2col() -> Params {
    params(&[("impl", ParamValue::Str("im2col".into()))])
}

#[test]
fn expand_with_im2col_builds_a_column_buffer_and_a_gemm() {
    let mut p = conv(
        &[1, 2, 4, 4],
        &[3, 2, 3, 3],
        Some(3),
        &[("pads", Attr::Ints(vec![1; 4]))],
    );
    let original = p.clone();
    let c = node(&p, "Conv", 0);
    let step = applied(&mut p, "Expand", &[c], &im2col());
    assert_eq!(step.touched[0], c);
    assert!(ops(&p).is_empty());
    assert_eq!(
        map_labels(&p),
        [
            "conv_weights",
            "conv_pad_zero_0_lo",
            "conv_pad_zero_0_hi",
            "conv_pad_zero_1_lo",
            "conv_pad_zero_1_hi",
            "conv_pad",
            "conv_im2col",
            "conv_init",
            "conv_gemm",
            "conv_output"
        ]
    );
    // The zeros go to the border of the padded copy only: 2 × (6·6 − 4·4) = 40 elements, once
    // each; the copy of X fills the 2 × 4·4 interior.
    let mut zeros = 0;
    p.graph.walk(&mut |n| match &n.kind {
        NodeKind::Map(m) if n.label.starts_with("conv_pad_zero") => {
            zeros += m.work().expect("constant ranges");
        }
        _ => {}
    });
    assert_eq!(zeros, 40);
    // col: [n, c·k0·k1, o0·o1] = [1, 2·3·3, 4·4] and wmat: [m, c·k0·k1], transients.
    let col = &p.data["conv_col"];
    assert_eq!(col.static_shape(), Some(vec![1, 18, 16]));
    assert_eq!(col.kind, dmove::ir::DataKind::Transient);
    assert_eq!(p.data["conv_wmat"].static_shape(), Some(vec![3, 18]));
    assert_eq!(p.data["conv_ymat"].static_shape(), Some(vec![1, 3, 16]));
    same_results(&original, &p);

    // Without a parameter the operator's default (the direct loop nest) is used.
    let mut p = original.clone();
    applied(&mut p, "Expand", &[c], &Params::new());
    assert_eq!(map_labels(&p), ["conv_init", "conv_acc"]);
}

#[test]
fn channels_last_direct_convolution_reads_its_weights_channels_last() {
    // Depthwise 3×3 over 4 channels, channels-last: the accumulation's innermost loop runs over
    // the output channel, so W[m, c, k0, k1] is read from a copy stored [k0, k1, c, m].
    let attrs = [("group", Attr::Int(4)), ("pads", Attr::Ints(vec![1; 4]))];
    let mut p = conv_op("NhwcConv", &[1, 5, 5, 4], &[4, 1, 3, 3], Some(4), &attrs);
    let original = p.clone();
    let c = node(&p, "NhwcConv", 0);
    let padded = params(&[("impl", ParamValue::Str("padded".into()))]);
    applied(&mut p, "Expand", &[c], &padded);
    let (wlast, desc) = (p.data.iter())
        .find(|(name, _)| name.ends_with("_wlast"))
        .expect("channels-last weights");
    assert_eq!(desc.static_shape(), Some(vec![3, 3, 1, 4]));
    // The accumulation (the map holding the fmaf-shaped tasklet) reads them as [k0, k1, c, m].
    let text = dmove::ir::text::print(&p);
    let read = format!("{wlast}[k0, k1, c, m]");
    assert!(text.contains(&read), "{text}");
    same_results(&original, &p);
}

#[test]
fn expand_refuses_unknown_implementations_and_non_library_nodes() {
    let mut p = conv(&[1, 1, 3, 3], &[1, 1, 2, 2], None, &[]);
    let c = node(&p, "Conv", 0);
    let winograd = params(&[("impl", ParamValue::Str("winograd".into()))]);
    let e = rejected(&mut p, "Expand", &[c], &winograd);
    assert_eq!(
        e,
        "Expand: parameter `impl` expects an implementation of the operator, found `winograd`; this operator's implementations are pure, im2col, padded"
    );

    let mut p = single_op_program("Relu", BTreeMap::new(), &[ty(&[3])], &[]).expect("relu");
    let r = node(&p, "Relu", 0);
    let e = rejected(&mut p, "Expand", &[r], &im2col());
    assert_eq!(
        e,
        "Expand: parameter `impl` expects an implementation of the operator, found `im2col`; this operator's implementations are pure"
    );

    applied(&mut p, "Expand", &[r], &Params::new());
    let map = {
        let mut id = None;
        p.graph.walk(&mut |n| {
            if matches!(n.kind, NodeKind::Map(_)) {
                id = Some(n.id);
            }
        });
        id.expect("a map")
    };
    let e = rejected(&mut p, "Expand", &[map], &Params::new());
    assert_eq!(
        e,
        format!("Expand: {map} (the `node` role) is a map node, not a library node")
    );
}

/// Expands the convolution `op` of `p` with `implementation` and compares with the reference
/// on random inputs.
fn expansion_matches(p: &Program, op: &str, implementation: &str, seed: u64) {
    let mut lowered = p.clone();
    let id = node(p, op, 0);
    expand_node(&mut lowered, id, Some(implementation))
        .unwrap_or_else(|e| panic!("{op} {implementation} does not expand: {e}"));
    validate(&lowered).expect("valid");
    let inputs = random_inputs(p, seed).expect("inputs");
    same_outputs(p, &lowered, &inputs)
        .unwrap_or_else(|e| panic!("{implementation} differs from the reference: {e}"));
}

#[test]
fn im2col_and_padded_match_the_reference_on_awkward_convolutions() {
    let ints = |v: &[i64]| Attr::Ints(v.to_vec());
    let cases: Vec<ConvCase> = vec![
        // Grouped, strided, dilated, asymmetric padding, batch 2, bias.
        (
            vec![2, 4, 7, 6],
            vec![6, 2, 3, 2],
            Some(6),
            vec![
                ("group", Attr::Int(2)),
                ("strides", ints(&[2, 1])),
                ("dilations", ints(&[1, 2])),
                ("pads", ints(&[1, 0, 2, 1])),
            ],
        ),
        // Depthwise, padding larger than the kernel reach on one side.
        (
            vec![1, 3, 5, 5],
            vec![3, 1, 3, 3],
            None,
            vec![("group", Attr::Int(3)), ("pads", ints(&[2, 2, 0, 1]))],
        ),
        // 1-D, stride 3, SAME_LOWER auto padding.
        (
            vec![1, 2, 10],
            vec![4, 2, 4],
            Some(4),
            vec![
                ("strides", ints(&[3])),
                ("auto_pad", Attr::Str("SAME_LOWER".into())),
            ],
        ),
        // 3-D with a 1×1×1 kernel and size-1 axes.
        (vec![1, 2, 1, 3, 2], vec![3, 2, 1, 1, 1], Some(3), vec![]),
        // Kernel as large as the padded input: one output position.
        (
            vec![1, 1, 3, 2],
            vec![2, 1, 5, 4],
            None,
            vec![("pads", ints(&[1, 1, 1, 1]))],
        ),
    ];
    for (seed, (x, w, b, attrs)) in cases.into_iter().enumerate() {
        let seed = seed as u64;
        let p = conv(&x, &w, b, &attrs);
        expansion_matches(&p, "Conv", "im2col", seed);
        expansion_matches(&p, "Conv", "padded", seed);
        // The same convolution channels-last; its im2col refuses groups.
        let mut x_last = x.clone();
        let c = x_last.remove(1);
        x_last.push(c);
        let p = conv_op("NhwcConv", &x_last, &w, b, &attrs);
        expansion_matches(&p, "NhwcConv", "padded", seed);
        let grouped = attrs
            .iter()
            .any(|(k, v)| *k == "group" && *v != Attr::Int(1));
        if grouped {
            let mut refused = p.clone();
            let id = node(&p, "NhwcConv", 0);
            let e = super::refused(&mut refused, "Expand", &[id], &im2col());
            super::assert_reason(&e, id, "needs group = 1");
        } else {
            expansion_matches(&p, "NhwcConv", "im2col", seed);
        }
    }
}
