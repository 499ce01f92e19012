//! Data layout and memory: container layouts, channels-last regions, buffer reuse.

pub(super) mod buffer_reuse;
pub(super) mod channels_last;
pub(super) mod layout_transform;
