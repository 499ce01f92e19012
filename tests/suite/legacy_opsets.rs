//! Models older than opset 7 import with today's semantics: legacy `broadcast`/`axis`
//! alignment, dropped `consumed_inputs`/`is_test`, renamed and retyped attributes.

use dmove::interp;
use dmove::ir::Tensor;
use dmove::onnx::{import, AttrValue, ImportOptions, ModelBuilder, OnnxError};
use std::collections::BTreeMap;

fn run(model: &ModelBuilder, inputs: &[(&str, Tensor)]) -> Vec<f64> {
    let p = import(&model.clone().build(), &ImportOptions::default()).expect("imports");
    let feeds = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect::<BTreeMap<_, _>>();
    let out = interp::run(&p, &feeds).expect("runs");
    out["y"].to_f64_vec()
}

fn iota(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::f32(shape.to_vec(), (0..n).map(|v| v as f32).collect())
}

/// Opset-6 `Add(A: 2×3×2, B: 3, broadcast = 1, axis = 1)` adds `B[j]` to `A[i, j, k]` — the
/// channel-bias idiom of old exports — which numpy broadcasting only gives after `B` gets a
/// trailing unit axis.
#[test]
fn legacy_broadcast_aligns_b_at_axis() {
    let model = ModelBuilder::new("bias", 6)
        .input("a", [2, 3, 2])
        .initializer("b", &[3], vec![100.0, 200.0, 300.0])
        .output("y", [2, 3, 2])
        .node(
            "Add",
            &["a", "b"],
            &["y"],
            vec![
                ("broadcast", AttrValue::Int(1)),
                ("axis", AttrValue::Int(1)),
                ("consumed_inputs", AttrValue::Ints(vec![0, 0])),
            ],
        );
    let y = run(&model, &[("a", iota(&[2, 3, 2]))]);
    let expected: Vec<f64> = (0..12)
        .map(|i| i as f64 + 100.0 * ((i / 2) % 3 + 1) as f64)
        .collect();
    assert_eq!(y, expected);
}

/// Opset-6 `PRelu(X: 2×3×2, slope: 3)` applies `slope[j]` to channel `j` (axis 1); a slope of
/// one element is shared by every channel.
#[test]
fn legacy_prelu_slopes_apply_per_channel() {
    let model = |slope: &[f32]| {
        ModelBuilder::new("prelu", 6)
            .input("x", [2, 3, 2])
            .initializer("s", &[slope.len() as i64], slope.to_vec())
            .output("y", [2, 3, 2])
            .node("PRelu", &["x", "s"], &["y"], vec![])
    };
    let x = Tensor::f32(vec![2, 3, 2], vec![-1.0; 12]);
    let y = run(&model(&[1.0, 2.0, 3.0]), &[("x", x.clone())]);
    let expected: Vec<f64> = (0..12).map(|i| -(((i / 2) % 3 + 1) as f64)).collect();
    assert_eq!(y, expected);
    assert_eq!(run(&model(&[0.5]), &[("x", x)]), vec![-0.5; 12]);
}

/// Without `axis`, legacy broadcasting aligns from the right, as numpy does; a graph input `B`
/// (not a constant) is aligned by an imported `Unsqueeze` node.
#[test]
fn legacy_broadcast_of_a_runtime_input() {
    let model = ModelBuilder::new("scale", 6)
        .input("a", [2, 3])
        .input("b", [2])
        .output("y", [2, 3])
        .node(
            "Mul",
            &["a", "b"],
            &["y"],
            vec![
                ("broadcast", AttrValue::Int(1)),
                ("axis", AttrValue::Int(0)),
            ],
        );
    let b = Tensor::f32(vec![2], vec![10.0, -1.0]);
    let y = run(&model, &[("a", iota(&[2, 3])), ("b", b)]);
    assert_eq!(y, vec![0.0, 10.0, 20.0, -3.0, -4.0, -5.0]);
    let right = ModelBuilder::new("right", 6)
        .input("a", [2, 3])
        .input("b", [3])
        .output("y", [2, 3])
        .node(
            "Sub",
            &["a", "b"],
            &["y"],
            vec![("broadcast", AttrValue::Int(1))],
        );
    let b = Tensor::f32(vec![3], vec![1.0, 2.0, 3.0]);
    let y = run(&right, &[("a", iota(&[2, 3])), ("b", b)]);
    assert_eq!(y, vec![-1.0, -1.0, -1.0, 2.0, 2.0, 2.0]);
}

#[test]
fn legacy_broadcast_that_does_not_fit_names_the_node() {
    let model = ModelBuilder::new("bad", 6)
        .input("a", [2, 3])
        .input("b", [3, 2])
        .output("y", [2, 3])
        .named_node(
            "misaligned",
            "Add",
            &["a", "b"],
            &["y"],
            vec![
                ("broadcast", AttrValue::Int(1)),
                ("axis", AttrValue::Int(1)),
            ],
        )
        .build();
    let e = import(&model, &ImportOptions::default()).expect_err("refused");
    assert!(
        matches!(&e, OnnxError::Infer { node, .. } if node == "misaligned"),
        "{e:?}"
    );
    assert!(e.to_string().contains("misaligned"), "{e}");
}

/// Opset-1 spellings: Pad's `paddings`, Cast's `to` as a type name, `is_test` on Dropout.
#[test]
fn opset_one_attributes_take_their_modern_form() {
    let model = ModelBuilder::new("old", 1)
        .input("x", [2])
        .output("y", [4])
        .node(
            "Pad",
            &["x"],
            &["p"],
            vec![
                ("paddings", AttrValue::Ints(vec![1, 1])),
                ("value", AttrValue::Float(7.0)),
            ],
        )
        .node(
            "Dropout",
            &["p"],
            &["d"],
            vec![("is_test", AttrValue::Int(1))],
        )
        .node(
            "Cast",
            &["d"],
            &["i"],
            vec![("to", AttrValue::Str("INT32".into()))],
        )
        .node(
            "Cast",
            &["i"],
            &["y"],
            vec![("to", AttrValue::Str("FLOAT".into()))],
        );
    // The round trip through int32 truncates: the type name was understood.
    let y = run(&model, &[("x", Tensor::f32(vec![2], vec![1.5, 2.5]))]);
    assert_eq!(y, vec![7.0, 1.0, 2.0, 7.0]);
}

#[test]
fn per_element_batch_norm_statistics_are_refused() {
    let model = ModelBuilder::new("bn", 6)
        .input("x", [1, 2, 2])
        .initializer("s", &[2], vec![1.0, 1.0])
        .initializer("b", &[2], vec![0.0, 0.0])
        .initializer("m", &[2], vec![0.0, 0.0])
        .initializer("v", &[2], vec![1.0, 1.0])
        .output("y", [1, 2, 2])
        .named_node(
            "bn0",
            "BatchNormalization",
            &["x", "s", "b", "m", "v"],
            &["y"],
            vec![
                ("spatial", AttrValue::Int(0)),
                ("is_test", AttrValue::Int(1)),
            ],
        )
        .build();
    let e = import(&model, &ImportOptions::default()).expect_err("refused");
    assert!(e.to_string().contains("bn0"), "{e}");
    let chain: String = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
        .map(|e| e.to_string())
        .collect();
    assert!(chain.contains("spatial"), "{chain}");
}
