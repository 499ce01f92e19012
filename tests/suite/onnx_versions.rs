//! Versions by semantics: models written by today's `onnx` (IR version 14, opset 28) import;
//! a node is refused only for an operator definition dmove does not implement, an attribute of
//! the wrong type or a missing required one, an element type dmove lacks, or a field that would
//! change what the model computes — each error naming what is at fault.

use dmove::interp;
use dmove::ir::{DType, Tensor};
use dmove::onnx::opsets::VersionRefusal;
use dmove::onnx::proto::tensor_proto::DataType;
use dmove::onnx::proto::{type_proto, SparseTensorProto, TensorProto, TypeProto};
use dmove::onnx::tensor::decode_tensor;
use dmove::onnx::{import, import_file, AttrValue, ImportOptions, ModelBuilder, OnnxError};
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn import_err(model: &ModelBuilder) -> OnnxError {
    import(&model.clone().build(), &ImportOptions::default()).expect_err("import must fail")
}

fn iota(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::f32(
        shape.to_vec(),
        (0..n).map(|v| v as f32 / n as f32).collect(),
    )
}

/// Written by onnx 1.23 with its defaults (tests/fixtures/make_newest_fixture.py), with
/// multi-device annotations, and checked against onnx's reference evaluator.
#[test]
fn a_model_saved_with_the_newest_onnx_defaults_imports_and_matches_the_reference() {
    let path = fixture("newest_defaults.onnx");
    let model = dmove::onnx::load_file(&path).expect("loads");
    assert_eq!(model.ir_version, Some(14));
    assert_eq!(model.opset_import[0].version, Some(28));
    let p = import_file(&path, &ImportOptions::default()).expect("imports");
    let x: Vec<f32> = (0..50).map(|v| v as f32 / 25.0 - 1.0).collect();
    let feeds = BTreeMap::from([("x".to_string(), Tensor::f32(vec![1, 2, 5, 5], x))]);
    let got = interp::run(&p, &feeds).expect("runs")["y"].to_f64_vec();
    let bytes = std::fs::read(fixture("newest_defaults_y.pb")).expect("reference output");
    let want = TensorProto::decode(bytes.as_slice()).expect("tensor");
    let want = decode_tensor(&want, "y", None)
        .expect("decodes")
        .to_f64_vec();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-5, "got {got:?}, want {want:?}");
    }
}

/// The same idea built in memory: IR version 14, opset 28, operators whose definitions
/// changed at many opsets (Reduce* axes as an input from 18, Split's `num_outputs` from 18,
/// Pad-25, Reshape-25).
#[test]
fn ir_version_14_and_opset_28_resolve_each_node_to_its_definition() {
    let model = ModelBuilder::new("opset28", 28)
        .ir_version(14)
        .input("x", [2, 4])
        .initializer_i64("axes", &[1], vec![1])
        .initializer_i64("pads", &[4], vec![0, 1, 0, 1])
        .initializer_i64("shape", &[2], vec![4, 3])
        .node("Pad", &["x", "pads"], &["p"], vec![])
        .node("Reshape", &["p", "shape"], &["r"], vec![])
        .node(
            "Split",
            &["r"],
            &["s0", "s1"],
            vec![("num_outputs", AttrValue::Int(2))],
        )
        .node("ReduceSum", &["s0", "axes"], &["y"], vec![])
        .output("y", [2, 1]);
    let p = import(&model.build(), &ImportOptions::default()).expect("imports");
    let feeds = BTreeMap::from([("x".to_string(), iota(&[2, 4]))]);
    let y = interp::run(&p, &feeds).expect("runs")["y"].to_f64_vec();
    // Padded rows: [0, .0, .125, .25, .375, 0] and [0, .5, .625, .75, .875, 0], read 3 at a time.
    let expected = [0.125 + 0.0, 0.25 + 0.375, 0.5 + 0.625, 0.75 + 0.875];
    let want = [expected[0], expected[1]];
    assert!(
        y.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6),
        "{y:?}"
    );
}

