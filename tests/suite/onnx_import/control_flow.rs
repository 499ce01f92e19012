//! Control flow decided at import: `If` folded to its taken branch (on a constant, or on a
//! shape condition once `--dim` binds the dimension), `Loop` and `Scan` unrolled, each run by
//! the interpreter against hand-computed values and by the generated C; and the errors for
//! what is not known at import.

use dmove::codegen::{BuildConfig, Compiled};
use dmove::ir::{Buffer, DType, Program, Tensor};
use dmove::onnx::writer::ModelBuilder as Body;
use dmove::onnx::{import, AttrValue, ImportOptions, ModelBuilder, ModelProto, OnnxError};
use dmove::ops::expand::expand_all;
use std::collections::BTreeMap;
use std::path::PathBuf;

const NO_DIMS: [i64; 0] = [];

fn bool_scalar(value: bool) -> Tensor {
    Tensor {
        shape: vec![],
        data: Buffer::Bool(vec![value]),
    }
}

fn feed(pairs: &[(&str, Tensor)]) -> BTreeMap<String, Tensor> {
    pairs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect()
}

/// Runs `p` in the interpreter and, lowered, as generated C; both must agree exactly (the
/// bodies add and multiply small integers in float). Returns the interpreter's outputs.
fn run_both(p: &Program, inputs: &BTreeMap<String, Tensor>) -> BTreeMap<String, Tensor> {
    let interpreted = dmove::interp::run(p, inputs).expect("the interpreter runs it");
    let mut lowered = p.clone();
    expand_all(&mut lowered).expect("lowers fully");
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let compiled = Compiled::build_with(&lowered, &config).expect("compiles");
    let from_c = compiled.run(inputs).expect("the C program runs");
    for (name, value) in &interpreted {
        assert_eq!(
            from_c[name].to_f64_vec(),
            value.to_f64_vec(),
            "C output `{name}`"
        );
    }
    interpreted
}

fn values(outputs: &BTreeMap<String, Tensor>, name: &str) -> (Vec<usize>, Vec<f64>) {
    (outputs[name].shape.clone(), outputs[name].to_f64_vec())
}

fn control_error(model: &ModelProto, opts: &ImportOptions) -> (String, String) {
    match import(model, opts) {
        Err(OnnxError::ControlFlow { reason, hint, .. }) => (reason, hint),
        other => panic!("expected a control-flow error, got {other:?}"),
    }
}

/// `y = If(cond) then x + 1 else x * 2`, the condition given by `condition`.
fn if_model(condition: impl FnOnce(ModelBuilder) -> ModelBuilder) -> ModelProto {
    let then_branch = Body::new("then", 17)
        .initializer("one", &[1], vec![1.0])
        .node("Add", &["x", "one"], &["t"], vec![])
        .output("t", [-1i64, 3])
        .into_graph();
    let else_branch = Body::new("else", 17)
        .initializer("two", &[1], vec![2.0])
        .node("Mul", &["x", "two"], &["e"], vec![])
        .output("e", [-1i64, 3])
        .into_graph();
    let branches = vec![("then_branch", then_branch), ("else_branch", else_branch)];
    condition(ModelBuilder::new("if", 17).input("x", ["N", "3"]))
        .control_node("If", &["cond"], &["y"], branches, vec![])
        .output("y", ["N", "3"])
        .build()
}

#[test]
fn if_on_a_constant_becomes_its_taken_branch() {
    for (cond, want) in [(true, [2.0, 3.0, 4.0]), (false, [2.0, 4.0, 6.0])] {
        let model = if_model(|m| m.initializer_tensor("cond", &bool_scalar(cond)));
        let opts = ImportOptions {
            dims: BTreeMap::from([("N".to_string(), 1)]),
            ..ImportOptions::default()
        };
        let p = import(&model, &opts).expect("imports");
        let x = Tensor::f32(vec![1, 3], vec![1.0, 2.0, 3.0]);
        let out = run_both(&p, &feed(&[("x", x)]));
        assert_eq!(
            values(&out, "y"),
            (vec![1, 3], want.to_vec()),
            "cond {cond}"
        );
    }
}

