//! Inter-operator: maps of different operators merged so intermediates stay in registers.

pub(super) mod epilogue_fusion;
pub(super) mod map_fusion;
pub(super) mod on_the_fly_fusion;
pub(super) mod prologue_fusion;
pub(super) mod reduction_fusion;
pub(super) mod sibling_map_fusion;
