//! Whole tiles apart from the clipped one: a vector map whose innermost parameter ends at
//! `min(start + T, N)` (the last tile of a tiling that does not divide `N`) is emitted twice,
//!
//! ```c
//! if ((p_o_tile + 32) <= 196) {            // a whole tile: a constant trip count
//!     #pragma omp simd
//!     for (p_o = p_o_tile; p_o < (p_o_tile + 32); p_o += 1) { … }
//! }
//! else {                                    // the clipped last tile
//!     #pragma omp simd
//!     for (p_o = p_o_tile; p_o < dm_min((p_o_tile + 32), 196); p_o += 1) { … }
//! }
//! ```
//!
//! With a bound the compiler cannot see, a register tile's accumulators stay in memory and
//! every lane loop gets a masked remainder; with the constant one they live in vector
//! registers. ResNet-18's 14×14 and 7×7 products (196 and 49 columns in tiles of 32): the
//! whole network 26.4 → 23.2 ms. Both branches compute the same thing, so nothing else changes.

use super::Emitter;
use crate::codegen::CodegenError;
use crate::ir::{MapNode, Node, Schedule, SymExpr};

impl Emitter<'_> {
    /// Emits vector map `m` with its whole tiles apart (see the module), or `None` when its
    /// innermost parameter does not end at `min(start + constant, bound)`.
    pub(super) fn map_peeled(
        &mut self,
        node: &Node,
        m: &MapNode,
    ) -> Option<Result<(), CodegenError>> {
        let (whole_end, bound) = whole_tile_end(m)?;
        let mut whole = m.clone();
        whole.params.last_mut()?.range.end = whole_end.clone();
        let test = format!(
            "if ({} <= {}) {{",
            self.c_sym(&whole_end),
            self.c_sym(&bound)
        );
        self.w.open(test);
        let emitted = self.map_loops(node, &whole).and_then(|()| {
            self.w.close();
            self.w.open("else {");
            self.map_loops(node, m)
        });
        self.w.close();
        Some(emitted)
    }
}

/// For a vector map whose innermost parameter `p` ends at `min(a, b)` with `a − start` a
/// constant: `a` (the end of a whole tile) and `b` (the bound).
fn whole_tile_end(m: &MapNode) -> Option<(SymExpr, SymExpr)> {
    if m.schedule != Schedule::Vector {
        return None;
    }
    let range = &m.params.last()?.range;
    let SymExpr::Min(a, b) = &range.end else {
        return None;
    };
    let tile = |e: &SymExpr| (e.clone() - range.start.clone()).simplify().as_int();
    match (tile(a), tile(b)) {
        (Some(_), _) => Some(((**a).clone(), (**b).clone())),
        (None, Some(_)) => Some(((**b).clone(), (**a).clone())),
        (None, None) => None,
    }
}