/// The exporter idiom `If(Equal(Shape(x)[0], 1))`.
fn shape_condition(m: ModelBuilder) -> ModelBuilder {
    m.initializer_i64("zero", &[], vec![0])
        .initializer_i64("one_i", &[], vec![1])
        .node("Shape", &["x"], &["shape"], vec![])
        .node("Gather", &["shape", "zero"], &["rows"], vec![])
        .node("Equal", &["rows", "one_i"], &["cond"], vec![])
}

#[test]
fn if_on_a_shape_condition_folds_once_the_dimension_is_bound() {
    let model = if_model(shape_condition);
    for (rows, want) in [(1, 3.0), (2, 4.0)] {
        let opts = ImportOptions {
            dims: BTreeMap::from([("N".to_string(), rows)]),
            ..ImportOptions::default()
        };
        let p = import(&model, &opts).expect("imports");
        let n = usize::try_from(rows).expect("small");
        let x = Tensor::f32(vec![n, 3], vec![2.0; 3 * n]);
        let out = run_both(&p, &feed(&[("x", x)]));
        assert!(out["y"].to_f64_vec().iter().all(|v| *v == want), "N={rows}");
    }
    let (reason, hint) = control_error(&model, &ImportOptions::default());
    assert!(
        reason.contains("the condition (`cond`) is not known at import") && reason.contains("`N`"),
        "{reason}"
    );
    assert!(hint.contains("--dim N=VALUE"), "{hint}");
}

/// `Loop` over 3 iterations carrying `s += x` and scanning `s * i` (the iteration number).
fn accumulating_loop(trip_count: ModelBuilder) -> ModelProto {
    let body = Body::new("body", 17)
        .input_typed("i", DType::I64, NO_DIMS)
        .input_typed("cond_in", DType::Bool, NO_DIMS)
        .input("s_in", [2])
        .node("Add", &["s_in", "x"], &["s_out"], vec![])
        .node("Cast", &["i"], &["i_f"], vec![("to", AttrValue::Int(1))])
        .node("Mul", &["s_out", "i_f"], &["scanned"], vec![])
        .node("Identity", &["cond_in"], &["cond_out"], vec![])
        .output_typed("cond_out", DType::Bool, NO_DIMS)
        .output("s_out", [2])
        .output("scanned", [2])
        .into_graph();
    trip_count
        .input("x", [2])
        .initializer_tensor("keep_going", &bool_scalar(true))
        .initializer("s0", &[2], vec![0.0, 0.0])
        .control_node(
            "Loop",
            &["M", "keep_going", "s0"],
            &["sum", "trace"],
            vec![("body", body)],
            vec![],
        )
        .output("sum", [2])
        .output("trace", [3, 2])
        .build()
}

#[test]
fn loop_with_a_constant_trip_count_unrolls_threading_the_carried_sum() {
    let model = accumulating_loop(ModelBuilder::new("loop", 17).initializer_i64("M", &[], vec![3]));
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let out = run_both(&p, &feed(&[("x", Tensor::f32(vec![2], vec![1.0, 2.0]))]));
    assert_eq!(values(&out, "sum"), (vec![2], vec![3.0, 6.0]));
    assert_eq!(
        values(&out, "trace"),
        (vec![3, 2], vec![0.0, 0.0, 2.0, 4.0, 6.0, 12.0])
    );
}

#[test]
fn loop_whose_trip_count_is_an_input_is_refused() {
    let model =
        accumulating_loop(ModelBuilder::new("loop", 17).input_typed("M", DType::I64, NO_DIMS));
    let (reason, hint) = control_error(&model, &ImportOptions::default());
    assert_eq!(
        reason,
        "the trip count M (`M`) is computed from input values at run time"
    );
    assert!(hint.contains("no data-dependent control flow"), "{hint}");
}

#[test]
fn loop_beyond_the_unroll_limit_is_refused() {
    let model =
        accumulating_loop(ModelBuilder::new("loop", 17).initializer_i64("M", &[], vec![100_000]));
    let (reason, _) = control_error(&model, &ImportOptions::default());
    assert!(
        reason.starts_with("unrolling 100000 iteration(s) of its 4-node body")
            && reason.contains("limit of 4096"),
        "{reason}"
    );
}

