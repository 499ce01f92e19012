//! Whole tiles apart from the clipped one. A map whose body holds loops that end at
//! `min(t + T, N)` for one of its parameters `t` (the last tile of a tiling that does not divide
//! `N`) emits its body twice:
//!
//! ```c
//! for (p_o_tile = 0; p_o_tile < 196; p_o_tile += 32) {
//!     if ((p_o_tile + 32) <= 196) {        // a whole tile: constant trip counts
//!         for (p_r = 0; p_r < 2304; p_r += 1)
//!             #pragma omp simd
//!             for (p_o = p_o_tile; p_o < (p_o_tile + 32); p_o += 1) { … }
//!     }
//!     else {                                // the clipped last tile, as written
//!         for (p_r = 0; p_r < 2304; p_r += 1)
//!             #pragma omp simd
//!             for (p_o = p_o_tile; p_o < dm_min((p_o_tile + 32), 196); p_o += 1) { … }
//!     }
//! }
//! ```
//!
//! With a bound the compiler cannot see, a register tile's accumulators stay in memory and
//! every lane loop gets a masked remainder; with the constant one they live in vector
//! registers. The test sits in the body of the map that owns the tile parameter, outside every
//! loop nested in it: tested inside the reduction loop (where it was first placed, on the lane
//! loop alone) the compiler kept the accumulators in memory for both versions, and ResNet-18's
//! 14×14 and 7×7 products ran at a quarter of the speed of its 56×56 ones. A lane loop whose
//! own start is the tile (no enclosing map owns it) is split the same way on its own. Both
//! versions compute the same thing, so nothing else changes.

use super::Emitter;
use crate::codegen::CodegenError;
use crate::ir::{Graph, MapNode, MapParam, Node, NodeId, NodeKind, Schedule, SymExpr};

/// A clipped tile's end: `min(whole, bound)`, where `whole` is the end of a whole tile.
#[derive(Clone, PartialEq)]
pub(super) struct Clip {
    whole: SymExpr,
    bound: SymExpr,
}

impl Emitter<'_> {
    /// Emits vector map `m` with its whole tiles apart, or `None` when its innermost parameter
    /// does not end at `min(start + constant, bound)` or a body around it already split them.
    pub(super) fn map_peeled(
        &mut self,
        node: &Node,
        m: &MapNode,
    ) -> Option<Result<(), CodegenError>> {
        if m.schedule != Schedule::Vector {
            return None;
        }
        let range = &m.params.last()?.range;
        let clip = clip_of(&range.end, &|e| constant_apart(e, &range.start))?;
        if self.clipped.contains(&clip) {
            return None;
        }
        let mut whole = m.clone();
        whole.params.last_mut()?.range.end = clip.whole.clone();
        let test = self.whole_test(std::slice::from_ref(&clip));
        self.w.open(test);
        let emitted = self.map_loops(node, &whole).and_then(|()| {
            self.w.close();
            self.w.open("else {");
            self.map_loops(node, m)
        });
        self.w.close();
        Some(emitted)
    }

    /// Emits the locals and the body of the map at `path` with parameters `params`: twice,
    /// whole tiles apart (see the module), when loops nested in it end at a clipped tile of
    /// one of those parameters.
    pub(super) fn body_peeled(
        &mut self,
        path: &[NodeId],
        body: &Graph,
        params: &[MapParam],
    ) -> Result<(), CodegenError> {
        let owned = |e: &SymExpr| {
            (params.iter()).any(|p| constant_apart(e, &SymExpr::sym(p.name.as_str())))
        };
        let mut clips: Vec<Clip> = Vec::new();
        nested_clips(body, &owned, &mut clips);
        clips.retain(|c| !self.clipped.contains(c));
        if clips.is_empty() {
            self.declare_scope(path, body);
            return self.graph(body);
        }
        let mut whole = body.clone();
        unclip(&mut whole, &clips);
        let test = self.whole_test(&clips);
        self.w.open(test);
        self.declare_scope(path, &whole);
        self.graph(&whole)?;
        self.w.close();
        self.w.open("else {");
        self.declare_scope(path, body);
        let before = self.clipped.len();
        self.clipped.extend(clips);
        let emitted = self.graph(body);
        self.clipped.truncate(before);
        self.w.close();
        emitted
    }

    /// `if (whole₁ <= bound₁ && …) {`
    fn whole_test(&mut self, clips: &[Clip]) -> String {
        let tests: Vec<String> = (clips.iter())
            .map(|c| format!("{} <= {}", self.c_sym(&c.whole), self.c_sym(&c.bound)))
            .collect();
        format!("if ({}) {{", tests.join(" && "))
    }
}

/// Whether `a − b` is a constant (`t + 32` and `t`).
fn constant_apart(a: &SymExpr, b: &SymExpr) -> bool {
    (a - b).as_int().is_some()
}

/// `end` as a clip when it is `min(a, b)` with `whole(a)` or `whole(b)`.
fn clip_of(end: &SymExpr, whole: &dyn Fn(&SymExpr) -> bool) -> Option<Clip> {
    let SymExpr::Min(a, b) = end else {
        return None;
    };
    let clip = |whole: &SymExpr, bound: &SymExpr| Clip {
        whole: whole.clone(),
        bound: bound.clone(),
    };
    match (whole(a), whole(b)) {
        (true, _) => Some(clip(a, b)),
        (false, true) => Some(clip(b, a)),
        (false, false) => None,
    }
}

/// The clips of the loops nested anywhere in `g` whose whole end `owned` accepts.
fn nested_clips(g: &Graph, owned: &dyn Fn(&SymExpr) -> bool, out: &mut Vec<Clip>) {
    for n in g.nodes() {
        if let NodeKind::Map(m) = &n.kind {
            for p in &m.params {
                if let Some(c) = clip_of(&p.range.end, owned) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
            nested_clips(&m.body, owned, out);
        }
    }
}

/// `g` with every loop that ends at one of `clips` ending at its whole tile instead.
fn unclip(g: &mut Graph, clips: &[Clip]) {
    for n in g.nodes_mut() {
        if let NodeKind::Map(m) = &mut n.kind {
            for p in &mut m.params {
                if let Some(c) = clips.iter().find(|c| same_min(&p.range.end, c)) {
                    p.range.end = c.whole.clone();
                }
            }
            unclip(&mut m.body, clips);
        }
    }
}

/// Whether `end` is `min(whole, bound)` of `c`, in either order.
fn same_min(end: &SymExpr, c: &Clip) -> bool {
    matches!(end, SymExpr::Min(a, b)
        if (**a == c.whole && **b == c.bound) || (**a == c.bound && **b == c.whole))
}
