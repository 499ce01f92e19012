//! Hand-made conformance cases in the official layout (`model.onnx`, `test_data_set_0/`),
//! shared by the runner's tests (`conformance`) and the command line's (`cli::conformance`).

use dmove::ir::Tensor;
use dmove::onnx::proto::TensorProto;
use dmove::onnx::tensor::code_of;
use dmove::onnx::{AttrValue, ModelBuilder};
use prost::Message;
use std::path::Path;

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

/// Writes a case with one data set: `model`, then input and output tensors in signature order.
pub fn write_case(root: &Path, name: &str, model: &[u8], inputs: &[Tensor], outputs: &[Tensor]) {
    write_data_set(root, name, 0, inputs, outputs);
    std::fs::write(root.join(name).join("model.onnx"), model).expect("model");
}

/// Writes `test_data_set_<k>` of case `name`.
pub fn write_data_set(root: &Path, name: &str, k: usize, inputs: &[Tensor], outputs: &[Tensor]) {
    let data = root.join(name).join(format!("test_data_set_{k}"));
    std::fs::create_dir_all(&data).expect("mkdir");
    for (k, t) in inputs.iter().enumerate() {
        std::fs::write(data.join(format!("input_{k}.pb")), tensor_pb("x", t)).expect("input");
    }
    for (k, t) in outputs.iter().enumerate() {
        std::fs::write(data.join(format!("output_{k}.pb")), tensor_pb("y", t)).expect("output");
    }
}

/// `y = relu(x)` over a symbolic batch, bound by the case's input shape.
pub fn relu_model(op: &str) -> Vec<u8> {
    ModelBuilder::new("relu", 17)
        .input("x", ["N", "3"])
        .node(op, &["x"], &["y"], vec![])
        .output("y", ["N", "3"])
        .encode()
}

pub fn x() -> Tensor {
    Tensor::f32(vec![2, 3], vec![-1.0, 2.0, -3.0, 4.0, -5.0, 6.0])
}

pub fn relu_x() -> Tensor {
    Tensor::f32(vec![2, 3], vec![0.0, 2.0, 0.0, 4.0, 0.0, 6.0])
}

/// Four cases, one per outcome: `test_relu_ok` passes, `test_relu_wrong` fails in the
/// interpreter (one wrong expected value), `test_made_up` is unsupported, `test_corrupt` fails
/// at load.
pub fn suite(root: &Path) {
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

/// Side of the square matrices of [`slow_case`].
const SLOW_N: i64 = 1024;

/// A case that takes many seconds in the reference interpreter from tiny files: a 1×1 input
/// expanded to a 1024×1024 matrix, squared four times by MatMul (4·2³⁰ multiply-adds), then
/// summed. Its expected output is never reached: it exists to be stopped by the time limit.
pub fn slow_case(root: &Path, name: &str) {
    let mut b = ModelBuilder::new("slow", 17)
        .input("x", [1, 1])
        .initializer_i64("shape", &[2], vec![SLOW_N, SLOW_N])
        .node("Expand", &["x", "shape"], &["m0"], vec![]);
    for k in 0..4 {
        let (from, to) = (format!("m{k}"), format!("m{}", k + 1));
        b = b.node("MatMul", &[&from, &from], &[&to], vec![]);
    }
    let model = b
        .node(
            "ReduceSum",
            &["m4"],
            &["y"],
            vec![("keepdims", AttrValue::Int(0))],
        )
        .output("y", Vec::<i64>::new())
        .encode();
    let one = Tensor::f32(vec![1, 1], vec![1.0]);
    write_case(
        root,
        name,
        &model,
        &[one],
        &[Tensor::f32(vec![], vec![0.0])],
    );
}