/// A `Loop` body containing an `If` on the iteration number, whose branches read the body's
/// carried value and the outer graph's input: `s = x` in iteration 0, then `s += x`.
#[test]
fn nested_if_inside_a_loop_body_reads_both_enclosing_scopes() {
    let first = Body::new("first", 17)
        .node("Identity", &["x"], &["f"], vec![])
        .output("f", [2])
        .into_graph();
    let later = Body::new("later", 17)
        .node("Add", &["s_in", "x"], &["l"], vec![])
        .output("l", [2])
        .into_graph();
    let body = Body::new("body", 17)
        .input_typed("i", DType::I64, NO_DIMS)
        .input_typed("cond_in", DType::Bool, NO_DIMS)
        .input("s_in", [2])
        .initializer_i64("zero", &[], vec![0])
        .node("Equal", &["i", "zero"], &["is_first"], vec![])
        .control_node(
            "If",
            &["is_first"],
            &["s_out"],
            vec![("then_branch", first), ("else_branch", later)],
            vec![],
        )
        .output_typed("cond_in", DType::Bool, NO_DIMS)
        .output("s_out", [2])
        .into_graph();
    let model = ModelBuilder::new("nested", 17)
        .input("x", [2])
        .initializer_i64("M", &[], vec![3])
        .initializer("s0", &[2], vec![100.0, 100.0])
        .control_node(
            "Loop",
            &["M", "", "s0"],
            &["sum"],
            vec![("body", body)],
            vec![],
        )
        .output("sum", [2])
        .build();
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let out = run_both(&p, &feed(&[("x", Tensor::f32(vec![2], vec![1.0, -2.0]))]));
    assert_eq!(values(&out, "sum"), (vec![2], vec![3.0, -6.0]));
}

/// `Scan` computing the running sum of the rows of `x` ([4, 2]), with the given directions
/// and output axis.
fn cumulative_sum(input_direction: i64, output_axis: i64) -> ModelProto {
    let body = Body::new("body", 17)
        .input("s_in", [2])
        .input("row", [2])
        .node("Add", &["s_in", "row"], &["s_out"], vec![])
        .node("Identity", &["s_out"], &["running"], vec![])
        .output("s_out", [2])
        .output("running", [2])
        .into_graph();
    let out_shape = if output_axis == 0 { [4, 2] } else { [2, 4] };
    ModelBuilder::new("scan", 17)
        .input("x", [4, 2])
        .initializer("s0", &[2], vec![0.0, 0.0])
        .control_node(
            "Scan",
            &["s0", "x"],
            &["total", "sums"],
            vec![("body", body)],
            vec![
                ("num_scan_inputs", AttrValue::Int(1)),
                (
                    "scan_input_directions",
                    AttrValue::Ints(vec![input_direction]),
                ),
                ("scan_output_axes", AttrValue::Ints(vec![output_axis])),
            ],
        )
        .output("total", [2])
        .output("sums", out_shape)
        .build()
}

#[test]
fn scan_computes_running_sums_forward_backward_and_along_another_axis() {
    let x = Tensor::f32(vec![4, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let cases: [(i64, i64, Vec<usize>, Vec<f64>); 3] = [
        (0, 0, vec![4, 2], vec![1., 2., 4., 6., 9., 12., 16., 20.]),
        (1, 0, vec![4, 2], vec![7., 8., 12., 14., 15., 18., 16., 20.]),
        (
            1,
            -1,
            vec![2, 4],
            vec![7., 12., 15., 16., 8., 14., 18., 20.],
        ),
    ];
    for (direction, axis, shape, want) in cases {
        let p =
            import(&cumulative_sum(direction, axis), &ImportOptions::default()).expect("imports");
        let out = run_both(&p, &feed(&[("x", x.clone())]));
        assert_eq!(values(&out, "total"), (vec![2], vec![16.0, 20.0]));
        assert_eq!(
            values(&out, "sums"),
            (shape, want),
            "direction {direction} axis {axis}"
        );
    }
}
