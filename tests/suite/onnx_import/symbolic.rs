//! Symbolic input sizes end to end: bindings reach every shape computation, `-1` and unnamed
//! dimensions are fresh symbols, and an operator that needs a number names what binds it.

use dmove::ir::{SymExpr, Tensor};
use dmove::onnx::{import, AttrValue, DimSpec, ImportOptions, ModelBuilder, ModelProto, OnnxError};
use dmove::ops::expand::expand_all;
use std::collections::BTreeMap;

/// A detector's first layers: a strided padded Conv, then Resize ×2 by scales (which needs the
/// Conv's output extents as numbers), then Relu.
fn detector(dims: [DimSpec; 4]) -> ModelProto {
    ModelBuilder::new("detector", 17)
        .input("x", dims)
        .initializer("w", &[4, 3, 3, 3], vec![0.1; 108])
        .initializer("scales", &[4], vec![1.0, 1.0, 2.0, 2.0])
        .node(
            "Conv",
            &["x", "w"],
            &["c"],
            vec![
                ("pads", AttrValue::Ints(vec![1, 1, 1, 1])),
                ("strides", AttrValue::Ints(vec![2, 2])),
            ],
        )
        .node(
            "Resize",
            &["c", "", "scales"],
            &["r"],
            vec![("mode", AttrValue::Str("nearest".into()))],
        )
        .node("Relu", &["r"], &["y"], vec![])
        .output("y", [-1i64; 4])
        .build()
}

fn named() -> [DimSpec; 4] {
    ["batch", "3", "height", "width"].map(DimSpec::from)
}

fn dims(pairs: &[(&str, i64)]) -> ImportOptions {
    ImportOptions {
        dims: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..ImportOptions::default()
    }
}

fn shape(values: &[i64]) -> ImportOptions {
    ImportOptions {
        input_shapes: BTreeMap::from([("x".to_string(), values.to_vec())]),
        ..ImportOptions::default()
    }
}

/// Imported with `opts`, fully lowered, and run: the output's shape.
fn output_shape(model: &ModelProto, opts: &ImportOptions) -> Vec<usize> {
    let mut p = import(model, opts).expect("imports");
    assert_eq!(p.data["r"].shape, [1, 4, 32, 32].map(SymExpr::Int));
    expand_all(&mut p).expect("lowers");
    let x = Tensor::f32(vec![1, 3, 32, 32], vec![1.0; 3 * 32 * 32]);
    let out = dmove::interp::run(&p, &BTreeMap::from([("x".to_string(), x)])).expect("runs");
    out["y"].shape.clone()
}

#[test]
fn dim_bindings_reach_resize_through_the_convolution_arithmetic() {
    let bound = dims(&[("batch", 1), ("height", 32), ("width", 32)]);
    assert_eq!(output_shape(&detector(named()), &bound), [1, 4, 32, 32]);
    assert_eq!(
        output_shape(&detector(named()), &shape(&[1, 3, 32, 32])),
        [1, 4, 32, 32]
    );
}

#[test]
fn minus_one_and_unnamed_dimensions_are_fresh_symbols_bound_by_position_or_name() {
    let minus_one = [-1, 3, -1, -1].map(DimSpec::Fixed);
    let unnamed = ["", "3", "", ""].map(DimSpec::from);
    for model in [detector(minus_one), detector(unnamed)] {
        assert_eq!(
            output_shape(&model, &shape(&[1, 3, 32, 32])),
            [1, 4, 32, 32]
        );
        let by_name = dims(&[("x_dim0", 1), ("x_dim2", 32), ("x_dim3", 32)]);
        assert_eq!(output_shape(&model, &by_name), [1, 4, 32, 32]);
    }
}

#[test]
fn an_operator_that_needs_a_number_names_the_symbols_and_the_flags() {
    let e = import(&detector(named()), &dims(&[("batch", 1)])).expect_err("height is unbound");
    let OnnxError::ShapeFromUnboundDimension { symbols, flags, .. } = &e else {
        panic!("{e:?}");
    };
    // Exactly the symbols of the extent Resize needed as a number (its first scaled axis).
    assert_eq!(symbols, "`height`");
    assert!(flags.contains("--dim height=VALUE"), "{flags}");
    assert!(e.to_string().contains("Resize"), "{e}");
}
