//! MatMulAddToGemm, BatchNormIntoConv and PadIntoConv.

use super::{
    applied, assert_reason, attrs, model, node, ops, output, refused, rejected, same_results,
    values,
};
use dmove::check::single_op_program;
use dmove::ir::{Attr, DType, DataDesc, DataKind, LibraryNode, Program, SymExpr, Tensor};
use dmove::numerics::compare;
use dmove::onnx::{AttrValue, ModelBuilder};
use dmove::ops::{lookup as op_lookup, TensorType};
use dmove::transform::engine::{apply, Checks};
use dmove::transform::{lookup, Params};
use std::collections::BTreeMap;

/// `Y = Add(X·W, b)` (or `Add(b, X·W)` when `bias_first`), X: [m, k].
fn matmul_add(m: i64, k: i64, n: i64, bias: &[i64], bias_first: bool) -> ModelBuilder {
    let size = |s: &[i64]| s.iter().product::<i64>() as usize;
    let add_in: [&str; 2] = if bias_first { ["b", "T"] } else { ["T", "b"] };
    ModelBuilder::new("mma", 17)
        .input("X", [m, k])
        .initializer("W", &[k, n], values(size(&[k, n]), 0.2))
        .initializer("b", bias, values(size(bias), 0.7))
        .node("MatMul", &["X", "W"], &["T"], vec![])
        .node("Add", &add_in, &["Y"], vec![])
        .output("Y", [m, n])
}

