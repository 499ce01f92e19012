//! Exporter idioms resolved at import: constant folding of shape subgraphs, removal of
//! Identity/Dropout, constant graph outputs, the unbound-dimension error, and the model summary.

use dmove::interp;
use dmove::ir::{Buffer, DataKind, NodeKind, Program, SymExpr, Tensor};
use dmove::onnx::idioms::require_bound_inputs;
use dmove::onnx::proto::tensor_proto::DataType;
use dmove::onnx::proto::{type_proto, ModelProto, TypeProto, ValueInfoProto};
use dmove::onnx::summary::summarize;
use dmove::onnx::{import, load_model, AttrValue, ImportOptions, ModelBuilder, OnnxError};
use dmove::ops::lookup;
use std::collections::BTreeMap;
use std::process::Command;

fn library_ops(p: &Program) -> Vec<String> {
    let mut ops = Vec::new();
    p.graph.walk(&mut |n| {
        if let NodeKind::Library(lib) = &n.kind {
            ops.push(lib.op.clone());
        }
    });
    ops
}

fn run(p: &Program, x: Tensor) -> BTreeMap<String, Tensor> {
    interp::run(p, &BTreeMap::from([("x".to_string(), x)])).expect("runs")
}

/// `model` with one more graph output of element type `elem` and unknown shape (the builder
/// declares float outputs only).
fn with_output(mut model: ModelProto, name: &str, elem: DataType) -> ModelProto {
    let ty = TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: Some(elem as i32),
            shape: None,
        })),
        ..TypeProto::default()
    };
    model
        .graph
        .as_mut()
        .expect("graph")
        .output
        .push(ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(ty),
            ..ValueInfoProto::default()
        });
    model
}

fn iota(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::f32(shape.to_vec(), (0..n).map(|v| v as f32).collect())
}

/// `Shape(x)[0:2] * [1, 4]` is `[2, 12]`: Shape folds from the type, Mul through `eval`, and the
/// Reshape gets a constant shape.
#[test]
fn shape_arithmetic_folds_into_a_constant_reshape() {
    let model = ModelBuilder::new("fold", 17)
        .input("x", [2, 3, 4])
        .initializer_i64("scale", &[2], vec![1, 4])
        .named_node(
            "shape",
            "Shape",
            &["x"],
            &["s"],
            vec![("end", AttrValue::Int(2))],
        )
        .named_node("mul", "Mul", &["s", "scale"], &["target"], vec![])
        .named_node("reshape", "Reshape", &["x", "target"], &["y"], vec![])
        .output("y", [2, 12])
        .build();
    let p = import(&model, &ImportOptions::default()).expect("imports");
    assert_eq!(library_ops(&p), ["Reshape"]);
    assert_eq!(p.data["target"].kind, DataKind::Constant);
    assert_eq!(p.constants["target"], Tensor::i64(vec![2], vec![2, 12]));
    assert_eq!(p.constants["s"], Tensor::i64(vec![2], vec![2, 3]));
    let y = &run(&p, iota(&[2, 3, 4]))["y"];
    assert_eq!(y, &iota(&[2, 12]));
}

