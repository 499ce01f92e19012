//! The registry: every built-in transformation, alphabetically, then the transformations the
//! scripts loaded by this process declared, in load order; each looked up by its one spelling.
//!
//! Scripted transformations are process-wide because loading a script is what makes its
//! transformations exist, for the engine, traces, locks and `dmove transforms` alike; a name
//! is registered once at a time, so a lookup always means one thing (a script reloaded after an
//! edit replaces what its earlier text declared).

use super::contract::Transformation;
use super::expansion::expand::Expand;
use super::fusion::{
    epilogue_fusion::EpilogueFusion, map_fusion::MapFusion, on_the_fly_fusion::OnTheFlyFusion,
    prologue_fusion::PrologueFusion, reduction_fusion::ReductionFusion,
    sibling_map_fusion::SiblingMapFusion,
};
use super::layout::{
    buffer_reuse::BufferReuse, channels_last::ChannelsLast, layout_transform::LayoutTransform,
    pack::Pack,
};
use super::loops::{
    local_storage::LocalStorage, map_collapse::MapCollapse, map_expansion::MapExpansion,
    map_interchange::MapInterchange, map_squeeze::MapSqueeze, map_tiling::MapTiling,
    parallelize::Parallelize, register_accumulation::RegisterAccumulation,
    strip_mining::StripMining, unroll::Unroll, vectorize::Vectorize,
};
use super::operator::{
    batchnorm_into_conv::BatchNormIntoConv, constant_folding::ConstantFolding,
    constant_map_folding::ConstantMapFolding, matmul_add_to_gemm::MatMulAddToGemm,
    pad_into_conv::PadIntoConv, reshape_elimination::ReshapeElimination,
    transpose_folding::TransposeFolding,
};
use std::sync::RwLock;

/// A scripted transformation and the script that registered it (its canonical path, or
/// `std::NAME`).
struct Registered {
    owner: String,
    t: &'static dyn Transformation,
}

/// Transformations declared by loaded scripts, in load order.
static SCRIPTED: RwLock<Vec<Registered>> = RwLock::new(Vec::new());

fn scripted() -> Vec<&'static dyn Transformation> {
    let v = SCRIPTED.read().unwrap_or_else(|e| e.into_inner());
    v.iter().map(|r| r.t).collect()
}

/// Whether `name` belongs to a built-in or to a script other than `owner`: a script may
/// declare again what its own earlier text declared (it was edited), nothing else.
pub fn taken(name: &str, owner: &str) -> bool {
    let v = SCRIPTED.read().unwrap_or_else(|e| e.into_inner());
    builtins().iter().any(|b| b.name() == name)
        || v.iter().any(|r| r.t.name() == name && r.owner != owner)
}

/// Registers the transformations of the script at `owner`, all or none, replacing those its
/// earlier text registered (a long-lived process — the REPL, the language server — sees a
/// script edited and reloaded). The same transformations registered again are kept as they
/// are (the same text loaded twice); a name taken by a built-in or another script refuses them
/// all.
pub fn register(owner: &str, ts: &[&'static dyn Transformation]) -> Result<(), String> {
    let mut v = SCRIPTED.write().unwrap_or_else(|e| e.into_inner());
    let same = |a: &dyn Transformation, b: &dyn Transformation| std::ptr::addr_eq(a, b);
    for (i, t) in ts.iter().enumerate() {
        let kept = v.iter().any(|r| same(r.t, *t));
        let by_other = v
            .iter()
            .find(|r| r.t.name() == t.name() && r.owner != owner && !same(r.t, *t));
        if let Some(r) = by_other {
            return Err(format!(
                "a transformation named `{}` is already registered by {}",
                t.name(),
                r.owner
            ));
        }
        let twice = ts[..i].iter().any(|x| x.name() == t.name());
        if !kept && (twice || builtins().iter().any(|b| b.name() == t.name())) {
            return Err(format!(
                "a transformation named `{}` is already registered",
                t.name()
            ));
        }
    }
    v.retain(|r| r.owner != owner || ts.iter().any(|t| same(r.t, *t)));
    for t in ts {
        if !v.iter().any(|r| same(r.t, *t)) {
            v.push(Registered {
                owner: owner.to_string(),
                t: *t,
            });
        }
    }
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
        &ConstantMapFolding,
        &EpilogueFusion,
        &Expand,
        &LayoutTransform,
        &LocalStorage,
        &MapCollapse,
        &MapExpansion,
        &MapFusion,
        &MapInterchange,
        &MapSqueeze,
        &MapTiling,
        &MatMulAddToGemm,
        &OnTheFlyFusion,
        &Pack,
        &PadIntoConv,
        &Parallelize,
        &PrologueFusion,
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