#[test]
fn matmul_add_becomes_gemm_with_the_bias() {
    let mut p = model(
        ModelBuilder::new("mma", 17)
            .input("X", [2, 2])
            .initializer("W", &[2, 3], vec![1.0, 0.0, 1.0, 0.0, 1.0, 1.0])
            .initializer("b", &[3], vec![10.0, 20.0, 30.0])
            .node("MatMul", &["X", "W"], &["T"], vec![])
            .node("Add", &["T", "b"], &["Y"], vec![])
            .output("Y", [2, 3]),
    );
    let (mm, add) = (node(&p, "MatMul", 0), node(&p, "Add", 0));
    applied(&mut p, "MatMulAddToGemm", &[mm, add], &Params::new());
    assert_eq!(ops(&p), ["Gemm"]);
    assert_eq!(node(&p, "Gemm", 0), mm, "the MatMul node becomes the Gemm");
    assert!(!p.data.contains_key("T"));
    // X·W = [[1, 2, 3], [3, 4, 7]], plus b.
    let x = Tensor::f32(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let y = output(&p, &[("X", x)], "Y");
    assert_eq!(y.to_f64_vec(), [11.0, 22.0, 33.0, 13.0, 24.0, 37.0]);
}

#[test]
fn matmul_add_refuses_batches_non_broadcasting_bias_and_shared_products() {
    let mut p = model(
        ModelBuilder::new("batched", 17)
            .input("X", [2, 4, 3])
            .initializer("W", &[3, 5], values(15, 0.1))
            .initializer("b", &[5], values(5, 0.1))
            .node("MatMul", &["X", "W"], &["T"], vec![])
            .node("Add", &["T", "b"], &["Y"], vec![])
            .output("Y", [2, 4, 5]),
    );
    let (mm, add) = (node(&p, "MatMul", 0), node(&p, "Add", 0));
    let e = refused(&mut p, "MatMulAddToGemm", &[mm, add], &Params::new());
    assert_reason(&e, mm, "the operands have ranks 3 and 2");

    let mut p = model(
        ModelBuilder::new("wide", 17)
            .input("X", [4, 3])
            .initializer("W", &[3, 5], values(15, 0.1))
            .initializer("b", &[2, 4, 5], values(40, 0.1))
            .node("MatMul", &["X", "W"], &["T"], vec![])
            .node("Add", &["T", "b"], &["Y"], vec![])
            .output("Y", [2, 4, 5]),
    );
    let (mm, add) = (node(&p, "MatMul", 0), node(&p, "Add", 0));
    let e = refused(&mut p, "MatMulAddToGemm", &[mm, add], &Params::new());
    assert_reason(
        &e,
        add,
        "the bias `b` of shape [2, 4, 5] does not broadcast to the product's [4, 5]",
    );

    let mut p = model(
        ModelBuilder::new("shared", 17)
            .input("X", [4, 3])
            .initializer("W", &[3, 5], values(15, 0.1))
            .initializer("b", &[5], values(5, 0.1))
            .node("MatMul", &["X", "W"], &["T"], vec![])
            .node("Add", &["T", "b"], &["Y"], vec![])
            .node("Relu", &["T"], &["Z"], vec![])
            .output("Y", [4, 5])
            .output("Z", [4, 5]),
    );
    let (mm, add) = (node(&p, "MatMul", 0), node(&p, "Add", 0));
    let e = refused(&mut p, "MatMulAddToGemm", &[mm, add], &Params::new());
    assert_reason(&e, mm, "`T` is read by 2 and written by 1 edge(s)");
    let relu = node(&p, "Relu", 0);
    let e = rejected(&mut p, "MatMulAddToGemm", &[mm, relu], &Params::new());
    assert_eq!(
        e,
        format!("MatMulAddToGemm: {relu} (the `add` role) is a Relu node, not an Add node")
    );
}

#[test]
fn matmul_add_to_gemm_keeps_results_for_every_bias_broadcast() {
    for (bias, first) in [
        (vec![5], false),
        (vec![1, 5], true),
        (vec![7, 1], false),
        (vec![7, 5], true),
        (vec![1], false),
    ] {
        let mut p = model(matmul_add(7, 3, 5, &bias, first));
        let original = p.clone();
        let (mm, add) = (node(&p, "MatMul", 0), node(&p, "Add", 0));
        applied(&mut p, "MatMulAddToGemm", &[mm, add], &Params::new());
        assert_eq!(ops(&p), ["Gemm"], "bias {bias:?}");
        same_results(&original, &p);
    }
}

/// `Y = BatchNormalization(Conv(X, W[, B]), scale, beta, mean, var)`.
fn conv_bn(x: [i64; 4], w: [i64; 4], bias: bool, conv: Vec<(&str, AttrValue)>) -> ModelBuilder {
    let m = w[0];
    let out = {
        let node = LibraryNode {
            op: "Conv".into(),
            attrs: conv.iter().map(|(k, v)| (k.to_string(), attr(v))).collect(),
        };
        let ty = |s: [i64; 4]| Some(TensorType::new(DType::F32, s.map(SymExpr::Int).to_vec()));
        let t = op_lookup("Conv")
            .expect("Conv")
            .infer(&node, &[ty(x), ty(w)], &[None, None])
            .expect("valid conv")
            .remove(0);
        t.shape
            .iter()
            .map(|d| d.as_int().expect("static"))
            .collect::<Vec<_>>()
    };
    let size = |s: &[i64]| s.iter().product::<i64>() as usize;
    let mut b = ModelBuilder::new("cbn", 17)
        .input("X", x)
        .initializer("W", &w, values(size(&w), 0.15))
        .initializer("s", &[m], values(m as usize, 0.3))
        .initializer("beta", &[m], values(m as usize, 0.2))
        .initializer("mean", &[m], values(m as usize, 0.1))
        .initializer(
            "var",
            &[m],
            values(m as usize, 0.1)
                .iter()
                .map(|v| v * v + 0.5)
                .collect(),
        );
    let conv_inputs: Vec<&str> = if bias {
        b = b.initializer("B", &[m], values(m as usize, 0.4));
        vec!["X", "W", "B"]
    } else {
        vec!["X", "W"]
    };
    b.node("Conv", &conv_inputs, &["T"], conv)
        .node(
            "BatchNormalization",
            &["T", "s", "beta", "mean", "var"],
            &["Y"],
            vec![("epsilon", AttrValue::Float(1e-3))],
        )
        .output("Y", out)
}

/// Input shape, weight shape, whether there is a bias, and the Conv attributes.
type ConvBnCase<'a> = ([i64; 4], [i64; 4], bool, Vec<(&'a str, AttrValue)>);

