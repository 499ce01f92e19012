//! Operator versions: which ONNX definition of an operator a node follows, and whether dmove
//! implements it.
//!
//! ONNX versions each operator separately: an operator's definition changes at some opsets (its
//! "since versions", listed for every operator in the generated [`super::schemas`]) and stays
//! the same in between. A node follows the latest definition not newer than the model's opset
//! import for its domain, so a model at opset 28 whose `Conv` last changed at opset 22 uses
//! `Conv`-22. The importer therefore refuses nothing because of the opset number: it refuses a
//! node only when the definition the node follows is one whose semantics dmove does not
//! implement ([`crate::ops::versions`]), and says which definitions it does implement.
//!
//! The same definition lists the node's attributes with their types, which is how a wrongly
//! typed or missing attribute is told apart from an absent optional one (see
//! [`super::attrs::convert`]).

use super::proto::attribute_proto::AttributeType;
use super::schemas::SCHEMAS;
use crate::ops::versions::{onnx_versions, OnnxVersions};

/// One ONNX definition of an operator: the opset version it appeared at and its attributes.
#[derive(Debug, PartialEq, Eq)]
pub struct Schema {
    pub op: &'static str,
    /// The opset version this definition was introduced at.
    pub since: i64,
    /// Sorted by name.
    pub attrs: &'static [AttrSchema],
}

/// A declared attribute of an operator definition.
#[derive(Debug, PartialEq, Eq)]
pub struct AttrSchema {
    pub name: &'static str,
    pub ty: AttributeType,
    pub required: bool,
}

/// Compact constructor for the generated table.
pub(super) const fn a(name: &'static str, ty: AttributeType, required: bool) -> AttrSchema {
    AttrSchema { name, ty, required }
}

impl Schema {
    /// The attribute `name` of this definition.
    pub fn attr(&self, name: &str) -> Option<&'static AttrSchema> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// The attribute `name` as this definition or, failing that, the newest older definition
    /// of the operator declares it. Old exporters keep writing attributes a later definition
    /// dropped (`consumed_inputs`, `is_test`, Reduce's `axes` attribute); they keep the older
    /// definition's meaning, which the legacy upgrade and the operators read.
    pub fn declared(&self, name: &str) -> Option<&'static AttrSchema> {
        self.attr(name).or_else(|| {
            history(self.op)
                .iter()
                .rev()
                .filter(|s| s.since < self.since)
                .find_map(|s| s.attr(name))
        })
    }
}

/// The lower-case ONNX spelling of an attribute type (`ints`, `float`, `sparse_tensor`), as
/// error messages name it.
pub fn type_name(ty: AttributeType) -> &'static str {
    match ty {
        AttributeType::Undefined => "undefined",
        AttributeType::Float => "float",
        AttributeType::Int => "int",
        AttributeType::String => "string",
        AttributeType::Tensor => "tensor",
        AttributeType::Graph => "graph",
        AttributeType::SparseTensor => "sparse_tensor",
        AttributeType::TypeProto => "type_proto",
        AttributeType::Floats => "floats",
        AttributeType::Ints => "ints",
        AttributeType::Strings => "strings",
        AttributeType::Tensors => "tensors",
        AttributeType::Graphs => "graphs",
        AttributeType::SparseTensors => "sparse_tensors",
        AttributeType::TypeProtos => "type_protos",
    }
}

/// Every definition of `op` in the default domain, oldest first (empty for an operator ONNX does
/// not define).
pub fn history(op: &str) -> &'static [Schema] {
    let start = SCHEMAS.partition_point(|s| s.op < op);
    let len = SCHEMAS[start..].partition_point(|s| s.op == op);
    &SCHEMAS[start..start + len]
}

/// The definition a node of `op` follows in a model importing default opset `opset`.
pub fn definition(op: &str, opset: i64) -> Option<&'static Schema> {
    history(op).iter().rev().find(|s| s.since <= opset)
}

/// Why a node's operator version is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionRefusal {
    #[error("{op} does not exist at opset {opset}: ONNX introduced it at opset {introduced}")]
    NotYetDefined {
        op: String,
        opset: i64,
        introduced: i64,
    },
    #[error(
        "{op} changed at opset {changed_at} ({what}); the model imports opset {opset} and dmove \
         implements {op} up to opset {newest}"
    )]
    Newer {
        op: String,
        opset: i64,
        changed_at: i64,
        what: String,
        newest: i64,
    },
    #[error(
        "{op} at opset {opset} follows its opset-{version} definition ({what}), which dmove does \
         not implement (it implements {op} as defined at opsets {implemented})"
    )]
    Unimplemented {
        op: String,
        opset: i64,
        version: i64,
        what: String,
        /// The implemented versions, e.g. `10, 11, 24`.
        implemented: String,
    },
}

