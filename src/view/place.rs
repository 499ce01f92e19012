//! Coordinates: every scope laid out on its own, boxes of a row side by side, rows top to
//! bottom, a map's box around its placed body.
//!
//! Each box is centred under the mean of the boxes that feed it (so chains are straight), then
//! pushed right as little as needed to keep a gap from its left neighbour. The HTML viewer's
//! script (`viewer.js`, `place`) repeats exactly these rules when a scope is collapsed or
//! expanded; the browser test checks both give the same coordinates.

use super::scene::{Scope, PAD};

/// Horizontal gap between boxes of a row, and vertical gap between rows (room for the memlet
/// labels written on the edges).
pub const GAP_X: f64 = 28.0;
pub const GAP_Y: f64 = 44.0;

/// A placed scope: each item's top-left corner and size, and the bodies of its maps.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub at: Vec<(f64, f64)>,
    pub size: Vec<(f64, f64)>,
    pub bodies: Vec<Option<Placed>>,
    pub width: f64,
    pub height: f64,
}

/// Places `s` and, first, every map body in it.
pub fn place(s: &Scope) -> Placed {
    let bodies: Vec<Option<Placed>> = s.items.iter().map(|i| i.body.as_ref().map(place)).collect();
    let size: Vec<(f64, f64)> = (s.items.iter().zip(&bodies))
        .map(|(item, body)| match body {
            Some(b) => (
                item.width.max(b.width + 2.0 * PAD),
                item.height + b.height + PAD,
            ),
            None => (item.width, item.height),
        })
        .collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); s.items.len()];
    for e in &s.edges {
        preds[e.to].push(e.from);
    }
    let mut at = vec![(0.0, 0.0); s.items.len()];
    let mut y = 0.0;
    for layer in &s.layers {
        let mut cursor = f64::NEG_INFINITY;
        let mut row_h: f64 = 0.0;
        for &v in layer {
            let (w, h) = size[v];
            let fed: Vec<f64> = (preds[v].iter())
                .map(|&u| at[u].0 + size[u].0 / 2.0)
                .collect();
            let want = if fed.is_empty() {
                cursor.max(0.0)
            } else {
                fed.iter().sum::<f64>() / fed.len() as f64 - w / 2.0
            };
            let x = want.max(cursor);
            at[v] = (x, y);
            cursor = x + w + GAP_X;
            row_h = row_h.max(h);
        }
        y += row_h + GAP_Y;
    }
    let left = at.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let left = if left.is_finite() { left } else { 0.0 };
    for p in at.iter_mut() {
        p.0 -= left;
    }
    let width = (at.iter().zip(&size))
        .map(|(p, s)| p.0 + s.0)
        .fold(0.0, f64::max);
    Placed {
        height: (y - GAP_Y).max(0.0),
        at,
        size,
        bodies,
        width,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixtures::matmul;
    use crate::ir::{Schedule, SymExpr};
    use crate::view::colour::{Colouring, Metric};
    use crate::view::scene::scene;

    fn placed() -> (Scope, Placed) {
        let n = || SymExpr::from(8);
        let p = matmul(n(), n(), n(), Schedule::Sequential);
        let c = Colouring::measure(Metric::Bytes, &[&p]).unwrap().remove(0);
        let s = scene(&p, &c);
        let placed = place(&s);
        (s, placed)
    }

    /// Checks one scope and the scopes inside it.
    fn check(s: &Scope, p: &Placed) {
        for layer in &s.layers {
            for pair in layer.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                assert!(
                    p.at[a].0 + p.size[a].0 + GAP_X <= p.at[b].0 + 1e-9,
                    "boxes of a row overlap"
                );
            }
        }
        for e in &s.edges {
            assert!(
                p.at[e.from].1 + p.size[e.from].1 < p.at[e.to].1,
                "edges point down"
            );
        }
        for (k, item) in s.items.iter().enumerate() {
            if let (Some(body), Some(bp)) = (&item.body, &p.bodies[k]) {
                assert!(
                    p.size[k].0 >= bp.width + 2.0 * PAD,
                    "a map's box holds its body"
                );
                assert!(p.size[k].1 >= item.height + bp.height, "and its header");
                check(body, bp);
            }
        }
        assert!(p
            .at
            .iter()
            .zip(&p.size)
            .all(|(a, z)| a.0 >= 0.0 && a.0 + z.0 <= p.width + 1e-9));
    }

    #[test]
    fn rows_never_overlap_edges_point_down_and_maps_hold_their_bodies() {
        let (s, p) = placed();
        check(&s, &p);
        assert!(
            s.items.iter().any(|i| i.body.is_some()),
            "the matmul has maps"
        );
    }

    #[test]
    fn a_box_fed_by_one_box_sits_right_under_it() {
        let (s, p) = placed();
        let centre = |k: usize| p.at[k].0 + p.size[k].0 / 2.0;
        let single: Vec<(usize, usize)> = (0..s.items.len())
            .filter_map(|to| {
                let from: Vec<usize> = s
                    .edges
                    .iter()
                    .filter(|e| e.to == to)
                    .map(|e| e.from)
                    .collect();
                (from.len() == 1).then(|| (from[0], to))
            })
            .collect();
        assert!(!single.is_empty());
        // Unless pushed right by a neighbour: then it is to the right, never to the left.
        for (a, b) in single {
            assert!(centre(b) >= centre(a) - 1e-9, "{a} -> {b}");
        }
    }
}
