//! Every operator through the whole pipeline: reference `eval` (interpreter on the library-level
//! program) against its expansion compiled to C, on random inputs with awkward shapes (odd sizes,
//! size-1 dimensions, broadcasting, non-default attributes). All cases share one program, so the
//! C compiler runs once.

use crate::ops_reduce::c_tested::C_TESTED;
use dmove::check::{add_op, compare_outputs, random_inputs};
use dmove::codegen::Compiled;
use dmove::ir::{Attr, DType, Program, SymExpr, Tensor};
use dmove::ops::TensorType;
use std::collections::{BTreeMap, BTreeSet};

/// Operators whose C coverage lives in another test module (they landed with their own
/// single-compile test); `ops_reduce`'s are [`C_TESTED`] (that module checks its list against
/// its C programs).
const COVERED_ELSEWHERE: &[&str] = &[
    // dtypes
    "Mod",
    // ops_index::c_backend
    "And",
    "ArgMax",
    "ArgMin",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "Cast",
    "CastLike",
    "CumProd",
    "CumSum",
    "EyeLike",
    "Gather",
    "GatherElements",
    "GatherND",
    "Not",
    "Range",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "Shape",
    "Size",
    "TopK",
    "Trilu",
    "Where",
    // ops_recurrent
    "GRU",
    "LSTM",
    "RNN",
    // ops_movement
    "Concat",
    "Expand",
    "Pad",
    "Resize",
    "Slice",
    "Split",
    "Tile",
    "Upsample",
];

