//! Expansion: a library node becomes maps and tasklets, through a named implementation.

pub(super) mod expand;
