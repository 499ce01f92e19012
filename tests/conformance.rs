//! The conformance runner on hand-made cases in the official layout: a passing case (through the
//! interpreter and the generated C), wrong expected values, an unknown operator, a promised but
//! possibly unimplemented one, a corrupt model, and the manifest check of the CLI.

use dmove::conformance::{run_case, run_suite, Options, Stage, Status};
use dmove::ir::Tensor;
use dmove::onnx::proto::tensor_proto::DataType;
use dmove::onnx::proto::{type_proto, TensorProto};
use dmove::onnx::tensor::code_of;
use dmove::onnx::ModelBuilder;
use prost::Message;
use std::path::Path;
use std::process::Command;

fn tensor_pb(name: &str, t: &Tensor) -> Vec<u8> {
    TensorProto {
        name: Some(name.into()),
        dims: t.shape.iter().map(|d| *d as i64).collect(),
        data_type: Some(code_of(t.dtype()) as i32),
        raw_data: Some(t.to_le_bytes()),
        ..TensorProto::default()
    }
    .encode_to_vec()
}

/// Writes a case: `model`, then input and output tensors in signature order.
fn write_case(root: &Path, name: &str, model: &[u8], inputs: &[Tensor], outputs: &[Tensor]) {
    let data = root.join(name).join("test_data_set_0");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(root.join(name).join("model.onnx"), model).expect("model");
    for (k, t) in inputs.iter().enumerate() {
        std::fs::write(data.join(format!("input_{k}.pb")), tensor_pb("x", t)).expect("input");
    }
    for (k, t) in outputs.iter().enumerate() {
        std::fs::write(data.join(format!("output_{k}.pb")), tensor_pb("y", t)).expect("output");
    }
}

/// `y = relu(x)` over a symbolic batch, bound by the case's input shape.
fn relu_model(op: &str) -> Vec<u8> {
    ModelBuilder::new("relu", 17)
        .input("x", ["N", "3"])
        .node(op, &["x"], &["y"], vec![])
        .output("y", ["N", "3"])
        .encode()
}

fn x() -> Tensor {
    Tensor::f32(vec![2, 3], vec![-1.0, 2.0, -3.0, 4.0, -5.0, 6.0])
}

fn relu_x() -> Tensor {
    Tensor::f32(vec![2, 3], vec![0.0, 2.0, 0.0, 4.0, 0.0, 6.0])
}

fn suite(root: &Path) {
    write_case(
        root,
        "test_relu_ok",
        &relu_model("Relu"),
        &[x()],
        &[relu_x()],
    );
    let mut wrong = relu_x();
    wrong.set_f64(3, 4.5);
    write_case(
        root,
        "test_relu_wrong",
        &relu_model("Relu"),
        &[x()],
        &[wrong],
    );
    write_case(
        root,
        "test_made_up",
        &relu_model("MadeUpOp"),
        &[x()],
        &[relu_x()],
    );
    write_case(root, "test_corrupt", b"\x08\xff\xff", &[x()], &[relu_x()]);
}

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

#[test]
fn suite_filters_and_sorts_cases() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let opts = Options {
        filter: Some("relu".into()),
        c: false,
        jobs: 2,
    };
    let report = run_suite(dir.path(), &opts, &|_| {}).expect("runs");
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["test_relu_ok", "test_relu_wrong"]);
    assert_eq!((report.summary.passed, report.summary.failed), (1, 1));
    assert!(run_suite(&dir.path().join("absent"), &opts, &|_| {}).is_err());
}

#[test]
fn cli_json_manifest_writing_and_regressions() {
    let dir = tempfile::tempdir().expect("tempdir");
    suite(dir.path());
    let manifest = dir.path().join("expected_pass.txt");
    let dmove = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dmove"))
            .arg("conformance")
            .arg(dir.path())
            .args(["--no-c"])
            .args(args)
            .output()
            .expect("runs")
    };
    let out = dmove(&[
        "--json",
        "--write-manifest",
        manifest.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["summary"]["passed"], 1);
    assert_eq!(json["summary"]["failed"], 2);
    assert_eq!(json["summary"]["unsupported"], 1);
    assert_eq!(json["cases"][3]["name"], "test_relu_wrong");
    assert_eq!(json["cases"][3]["stage"], "interpreter");
    let written = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(written.lines().any(|l| l == "test_relu_ok"));
    assert!(!written.contains("test_relu_wrong"));

    let path = manifest.to_str().expect("utf-8");
    assert!(dmove(&["--manifest", path]).status.success());
    std::fs::write(&manifest, "test_relu_ok\ntest_relu_wrong\n").expect("write");
    let out = dmove(&["--manifest", path]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("test_relu_wrong (fail)") && !err.contains("test_relu_ok ("),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 passed, 2 failed, 1 unsupported"), "{text}");
}
