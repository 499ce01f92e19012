//! (to be written)

use super::Operator;

pub static OPS: &[&dyn Operator] = &[];