/// The IR attribute an ONNX attribute imports as.
fn attr(v: &AttrValue) -> Attr {
    match v {
        AttrValue::Int(i) => Attr::Int(*i),
        AttrValue::Float(f) => Attr::Float(f64::from(*f)),
        AttrValue::Ints(v) => Attr::Ints(v.clone()),
        AttrValue::Floats(v) => Attr::Floats(v.iter().map(|f| f64::from(*f)).collect()),
        AttrValue::Str(s) => Attr::Str(s.clone()),
    }
}

#[test]
fn batchnorm_folds_into_hand_computed_weights_and_bias() {
    let mut p = model(
        ModelBuilder::new("cbn", 17)
            .input("X", [1, 1, 1, 2])
            .initializer("W", &[2, 1, 1, 1], vec![2.0, 3.0])
            .initializer("s", &[2], vec![1.0, 2.0])
            .initializer("beta", &[2], vec![0.5, -1.0])
            .initializer("mean", &[2], vec![1.0, 0.0])
            .initializer("var", &[2], vec![3.0, 0.0])
            .node("Conv", &["X", "W"], &["T"], vec![])
            .node(
                "BatchNormalization",
                &["T", "s", "beta", "mean", "var"],
                &["Y"],
                vec![("epsilon", AttrValue::Float(1.0))],
            )
            .output("Y", [1, 2, 1, 2]),
    );
    let original = p.clone();
    let (conv, bn) = (node(&p, "Conv", 0), node(&p, "BatchNormalization", 0));
    applied(&mut p, "BatchNormIntoConv", &[conv, bn], &Params::new());
    assert_eq!(ops(&p), ["Conv"]);
    // f = scale / sqrt(var + 1) = [0.5, 2]; W' = W·f; B' = (0 − mean)·f + beta.
    assert_eq!(p.constants["W_bn"].to_f64_vec(), [1.0, 6.0]);
    assert_eq!(p.constants["W_bn_bias"].to_f64_vec(), [0.0, -1.0]);
    for gone in ["W", "s", "beta", "mean", "var", "T"] {
        assert!(!p.data.contains_key(gone), "`{gone}` should be dropped");
    }
    same_results(&original, &p);
}

#[test]
fn batchnorm_into_conv_refuses_runtime_statistics_and_weights() {
    let runtime_scale = ModelBuilder::new("rt", 17)
        .input("X", [1, 2, 3, 3])
        .input("s", [2])
        .initializer("W", &[2, 2, 1, 1], values(4, 0.3))
        .initializer("beta", &[2], vec![0.0, 1.0])
        .initializer("mean", &[2], vec![0.0, 1.0])
        .initializer("var", &[2], vec![1.0, 1.0])
        .node("Conv", &["X", "W"], &["T"], vec![])
        .node(
            "BatchNormalization",
            &["T", "s", "beta", "mean", "var"],
            &["Y"],
            vec![],
        )
        .output("Y", [1, 2, 3, 3]);
    let mut p = model(runtime_scale);
    let (conv, bn) = (node(&p, "Conv", 0), node(&p, "BatchNormalization", 0));
    let e = refused(&mut p, "BatchNormIntoConv", &[conv, bn], &Params::new());
    assert_reason(&e, bn, "scale `s` is input, not a constant");

    let runtime_weights = ModelBuilder::new("rw", 17)
        .input("X", [1, 2, 3, 3])
        .input("W", [2, 2, 1, 1])
        .initializer("s", &[2], vec![1.0, 1.0])
        .initializer("beta", &[2], vec![0.0, 1.0])
        .initializer("mean", &[2], vec![0.0, 1.0])
        .initializer("var", &[2], vec![1.0, 1.0])
        .node("Conv", &["X", "W"], &["T"], vec![])
        .node(
            "BatchNormalization",
            &["T", "s", "beta", "mean", "var"],
            &["Y"],
            vec![],
        )
        .output("Y", [1, 2, 3, 3]);
    let mut p = model(runtime_weights);
    let (conv, bn) = (node(&p, "Conv", 0), node(&p, "BatchNormalization", 0));
    let e = refused(&mut p, "BatchNormIntoConv", &[conv, bn], &Params::new());
    assert_reason(&e, conv, "weights `W` is input, not a constant");
}

