//! The conformance runner on hand-made cases in the official layout (`cases`): a
//! passing case (through the interpreter and the generated C), wrong expected values, an
//! unknown operator, a promised but possibly unimplemented one, a corrupt model, inputs bound or
//! specialised from the data, and the suite run in worker processes under a time limit. The
//! command line's streaming output and manifest check are in `cli::conformance`.

pub mod cases;

use cases::{relu_x, slow_case, suite, write_case, write_data_set, x};
use dmove::conformance::{run_case, run_suite, select, Options, Stage, Status, Worker};
use dmove::ir::Tensor;
use dmove::onnx::proto::tensor_proto::DataType;
use dmove::onnx::proto::type_proto;
use dmove::onnx::ModelBuilder;
use prost::Message;
use std::time::{Duration, Instant};

#[test]
fn statuses_stages_and_errors_are_reported_per_case() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let ok = run_case(&dir.path().join("test_relu_ok"), true);
    assert_eq!(ok.status, Status::Pass, "{ok:?}");
    assert_eq!(ok.max_error, Some(0.0));

    let wrong = run_case(&dir.path().join("test_relu_wrong"), false);
    assert_eq!(wrong.status, Status::Fail);
    assert_eq!(wrong.stage, Some(Stage::Interpreter));
    assert_eq!(wrong.max_error, Some(0.5));
    assert!(wrong.message.as_deref().is_some_and(|m| m.contains("`y`")));

    let made_up = run_case(&dir.path().join("test_made_up"), false);
    assert_eq!(made_up.status, Status::Unsupported);
    assert!(made_up
        .message
        .as_deref()
        .is_some_and(|m| m.contains("MadeUpOp")));

    let corrupt = run_case(&dir.path().join("test_corrupt"), false);
    assert_eq!(corrupt.status, Status::Fail);
    assert_eq!(corrupt.stage, Some(Stage::Load));
}

/// TopK is in the promised list: without an implementation its case fails, never unsupported.
#[test]
fn promised_operators_fail_instead_of_being_unsupported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = ModelBuilder::new("topk", 17)
        .input("x", [2, 3])
        .initializer_i64("k", &[1], vec![1])
        .node("TopK", &["x", "k"], &["y"], vec![])
        .output("y", [2, 1])
        .encode();
    let max = Tensor::f32(vec![2, 1], vec![2.0, 6.0]);
    write_case(dir.path(), "test_topk", &model, &[x()], &[max]);
    let r = run_case(&dir.path().join("test_topk"), false);
    assert_ne!(r.status, Status::Unsupported, "{r:?}");
}

/// The target shape decides Reshape's output shape, so a case feeding it as a graph input runs
/// with it made a constant from the data set, and says so; the data input `x` stays a real input (it would be
/// folded away otherwise and the generated C would test nothing). Ordinary inputs never are.
#[test]
fn structure_deciding_inputs_are_specialised_and_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = ModelBuilder::new("reshape", 17)
        .input("x", [2, 3])
        .input("shape", [2])
        .node("Reshape", &["x", "shape"], &["y"], vec![])
        .output("y", [3, 2])
        .build();
    let shape_type = model.graph.as_mut().expect("graph").input[1]
        .r#type
        .as_mut()
        .and_then(|t| t.value.as_mut());
    let Some(type_proto::Value::TensorType(shape_type)) = shape_type else {
        panic!("the builder declares tensor inputs")
    };
    shape_type.elem_type = Some(DataType::Int64 as i32);
    let model = model.encode_to_vec();
    let shape = Tensor::i64(vec![2], vec![3, 2]);
    let mut y = x();
    y.shape = vec![3, 2];
    write_case(
        dir.path(),
        "test_reshape_input",
        &model,
        &[x(), shape],
        &[y],
    );
    let r = run_case(&dir.path().join("test_reshape_input"), true);
    assert_eq!(r.status, Status::Pass, "{r:?}");
    assert_eq!(r.specialised_inputs, ["shape"]);
    assert!(r.listed);
    suite(dir.path());
    let plain = run_case(&dir.path().join("test_relu_ok"), true);
    assert!(plain.specialised_inputs.is_empty(), "{plain:?}");
}

