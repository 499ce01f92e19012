//! Bad input: each test asserts which error comes back and that its message names the culprit.

use super::{chain, fixture};
use dmove::onnx::proto::attribute_proto::AttributeType;
use dmove::onnx::proto::tensor_proto::DataLocation;
use dmove::onnx::proto::{AttributeProto, ModelProto, StringStringEntryProto, TensorProto};
use dmove::onnx::{
    import, load_file, load_model, ImportOptions, ModelBuilder, OnnxError, UnsupportedNode,
};
use prost::Message;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn import_err(model: &ModelProto) -> OnnxError {
    import(model, &ImportOptions::default()).expect_err("import must fail")
}

fn assert_mentions(e: &OnnxError, parts: &[&str]) {
    let msg = e.to_string();
    for p in parts {
        assert!(msg.contains(p), "`{msg}` should mention `{p}`");
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path
}

/// A model whose bulk is one 64-element initializer, so a cut in the middle splits a field.
fn weighted() -> ModelBuilder {
    ModelBuilder::new("weighted", 17)
        .initializer("w", &[64], (0..64).map(|i| i as f32).collect())
        .node("Identity", &["w"], &["y"], vec![])
        .output("y", [64])
}

#[test]
fn empty_input_is_rejected_and_the_file_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = load_file(&write(dir.path(), "empty.onnx", b"")).expect_err("empty");
    assert!(matches!(e, OnnxError::Empty { .. }), "{e:?}");
    assert_mentions(&e, &["empty.onnx", "empty"]);
    assert!(matches!(load_model(&[]), Err(OnnxError::Empty { .. })));
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let e = load_file(Path::new("/nonexistent/dir/model.onnx")).expect_err("missing");
    assert!(matches!(e, OnnxError::Io { .. }), "{e:?}");
    assert_mentions(&e, &["/nonexistent/dir/model.onnx"]);
}

#[test]
fn text_and_random_bytes_are_not_onnx() {
    let e = load_file(&fixture("not_a_model.onnx")).expect_err("text");
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e:?}");
    assert_mentions(&e, &["not_a_model.onnx", "not an ONNX model"]);
    for bytes in [
        vec![0xff; 32],
        b"\x89PNG\r\n\x1a\n".to_vec(),
        b"\x00\x01\x02".to_vec(),
    ] {
        let e = load_model(&bytes).expect_err("garbage");
        assert!(matches!(e, OnnxError::NotOnnx { .. }), "{bytes:?}: {e:?}");
    }
}

#[test]
fn truncated_model_is_reported_with_its_file() {
    let bytes = weighted().encode();
    let cut = &bytes[..bytes.len() / 2];
    let e = load_model(cut).expect_err("truncated");
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e:?}");
    assert_mentions(&e, &["protobuf decoding failed"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let e = load_file(&write(dir.path(), "half.onnx", cut)).expect_err("truncated file");
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e:?}");
    assert_mentions(&e, &["half.onnx"]);
}

#[test]
fn missing_graph_is_reported() {
    let mut model = chain().build();
    model.graph = None;
    let e = load_model(&model.encode_to_vec()).expect_err("no graph");
    assert!(matches!(e, OnnxError::MissingGraph { .. }), "{e:?}");
    assert_mentions(&e, &["no graph"]);
    assert!(matches!(import_err(&model), OnnxError::MissingGraph { .. }));
    // Bytes that happen to decode as a model with only `ir_version = 150`.
    assert!(matches!(
        load_model(&[0x08, 0x96, 0x01]),
        Err(OnnxError::MissingGraph { .. })
    ));
}

#[test]
fn ir_version_and_default_opset_are_checked() {
    let mut model = chain().build();
    model.ir_version = None;
    assert!(matches!(
        import_err(&model),
        OnnxError::IrVersion { version: 0, .. }
    ));
    let mut model = chain().build();
    model.opset_import.clear();
    assert!(matches!(import_err(&model), OnnxError::MissingOpset { .. }));
    let e = import_err(&chain().ir_version(2).build());
    assert!(
        matches!(e, OnnxError::IrVersion { version: 2, .. }),
        "{e:?}"
    );
    assert_mentions(&e, &["IR version 2", "3"]);
    let e = import_err(&ModelBuilder::new("zero", 0).input("x", [1]).build());
    assert!(
        matches!(e, OnnxError::OpsetVersion { version: 0, .. }),
        "{e:?}"
    );
    assert_mentions(&e, &["0"]);
}

#[test]
fn nodes_in_unknown_domains_are_listed_by_domain() {
    let mut model = chain()
        .opset_import("com.example", 1)
        .named_node("mystery", "Gelu", &["y"], &["z"], vec![])
        .build();
    model.graph.as_mut().expect("graph").node[2].domain = Some("com.example".into());
    let e = load_model(&model.encode_to_vec()).expect_err("foreign domain");
    match &e {
        OnnxError::UnknownDomains { domains, .. } => {
            assert_eq!(domains, &["`com.example` (nodes: mystery)"])
        }
        other => panic!("expected UnknownDomains, got {other:?}"),
    }
    assert!(matches!(
        import_err(&model),
        OnnxError::UnknownDomains { .. }
    ));
    // Declaring a foreign domain that no node uses is harmless.
    let tolerated = chain().opset_import("ai.onnx.ml", 3).build();
    assert!(import(&tolerated, &ImportOptions::default()).is_ok());
}