#[test]
fn batchnorm_into_conv_keeps_results_on_awkward_convolutions() {
    let cases: Vec<ConvBnCase> = vec![
        (
            [2, 3, 5, 4],
            [4, 3, 3, 2],
            true,
            vec![("pads", AttrValue::Ints(vec![1, 0, 2, 1]))],
        ),
        (
            [1, 4, 7, 6],
            [6, 2, 3, 3],
            false,
            vec![
                ("group", AttrValue::Int(2)),
                ("strides", AttrValue::Ints(vec![2, 1])),
                ("dilations", AttrValue::Ints(vec![1, 2])),
            ],
        ),
        (
            [1, 3, 1, 5],
            [3, 1, 1, 1],
            true,
            vec![("group", AttrValue::Int(3))],
        ),
    ];
    for (x, w, bias, conv) in cases {
        let mut p = model(conv_bn(x, w, bias, conv));
        let original = p.clone();
        let (c, bn) = (node(&p, "Conv", 0), node(&p, "BatchNormalization", 0));
        applied(&mut p, "BatchNormIntoConv", &[c, bn], &Params::new());
        assert_eq!(ops(&p), ["Conv"]);
        same_results(&original, &p);
    }
}

/// `Y = Conv(Pad(X), W)` built by hand: the Pad operator is declared by its ONNX semantics
/// (pads as a constant input), which is all PadIntoConv reads.
fn pad_conv(
    x: [usize; 4],
    pads: &[i64],
    pad_attrs: &[(&str, Attr)],
    conv_attrs: &[(&str, Attr)],
) -> Program {
    let padded: Vec<usize> = (0..4)
        .map(|d| x[d] + (pads[d] + pads[4 + d]) as usize)
        .collect();
    let w = [3, padded[1], 2, 3];
    let conv_attrs: BTreeMap<String, Attr> = conv_attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let sym = |s: &[usize]| s.iter().map(|&d| SymExpr::from(d)).collect::<Vec<_>>();
    let y = op_lookup("Conv")
        .expect("Conv")
        .infer(
            &LibraryNode {
                op: "Conv".into(),
                attrs: conv_attrs.clone(),
            },
            &[
                Some(TensorType::new(DType::F32, sym(&padded))),
                Some(TensorType::new(DType::F32, sym(&w))),
            ],
            &[None, None],
        )
        .expect("valid conv")
        .remove(0);
    let mut p = Program::new("padconv");
    let declare = |p: &mut Program, name: &str, dtype, shape: Vec<SymExpr>, kind| {
        p.data
            .insert(name.into(), DataDesc::new(dtype, shape, kind));
    };
    declare(&mut p, "X", DType::F32, sym(&x), DataKind::Input);
    declare(&mut p, "pads", DType::I64, sym(&[8]), DataKind::Constant);
    declare(&mut p, "W", DType::F32, sym(&w), DataKind::Constant);
    declare(&mut p, "T", DType::F32, sym(&padded), DataKind::Transient);
    declare(&mut p, "Y", DType::F32, y.shape, DataKind::Output);
    p.inputs.push("X".into());
    p.outputs.push("Y".into());
    p.constants
        .insert("pads".into(), Tensor::i64(vec![8], pads.to_vec()).into());
    p.constants.insert(
        "W".into(),
        Tensor::f32(w.to_vec(), values(w.iter().product(), 0.2)).into(),
    );
    let pad_attrs = pad_attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    p.build(|b| {
        b.library("pad", "Pad", pad_attrs, &[Some("X"), Some("pads")], &["T"]);
        b.library("conv", "Conv", conv_attrs, &[Some("T"), Some("W")], &["Y"]);
    });
    p
}

