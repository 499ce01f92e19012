//! ConstantFolding, ReshapeElimination and TransposeFolding.

use super::{
    applied, assert_reason, attrs, model, node, ops, output, refused, same_results, values,
};
use dmove::ir::{Attr, Tensor};
use dmove::onnx::{AttrValue, ModelBuilder};
use dmove::transform::engine::{apply_repeatedly, Budget, Checks, StopReason};
use dmove::transform::{lookup, Params};

/// `Y = X · Transpose(W)` with W a constant [2, 3].
fn transposed_weights() -> ModelBuilder {
    ModelBuilder::new("fold", 17)
        .input("X", [4, 3])
        .initializer("W", &[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        .node("Transpose", &["W"], &["Wt"], vec![])
        .node("MatMul", &["X", "Wt"], &["Y"], vec![])
        .output("Y", [4, 2])
}

#[test]
fn constant_folding_computes_the_transposed_weights() {
    let mut p = model(transposed_weights());
    let original = p.clone();
    let t = node(&p, "Transpose", 0);
    let step = applied(&mut p, "ConstantFolding", &[t], &Params::new());
    assert_eq!(step.touched, vec![t]);
    assert_eq!(ops(&p), ["MatMul"]);
    // Wᵀ by hand; W itself is gone because only the transpose read it.
    assert_eq!(
        p.constants["Wt"],
        Tensor::f32(vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
    );
    assert!(!p.data.contains_key("W") && !p.constants.contains_key("W"));
    // Y row 0 for X row 0 = [1, 0, -1]: [1·1 + 0·2 − 1·3, 1·4 + 0·5 − 1·6] = [−2, −2].
    let x = Tensor::f32(vec![4, 3], [1.0, 0.0, -1.0].repeat(4));
    let y = output(&p, &[("X", x)], "Y");
    assert_eq!(&y.to_f64_vec()[..2], &[-2.0, -2.0]);
    same_results(&original, &p);
}

#[test]
fn constant_folding_refuses_a_runtime_input_and_a_program_output() {
    let mut p = model(
        ModelBuilder::new("nofold", 17)
            .input("X", [2, 3])
            .node("Transpose", &["X"], &["T"], vec![])
            .node("Relu", &["T"], &["Y"], vec![])
            .output("Y", [3, 2]),
    );
    let t = node(&p, "Transpose", 0);
    let r = refused(&mut p, "ConstantFolding", &[t], &Params::new());
    assert_reason(&r, t, "input 0 `X` is input, not a constant");

    let mut p = model(
        ModelBuilder::new("constout", 17)
            .input("X", [2])
            .initializer("C", &[2], vec![1.0, -1.0])
            .node("Relu", &["C"], &["R"], vec![])
            .node("Add", &["X", "R"], &["Y"], vec![])
            .output("R", [2])
            .output("Y", [2]),
    );
    let relu = node(&p, "Relu", 0);
    let r = refused(&mut p, "ConstantFolding", &[relu], &Params::new());
    assert_reason(
        &r,
        relu,
        "output `R` is output; only transients can become constants",
    );
}

#[test]
fn constant_folding_to_a_fixpoint_leaves_only_runtime_work() {
    let mut p = model(
        ModelBuilder::new("chain", 17)
            .input("X", [3, 1])
            .initializer("W", &[1, 3], values(3, 0.5))
            .initializer_i64("shape", &[2], vec![3, 1])
            .node("Reshape", &["W", "shape"], &["Wr"], vec![])
            .node("Relu", &["Wr"], &["Wp"], vec![])
            .node("Add", &["X", "Wp"], &["Y"], vec![])
            .output("Y", [3, 1]),
    );
    let original = p.clone();
    let folding = lookup("ConstantFolding").expect("registered");
    let repeated = apply_repeatedly(
        &mut p,
        folding,
        &Params::new(),
        &Checks::default(),
        &Budget::steps(10),
    );
    let (steps, stop) = (repeated.steps, repeated.stop);
    assert_eq!((steps.len(), stop), (2, StopReason::Fixpoint));
    assert_eq!(ops(&p), ["Add"]);
    assert_eq!(p.constants.keys().collect::<Vec<_>>(), ["Wp"]);
    same_results(&original, &p);
}

/// X → Reshape([2, 3]) → Relu, with X: [2, 3] (an identity reshape).
fn identity_reshape(out: &[i64]) -> ModelBuilder {
    ModelBuilder::new("reshape", 17)
        .input("X", [2, 3])
        .initializer_i64("s", &[2], out.to_vec())
        .node("Reshape", &["X", "s"], &["T"], vec![])
        .node("Relu", &["T"], &["Y"], vec![])
        .output("Y", out.to_vec())
}

#[test]
fn reshape_elimination_removes_an_identity_and_fuses_a_chain() {
    let mut p = model(identity_reshape(&[2, 3]));
    let original = p.clone();
    let r = node(&p, "Reshape", 0);
    applied(&mut p, "ReshapeElimination", &[r], &Params::new());
    assert_eq!(ops(&p), ["Relu"]);
    assert!(!p.data.contains_key("T") && !p.data.contains_key("s"));
    same_results(&original, &p);

    let mut p = model(
        ModelBuilder::new("chain", 17)
            .input("X", [2, 3, 4])
            .initializer_i64("axes", &[1], vec![0])
            .node("Flatten", &["X"], &["F"], vec![("axis", AttrValue::Int(1))])
            .node("Unsqueeze", &["F", "axes"], &["U"], vec![])
            .node("Relu", &["U"], &["Y"], vec![])
            .output("Y", [1, 2, 12]),
    );
    let original = p.clone();
    let (f, u) = (node(&p, "Flatten", 0), node(&p, "Unsqueeze", 0));
    applied(&mut p, "ReshapeElimination", &[f, u], &Params::new());
    assert_eq!(ops(&p), ["Reshape", "Relu"]);
    assert_eq!(node(&p, "Reshape", 0), u, "the second node keeps its id");
    let spec: Vec<&Tensor> = p
        .constants
        .iter()
        .filter(|(k, _)| k.ends_with("_shape"))
        .map(|(_, v)| v.tensor())
        .collect();
    assert_eq!(spec, [&Tensor::i64(vec![3], vec![1, 2, 12])]);
    assert!(!p.data.contains_key("axes") && !p.data.contains_key("F"));
    same_results(&original, &p);
}

#[test]
fn reshape_elimination_refuses_a_real_reshape_an_output_and_a_shared_intermediate() {
    let mut p = model(identity_reshape(&[3, 2]));
    let r = node(&p, "Reshape", 0);
    let e = refused(&mut p, "ReshapeElimination", &[r], &Params::new());
    assert_reason(&e, r, "`X` is f32 [2, 3] but `T` is f32 [3, 2]");

    let mut p = model(
        ModelBuilder::new("out", 17)
            .input("X", [2, 3])
            .initializer_i64("s", &[2], vec![2, 3])
            .node("Reshape", &["X", "s"], &["Y"], vec![])
            .output("Y", [2, 3]),
    );
    let r = node(&p, "Reshape", 0);
    let e = refused(&mut p, "ReshapeElimination", &[r], &Params::new());
    assert_reason(
        &e,
        r,
        "`Y` is output: removing the operators would leave it unwritten",
    );

    let mut p = model(
        ModelBuilder::new("shared", 17)
            .input("X", [2, 3])
            .node("Flatten", &["X"], &["F"], vec![("axis", AttrValue::Int(0))])
            .node("Flatten", &["F"], &["G"], vec![("axis", AttrValue::Int(1))])
            .node("Relu", &["F"], &["Y"], vec![])
            .node("Relu", &["G"], &["Z"], vec![])
            .output("Y", [1, 6])
            .output("Z", [1, 6]),
    );
    let (f, g) = (node(&p, "Flatten", 0), node(&p, "Flatten", 1));
    let e = refused(&mut p, "ReshapeElimination", &[f, g], &Params::new());
    assert_reason(&e, f, "`F` is read by 2 and written by 1 edge(s)");
}

#[test]
fn reshape_chains_that_cancel_disappear_under_repeated_application() {
    let mut p = model(
        ModelBuilder::new("cancel", 17)
            .input("X", [1, 5, 1])
            .initializer_i64("a0", &[1], vec![0])
            .initializer_i64("s", &[2], vec![5, 1])
            .node("Squeeze", &["X", "a0"], &["A"], vec![])
            .node("Reshape", &["A", "s"], &["B"], vec![])
            .node("Unsqueeze", &["B", "a0"], &["C"], vec![])
            .node("Tanh", &["C"], &["Y"], vec![])
            .output("Y", [1, 5, 1]),
    );
    let original = p.clone();
    let t = lookup("ReshapeElimination").expect("registered");
    let repeated = apply_repeatedly(
        &mut p,
        t,
        &Params::new(),
        &Checks::default(),
        &Budget::steps(10),
    );
    let (steps, stop) = (repeated.steps, repeated.stop);
    assert_eq!(stop, StopReason::Fixpoint);
    assert_eq!(
        steps.len(),
        3,
        "an identity goes, the rest fuses, then that identity goes"
    );
    assert_eq!(ops(&p), ["Tanh"]);
    same_results(&original, &p);
}

/// X: [2, 3, 4] → Transpose(p1) → Transpose(p2) → Relu.
fn two_transposes(p1: &[i64], p2: &[i64], out: &[i64]) -> ModelBuilder {
    ModelBuilder::new("tt", 17)
        .input("X", [2, 3, 4])
        .node(
            "Transpose",
            &["X"],
            &["A"],
            vec![("perm", AttrValue::Ints(p1.to_vec()))],
        )
        .node(
            "Transpose",
            &["A"],
            &["B"],
            vec![("perm", AttrValue::Ints(p2.to_vec()))],
        )
        .node("Relu", &["B"], &["Y"], vec![])
        .output("Y", out.to_vec())
}

#[test]
fn transpose_folding_composes_cancels_and_folds_into_gemm() {
    // A = [3, 2, 4]; B = [A2, A0, A1] = [4, 3, 2] = [X2, X1, X0].
    let mut p = model(two_transposes(&[1, 0, 2], &[2, 0, 1], &[4, 3, 2]));
    let original = p.clone();
    let (a, b) = (node(&p, "Transpose", 0), node(&p, "Transpose", 1));
    applied(&mut p, "TransposeFolding", &[a, b], &Params::new());
    assert_eq!(ops(&p), ["Transpose", "Relu"]);
    assert_eq!(attrs(&p, b)["perm"], Attr::Ints(vec![2, 1, 0]));
    same_results(&original, &p);

    let mut p = model(two_transposes(&[1, 2, 0], &[2, 0, 1], &[2, 3, 4]));
    let original = p.clone();
    let (a, b) = (node(&p, "Transpose", 0), node(&p, "Transpose", 1));
    applied(&mut p, "TransposeFolding", &[a, b], &Params::new());
    assert_eq!(ops(&p), ["Relu"]);
    same_results(&original, &p);

    let mut p = model(
        ModelBuilder::new("mm", 17)
            .input("X", [4, 3])
            .initializer("W", &[5, 3], values(15, 0.25))
            .node("Transpose", &["W"], &["Wt"], vec![])
            .node("MatMul", &["X", "Wt"], &["Y"], vec![])
            .output("Y", [4, 5]),
    );
    let original = p.clone();
    let (t, mm) = (node(&p, "Transpose", 0), node(&p, "MatMul", 0));
    applied(&mut p, "TransposeFolding", &[t, mm], &Params::new());
    assert_eq!(ops(&p), ["Gemm"]);
    assert_eq!(node(&p, "Gemm", 0), mm);
    assert_eq!(attrs(&p, mm)["transB"], Attr::Int(1));
    same_results(&original, &p);
}

#[test]
fn transpose_folding_refuses_batched_products() {
    let mut p = model(
        ModelBuilder::new("batched", 17)
            .input("X", [2, 4, 3])
            .input("W", [2, 5, 3])
            .node(
                "Transpose",
                &["W"],
                &["Wt"],
                vec![("perm", AttrValue::Ints(vec![0, 2, 1]))],
            )
            .node("MatMul", &["X", "Wt"], &["Y"], vec![])
            .output("Y", [2, 4, 5]),
    );
    let (t, mm) = (node(&p, "Transpose", 0), node(&p, "MatMul", 0));
    let e = refused(&mut p, "TransposeFolding", &[t, mm], &Params::new());
    assert_reason(&e, t, "transposes a rank-3 tensor by [0, 2, 1]");

    let mut p = model(
        ModelBuilder::new("batched2", 17)
            .input("X", [2, 4, 3])
            .input("W", [5, 3])
            .node("Transpose", &["W"], &["Wt"], vec![])
            .node("MatMul", &["X", "Wt"], &["Y"], vec![])
            .output("Y", [2, 4, 5]),
    );
    let (t, mm) = (node(&p, "Transpose", 0), node(&p, "MatMul", 0));
    let e = refused(&mut p, "TransposeFolding", &[t, mm], &Params::new());
    assert_reason(&e, mm, "the other operand `X` has rank 3");
}

#[test]
fn transpose_folding_flips_existing_gemm_flags() {
    // Gemm(Xᵀᵀ, Wᵀ, C, transA=1, transB=1): folding both transposes clears both flags.
    let mut p = model(
        ModelBuilder::new("gemm", 17)
            .input("X", [4, 3])
            .initializer("W", &[3, 5], values(15, 0.3))
            .initializer("C", &[1, 5], values(5, 0.2))
            .node("Transpose", &["X"], &["Xt"], vec![])
            .node("Transpose", &["W"], &["Wt"], vec![])
            .node(
                "Gemm",
                &["Xt", "Wt", "C"],
                &["Y"],
                vec![
                    ("transA", AttrValue::Int(1)),
                    ("transB", AttrValue::Int(1)),
                    ("alpha", AttrValue::Float(0.5)),
                ],
            )
            .output("Y", [4, 5]),
    );
    let original = p.clone();
    let gemm = node(&p, "Gemm", 0);
    let (tx, tw) = (node(&p, "Transpose", 0), node(&p, "Transpose", 1));
    applied(&mut p, "TransposeFolding", &[tw, gemm], &Params::new());
    applied(&mut p, "TransposeFolding", &[tx, gemm], &Params::new());
    let a = attrs(&p, gemm);
    assert_eq!((&a["transA"], &a["transB"]), (&Attr::Int(0), &Attr::Int(0)));
    assert_eq!(a["alpha"], Attr::Float(0.5));
    assert_eq!(ops(&p), ["Gemm"]);
    same_results(&original, &p);
}
