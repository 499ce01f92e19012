//! Transformations and the engine that applies them.
//!
//! Every transformation has the same contract: it finds candidate *sites* (stable node ids) in a
//! deterministic order, checks its preconditions without mutating anything — saying why in words
//! when one fails — and applies the rewrite. The [`engine`] wraps each application in a
//! transaction: snapshot, preconditions, apply, validate, legality, numerics; any failure restores
//! the program exactly and the refusal says which check failed.
//!
//! Adding a transformation = adding one file with a unit struct implementing [`Transformation`]
//! and listing it in [`all`].

mod batchnorm_into_conv;
mod buffer_reuse;
mod channels_last;
mod constant_folding;
pub mod engine;
mod expand;
mod layout_transform;
mod local_storage;
mod map_collapse;
mod map_expansion;
mod map_fusion;
mod map_interchange;
mod map_support;
mod map_tiling;
mod matmul_add_to_gemm;
mod nest;
mod on_the_fly_fusion;
mod online_softmax;
mod opgraph;
mod pad_into_conv;
mod parallelize;
mod reduction_fusion;
mod register_accumulation;
mod reshape_elimination;
mod row_passes;
mod sibling_map_fusion;
mod splice;
mod strip_mining;
mod transpose_cancel;
mod transpose_folding;
mod unroll;
mod vectorize;
mod welford;

pub use batchnorm_into_conv::BatchNormIntoConv;
pub use buffer_reuse::{plan_buffers, BufferReuse};
pub use channels_last::ChannelsLast;
pub use constant_folding::ConstantFolding;
pub use expand::Expand;
pub use layout_transform::LayoutTransform;
pub use local_storage::LocalStorage;
pub use map_collapse::MapCollapse;
pub use map_expansion::MapExpansion;
pub use map_fusion::MapFusion;
pub use map_interchange::MapInterchange;
pub use map_tiling::MapTiling;
pub use matmul_add_to_gemm::MatMulAddToGemm;
pub use on_the_fly_fusion::OnTheFlyFusion;
pub use pad_into_conv::PadIntoConv;
pub use parallelize::Parallelize;
pub use reduction_fusion::ReductionFusion;
pub use register_accumulation::RegisterAccumulation;
pub use reshape_elimination::ReshapeElimination;
pub use sibling_map_fusion::SiblingMapFusion;
pub use strip_mining::StripMining;
pub use transpose_folding::TransposeFolding;
pub use unroll::Unroll;
pub use vectorize::Vectorize;

use crate::ir::{NodeId, Program};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The level of data-centric optimization a transformation works at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    Operator,
    Expansion,
    IntraOperator,
    InterOperator,
}

/// A parameter value (typed and serializable so traces replay exactly).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Ints(Vec<i64>),
    Str(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Ints(v) => write!(
                f,
                "{}",
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            ParamValue::Str(s) => f.write_str(s),
        }
    }
}

/// Named parameters of one application.
pub type Params = BTreeMap<String, ParamValue>;

/// Declares one parameter a transformation accepts.
#[derive(Clone, Debug, Serialize)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: &'static str,
    pub doc: &'static str,
}

/// Why a transformation does not apply at a site: which condition failed, on which node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("{transformation} does not apply at {node}: {reason}")]
pub struct NotApplicable {
    pub transformation: &'static str,
    pub node: NodeId,
    pub reason: String,
}

/// A rewrite of the program.
pub trait Transformation: Sync {
    fn name(&self) -> &'static str;
    fn level(&self) -> Level;
    /// One-line description for listings.
    fn doc(&self) -> &'static str;
    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }
    /// Candidate sites in a deterministic order; each site lists the nodes the rewrite reads,
    /// the first being the anchor a user names with `--at`.
    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>>;
    /// Checks every precondition without changing anything.
    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable>;
    /// Performs the rewrite (called only after `check` succeeded) and returns the ids it touched.
    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable>;
}

/// Every built-in transformation, by name.
pub fn all() -> Vec<&'static dyn Transformation> {
    vec![
        &BatchNormIntoConv,
        &BufferReuse,
        &ChannelsLast,
        &ConstantFolding,
        &Expand,
        &LayoutTransform,
        &LocalStorage,
        &MapCollapse,
        &MapExpansion,
        &MapFusion,
        &MapInterchange,
        &MapTiling,
        &MatMulAddToGemm,
        &OnTheFlyFusion,
        &PadIntoConv,
        &Parallelize,
        &ReductionFusion,
        &RegisterAccumulation,
        &ReshapeElimination,
        &SiblingMapFusion,
        &StripMining,
        &TransposeFolding,
        &Unroll,
        &Vectorize,
    ]
}

pub fn lookup(name: &str) -> Option<&'static dyn Transformation> {
    all()
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(name))
}

/// Shorthand used by transformations to refuse.
pub(crate) fn refuse(
    t: &dyn Transformation,
    node: NodeId,
    reason: impl Into<String>,
) -> NotApplicable {
    NotApplicable {
        transformation: t.name(),
        node,
        reason: reason.into(),
    }
}

/// The map node `id`, or a refusal saying what it is instead.
pub(crate) fn expect_map<'p>(
    t: &dyn Transformation,
    p: &'p Program,
    id: NodeId,
) -> Result<&'p crate::ir::MapNode, NotApplicable> {
    match p.node(id).map(|n| &n.kind) {
        Some(crate::ir::NodeKind::Map(m)) => Ok(m),
        Some(other) => Err(refuse(
            t,
            id,
            format!("node is a {} node, not a map", other.kind_name()),
        )),
        None => Err(refuse(t, id, "no such node")),
    }
}

/// Ids of every map in the program (any depth), outer maps first.
pub(crate) fn all_maps(p: &Program) -> Vec<NodeId> {
    let mut v = Vec::new();
    p.graph.walk(&mut |n| {
        if matches!(n.kind, crate::ir::NodeKind::Map(_)) {
            v.push(n.id);
        }
    });
    v
}

/// Integer-list parameter `name`, if given.
pub(crate) fn ints_param(params: &Params, name: &str) -> Option<Vec<i64>> {
    match params.get(name)? {
        ParamValue::Ints(v) => Some(v.clone()),
        ParamValue::Int(v) => Some(vec![*v]),
        ParamValue::Str(s) => s.split(',').map(|x| x.trim().parse().ok()).collect(),
    }
}
