//! ONNX import: the happy path on in-memory models and on fixtures written by the official
//! `onnx` package (tests/fixtures/make_fixtures.py), and the bad-input errors in `bad_input`.

mod bad_input;
mod control_flow;
mod symbolic;

use dmove::ir::{Attr, Buffer, DType, DataKind, NodeKind, Program, SymExpr, Tensor};
use dmove::onnx::{import, import_file, load_model, AttrValue, ImportOptions, ModelBuilder};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// (label, op) of every library node in execution order.
fn library_nodes(p: &Program) -> Vec<(String, String)> {
    p.graph
        .ordered()
        .into_iter()
        .filter_map(|i| match &p.graph.node(i).kind {
            NodeKind::Library(l) => Some((p.graph.node(i).label.clone(), l.op.clone())),
            _ => None,
        })
        .collect()
}

fn sym_shape(dims: &[&str]) -> Vec<SymExpr> {
    dims.iter()
        .map(|d| {
            d.parse::<i64>()
                .map_or_else(|_| SymExpr::sym(*d), SymExpr::Int)
        })
        .collect()
}

fn chain() -> ModelBuilder {
    ModelBuilder::new("chain", 17)
        .input("x", ["N", "3"])
        .named_node("first", "Identity", &["x"], &["mid"], vec![])
        .node("Identity", &["mid"], &["y"], vec![])
        .output("y", ["N", "3"])
}

#[test]
fn identity_chain_keeps_names_kinds_and_symbols() {
    let model = load_model(&chain().encode()).expect("loads");
    let p = import(&model, &ImportOptions::default()).expect("imports");
    assert_eq!(p.name, "chain");
    assert_eq!(*p.inputs, ["x"]);
    assert_eq!(*p.outputs, ["y"]);
    assert_eq!(p.data["x"].kind, DataKind::Input);
    // The inner Identity is a renaming: `mid` is `x`; the one producing the output stays.
    assert!(!p.data.contains_key("mid"));
    assert_eq!(p.data["y"].kind, DataKind::Output);
    for name in ["x", "y"] {
        assert_eq!(p.data[name].shape, sym_shape(&["N", "3"]), "{name}");
        assert_eq!(p.data[name].dtype, DType::F32);
    }
    // The symbolic batch stays unbound: import succeeds with a free symbol.
    assert_eq!(p.symbols, BTreeMap::from([("N".to_string(), None)]));
    assert_eq!(
        library_nodes(&p),
        [("Identity_1".to_string(), "Identity".to_string())]
    );
    assert!(p.constants.is_empty());
}

#[test]
fn dims_and_input_shapes_bind_symbols() {
    let model = chain().build();
    let by_dims = ImportOptions {
        dims: BTreeMap::from([("N".to_string(), 4)]),
        ..Default::default()
    };
    let p = import(&model, &by_dims).expect("imports");
    assert_eq!(p.symbols["N"], Some(4));
    // Types use the value from the input on; the binding stays on record.
    assert_eq!(p.data["x"].shape, sym_shape(&["4", "3"]));
    assert_eq!(p.data["y"].shape, sym_shape(&["4", "3"]));
    let by_shape = ImportOptions {
        input_shapes: BTreeMap::from([("x".to_string(), vec![5, 3])]),
        ..Default::default()
    };
    assert_eq!(
        import(&model, &by_shape).expect("imports").symbols["N"],
        Some(5)
    );
}

#[test]
fn unnamed_input_dimension_gets_a_fresh_symbol_or_the_given_value() {
    let mut model = chain().build();
    let graph = model.graph.as_mut().expect("graph");
    let ty = graph.input[0]
        .r#type
        .as_mut()
        .and_then(|t| t.value.as_mut());
    let Some(dmove::onnx::proto::type_proto::Value::TensorType(t)) = ty else {
        panic!("tensor type expected")
    };
    t.shape.as_mut().expect("shape").dim[0].value = None;
    let p = import(&model, &ImportOptions::default()).expect("imports");
    assert_eq!(p.data["x"].shape, sym_shape(&["x_dim0", "3"]));
    assert_eq!(p.symbols["x_dim0"], None);
    let fixed = ImportOptions {
        input_shapes: BTreeMap::from([("x".to_string(), vec![7, 3])]),
        ..Default::default()
    };
    let p = import(&model, &fixed).expect("imports");
    assert_eq!(p.data["x"].shape, sym_shape(&["7", "3"]));
    assert_eq!(p.data["y"].shape, sym_shape(&["7", "3"]));
}