#[test]
fn every_unsupported_node_is_listed_together() {
    let model = ModelBuilder::new("unsupported", 17)
        .input("x", [2])
        .named_node("a", "NoSuchOp", &["x"], &["t1"], vec![])
        .node("Identity", &["t1"], &["t2"], vec![])
        .node("CustomThing", &["t2"], &["y"], vec![])
        .output("y", [2])
        .build();
    let e = import_err(&model);
    let unsupported = |node: &str, op: &str| UnsupportedNode {
        node: node.into(),
        op: op.into(),
        domain: String::new(),
    };
    match &e {
        OnnxError::Unsupported { nodes } => {
            assert_eq!(
                nodes,
                &[
                    unsupported("a", "NoSuchOp"),
                    unsupported("CustomThing_2", "CustomThing")
                ]
            )
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert_mentions(
        &e,
        &[
            "2 unsupported",
            "`a` (NoSuchOp)",
            "`CustomThing_2` (CustomThing)",
        ],
    );
}

#[test]
fn dangling_tensor_reference_names_node_and_tensor() {
    let model = ModelBuilder::new("dangling", 17)
        .input("x", [2])
        .named_node("reader", "Identity", &["ghost"], &["y"], vec![])
        .output("y", [2])
        .build();
    let e = import_err(&model);
    assert!(
        matches!(
            &e,
            OnnxError::Dangling {
                produced_later: None,
                ..
            }
        ),
        "{e:?}"
    );
    assert_mentions(&e, &["reader", "ghost"]);
    let unsorted = ModelBuilder::new("unsorted", 17)
        .input("x", [2])
        .named_node("second", "Identity", &["mid"], &["y"], vec![])
        .named_node("first", "Identity", &["x"], &["mid"], vec![])
        .output("y", [2])
        .build();
    let e = import_err(&unsorted);
    assert!(
        matches!(&e, OnnxError::Dangling { produced_later: Some(p), .. } if p == "first"),
        "{e:?}"
    );
    assert_mentions(&e, &["second", "mid", "not topologically sorted"]);
}

#[test]
fn initializer_size_must_match_its_dims() {
    let raw = weighted()
        .initializer("short", &[2, 3], vec![1.0; 5])
        .build();
    let e = import_err(&raw);
    assert!(
        matches!(&e, OnnxError::TensorData { tensor, .. } if tensor == "short"),
        "{e:?}"
    );
    assert_mentions(
        &e,
        &["short", "6 element", "24 bytes", "raw_data has 20 bytes"],
    );
    let mut typed = weighted().build();
    let w = &mut typed.graph.as_mut().expect("graph").initializer[0];
    w.raw_data = None;
    w.float_data = vec![1.0, 2.0, 3.0];
    let e = import_err(&typed);
    assert!(
        matches!(&e, OnnxError::TensorData { tensor, .. } if tensor == "w"),
        "{e:?}"
    );
    assert_mentions(&e, &["`w`", "64 element", "float_data has 3"]);
}

/// `weighted()` with `w` moved to external file `location`.
fn external(location: &str) -> ModelProto {
    let mut model = weighted().build();
    let w: &mut TensorProto = &mut model.graph.as_mut().expect("graph").initializer[0];
    w.raw_data = None;
    w.data_location = Some(DataLocation::External as i32);
    w.external_data = vec![StringStringEntryProto {
        key: Some("location".into()),
        value: Some(location.into()),
    }];
    model
}

#[test]
fn missing_external_data_names_tensor_and_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = ImportOptions {
        base_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let e = import(&external("weights.bin"), &opts).expect_err("missing file");
    assert!(
        matches!(&e, OnnxError::ExternalData { tensor, .. } if tensor == "w"),
        "{e:?}"
    );
    assert_mentions(&e, &["`w`", "weights.bin"]);
    // The official fixture, copied without its weights file.
    let model = std::fs::read(fixture("external/model.onnx")).expect("fixture");
    let e = load_file(&write(dir.path(), "model.onnx", &model)).expect_err("missing weights");
    assert!(
        matches!(&e, OnnxError::ExternalData { tensor, .. } if tensor == "W"),
        "{e:?}"
    );
    assert_mentions(&e, &["`W`", "weights.bin"]);
    // Present but too short for the 64 floats.
    write(dir.path(), "weights.bin", &[0u8; 16]);
    let e = import(&external("weights.bin"), &opts).expect_err("short file");
    assert!(
        matches!(&e, OnnxError::TensorData { tensor, .. } if tensor == "w"),
        "{e:?}"
    );
    assert_mentions(&e, &["`w`", "weights.bin", "256 bytes", "has 16 bytes"]);
}

#[test]
fn external_data_cannot_leave_the_model_directory() {
    for location in ["../secret.bin", "/etc/passwd"] {
        let opts = ImportOptions {
            base_dir: Some(PathBuf::from("/tmp")),
            ..Default::default()
        };
        let e = import(&external(location), &opts).expect_err("escape");
        assert!(matches!(&e, OnnxError::ExternalData { .. }), "{e:?}");
        assert_mentions(&e, &[location, "inside the model's directory"]);
    }
}

#[test]
fn declared_shape_mismatch_names_the_tensor() {
    let model = ModelBuilder::new("mismatch", 17)
        .input("x", [2, 3])
        .named_node("copy", "Identity", &["x"], &["mid"], vec![])
        .value_info("mid", [2, 4])
        .node("Identity", &["mid"], &["y"], vec![])
        .output("y", [2, 3])
        .build();
    let e = import_err(&model);
    assert!(
        matches!(&e, OnnxError::ShapeMismatch { tensor, .. } if tensor == "mid"),
        "{e:?}"
    );
    assert_mentions(&e, &["`mid`", "f32[2, 4]", "`copy`", "f32[2, 3]"]);
}

#[test]
fn tensor_attribute_on_an_ordinary_node_is_rejected() {
    let mut model = chain().build();
    model.graph.as_mut().expect("graph").node[0]
        .attribute
        .push(AttributeProto {
            name: Some("weights".into()),
            r#type: Some(AttributeType::Tensor as i32),
            t: Some(TensorProto::default()),
            ..Default::default()
        });
    // Identity declares no attributes: the node is refused before the tensor is looked at.
    let e = import_err(&model);
    assert!(
        matches!(&e, OnnxError::UnknownAttribute { node, attr, .. } if node == "first" && attr == "weights"),
        "{e:?}"
    );
    assert_mentions(&e, &["Identity", "none"]);
}

#[test]
fn graph_output_must_be_computed_by_a_node() {
    let model = ModelBuilder::new("passthrough", 17)
        .input("x", [2])
        .output("x", [2])
        .build();
    let e = import_err(&model);
    assert!(
        matches!(&e, OnnxError::OutputNotComputed { tensor, .. } if tensor == "x"),
        "{e:?}"
    );
    assert_mentions(&e, &["graph input"]);
}

#[test]
fn tensors_are_defined_once_and_named() {
    let twice = chain()
        .named_node("again", "Identity", &["x"], &["mid"], vec![])
        .build();
    let e = import_err(&twice);
    assert!(
        matches!(&e, OnnxError::Duplicate { tensor, by } if tensor == "mid" && by == "again"),
        "{e:?}"
    );
    let e = import_err(&weighted().initializer("", &[1], vec![0.0]).build());
    assert!(matches!(&e, OnnxError::EmptyName { .. }), "{e:?}");
    assert_mentions(&e, &["initializer #1"]);
}

#[test]
fn options_must_name_inputs_and_symbols_consistently() {
    let model = chain().build();
    let cases = [
        (
            BTreeMap::from([("M".to_string(), 3)]),
            BTreeMap::new(),
            vec!["`M`", "`N`"],
        ),
        (
            BTreeMap::new(),
            BTreeMap::from([("nope".to_string(), vec![1, 3])]),
            vec!["`nope`", "`x`"],
        ),
        (
            BTreeMap::new(),
            BTreeMap::from([("x".to_string(), vec![1, 4])]),
            vec!["`x`", "4", "3"],
        ),
        (
            BTreeMap::new(),
            BTreeMap::from([("x".to_string(), vec![3])]),
            vec!["`x`", "1 dimension"],
        ),
        (
            BTreeMap::from([("N".to_string(), 2)]),
            BTreeMap::from([("x".to_string(), vec![5, 3])]),
            vec!["`N`", "2", "5"],
        ),
    ];
    for (dims, input_shapes, parts) in cases {
        let opts = ImportOptions {
            dims,
            input_shapes,
            ..ImportOptions::default()
        };
        let e = import(&model, &opts).expect_err("bad options");
        assert!(matches!(&e, OnnxError::Options { .. }), "{e:?}");
        assert_mentions(&e, &parts);
    }
}

/// Corrupting bytes of a valid model anywhere must give errors, never panics.
#[test]
fn corrupted_models_never_panic() {
    let good = chain()
        .initializer("w", &[4], vec![1.0, 2.0, 3.0, 4.0])
        .encode();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for _ in 0..2000 {
        let mut bytes = good.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..bytes.len());
            bytes[i] = rng.gen();
        }
        bytes.truncate(rng.gen_range(1..=bytes.len()));
        if let Ok(model) = load_model(&bytes) {
            let _ = import(&model, &ImportOptions::default());
        }
    }
}
