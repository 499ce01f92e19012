//! The registry: every built-in transformation, alphabetically, looked up by its one spelling.

use super::contract::Transformation;
use super::expansion::expand::Expand;
use super::fusion::{
    map_fusion::MapFusion, on_the_fly_fusion::OnTheFlyFusion, reduction_fusion::ReductionFusion,
    sibling_map_fusion::SiblingMapFusion,
};
use super::layout::{
    buffer_reuse::BufferReuse, channels_last::ChannelsLast, layout_transform::LayoutTransform,
};
use super::loops::{
    local_storage::LocalStorage, map_collapse::MapCollapse, map_expansion::MapExpansion,
    map_interchange::MapInterchange, map_tiling::MapTiling, parallelize::Parallelize,
    register_accumulation::RegisterAccumulation, strip_mining::StripMining, unroll::Unroll,
    vectorize::Vectorize,
};
use super::operator::{
    batchnorm_into_conv::BatchNormIntoConv, constant_folding::ConstantFolding,
    matmul_add_to_gemm::MatMulAddToGemm, pad_into_conv::PadIntoConv,
    reshape_elimination::ReshapeElimination, transpose_folding::TransposeFolding,
};

/// Every built-in transformation, in alphabetical order of name.
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

/// The transformation spelled exactly `name`.
pub fn lookup(name: &str) -> Option<&'static dyn Transformation> {
    all().into_iter().find(|t| t.name() == name)
}

/// Why a transformation name was not found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("no transformation is named `{name}`")]
#[diagnostic(code(dmove::transform::unknown), help("{}", unknown_help(closest)))]
pub struct UnknownTransformation {
    pub name: String,
    pub closest: Option<&'static str>,
}

fn unknown_help(closest: &Option<&str>) -> String {
    match closest {
        Some(c) => format!("did you mean `{c}`? `dmove transforms` lists them all"),
        None => "`dmove transforms` lists them all".to_string(),
    }
}

/// The transformation spelled exactly `name`, or an error naming the closest spelling.
pub fn find(name: &str) -> Result<&'static dyn Transformation, UnknownTransformation> {
    lookup(name).ok_or_else(|| UnknownTransformation {
        name: name.to_string(),
        closest: super::params::closest(name, all().into_iter().map(|t| t.name())),
    })
}
