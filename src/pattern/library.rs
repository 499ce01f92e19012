//! Built-in patterns, by name, for `dmove match` and for recipes that start from a known shape.

use super::{params, uses, NodeClass, Pattern, PatternBuilder, PatternError, Pred};
use crate::ir::DataKind;

/// Every built-in pattern: name and one-line description.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "matmul_add",
        "MatMul whose result feeds only an Add (a Gemm with bias)",
    ),
    (
        "conv_bn",
        "Conv whose result feeds only a BatchNormalization (foldable into the conv)",
    ),
    (
        "elementwise_chain",
        "a map whose transient result is read only by a map with as many parameters (fusable)",
    ),
];

/// The built-in pattern `name`.
pub fn builtin(name: &str) -> Result<Pattern, PatternError> {
    match name {
        "matmul_add" => producer_consumer(name, ("mm", "MatMul"), ("add", "Add")),
        "conv_bn" => producer_consumer(name, ("conv", "Conv"), ("bn", "BatchNormalization")),
        "elementwise_chain" => PatternBuilder::new(name)
            .node("producer", [Pred::Kind(NodeClass::Map)])
            .node("t", transient())
            .node("consumer", [Pred::Kind(NodeClass::Map)])
            .flow("producer", "t", "consumer")
            .require(uses("t").equals(1))
            .require(params("producer").equals(params("consumer")))
            .finish(),
        _ => Err(PatternError::Unknown {
            name: name.to_string(),
            known: BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn transient() -> [Pred; 2] {
    [
        Pred::Kind(NodeClass::Access),
        Pred::DataKind(DataKind::Transient),
    ]
}

/// `producer → t → consumer` (capture name and operator of each end) where `t` is a transient
/// read only by the consumer.
fn producer_consumer(
    name: &str,
    (producer, producer_op): (&str, &str),
    (consumer, consumer_op): (&str, &str),
) -> Result<Pattern, PatternError> {
    PatternBuilder::new(name)
        .node(producer, [Pred::op(producer_op)])
        .node("t", transient())
        .node(consumer, [Pred::op(consumer_op)])
        .flow(producer, "t", consumer)
        .require(uses("t").equals(1))
        .finish()
}
