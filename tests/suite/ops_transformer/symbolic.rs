//! Expansions of operators whose operands have symbolic dimensions (bound only when run).

use super::{check_symbolic_expansion, ints, sym_ty};
use dmove::ir::{Attr, DType};
use dmove::ops::TensorType;

const BINDS: [(&str, i64); 2] = [("B", 3), ("S", 2)];

#[test]
fn symbolic_expansions_match_reference() {
    let bsd = || Some(sym_ty(&["B", "S", "4"]));
    check_symbolic_expansion("Add", &[], &[bsd(), Some(sym_ty(&["4"]))], &[], &BINDS);
    check_symbolic_expansion("Gelu", &[], &[bsd()], &[], &BINDS);
    check_symbolic_expansion(
        "MatMul",
        &[],
        &[bsd(), Some(sym_ty(&["4", "5"]))],
        &[],
        &BINDS,
    );
    check_symbolic_expansion("Softmax", &[], &[bsd()], &[], &BINDS);
    check_symbolic_expansion("LogSoftmax", &[], &[bsd()], &[], &BINDS);
    check_symbolic_expansion(
        "LayerNormalization",
        &[],
        &[bsd(), Some(sym_ty(&["4"]))],
        &[],
        &BINDS,
    );
    check_symbolic_expansion("Transpose", &[], &[bsd()], &[], &BINDS);
    check_symbolic_expansion("Flatten", &[], &[bsd()], &[], &BINDS);
    // Normalising over the symbolic dimensions divides by their product at run time.
    check_symbolic_expansion(
        "LayerNormalization",
        &[("axis", Attr::Int(1))],
        &[bsd(), Some(sym_ty(&["1"]))],
        &[],
        &BINDS,
    );
    let spec = TensorType::new(DType::I64, sym_ty(&["2"]).shape);
    check_symbolic_expansion(
        "Reshape",
        &[],
        &[bsd(), Some(spec)],
        &[None, Some(ints(&[-1, 2]))],
        &BINDS,
    );
}