/// X zero-padded by `pads` (begin and end per axis), computed directly.
fn zero_padded(x: &Tensor, pads: &[i64]) -> Tensor {
    let shape: Vec<usize> = (0..4)
        .map(|d| x.shape[d] + (pads[d] + pads[4 + d]) as usize)
        .collect();
    let mut out = Tensor::zeros(DType::F32, shape.clone());
    let (xs, os) = (x.strides(), out.strides());
    for i in 0..x.len() {
        let at: usize = (0..4)
            .map(|d| ((i / xs[d]) % x.shape[d] + pads[d] as usize) * os[d])
            .sum();
        out.set_f64(at, x.get_f64(i));
    }
    out
}

#[test]
fn pad_into_conv_merges_spatial_zero_padding() {
    let pads = [0, 0, 1, 2, 0, 0, 1, 0];
    let conv_attrs = [
        ("pads", Attr::Ints(vec![0, 1, 0, 1])),
        ("strides", Attr::Ints(vec![2, 1])),
    ];
    let mut p = pad_conv([2, 2, 4, 5], &pads, &[], &conv_attrs);
    let (pad, conv) = (node(&p, "Pad", 0), node(&p, "Conv", 0));
    // The engine compares with the original (Pad then Conv); the result is also compared below
    // with a convolution of an explicitly padded input.
    let checks = Checks::default();
    let t = lookup("PadIntoConv").expect("registered");
    apply(&mut p, t, &[pad, conv], &Params::new(), &checks).expect("applies");
    assert_eq!(ops(&p), ["Conv"]);
    assert_eq!(attrs(&p, conv)["pads"], Attr::Ints(vec![1, 3, 1, 1]));
    assert!(!p.data.contains_key("T") && !p.data.contains_key("pads"));

    let x = Tensor::f32(vec![2, 2, 4, 5], values(80, 0.05));
    let got = output(&p, &[("X", x.clone())], "Y");
    let xp = zero_padded(&x, &pads);
    let w = p.constants["W"].tensor().clone();
    let shapes = [&xp, &w].map(|t| {
        Some(TensorType::new(
            DType::F32,
            t.shape.iter().map(|&d| SymExpr::from(d)).collect(),
        ))
    });
    let reference = single_op_program(
        "Conv",
        conv_attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        &shapes,
        &[None, Some(w)],
    )
    .expect("reference conv");
    let want = output(&reference, &[("x0", xp)], "y0");
    assert!(compare(&got, &want).within_tolerance);
}

#[test]
fn pad_into_conv_refuses_non_zero_non_spatial_and_auto_padding() {
    let spatial = [0, 0, 1, 1, 0, 0, 1, 1];
    let mut p = pad_conv(
        [1, 2, 3, 3],
        &spatial,
        &[("mode", Attr::Str("reflect".into()))],
        &[],
    );
    let (pad, conv) = (node(&p, "Pad", 0), node(&p, "Conv", 0));
    let e = refused(&mut p, "PadIntoConv", &[pad, conv], &Params::new());
    assert_reason(&e, pad, "mode `reflect` pads with copies of the input");

    let mut p = pad_conv([1, 2, 3, 3], &[0, 1, 0, 0, 0, 0, 0, 0], &[], &[]);
    let (pad, conv) = (node(&p, "Pad", 0), node(&p, "Conv", 0));
    let e = refused(&mut p, "PadIntoConv", &[pad, conv], &Params::new());
    assert_reason(&e, pad, "pads axis 1 (batch or channel)");

    let mut p = pad_conv([1, 2, 3, 3], &spatial, &[("value", Attr::Float(1.5))], &[]);
    let (pad, conv) = (node(&p, "Pad", 0), node(&p, "Conv", 0));
    let e = refused(&mut p, "PadIntoConv", &[pad, conv], &Params::new());
    assert_reason(&e, pad, "pads with the value 1.5");

    let same = [("auto_pad", Attr::Str("SAME_UPPER".into()))];
    let mut p = pad_conv([1, 2, 3, 3], &spatial, &[], &same);
    let (pad, conv) = (node(&p, "Pad", 0), node(&p, "Conv", 0));
    let e = refused(&mut p, "PadIntoConv", &[pad, conv], &Params::new());
    assert_reason(&e, conv, "auto_pad = SAME_UPPER computes its own padding");
}
