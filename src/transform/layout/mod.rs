//! Data layout and memory: container layouts, channels-last regions, packed operands, buffer
//! reuse.

pub(super) mod buffer_reuse;
pub(super) mod channels_last;
pub(super) mod layout_transform;
pub(super) mod pack;