/// The dmove binary in its worker mode, as `dmove conformance` runs each case.
fn options() -> Options {
    Options {
        c: false,
        ..Options::new(Worker::dmove(env!("CARGO_BIN_EXE_dmove")))
    }
}

#[test]
fn suite_filters_and_sorts_cases() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let opts = Options {
        filter: Some("relu".into()),
        jobs: 2,
        ..options()
    };
    let cases = select(dir.path(), opts.filter.as_deref()).expect("cases");
    let seen = std::sync::Mutex::new(Vec::new());
    let report = run_suite(&cases, &opts, &|c| {
        seen.lock().expect("lock").push(c.name.clone());
    });
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["test_relu_ok", "test_relu_wrong"]);
    assert_eq!((report.summary.passed, report.summary.failed), (1, 1));
    assert_eq!(
        seen.into_inner().expect("lock").len(),
        2,
        "each result is seen as it finishes"
    );
    assert!(select(&dir.path().join("absent"), None).is_err());
    assert!(select(dir.path(), Some("nothing matches")).is_ok_and(|c| c.is_empty()));
}

/// A case still running at its time limit is stopped and reported as a timeout (where it was:
/// the interpreter), counted apart from failures and unsupported cases; the run goes on.
#[test]
fn a_case_over_its_time_limit_is_a_timeout_and_the_run_continues() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    slow_case(dir.path(), "test_slow");
    let opts = Options {
        timeout: Duration::from_secs(2),
        ..options()
    };
    let start = Instant::now();
    let report = run_suite(&select(dir.path(), None).expect("cases"), &opts, &|_| {});
    assert!(start.elapsed() < Duration::from_secs(30), "{report:?}");
    let slow = report
        .cases
        .iter()
        .find(|c| c.name == "test_slow")
        .expect("ran");
    assert_eq!(slow.status, Status::Timeout, "{slow:?}");
    assert_eq!(slow.stage, Some(Stage::Interpreter));
    assert!(slow.seconds >= 2.0 && slow.seconds < 10.0, "{slow:?}");
    assert!(
        slow.listed,
        "Expand, MatMul and ReduceSum are promised operators"
    );
    let s = report.summary;
    assert_eq!(
        (s.cases, s.passed, s.failed, s.unsupported, s.timeout),
        (5, 1, 2, 1, 1)
    );
    assert_eq!(s.supported(), 4);
}

/// Symbolic (`N`) and `-1` input dimensions are bound from each data set's tensors, so one
/// model runs at two batch sizes, through the interpreter and the generated C.
#[test]
fn symbolic_and_negative_input_dims_are_bound_from_the_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = ModelBuilder::new("relu", 17)
        .input("x", ["N", "-1"])
        .node("Relu", &["x"], &["y"], vec![])
        .output("y", ["N", "-1"])
        .encode();
    write_case(dir.path(), "test_relu_dynamic", &model, &[x()], &[relu_x()]);
    let wide = Tensor::f32(vec![1, 4], vec![-1.0, 0.5, 2.0, -8.0]);
    let mut relu_wide = Tensor::f32(vec![1, 4], vec![0.0, 0.5, 2.0, 0.0]);
    let case = dir.path().join("test_relu_dynamic");
    write_data_set(
        dir.path(),
        "test_relu_dynamic",
        1,
        std::slice::from_ref(&wide),
        std::slice::from_ref(&relu_wide),
    );
    let r = run_case(&case, true);
    assert_eq!(r.status, Status::Pass, "{r:?}");
    assert_eq!(r.max_error, Some(0.0));
    assert!(r.specialised_inputs.is_empty(), "{r:?}");
    relu_wide.set_f64(0, 1.0);
    write_data_set(dir.path(), "test_relu_dynamic", 1, &[wide], &[relu_wide]);
    let r = run_case(&case, false);
    assert_eq!(
        r.status,
        Status::Fail,
        "the second data set really runs: {r:?}"
    );
}