#[test]
fn initializers_and_constant_nodes_become_constants() {
    let model = ModelBuilder::new("consts", 17)
        .initializer("w", &[2, 2], vec![1.0, 2.0, 3.0, 4.0])
        .initializer_i64("shape", &[2], vec![-1, 6])
        .constant("c", &[3], vec![0.5, -0.5, 8.0])
        .named_node(
            "cf",
            "Constant",
            &[],
            &["f"],
            vec![("value_float", AttrValue::Float(2.5))],
        )
        .named_node(
            "cfs",
            "Constant",
            &[],
            &["fs"],
            vec![("value_floats", AttrValue::Floats(vec![1.0, 2.0]))],
        )
        .named_node(
            "ci",
            "Constant",
            &[],
            &["i"],
            vec![("value_int", AttrValue::Int(-3))],
        )
        .named_node(
            "cis",
            "Constant",
            &[],
            &["is"],
            vec![("value_ints", AttrValue::Ints(vec![4, 5, 6]))],
        )
        .node("Identity", &["w"], &["w_out"], vec![])
        .node("Identity", &["c"], &["c_out"], vec![])
        .output("w_out", [2, 2])
        .output("c_out", [3])
        .build();
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let expected = [
        ("w", Tensor::f32(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0])),
        ("shape", Tensor::i64(vec![2], vec![-1, 6])),
        ("c", Tensor::f32(vec![3], vec![0.5, -0.5, 8.0])),
        ("f", Tensor::f32(vec![], vec![2.5])),
        ("fs", Tensor::f32(vec![2], vec![1.0, 2.0])),
        ("i", Tensor::i64(vec![], vec![-3])),
        ("is", Tensor::i64(vec![3], vec![4, 5, 6])),
    ];
    for (name, value) in &expected {
        assert_eq!(
            p.constants.get(*name).map(|c| c.tensor()),
            Some(value),
            "{name}"
        );
        assert_eq!(p.data[*name].kind, DataKind::Constant, "{name}");
        let shape: Vec<SymExpr> = value.shape.iter().map(|d| SymExpr::from(*d)).collect();
        assert_eq!(p.data[*name].shape, shape, "{name}");
    }
    assert_eq!(p.constants.len(), expected.len());
    assert!(p.inputs.is_empty());
    // Constant nodes are consumed by the importer, not kept as library nodes.
    assert_eq!(library_nodes(&p).len(), 2);
}

/// Attributes keep their names and ONNX types (the mapping of the remaining FLOATS type, which
/// no supported operator declares, is tested in `onnx::attrs`).
#[test]
fn attributes_keep_names_and_types() {
    let model = ModelBuilder::new("attrs", 20)
        .input("x", [2, 3])
        .named_node(
            "t",
            "Transpose",
            &["x"],
            &["a"],
            vec![("perm", AttrValue::Ints(vec![1, 0]))],
        )
        .named_node(
            "l",
            "LeakyRelu",
            &["a"],
            &["b"],
            vec![("alpha", AttrValue::Float(0.25))],
        )
        .named_node(
            "g",
            "Gelu",
            &["b"],
            &["c"],
            vec![("approximate", AttrValue::Str("tanh".into()))],
        )
        .named_node(
            "f",
            "Flatten",
            &["c"],
            &["y"],
            vec![("axis", AttrValue::Int(-2))],
        )
        .output("y", [1, 6])
        .build();
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let attrs = |label: &str| {
        let id = p
            .graph
            .ordered()
            .into_iter()
            .find(|i| p.graph.node(*i).label == label)
            .expect("node");
        let NodeKind::Library(lib) = &p.graph.node(id).kind else {
            panic!("library node expected")
        };
        lib.attrs.clone()
    };
    let one = |name: &str, a: Attr| BTreeMap::from([(name.to_string(), a)]);
    assert_eq!(attrs("t"), one("perm", Attr::Ints(vec![1, 0])));
    assert_eq!(attrs("l"), one("alpha", Attr::Float(0.25)));
    assert_eq!(attrs("g"), one("approximate", Attr::Str("tanh".into())));
    assert_eq!(attrs("f"), one("axis", Attr::Int(-2)));
}

#[test]
fn typed_field_fixture_from_the_onnx_package() {
    let p = import_file(&fixture("typed_fields.onnx"), &ImportOptions::default()).expect("imports");
    // `B` is both a graph input and an initializer: a constant, not an input.
    assert_eq!(*p.inputs, ["x"]);
    assert_eq!(*p.outputs, ["y", "z", "w"]);
    assert_eq!(p.data["B"].kind, DataKind::Constant);
    assert_eq!(
        p.constants["B"],
        Tensor::f32(vec![2, 2], vec![1.5, -2.0, 3.25, 4.0])
    );
    assert_eq!(p.constants["I"], Tensor::i64(vec![3], vec![7, -8, 9]));
    assert_eq!(
        p.constants["C"],
        Tensor::f32(vec![3], vec![0.5, 0.25, 0.125])
    );
    assert_eq!(p.data["y"].shape, sym_shape(&["N", "2"]));
    assert_eq!(p.data["w"].shape, sym_shape(&["3"]));
    let labels: Vec<String> = library_nodes(&p).into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels.len(), 3);
    for l in ["copy_x", "copy_b", "copy_c"] {
        assert!(labels.iter().any(|x| x == l), "{l} in {labels:?}");
    }
}

#[test]
fn external_data_fixture_is_read_next_to_the_model() {
    let p =
        import_file(&fixture("external/model.onnx"), &ImportOptions::default()).expect("imports");
    let w = &p.constants["W"];
    assert_eq!(w.shape, [2, 3]);
    assert_eq!(w.data, Buffer::F32(vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]));
}

#[test]
fn encode_then_load_round_trips() {
    let builder = chain().initializer("w", &[1], vec![3.0]);
    assert_eq!(
        load_model(&builder.clone().encode()).expect("loads"),
        builder.build()
    );
}