fn f32t(shape: &[i64]) -> Option<TensorType> {
    Some(TensorType::new(
        DType::F32,
        shape.iter().map(|&d| SymExpr::Int(d)).collect(),
    ))
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

fn attrs(pairs: &[(&str, Attr)]) -> BTreeMap<String, Attr> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn i64_const(v: &[i64]) -> (Option<TensorType>, Option<Tensor>) {
    let t = Tensor::i64(vec![v.len()], v.to_vec());
    (
        Some(TensorType::new(
            DType::I64,
            vec![SymExpr::Int(v.len() as i64)],
        )),
        Some(t),
    )
}

fn i64_scalar(v: i64) -> (Option<TensorType>, Option<Tensor>) {
    let t = Tensor::i64(vec![], vec![v]);
    (Some(TensorType::new(DType::I64, vec![])), Some(t))
}

fn f32_const(shape: &[usize], v: Vec<f32>) -> (Option<TensorType>, Option<Tensor>) {
    let ty = TensorType::new(
        DType::F32,
        shape.iter().map(|&d| SymExpr::Int(d as i64)).collect(),
    );
    (Some(ty), Some(Tensor::f32(shape.to_vec(), v)))
}

/// One case: operator, attributes, inputs as (type, constant value).
type Case = (
    &'static str,
    BTreeMap<String, Attr>,
    Vec<(Option<TensorType>, Option<Tensor>)>,
);

fn var(shape: &[i64]) -> (Option<TensorType>, Option<Tensor>) {
    (f32t(shape), None)
}

fn cases() -> Vec<Case> {
    let none = BTreeMap::new;
    let mut v: Vec<Case> = Vec::new();
    for op in [
        "Abs",
        "Ceil",
        "Elu",
        "Erf",
        "Exp",
        "Floor",
        "Gelu",
        "HardSigmoid",
        "HardSwish",
        "Identity",
        "LeakyRelu",
        "Log",
        "Neg",
        "Reciprocal",
        "Relu",
        "Selu",
        "Sigmoid",
        "Softplus",
        "Sqrt",
        "Tanh",
        "Sin",
        "Cos",
        "Tan",
        "Asin",
        "Acos",
        "Atan",
        "Sinh",
        "Cosh",
        "Asinh",
        "Acosh",
        "Atanh",
        "Round",
        "Sign",
        "Swish",
        "IsNaN",
        "IsInf",
        "Celu",
        "ThresholdedRelu",
        "Shrink",
        "Softsign",
    ] {
        v.push((op, none(), vec![var(&[3, 1, 5])]));
    }
    v.push((
        "Gelu",
        attrs(&[("approximate", Attr::Str("tanh".into()))]),
        vec![var(&[7])],
    ));
    v.push((
        "LeakyRelu",
        attrs(&[("alpha", Attr::Float(0.3))]),
        vec![var(&[2, 3])],
    ));
    v.push((
        "Swish",
        attrs(&[("alpha", Attr::Float(-1.5))]),
        vec![var(&[4, 1])],
    ));
    v.push((
        "SwiGLU",
        attrs(&[("alpha", Attr::Float(1.702))]),
        vec![var(&[3, 1, 5]), var(&[3, 1, 5])],
    ));
    for op in [
        "Add",
        "Div",
        "Mul",
        "Pow",
        "Sub",
        "Equal",
        "Greater",
        "GreaterOrEqual",
        "Less",
        "LessOrEqual",
    ] {
        v.push((op, none(), vec![var(&[3, 1, 5]), var(&[4, 1])]));
    }
    for op in ["Max", "Min", "Sum"] {
        v.push((op, none(), vec![var(&[2, 3]), var(&[3]), var(&[1, 1])]));
    }
    v.push((
        "Clip",
        none(),
        vec![
            var(&[7]),
            f32_const(&[], vec![-0.5]),
            f32_const(&[], vec![0.7]),
        ],
    ));
    // Bounds as graph inputs: read by the generated code at run time.
    v.push(("Clip", none(), vec![var(&[2, 5]), var(&[]), var(&[])]));
    v.push((
        "Clip",
        none(),
        vec![var(&[4]), (None, None), f32_const(&[], vec![0.1])],
    ));
    v.push(("MatMul", none(), vec![var(&[2, 3, 5]), var(&[5, 7])]));
    v.push(("MatMul", none(), vec![var(&[5]), var(&[2, 5, 3])]));
    v.push((
        "Gemm",
        attrs(&[
            ("transB", Attr::Int(1)),
            ("alpha", Attr::Float(0.5)),
            ("beta", Attr::Float(2.0)),
        ]),
        vec![var(&[3, 5]), var(&[7, 5]), var(&[7])],
    ));
    v.push((
        "Softmax",
        attrs(&[("axis", Attr::Int(1))]),
        vec![var(&[2, 3, 5])],
    ));
    v.push(("LogSoftmax", none(), vec![var(&[3, 7])]));
    v.push((
        "Hardmax",
        attrs(&[("axis", Attr::Int(1))]),
        vec![var(&[2, 5, 3])],
    ));
    v.push((
        "LayerNormalization",
        none(),
        vec![var(&[2, 3, 5]), var(&[5]), var(&[5])],
    ));
    v.push((
        "LpNormalization",
        attrs(&[("axis", Attr::Int(1)), ("p", Attr::Int(1))]),
        vec![var(&[2, 5, 3])],
    ));
    v.push((
        "LRN",
        attrs(&[("size", Attr::Int(4)), ("beta", Attr::Float(1.5))]),
        vec![var(&[2, 5, 3])],
    ));
    v.push((
        "MeanVarianceNormalization",
        attrs(&[("axes", ints(&[0, 2]))]),
        vec![var(&[3, 2, 5])],
    ));
    v.push((
        "RMSNormalization",
        attrs(&[("axis", Attr::Int(1)), ("epsilon", Attr::Float(0.01))]),
        vec![var(&[2, 3, 5]), var(&[1, 5])],
    ));
    let ids = |shape: &[i64]| {
        let dims = shape.iter().map(|&d| SymExpr::Int(d)).collect();
        (Some(TensorType::new(DType::I64, dims)), None)
    };
    v.push((
        "RotaryEmbedding",
        attrs(&[("rotary_embedding_dim", Attr::Int(4))]),
        vec![var(&[2, 3, 5, 6]), var(&[2, 5, 2]), var(&[2, 5, 2])],
    ));
    v.push((
        "RotaryEmbedding",
        attrs(&[("interleaved", Attr::Int(1)), ("num_heads", Attr::Int(2))]),
        vec![var(&[1, 3, 8]), var(&[7, 2]), var(&[7, 2]), ids(&[1, 3])],
    ));
    v.push((
        "Attention",
        attrs(&[
            ("q_num_heads", Attr::Int(4)),
            ("kv_num_heads", Attr::Int(2)),
            ("is_causal", Attr::Int(1)),
            ("softcap", Attr::Float(2.0)),
            ("qk_matmul_output_mode", Attr::Int(2)),
        ]),
        vec![
            var(&[2, 3, 8]),
            var(&[2, 2, 4]),
            var(&[2, 2, 6]),
            var(&[3, 5]),
            var(&[2, 2, 3, 2]),
            var(&[2, 2, 3, 3]),
        ],
    ));
    v.push((
        "LinearAttention",
        attrs(&[
            ("q_num_heads", Attr::Int(4)),
            ("kv_num_heads", Attr::Int(2)),
        ]),
        vec![
            var(&[2, 3, 8]),
            var(&[2, 3, 4]),
            var(&[2, 3, 6]),
            var(&[2, 2, 2, 3]),
            var(&[2, 3, 4]),
            var(&[2, 3, 1]),
        ],
    ));
    v.push((
        "LinearAttention",
        attrs(&[
            ("q_num_heads", Attr::Int(3)),
            ("kv_num_heads", Attr::Int(3)),
            ("update_rule", Attr::Str("gated".into())),
            ("scale", Attr::Float(0.7)),
        ]),
        vec![
            var(&[1, 4, 6]),
            var(&[1, 4, 6]),
            var(&[1, 4, 3]),
            (None, None),
            var(&[1, 4, 3]),
        ],
    ));
    v.push((
        "CausalConvWithState",
        attrs(&[("activation", Attr::Str("silu".into()))]),
        vec![var(&[2, 3, 5]), var(&[3, 1, 4]), var(&[3]), var(&[2, 3, 3])],
    ));
    v.push((
        "CausalConvWithState",
        none(),
        vec![var(&[1, 2, 2]), var(&[2, 1, 5])],
    ));
    // Random lengths lie in [0, 4): the time axis has 5 steps.
    v.push((
        "ReverseSequence",
        attrs(&[("batch_axis", Attr::Int(0)), ("time_axis", Attr::Int(1))]),
        vec![var(&[3, 5, 2]), ids(&[3])],
    ));
    v.push((
        "OneHot",
        attrs(&[("axis", Attr::Int(1))]),
        vec![ids(&[2, 3]), f32_const(&[], vec![3.0]), var(&[2])],
    ));
    // Random targets lie in [0, 4): every loss has at least 4 classes.
    v.push((
        "NegativeLogLikelihoodLoss",
        attrs(&[
            ("reduction", Attr::Str("sum".into())),
            ("ignore_index", Attr::Int(1)),
        ]),
        vec![var(&[2, 5, 3]), ids(&[2, 3]), var(&[5])],
    ));
    v.push((
        "NegativeLogLikelihoodLoss",
        none(),
        vec![var(&[4, 4]), ids(&[4])],
    ));
    v.push((
        "SoftmaxCrossEntropyLoss",
        attrs(&[
            ("reduction", Attr::Str("none".into())),
            ("ignore_index", Attr::Int(3)),
        ]),
        vec![var(&[3, 4, 2]), ids(&[3, 2]), var(&[4])],
    ));
    let typed = |dtype: DType, shape: &[i64]| {
        let dims = shape.iter().map(|&d| SymExpr::Int(d)).collect();
        (Some(TensorType::new(dtype, dims)), None)
    };
    v.push((
        "QuantizeLinear",
        attrs(&[("axis", Attr::Int(0))]),
        vec![var(&[3, 4]), var(&[3]), typed(DType::I8, &[3])],
    ));
    v.push((
        "QuantizeLinear",
        attrs(&[("axis", Attr::Int(1)), ("block_size", Attr::Int(2))]),
        vec![var(&[2, 5]), var(&[2, 3]), typed(DType::F8E4M3FN, &[2, 3])],
    ));
    v.push((
        "DequantizeLinear",
        none(),
        vec![typed(DType::U8, &[2, 3]), var(&[]), typed(DType::U8, &[])],
    ));
    v.push(("DynamicQuantizeLinear", none(), vec![var(&[3, 5])]));
    v.push((
        "MatMulInteger",
        none(),
        vec![
            typed(DType::U8, &[2, 3, 4]),
            typed(DType::U8, &[4, 5]),
            typed(DType::U8, &[1]),
        ],
    ));
    v.push((
        "QLinearMatMul",
        none(),
        vec![
            typed(DType::I8, &[3, 4]),
            var(&[1]),
            typed(DType::I8, &[1]),
            typed(DType::I8, &[4, 2]),
            var(&[1]),
            typed(DType::I8, &[]),
            var(&[]),
            typed(DType::U8, &[1]),
        ],
    ));
    v.push((
        "ConvInteger",
        attrs(&[("group", Attr::Int(2)), ("pads", ints(&[1, 0, 0, 1]))]),
        vec![
            typed(DType::U8, &[1, 4, 5, 3]),
            typed(DType::U8, &[6, 2, 2, 2]),
            typed(DType::U8, &[]),
            typed(DType::U8, &[6]),
        ],
    ));
    v.push((
        "QLinearConv",
        attrs(&[("strides", ints(&[2, 1])), ("pads", ints(&[1, 1, 0, 0]))]),
        vec![
            typed(DType::I8, &[2, 3, 5, 4]),
            var(&[]),
            typed(DType::I8, &[1]),
            typed(DType::I8, &[4, 3, 3, 2]),
            var(&[4]),
            typed(DType::I8, &[4]),
            var(&[]),
            typed(DType::U8, &[]),
            typed(DType::I32, &[4]),
        ],
    ));
    v.push((
        "DFT",
        attrs(&[("axis", Attr::Int(1)), ("onesided", Attr::Int(1))]),
        vec![var(&[2, 7, 2]), i64_scalar(6)],
    ));
    v.push((
        "DFT",
        attrs(&[("inverse", Attr::Int(1)), ("onesided", Attr::Int(1))]),
        vec![var(&[3, 4, 2])],
    ));
    v.push((
        "STFT",
        attrs(&[("onesided", Attr::Int(0))]),
        vec![var(&[2, 10, 1]), i64_scalar(3), var(&[4])],
    ));
    v.push((
        "AffineGrid",
        attrs(&[("align_corners", Attr::Int(1))]),
        vec![var(&[2, 3, 4]), i64_const(&[2, 1, 3, 1, 5])],
    ));
    v.push((
        "AffineGrid",
        none(),
        vec![var(&[1, 2, 3]), i64_const(&[1, 3, 4, 3])],
    ));
    // Every GridSample mode with every padding, 1-D to 3-D, single-element axes (no span to
    // reflect in with align_corners).
    let (flat, volume, line, point) = (
        ([2, 3, 4, 5].as_slice(), [2, 3, 2, 2].as_slice()),
        ([1, 2, 3, 1, 4].as_slice(), [1, 2, 1, 3, 3].as_slice()),
        ([2, 1, 5].as_slice(), [2, 3, 1].as_slice()),
        ([1, 1, 1, 1].as_slice(), [1, 2, 3, 2].as_slice()),
    );
    for (mode, padding, align, (x, grid)) in [
        ("linear", "zeros", 0, flat),
        ("linear", "border", 1, volume),
        ("linear", "reflection", 0, line),
        ("nearest", "zeros", 1, volume),
        ("nearest", "border", 0, flat),
        ("nearest", "reflection", 1, point),
        ("cubic", "zeros", 1, line),
        ("cubic", "border", 0, point),
        ("cubic", "reflection", 0, flat),
        ("cubic", "reflection", 1, volume),
    ] {
        v.push((
            "GridSample",
            attrs(&[
                ("mode", Attr::Str(mode.into())),
                ("padding_mode", Attr::Str(padding.into())),
                ("align_corners", Attr::Int(align)),
            ]),
            vec![var(x), var(grid)],
        ));
    }
    v.push((
        "DepthToSpace",
        attrs(&[
            ("blocksize", Attr::Int(2)),
            ("mode", Attr::Str("CRD".into())),
        ]),
        vec![var(&[1, 8, 3, 1])],
    ));
    v.push((
        "SpaceToDepth",
        attrs(&[("blocksize", Attr::Int(3))]),
        vec![var(&[2, 1, 3, 6])],
    ));
    v.push((
        "CenterCropPad",
        attrs(&[("axes", ints(&[-1, 0]))]),
        vec![var(&[5, 2, 3]), i64_const(&[6, 2])],
    ));
    v.push((
        "Col2Im",
        attrs(&[
            ("strides", ints(&[2, 1])),
            ("dilations", ints(&[1, 2])),
            ("pads", ints(&[1, 0, 0, 2])),
        ]),
        vec![var(&[2, 8, 12]), i64_const(&[5, 4]), i64_const(&[2, 2])],
    ));
    v.push((
        "Transpose",
        attrs(&[("perm", ints(&[2, 0, 1]))]),
        vec![var(&[2, 3, 5])],
    ));
    v.push((
        "Reshape",
        none(),
        vec![var(&[2, 3, 5]), i64_const(&[5, -1, 1])],
    ));
    v.push((
        "Flatten",
        attrs(&[("axis", Attr::Int(2))]),
        vec![var(&[2, 3, 5])],
    ));
    v.push(("Squeeze", none(), vec![var(&[3, 1, 5]), i64_const(&[1])]));
    v.push(("Unsqueeze", none(), vec![var(&[3, 5]), i64_const(&[0, 3])]));
    v.push((
        "Conv",
        attrs(&[
            ("strides", ints(&[2, 1])),
            ("pads", ints(&[1, 0, 1, 1])),
            ("dilations", ints(&[1, 2])),
        ]),
        vec![var(&[1, 3, 7, 6]), var(&[4, 3, 3, 2]), var(&[4])],
    ));
    v.push((
        "Conv",
        attrs(&[("group", Attr::Int(4)), ("pads", ints(&[1, 1, 1, 1]))]),
        vec![var(&[1, 4, 5, 5]), var(&[4, 1, 3, 3])],
    ));
    v.push((
        "NhwcConv",
        attrs(&[("group", Attr::Int(2)), ("pads", ints(&[1, 0, 1, 1]))]),
        vec![var(&[1, 5, 6, 4]), var(&[6, 2, 3, 2]), var(&[6])],
    ));
    v.push((
        "BatchNormalization",
        none(),
        vec![
            var(&[2, 3, 4, 1]),
            var(&[3]),
            var(&[3]),
            var(&[3]),
            f32_const(&[3], vec![0.5, 1.0, 2.0]),
        ],
    ));
    v.push((
        "BatchNormalization",
        attrs(&[("training_mode", Attr::Int(1))]),
        vec![var(&[2, 3, 5]), var(&[3]), var(&[3]), var(&[3]), var(&[3])],
    ));
    v.push((
        "MaxPool",
        attrs(&[
            ("kernel_shape", ints(&[3, 2])),
            ("strides", ints(&[2, 2])),
            ("pads", ints(&[1, 0, 1, 1])),
        ]),
        vec![var(&[1, 2, 7, 5])],
    ));
    // With Indices (as every MaxPool case here), column-major.
    v.push((
        "MaxPool",
        attrs(&[
            ("kernel_shape", ints(&[2, 3])),
            ("pads", ints(&[1, 1, 0, 1])),
            ("storage_order", Attr::Int(1)),
        ]),
        vec![var(&[2, 3, 4, 5])],
    ));
    v.push((
        "AveragePool",
        attrs(&[
            ("kernel_shape", ints(&[3, 3])),
            ("pads", ints(&[1, 1, 1, 1])),
            ("ceil_mode", Attr::Int(1)),
            ("strides", ints(&[2, 2])),
        ]),
        vec![var(&[1, 2, 6, 5])],
    ));
    v.push((
        "LpPool",
        attrs(&[
            ("kernel_shape", ints(&[2, 3])),
            ("pads", ints(&[1, 0, 0, 1])),
            ("p", Attr::Int(3)),
        ]),
        vec![var(&[1, 2, 4, 5])],
    ));
    // Channels-last pools (`N, H, W, C`): padded, strided, uneven windows.
    v.push((
        "NhwcMaxPool",
        attrs(&[
            ("kernel_shape", ints(&[3, 2])),
            ("strides", ints(&[2, 1])),
            ("pads", ints(&[1, 0, 1, 1])),
        ]),
        vec![var(&[2, 7, 5, 3])],
    ));
    v.push((
        "NhwcAveragePool",
        attrs(&[
            ("kernel_shape", ints(&[3, 3])),
            ("pads", ints(&[1, 1, 1, 1])),
            ("ceil_mode", Attr::Int(1)),
            ("strides", ints(&[2, 2])),
        ]),
        vec![var(&[1, 6, 5, 4])],
    ));
    v.push(("GlobalAveragePool", none(), vec![var(&[2, 3, 4, 5])]));
    v.push(("GlobalMaxPool", none(), vec![var(&[2, 3, 1, 5])]));
    v.push((
        "GlobalLpPool",
        attrs(&[("p", Attr::Int(3))]),
        vec![var(&[2, 3, 5, 1])],
    ));
    let bools = |shape: &[i64]| {
        (
            Some(TensorType::new(
                DType::Bool,
                shape.iter().map(|&d| SymExpr::Int(d)).collect(),
            )),
            None,
        )
    };
    v.push(("Or", none(), vec![bools(&[3, 1]), bools(&[4])]));
    v.push(("Xor", none(), vec![bools(&[2, 1]), bools(&[1, 3])]));
    v.push(("PRelu", none(), vec![var(&[2, 3, 4]), var(&[3, 1])]));
    let scalar_size = |n: i64| {
        let t = Tensor::i64(vec![], vec![n]);
        (Some(TensorType::new(DType::I64, vec![])), Some(t))
    };
    v.push(("HannWindow", none(), vec![scalar_size(7)]));
    v.push((
        "HammingWindow",
        attrs(&[("periodic", Attr::Int(0))]),
        vec![scalar_size(6)],
    ));
    v.push((
        "BlackmanWindow",
        attrs(&[("output_datatype", Attr::Int(11))]),
        vec![scalar_size(5)],
    ));
    v.push((
        "ConstantOfShape",
        attrs(&[
            ("value", Attr::Float(1.5)),
            ("value_type", Attr::Str("f32".into())),
        ]),
        vec![i64_const(&[2, 1, 3])],
    ));
    v
}

#[test]
fn every_operator_compiled_to_c_matches_its_reference() {
    let cases = cases();
    let mut p = Program::new("all_ops");
    for (k, (op, attrs, inputs)) in cases.iter().enumerate() {
        let (types, consts): (Vec<_>, Vec<_>) = inputs.iter().cloned().unzip();
        add_op(
            &mut p,
            &format!("c{k}_"),
            op,
            attrs.clone(),
            &types,
            &consts,
        )
        .unwrap_or_else(|e| panic!("case {k} ({op}): {e}"));
    }
    dmove::ir::validate::validate(&p).expect("valid");
    let inputs = random_inputs(&p, 42).expect("inputs");
    let want = dmove::interp::run(&p, &inputs).expect("reference runs");
    let mut lowered = p.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    dmove::ir::validate::validate(&lowered).expect("lowered program is valid");
    let got = Compiled::build(&lowered)
        .expect("compiles")
        .run(&inputs)
        .expect("runs");
    // `compare_outputs` walks `want`: every case must have outputs there, on both sides.
    assert_eq!(want.len(), p.outputs.len(), "outputs of the reference");
    assert!(want.len() >= cases.len(), "every case has an output");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "outputs of the C program"
    );
    compare_outputs(&got, &want).expect("C matches the reference for every case");

    let covered: BTreeSet<&str> = cases
        .iter()
        .map(|c| c.0)
        .chain(COVERED_ELSEWHERE.iter().copied())
        .chain(C_TESTED.iter().copied())
        .collect();
    let missing: Vec<&str> = dmove::ops::all()
        .iter()
        .map(|o| o.name())
        .filter(|n| !covered.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "operators without a C test: {missing:?}"
    );
    let known: BTreeSet<&str> = dmove::ops::all().iter().map(|o| o.name()).collect();
    let unknown: Vec<&str> = covered.difference(&known).copied().collect();
    assert!(
        unknown.is_empty(),
        "covered operators that do not exist: {unknown:?}"
    );
}
