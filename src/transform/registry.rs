//! The registry: every built-in transformation, alphabetically, then the transformations the
//! scripts loaded by this process declared, in load order; each looked up by its one spelling.
//!
//! Scripted transformations are process-wide because loading a script is what makes its
//! transformations exist, for the engine, traces, locks and `dmove transforms` alike; a name is
//! never registered twice, so a lookup always means one thing.

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
use std::sync::RwLock;

/// Transformations declared by loaded scripts, in load order.
static SCRIPTED: RwLock<Vec<&'static dyn Transformation>> = RwLock::new(Vec::new());

fn scripted() -> Vec<&'static dyn Transformation> {
    SCRIPTED.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Registers scripted transformations, all or none: a name already taken refuses them all.
pub fn register(ts: &[&'static dyn Transformation]) -> Result<(), String> {
    let mut v = SCRIPTED.write().unwrap_or_else(|e| e.into_inner());
    for (i, t) in ts.iter().enumerate() {
        let taken = builtins()
            .iter()
            .chain(v.iter())
            .chain(&ts[..i])
            .any(|x| x.name() == t.name());
        if taken {
            return Err(format!(
                "a transformation named `{}` is already registered",
                t.name()
            ));
        }
    }
    v.extend_from_slice(ts);
    Ok(())
}

/// Every transformation: the built-ins in alphabetical order of name, then the scripted ones.
pub fn all() -> Vec<&'static dyn Transformation> {
    let mut v = builtins();
    v.extend(scripted());
    v
}

/// Every built-in transformation, in alphabetical order of name.
pub fn builtins() -> Vec<&'static dyn Transformation> {
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
