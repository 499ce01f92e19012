//! Helpers shared by several transformations. Nothing here is a transformation, and no
//! transformation file is imported by another.

pub(crate) mod maps;
pub(crate) mod names;
pub(crate) mod nest;
pub(crate) mod opgraph;
pub(crate) mod scope;
pub(crate) mod splice;