/// The PyTorch idiom `x.view(x.size(0), -1)`: Shape → Gather → Unsqueeze → Concat → Reshape.
/// It folds completely once Gather and Concat exist; until then the importer names exactly them.
#[test]
fn pytorch_view_chain_folds_when_shapes_are_static() {
    let model = ModelBuilder::new("view", 13)
        .input("x", [2, 3, 4])
        .initializer_i64("zero", &[], vec![0])
        .initializer_i64("axes", &[1], vec![0])
        .initializer_i64("minus_one", &[1], vec![-1])
        .node("Shape", &["x"], &["s"], vec![])
        .node(
            "Gather",
            &["s", "zero"],
            &["n"],
            vec![("axis", AttrValue::Int(0))],
        )
        .node("Unsqueeze", &["n", "axes"], &["n1"], vec![])
        .node(
            "Concat",
            &["n1", "minus_one"],
            &["target"],
            vec![("axis", AttrValue::Int(0))],
        )
        .node("Reshape", &["x", "target"], &["y"], vec![])
        .output("y", [2, 12])
        .build();
    let missing: Vec<&str> = ["Concat", "Gather"]
        .into_iter()
        .filter(|op| lookup(op).is_none())
        .collect();
    match import(&model, &ImportOptions::default()) {
        Ok(p) => {
            assert!(missing.is_empty());
            assert_eq!(library_ops(&p), ["Reshape"]);
            assert_eq!(p.constants["target"], Tensor::i64(vec![2], vec![2, -1]));
            assert_eq!(run(&p, iota(&[2, 3, 4]))["y"], iota(&[2, 12]));
        }
        Err(OnnxError::Unsupported { nodes }) => {
            let ops: Vec<&str> = nodes.iter().map(|n| n.op.as_str()).collect();
            assert_eq!(ops.len(), missing.len(), "{ops:?}");
            assert!(missing.iter().all(|m| ops.contains(m)), "{ops:?}");
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn shape_of_a_symbolic_input_is_not_folded() {
    let model = ModelBuilder::new("sym", 17)
        .input("x", ["N", "3"])
        .node("Shape", &["x"], &["y"], vec![])
        .build();
    let model = with_output(model, "y", DataType::Int64);
    match import(&model, &ImportOptions::default()) {
        // With the Shape operator in the library it stays a node; without, it is unsupported.
        Ok(p) => assert_eq!(library_ops(&p), ["Shape"]),
        Err(e) => assert!(
            matches!(&e, OnnxError::Unsupported { nodes } if nodes[0].op == "Shape"),
            "{e}"
        ),
    }
    // Bound by the caller, the same Shape folds to a constant copied into the output.
    let opts = ImportOptions {
        dims: BTreeMap::from([("N".to_string(), 5)]),
        ..ImportOptions::default()
    };
    let p = import(&model, &opts).expect("imports");
    assert_eq!(library_ops(&p), ["Identity"]);
    assert_eq!(
        run(&p, iota(&[5, 3]))["y"],
        Tensor::i64(vec![2], vec![5, 3])
    );
}

/// Identity and inference Dropout are renamings: the Relus read `x` and `a` directly, and
/// Dropout's mask is a constant of ones.
#[test]
fn identity_and_dropout_are_removed() {
    let model = ModelBuilder::new("rename", 13)
        .input("x", [2, 3])
        .initializer("ratio", &[], vec![0.3])
        .named_node("id", "Identity", &["x"], &["x1"], vec![])
        .named_node("relu", "Relu", &["x1"], &["a"], vec![])
        .named_node("drop", "Dropout", &["a", "ratio"], &["a1", "mask"], vec![])
        .named_node("neg", "Neg", &["a1"], &["y"], vec![])
        .named_node("keep", "Identity", &["mask"], &["m"], vec![])
        .output("y", [2, 3])
        .build();
    let model = with_output(model, "m", DataType::Bool);
    let p = import(&model, &ImportOptions::default()).expect("imports");
    // The mask is a graph output (through Identity), so it is copied from the folded constant.
    assert_eq!(library_ops(&p), ["Relu", "Neg", "Identity"]);
    for gone in ["x1", "a1"] {
        assert!(!p.data.contains_key(gone), "{gone}");
    }
    assert_eq!(
        p.constants["mask"].data,
        Buffer::Bool(vec![true; 6]),
        "all kept"
    );
    let x = Tensor::f32(vec![2, 3], vec![-1.0, 2.0, -3.0, 4.0, 0.5, -0.5]);
    let out = run(&p, x);
    assert_eq!(
        out["y"],
        Tensor::f32(vec![2, 3], vec![0.0, -2.0, 0.0, -4.0, -0.5, 0.0])
    );
}

#[test]
fn training_mode_dropout_is_refused_with_the_node_named() {
    let model = ModelBuilder::new("train", 13)
        .input("x", [4])
        .named_node(
            "on",
            "Constant",
            &[],
            &["training"],
            vec![("value_int", AttrValue::Int(1))],
        )
        .named_node("drop", "Dropout", &["x", "", "training"], &["y"], vec![])
        .output("y", [4])
        .build();
    let e = import(&model, &ImportOptions::default()).expect_err("training mode");
    let text = e.to_string();
    assert!(
        text.contains("`drop`") && text.contains("training mode"),
        "{text}"
    );
}

#[test]
fn constant_graph_output_is_copied_by_identity() {
    let model = ModelBuilder::new("const_out", 17)
        .input("x", [1])
        .constant("y", &[3], vec![1.0, 2.0, 3.0])
        .output("y", [3])
        .build();
    let p = import(&model, &ImportOptions::default()).expect("imports");
    assert_eq!(library_ops(&p), ["Identity"]);
    assert_eq!(p.data["y"].kind, DataKind::Output);
    assert_eq!(
        run(&p, iota(&[1]))["y"],
        Tensor::f32(vec![3], vec![1.0, 2.0, 3.0])
    );
}

fn symbolic_model() -> Vec<u8> {
    ModelBuilder::new("batchy", 17)
        .input("x", ["batch", "3"])
        .node("Relu", &["x"], &["y"], vec![])
        .output("y", ["batch", "3"])
        .encode()
}

#[test]
fn unbound_dimension_names_input_dimension_and_flags() {
    let model = load_model(&symbolic_model()).expect("loads");
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let e = require_bound_inputs(&p).expect_err("unbound");
    assert!(
        matches!(&e, OnnxError::UnboundDimension { input, dim: 0, symbol, .. }
            if input == "x" && symbol == "batch"),
        "{e:?}"
    );
    let bound = ImportOptions {
        dims: BTreeMap::from([("batch".to_string(), 2)]),
        ..ImportOptions::default()
    };
    require_bound_inputs(&import(&model, &bound).expect("imports")).expect("bound");
    assert_eq!(p.data["x"].shape[0], SymExpr::sym("batch"));
}

fn dmove(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dmove"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("dmove runs")
}

#[test]
fn c_command_explains_how_to_bind_a_symbolic_dimension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("batchy.onnx");
    std::fs::write(&path, symbolic_model()).expect("write");
    let path = path.to_str().expect("utf-8");
    let out = dmove(&["c", path]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("input `x`") && err.contains("`batch`") && err.contains("--dim batch="),
        "{err}"
    );
    assert!(dmove(&["c", path, "--dim", "batch=2"]).status.success());
}

/// A 2-layer MLP: 8·16 + 16 + 16·4 + 4 = 212 parameters (848 bytes of f32); MatMul FLOPs are
/// 2·m·k·n = 2·2·8·16 + 2·2·16·4, plus one per output element for Add and Relu.
#[test]
fn summary_counts_operators_parameters_bytes_and_flops() {
    let model = ModelBuilder::new("mlp", 17)
        .input("x", [2, 8])
        .initializer("w1", &[8, 16], vec![0.1; 128])
        .initializer("b1", &[16], vec![0.0; 16])
        .initializer("w2", &[16, 4], vec![0.1; 64])
        .initializer("b2", &[4], vec![0.0; 4])
        .node("MatMul", &["x", "w1"], &["h"], vec![])
        .node("Add", &["h", "b1"], &["hb"], vec![])
        .node("Relu", &["hb"], &["r"], vec![])
        .node("Dropout", &["r"], &["rd"], vec![])
        .node("MatMul", &["rd", "w2"], &["o"], vec![])
        .node("Add", &["o", "b2"], &["y"], vec![])
        .output("y", [2, 4])
        .build();
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let s = summarize(&p, Some(&model));
    assert_eq!(
        s.operators,
        BTreeMap::from([
            ("Add".to_string(), 2),
            ("Dropout".to_string(), 1),
            ("MatMul".to_string(), 2),
            ("Relu".to_string(), 1),
        ])
    );
    assert_eq!(s.library_nodes, 5);
    assert_eq!(s.parameters, 212);
    assert_eq!(s.weight_bytes, 848);
    let matmuls = 2 * 2 * 8 * 16 + 2 * 2 * 16 * 4;
    let pointwise = 2 * 16 + 2 * 16 + 2 * 4;
    assert_eq!(s.flops, matmuls + pointwise);
    assert!(s.unbound_symbols.is_empty());

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mlp.onnx");
    use prost::Message;
    std::fs::write(&path, model.encode_to_vec()).expect("write");
    let out = dmove(&[
        "import",
        path.to_str().expect("utf-8"),
        "--summary",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["parameters"], 212);
    assert_eq!(json["flops"], matmuls + pointwise);
    assert_eq!(json["operators"]["MatMul"], 2);
    let out = dmove(&["import", path.to_str().expect("utf-8"), "--summary"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("parameters: 212") && text.contains("MatMul"),
        "{text}"
    );
}

#[test]
fn as_written_keeps_constant_subgraphs_and_identities() {
    use dmove::onnx::{import, ImportOptions, ModelBuilder};
    let model = ModelBuilder::new("as_written", 17)
        .input("x", [2])
        .output("y", [2])
        .initializer("c", &[2], vec![1.0, -1.0])
        .node("Relu", &["c"], &["r"], vec![])
        .node("Identity", &["x"], &["xi"], vec![])
        .node("Add", &["xi", "r"], &["y"], vec![])
        .build();
    let folded = import(&model, &ImportOptions::default()).expect("imports");
    assert_eq!(library_ops(&folded), ["Add"]);
    let opts = ImportOptions {
        as_written: true,
        ..ImportOptions::default()
    };
    let written = import(&model, &opts).expect("imports");
    let mut seen = library_ops(&written);
    seen.sort();
    assert_eq!(seen, ["Add", "Identity", "Relu"]);
}

/// `x.view(x.size(0), -1) @ w` with the batch bound by `--dim`: the bound symbol is its value
/// from the graph input on, so the view shape folds to `[2, -1]` and every type below agrees
/// (the Reshape is `[2, 12]`, not `[2, 12·N]`, and the MatMul's inner dimensions agree).
#[test]
fn a_bound_symbol_is_its_value_in_every_type_from_the_input_on() {
    let model = ModelBuilder::new("view_bound", 13)
        .input("x", ["N", "3", "4"])
        .initializer_i64("zero", &[], vec![0])
        .initializer_i64("axes", &[1], vec![0])
        .initializer_i64("minus_one", &[1], vec![-1])
        .initializer("w", &[12, 2], vec![0.5; 24])
        .node("Shape", &["x"], &["s"], vec![])
        .node(
            "Gather",
            &["s", "zero"],
            &["n"],
            vec![("axis", AttrValue::Int(0))],
        )
        .node("Unsqueeze", &["n", "axes"], &["n1"], vec![])
        .node(
            "Concat",
            &["n1", "minus_one"],
            &["target"],
            vec![("axis", AttrValue::Int(0))],
        )
        .node("Reshape", &["x", "target"], &["flat"], vec![])
        .node("MatMul", &["flat", "w"], &["y"], vec![])
        .output("y", ["N", "2"])
        .build();
    let opts = ImportOptions {
        dims: BTreeMap::from([("N".to_string(), 2)]),
        ..ImportOptions::default()
    };
    let p = import(&model, &opts).expect("imports");
    assert_eq!(library_ops(&p), ["Reshape", "MatMul"]);
    assert_eq!(p.data["flat"].shape, [SymExpr::Int(2), SymExpr::Int(12)]);
    assert_eq!(p.data["x"].shape[0], SymExpr::Int(2));
    assert_eq!(p.symbols["N"], Some(2), "the binding stays on record");
    let y = &run(&p, iota(&[2, 3, 4]))["y"];
    assert_eq!(y.shape, [2, 2]);
    assert_eq!(y.get_f64(2), 0.5 * (12..24).sum::<i64>() as f64);
}

/// The view chain of an unbound batch cannot fold: the error names the symbol and the flag that
/// binds it, not only the Reshape that needed a constant shape.
#[test]
fn a_shape_that_cannot_fold_names_the_unbound_dimension() {
    let model = ModelBuilder::new("view_unbound", 13)
        .input("x", ["N", "3"])
        .initializer_i64("zero", &[], vec![0])
        .initializer_i64("axes", &[1], vec![0])
        .initializer_i64("minus_one", &[1], vec![-1])
        .node("Shape", &["x"], &["s"], vec![])
        .node(
            "Gather",
            &["s", "zero"],
            &["n"],
            vec![("axis", AttrValue::Int(0))],
        )
        .node("Unsqueeze", &["n", "axes"], &["n1"], vec![])
        .node(
            "Concat",
            &["n1", "minus_one"],
            &["target"],
            vec![("axis", AttrValue::Int(0))],
        )
        .named_node("view", "Reshape", &["x", "target"], &["y"], vec![])
        .output("y", ["N", "3"])
        .build();
    let err = import(&model, &ImportOptions::default()).expect_err("the batch is unbound");
    let OnnxError::ShapeFromUnboundDimension {
        node,
        symbols,
        flags,
        ..
    } = &err
    else {
        panic!("unexpected error: {err}");
    };
    assert_eq!((node.as_str(), symbols.as_str()), ("view", "`N`"));
    assert_eq!(flags, "--dim N=VALUE");
}
