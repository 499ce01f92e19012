//! Intra-operator: one map nest's shape and schedule (tiling, order, vector and parallel
//! execution, local storage, register accumulation).

pub(super) mod local_storage;
pub(super) mod map_collapse;
pub(super) mod map_expansion;
pub(super) mod map_interchange;
pub(super) mod map_squeeze;
pub(super) mod map_tiling;
pub(super) mod parallelize;
pub(super) mod register_accumulation;
pub(super) mod strip_mining;
pub(super) mod unroll;
pub(super) mod vectorize;