/// Resolves a node of `op` at default opset `opset`: the definition it follows, `None` for an
/// operator ONNX does not define (dmove-only operators have no ONNX versions to check), or the
/// refusal when dmove does not implement that definition.
pub fn resolve(op: &str, opset: i64) -> Result<Option<&'static Schema>, VersionRefusal> {
    let Some(first) = history(op).first() else {
        return Ok(None);
    };
    let Some(schema) = definition(op, opset) else {
        return Err(VersionRefusal::NotYetDefined {
            op: op.to_string(),
            opset,
            introduced: first.since,
        });
    };
    match onnx_versions(op) {
        Some(versions) => check_implemented(schema, opset, versions).map(|()| Some(schema)),
        // An operator dmove lacks altogether is reported as unsupported, not here.
        None => Ok(Some(schema)),
    }
}

/// Whether `versions` covers definition `schema` of a model at `opset`.
pub fn check_implemented(
    schema: &Schema,
    opset: i64,
    versions: &OnnxVersions,
) -> Result<(), VersionRefusal> {
    if versions.implemented.contains(&schema.since) {
        return Ok(());
    }
    let what = versions
        .not_implemented
        .iter()
        .find(|(v, _)| *v == schema.since)
        .map_or("its definition changed", |(_, what)| what)
        .to_string();
    let op = schema.op.to_string();
    match versions.implemented.iter().max() {
        Some(&newest) if newest < schema.since => Err(VersionRefusal::Newer {
            op,
            opset,
            changed_at: schema.since,
            what,
            newest,
        }),
        _ => Err(VersionRefusal::Unimplemented {
            op,
            opset,
            version: schema.since,
            what,
            implemented: versions
                .implemented
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::versions::TABLE;

    #[test]
    fn the_generated_table_is_sorted_and_lookups_find_every_version() {
        assert!(SCHEMAS
            .windows(2)
            .all(|w| (w[0].op, w[0].since) < (w[1].op, w[1].since)));
        let conv: Vec<i64> = history("Conv").iter().map(|s| s.since).collect();
        assert_eq!(&conv[..3], [1, 11, 22]);
        assert_eq!(definition("Conv", 28).map(|s| s.since), Some(22));
        assert_eq!(definition("Conv", 21).map(|s| s.since), Some(11));
        assert!(history("NoSuchOp").is_empty());
    }

    #[test]
    fn a_node_follows_the_latest_definition_at_or_below_the_model_opset() {
        assert_eq!(
            resolve("ReduceSum", 28).map(|s| s.map(|s| s.since)),
            Ok(Some(13))
        );
        assert_eq!(
            resolve("ReduceSum", 12).map(|s| s.map(|s| s.since)),
            Ok(Some(11))
        );
        assert!(matches!(
            resolve("Gelu", 19),
            Err(VersionRefusal::NotYetDefined { introduced: 20, .. })
        ));
        let old = resolve("TopK", 9).expect_err("TopK-1 takes k as an attribute");
        assert!(old.to_string().contains("opset-1 definition"), "{old}");
    }

    #[test]
    fn a_definition_newer_than_the_implemented_ones_names_both_versions() {
        // As if dmove implemented ReduceMean only up to opset 13.
        let versions = OnnxVersions {
            op: "ReduceMean",
            implemented: &[1, 11, 13],
            not_implemented: &[(18, "axes became an input")],
        };
        let schema = definition("ReduceMean", 28).expect("defined");
        let refusal = check_implemented(schema, 28, &versions).expect_err("refused");
        assert_eq!(
            refusal.to_string(),
            "ReduceMean changed at opset 18 (axes became an input); the model imports opset 28 \
             and dmove implements ReduceMean up to opset 13"
        );
    }

    /// Every operator ONNX defines that dmove has (in the library or handled by the importer)
    /// declares its versions, and only those do.
    #[test]
    fn every_onnx_operator_dmove_has_declares_its_versions() {
        use crate::onnx::idioms::IMPORTER_HANDLED;
        let library = crate::ops::all().into_iter().map(|op| op.name());
        let ours: Vec<&str> = library.chain(IMPORTER_HANDLED).collect();
        for op in ours.iter().filter(|op| !history(op).is_empty()) {
            assert!(
                onnx_versions(op).is_some(),
                "{op} declares no ONNX versions"
            );
        }
        for v in TABLE {
            assert!(
                ours.contains(&v.op),
                "{} is declared but dmove lacks it",
                v.op
            );
        }
    }

    /// Every declared version is a real ONNX definition, and every definition dmove does not
    /// implement says what changed there, so that each refusal explains itself.
    #[test]
    fn the_implemented_versions_cover_every_definition_of_each_operator() {
        for v in TABLE {
            let since: Vec<i64> = history(v.op).iter().map(|s| s.since).collect();
            assert!(!since.is_empty(), "{} is not an ONNX operator", v.op);
            for k in v.implemented {
                assert!(since.contains(k), "{}-{k} is not an ONNX definition", v.op);
            }
            for k in &since {
                let noted = v.not_implemented.iter().any(|(n, _)| n == k);
                assert!(
                    v.implemented.contains(k) != noted,
                    "{}-{k} must be either implemented or noted as not implemented",
                    v.op
                );
            }
        }
    }
}