/// TopK-1 took `k` as an attribute; dmove implements TopK from its opset-10 definition, and a
/// node following the older one is refused with both versions named, not misread.
#[test]
fn an_unimplemented_definition_is_refused_naming_operator_and_versions() {
    let model = ModelBuilder::new("old_topk", 9)
        .input("x", [4])
        .named_node(
            "top",
            "TopK",
            &["x"],
            &["v", "i"],
            vec![("k", AttrValue::Int(2))],
        )
        .output("v", [2])
        .output("i", [2]);
    let e = import_err(&model);
    let OnnxError::OperatorVersions { nodes } = &e else {
        panic!("expected a version refusal, got {e:?}");
    };
    assert!(matches!(
        nodes.as_slice(),
        [(node, VersionRefusal::Unimplemented { version: 1, opset: 9, .. })] if node == "top"
    ));
    let msg = e.to_string();
    for part in [
        "`top`",
        "TopK at opset 9",
        "opset-1 definition",
        "k is an attribute",
        "10, 11, 24",
    ] {
        assert!(msg.contains(part), "`{msg}` should mention `{part}`");
    }
}

/// An operator used below the opset that introduced it does not exist for that model.
#[test]
fn an_operator_newer_than_the_model_opset_is_refused() {
    let model = ModelBuilder::new("early_gelu", 17)
        .input("x", [3])
        .named_node("g", "Gelu", &["x"], &["y"], vec![])
        .output("y", [3]);
    let msg = import_err(&model).to_string();
    assert!(
        msg.contains("Gelu does not exist at opset 17") && msg.contains("opset 20"),
        "{msg}"
    );
}

fn conv(kernel_shape: AttrValue) -> ModelBuilder {
    ModelBuilder::new("conv", 22)
        .input("x", [1, 1, 4, 4])
        .initializer("w", &[1, 1, 3, 3], vec![1.0; 9])
        .named_node(
            "conv0",
            "Conv",
            &["x", "w"],
            &["y"],
            vec![("kernel_shape", kernel_shape)],
        )
        .output("y", [1, 1, 2, 2])
}

