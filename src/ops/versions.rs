//! The ONNX definitions each operator implements: for every operator, the opset versions at
//! which ONNX changed its definition (its "since versions") whose semantics dmove follows, and
//! for each other definition what changed there, so a refusal can say it.
//!
//! Architecture invariant: this is the only place in `ops/` that knows ONNX versions; the
//! importer (`onnx::opsets`) resolves every node to the definition its model's opset selects
//! and refuses the definitions not listed here. A definition is listed when every node that
//! follows it either computes what ONNX specifies or is refused with an error (for example, an
//! element type dmove lacks, or an attribute value an operator does not support): listing it
//! must never let a different meaning through silently. Definitions that changed only the
//! accepted element types are listed, since types are checked on their own.
//!
//! Older definitions that differ in form are read through the importer (`onnx::import::legacy`
//! for opsets 1–6, attributes that later became inputs passed through as written, the `opset`
//! attribute for Softmax before opset 13). A new onnx release adds definitions to the generated
//! `onnx::schemas`; they are refused until someone checks them and lists them here (a test
//! fails until each one is either listed or noted).
//!
//! Adding an ONNX operator = one line here besides its `OPS` entry (a test in `onnx::opsets`
//! fails until it is there); operators of dmove's own, such as `NhwcConv`, have none.

/// The ONNX definitions of one operator.
#[derive(Debug)]
pub struct OnnxVersions {
    pub op: &'static str,
    /// Since-versions whose semantics dmove implements.
    pub implemented: &'static [i64],
    /// Every other since-version, with what changed there.
    pub not_implemented: &'static [(i64, &'static str)],
}

const fn v(
    op: &'static str,
    implemented: &'static [i64],
    not_implemented: &'static [(i64, &'static str)],
) -> OnnxVersions {
    OnnxVersions {
        op,
        implemented,
        not_implemented,
    }
}