#[test]
fn a_wrongly_typed_attribute_is_refused_naming_node_attribute_and_types() {
    assert!(import(
        &conv(AttrValue::Ints(vec![3, 3])).build(),
        &ImportOptions::default()
    )
    .is_ok());
    let e = import_err(&conv(AttrValue::Floats(vec![3.0, 3.0])));
    assert!(
        matches!(
            &e,
            OnnxError::AttributeType { node, op, attr, expected, found, version: 22 }
                if node == "conv0" && *op == "Conv" && attr == "kernel_shape"
                    && *expected == "ints" && *found == "floats"
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "node `conv0` (Conv): attribute `kernel_shape` must be ints, but the model gives floats"
    );
}

#[test]
fn a_missing_required_attribute_is_a_different_error() {
    let model = ModelBuilder::new("concat", 13)
        .input("a", [2])
        .input("b", [2])
        .named_node("cat", "Concat", &["a", "b"], &["y"], vec![])
        .output("y", [4]);
    let e = import_err(&model);
    assert!(
        matches!(
            &e,
            OnnxError::MissingAttribute { node, attr, expected, .. }
                if node == "cat" && attr == "axis" && *expected == "int"
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "node `cat` (Concat) lacks required attribute `axis` (int)"
    );
}

#[test]
fn an_attribute_the_definition_does_not_declare_is_refused() {
    let model = ModelBuilder::new("relu", 14)
        .input("x", [2])
        .named_node(
            "r",
            "Relu",
            &["x"],
            &["y"],
            vec![("alpha", AttrValue::Float(0.1))],
        )
        .output("y", [2]);
    let msg = import_err(&model).to_string();
    assert!(
        msg.contains("`alpha` is not an attribute of Relu as defined at opset 14")
            && msg.contains("none"),
        "{msg}"
    );
}

/// Element types of IR versions 11–14 are refused by name, wherever they appear.
#[test]
fn new_element_types_are_refused_naming_the_type() {
    let mut model = ModelBuilder::new("fp4", 23)
        .ir_version(11)
        .input("x", [2])
        .node("Identity", &["x"], &["y"], vec![])
        .output("y", [2])
        .build();
    let graph = model.graph.as_mut().expect("graph");
    let input_type = graph.input[0]
        .r#type
        .as_mut()
        .and_then(|t| t.value.as_mut());
    let Some(type_proto::Value::TensorType(t)) = input_type else {
        panic!("tensor input");
    };
    t.elem_type = Some(DataType::Float4e2m1 as i32);
    let e = import(&model, &ImportOptions::default()).expect_err("float4 input");
    assert!(
        matches!(&e, OnnxError::ElementType { name, ir_version: Some(11), .. } if name == "FLOAT4E2M1"),
        "{e:?}"
    );
    assert!(e.to_string().contains("graph input"), "{e}");

    let cast = ModelBuilder::new("e8m0", 24)
        .input("x", [2])
        .named_node(
            "to_e8m0",
            "Cast",
            &["x"],
            &["y"],
            vec![("to", AttrValue::Int(DataType::Float8e8m0 as i64))],
        )
        .output("y", [2]);
    let msg = import_err(&cast).to_string();
    assert!(
        msg.contains("FLOAT8E8M0") && msg.contains("to_e8m0") && msg.contains("IR version 12"),
        "{msg}"
    );

    for (code, name) in [(DataType::Int2, "INT2"), (DataType::Uint2, "UINT2")] {
        let model = ModelBuilder::new("int2", 25)
            .input("x", [1])
            .node("Identity", &["x"], &["y"], vec![])
            .output("y", [1])
            .build();
        let mut model = model;
        model
            .graph
            .as_mut()
            .expect("graph")
            .initializer
            .push(TensorProto {
                name: Some("packed".into()),
                dims: vec![4],
                data_type: Some(code as i32),
                raw_data: Some(vec![0]),
                ..TensorProto::default()
            });
        let e = import(&model, &ImportOptions::default()).expect_err("2-bit initializer");
        assert!(
            e.to_string().contains(name) && e.to_string().contains("packed"),
            "{e}"
        );
    }
    // dmove's own types still read: the packed 4-bit integers of IR version 10.
    assert_eq!(
        dmove::onnx::tensor::dtype_of(DataType::Int4 as i32, "t").ok(),
        Some(DType::I4)
    );
}

/// An opaque type (available to every build from IR version 14) is not a tensor, and a sparse
/// initializer is a value the graph reads: both are refused by their field.
#[test]
fn fields_that_could_change_meaning_are_refused_by_name() {
    let mut model = ModelBuilder::new("opaque", 28)
        .ir_version(14)
        .input("x", [2])
        .node("Identity", &["x"], &["y"], vec![])
        .output("y", [2])
        .build();
    model.graph.as_mut().expect("graph").input[0].r#type = Some(TypeProto {
        value: Some(type_proto::Value::OpaqueType(type_proto::Opaque::default())),
        ..TypeProto::default()
    });
    let msg = import(&model, &ImportOptions::default())
        .expect_err("opaque input")
        .to_string();
    assert!(msg.contains("TypeProto.opaque_type"), "{msg}");

    let mut model = ModelBuilder::new("sparse", 28)
        .input("x", [2])
        .node("Identity", &["x"], &["y"], vec![])
        .output("y", [2])
        .build();
    model
        .graph
        .as_mut()
        .expect("graph")
        .sparse_initializer
        .push(SparseTensorProto {
            values: Some(TensorProto {
                name: Some("s".into()),
                ..TensorProto::default()
            }),
            ..SparseTensorProto::default()
        });
    let e = import(&model, &ImportOptions::default()).expect_err("sparse initializer");
    assert!(
        matches!(&e, OnnxError::UnreadField { field, .. } if field == "GraphProto.sparse_initializer"),
        "{e:?}"
    );
}

/// Opset 27 lets Range accumulate 16-bit floats in their own precision; dmove computes ranges
/// exactly and rounds once (the default), and refuses the other choice instead of ignoring it.
#[test]
fn range_at_opset_27_refuses_low_precision_accumulation() {
    let half = |v: f64| Tensor::from_f64(DType::F16, vec![], &[v]);
    let range = |stash: i64| {
        ModelBuilder::new("range", 27)
            .initializer_tensor("start", &half(0.0))
            .initializer_tensor("limit", &half(4.0))
            .initializer_tensor("delta", &half(1.0))
            .named_node(
                "r",
                "Range",
                &["start", "limit", "delta"],
                &["y"],
                vec![("stash_type", AttrValue::Int(stash))],
            )
            .output_typed("y", DType::F16, [4])
    };
    import(&range(1).build(), &ImportOptions::default()).expect("the default stash_type imports");
    let msg = import_err(&range(0)).to_string();
    assert!(msg.contains("stash_type") && msg.contains("f16"), "{msg}");
}