/// Sorted by operator name.
#[rustfmt::skip]
pub static TABLE: &[OnnxVersions] = &[
    v("Abs", &[1, 6, 13], &[]),
    v("Acos", &[7, 22], &[]),
    v("Acosh", &[9, 22], &[]),
    v("Add", &[1, 6, 7, 13, 14], &[]),
    v("AffineGrid", &[20], &[]),
    v("And", &[1, 7], &[]),
    v("ArgMax", &[1, 11, 12, 13], &[]),
    v("ArgMin", &[1, 11, 12, 13], &[]),
    v("Asin", &[7, 22], &[]),
    v("Asinh", &[9, 22], &[]),
    v("Atan", &[7, 22], &[]),
    v("Atanh", &[9, 22], &[]),
    v("Attention", &[23, 24, 25], &[]),
    v("AveragePool", &[1, 7, 10, 11, 19, 22], &[]),
    v("BatchNormalization", &[1, 6, 7, 9, 14, 15], &[]),
    v("BitShift", &[11, 28], &[]),
    v("BitwiseAnd", &[18], &[]),
    v("BitwiseNot", &[18], &[]),
    v("BitwiseOr", &[18], &[]),
    v("BitwiseXor", &[18], &[]),
    v("BlackmanWindow", &[17], &[]),
    v("Cast", &[1, 6, 9, 13, 19, 21, 23, 24, 25, 28], &[]),
    v("CastLike", &[15, 19, 21, 23, 24, 25], &[]),
    v("CausalConvWithState", &[27], &[]),
    v("Ceil", &[1, 6, 13], &[]),
    v("Celu", &[12, 28], &[]),
    v("CenterCropPad", &[18], &[]),
    v("Clip", &[1, 6, 11, 12, 13], &[]),
    v("Col2Im", &[18], &[]),
    v("Concat", &[1, 4, 11, 13], &[]),
    v("Constant", &[1, 9, 11, 12, 13, 19, 21, 23, 24, 25], &[]),
    v("ConstantOfShape", &[9, 20, 21, 23, 24, 25], &[]),
    v("Conv", &[1, 11, 22], &[]),
    v("ConvInteger", &[10], &[]),
    v("ConvTranspose", &[1, 11, 22], &[]),
    v("Cos", &[7, 22], &[]),
    v("Cosh", &[9, 22], &[]),
    v("CumProd", &[26], &[]),
    v("CumSum", &[11, 14], &[]),
    v("DFT", &[17, 20], &[]),
    v("DepthToSpace", &[1, 11, 13, 28], &[]),
    v("DequantizeLinear", &[10, 13, 19, 21, 23, 24, 25, 28], &[]),
    v("Div", &[1, 6, 7, 13, 14], &[]),
    v("Dropout", &[1, 6, 7, 10, 12, 13, 22], &[]),
    v("DynamicQuantizeLinear", &[11], &[]),
    v("Einsum", &[12, 28], &[]),
    v("Elu", &[1, 6, 22], &[]),
    v("Equal", &[1, 7, 11, 13, 19], &[]),
    v("Erf", &[9, 13], &[]),
    v("Exp", &[1, 6, 13], &[]),
    v("Expand", &[8, 13], &[]),
    v("EyeLike", &[9, 22], &[]),
    v("Flatten", &[1, 9, 11, 13, 21, 23, 24, 25], &[]),
    v("Floor", &[1, 6, 13], &[]),
    v("GRU", &[7, 14, 22], &[(1, "output_sequence decides whether Y is produced"), (3, "output_sequence decides whether Y is produced")]),
    v("Gather", &[1, 11, 13], &[]),
    v("GatherElements", &[11, 13], &[]),
    v("GatherND", &[11, 12, 13], &[]),
    v("Gelu", &[20], &[]),
    v("Gemm", &[1, 6, 7, 9, 11, 13], &[]),
    v("GlobalAveragePool", &[1, 22], &[]),
    v("GlobalLpPool", &[2, 22], &[(1, "p is a float attribute")]),
    v("GlobalMaxPool", &[1, 22], &[]),
    v("Greater", &[1, 7, 9, 13], &[]),
    v("GreaterOrEqual", &[12, 16], &[]),
    v("GridSample", &[16, 20, 22], &[]),
    v("GroupNormalization", &[18, 21], &[]),
    v("HammingWindow", &[17], &[]),
    v("HannWindow", &[17], &[]),
    v("HardSigmoid", &[1, 6, 22], &[]),
    v("HardSwish", &[14, 22], &[]),
    v("Hardmax", &[1, 11, 13], &[]),
    v("Identity", &[1, 13, 14, 16, 19, 21, 23, 24, 25], &[]),
    v("If", &[1, 11, 13, 16, 19, 21, 23, 24, 25], &[]),
    v("InstanceNormalization", &[1, 6, 22], &[]),
    v("IsInf", &[10, 20], &[]),
    v("IsNaN", &[9, 13, 20], &[]),
    v("LRN", &[1, 13], &[]),
    v("LSTM", &[7, 14, 22], &[(1, "output_sequence decides whether Y is produced")]),
    v("LayerNormalization", &[17], &[]),
    v("LeakyRelu", &[1, 6, 16], &[]),
    v("Less", &[1, 7, 9, 13], &[]),
    v("LessOrEqual", &[12, 16], &[]),
    v("LinearAttention", &[27], &[]),
    v("Log", &[1, 6, 13], &[]),
    v("LogSoftmax", &[1, 11, 13], &[]),
    v("Loop", &[1, 11, 13, 16, 19, 21, 23, 24, 25], &[]),
    v("LpNormalization", &[1, 22], &[]),
    v("LpPool", &[2, 11, 18, 22], &[(1, "p is a float attribute")]),
    v("MatMul", &[1, 9, 13], &[]),
    v("MatMulInteger", &[10], &[]),
    v("Max", &[1, 6, 8, 12, 13], &[]),
    v("MaxPool", &[1, 8, 10, 11, 12, 22], &[]),
    v("Mean", &[1, 6, 8, 13], &[]),
    v("MeanVarianceNormalization", &[9, 13], &[]),
    v("Min", &[1, 6, 8, 12, 13], &[]),
    v("Mish", &[18, 22], &[]),
    v("Mod", &[10, 13, 28], &[]),
    v("Mul", &[1, 6, 7, 13, 14], &[]),
    v("Neg", &[1, 6, 13], &[]),
    v("NegativeLogLikelihoodLoss", &[12, 13, 22], &[]),
    v("Not", &[1], &[]),
    v("OneHot", &[11, 28], &[(9, "negative indices are out of range, not counted from the end")]),
    v("Or", &[1, 7], &[]),
    v("PRelu", &[1, 6, 7, 9, 16], &[]),
    v("Pad", &[1, 2, 11, 13, 18, 19, 21, 23, 24, 25], &[]),
    v("Pow", &[1, 7, 12, 13, 15], &[]),
    v("QLinearConv", &[10], &[]),
    v("QLinearMatMul", &[10, 21], &[]),
    v("QuantizeLinear", &[10, 13, 19, 21, 23, 24, 25, 28], &[]),
    v("RMSNormalization", &[23], &[]),
    v("RNN", &[7, 14, 22], &[(1, "output_sequence decides whether Y is produced")]),
    v("Range", &[11, 27], &[]),
    v("Reciprocal", &[1, 6, 13], &[]),
    v("ReduceL1", &[1, 11, 13, 18], &[]),
    v("ReduceL2", &[1, 11, 13, 18], &[]),
    v("ReduceLogSum", &[1, 11, 13, 18, 28], &[]),
    v("ReduceLogSumExp", &[1, 11, 13, 18, 28], &[]),
    v("ReduceMax", &[1, 11, 12, 13, 18, 20], &[]),
    v("ReduceMean", &[1, 11, 13, 18], &[]),
    v("ReduceMin", &[1, 11, 12, 13, 18, 20], &[]),
    v("ReduceProd", &[1, 11, 13, 18], &[]),
    v("ReduceSum", &[1, 11, 13], &[]),
    v("ReduceSumSquare", &[1, 11, 13, 18], &[]),
    v("Relu", &[1, 6, 13, 14], &[]),
    v("Reshape", &[5, 13, 14, 19, 21, 23, 24, 25], &[(1, "the shape is an attribute")]),
    v("Resize", &[10, 11, 13, 18, 19], &[]),
    v("ReverseSequence", &[10, 28], &[]),
    v("RotaryEmbedding", &[23], &[]),
    v("Round", &[11, 22], &[]),
    v("STFT", &[17], &[]),
    v("Scan", &[9, 11, 16, 19, 21, 23, 24, 25], &[(8, "batched: a leading batch axis and a sequence_lens input, which opset 9 removed")]),
    v("Scatter", &[9, 11], &[]),
    v("ScatterElements", &[11, 13, 16, 18], &[]),
    v("ScatterND", &[11, 13, 16, 18], &[]),
    v("Selu", &[1, 6, 22], &[]),
    v("Shape", &[1, 13, 15, 19, 21, 23, 24, 25], &[]),
    v("Shrink", &[9], &[]),
    v("Sigmoid", &[1, 6, 13], &[]),
    v("Sign", &[9, 13], &[]),
    v("Sin", &[7, 22], &[]),
    v("Sinh", &[9, 22], &[]),
    v("Size", &[1, 13, 19, 21, 23, 24, 25], &[]),
    v("Slice", &[1, 10, 11, 13], &[]),
    v("Softmax", &[1, 11, 13], &[]),
    v("SoftmaxCrossEntropyLoss", &[12, 13], &[]),
    v("Softplus", &[1, 22], &[]),
    v("Softsign", &[1, 22], &[]),
    v("SpaceToDepth", &[1, 13, 28], &[]),
    v("Split", &[1, 2, 11, 13, 18], &[]),
    v("Sqrt", &[1, 6, 13], &[]),
    v("Squeeze", &[1, 11, 13, 21, 23, 24, 25], &[]),
    v("Sub", &[1, 6, 7, 13, 14], &[]),
    v("Sum", &[1, 6, 8, 13], &[]),
    v("SwiGLU", &[28], &[]),
    v("Swish", &[24], &[]),
    v("Tan", &[7, 22], &[]),
    v("Tanh", &[1, 6, 13], &[]),
    v("ThresholdedRelu", &[10, 22], &[]),
    v("Tile", &[6, 13], &[(1, "tiles and axis are two inputs")]),
    v("TopK", &[10, 11, 24], &[(1, "k is an attribute")]),
    v("Transpose", &[1, 13, 21, 23, 24, 25], &[]),
    v("Trilu", &[14], &[]),
    v("Unsqueeze", &[1, 11, 13, 21, 23, 24, 25], &[]),
    v("Upsample", &[7, 9], &[(1, "height_scale and width_scale attributes, 4-D only"), (10, "deprecated: Resize replaces it")]),
    v("Where", &[9, 16], &[]),
    v("Xor", &[1, 7], &[]),
];

/// The definitions `op` implements, if it is an ONNX operator dmove has.
pub fn onnx_versions(op: &str) -> Option<&'static OnnxVersions> {
    TABLE
        .binary_search_by(|v| v.op.cmp(op))
        .ok()
        .map(|i| &TABLE[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_lookup() {
        assert!(TABLE.windows(2).all(|w| w[0].op < w[1].op));
        assert!(onnx_versions("Conv").is_some());
        assert!(onnx_versions("NoSuchOp").is_none());
    }
}
