//! Which row (layer) each box of a scope goes in, and the order within rows: a layered
//! drawing with every memlet pointing down.
//!
//! Rows are longest paths from the sources, then every box moves down to just above its first
//! consumer, so weights, constants and a map's initialisation sit next to what reads them
//! instead of all in the first row. Within rows, a few sweeps order boxes by the mean position
//! of their neighbours in other rows (barycenters), which removes most crossings.

/// The layers of `n` items in topological order (`edges` as (from, to) positions), each layer
/// listing item positions left to right.
pub fn layers(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges {
        if a != b && a < n && b < n {
            preds[b].push(a);
            succs[a].push(b);
        }
    }
    let mut rank = vec![0usize; n];
    for v in 0..n {
        rank[v] = preds[v].iter().map(|&u| rank[u] + 1).max().unwrap_or(0);
    }
    // As late as possible: every box with consumers moves down to just above the first of
    // them (never above its own inputs, which move down after it, in reverse order).
    for v in (0..n).rev() {
        if let Some(first) = succs[v].iter().map(|&s| rank[s]).min() {
            rank[v] = rank[v].max(first.saturating_sub(1));
        }
    }
    let rows = rank.iter().max().map_or(0, |r| r + 1);
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); rows];
    for v in 0..n {
        layers[rank[v]].push(v);
    }
    for sweep in 0..4 {
        let neighbours = if sweep % 2 == 0 { &preds } else { &succs };
        reorder(&mut layers, neighbours, n);
    }
    layers
}

/// Sorts every layer by the mean relative position of each item's `neighbours` (items with
/// none keep their place), a stable sort so ties keep program order.
fn reorder(layers: &mut [Vec<usize>], neighbours: &[Vec<usize>], n: usize) {
    let mut at = vec![0.0f64; n];
    for layer in layers.iter() {
        for (i, &v) in layer.iter().enumerate() {
            at[v] = (i as f64 + 0.5) / layer.len() as f64;
        }
    }
    for layer in layers.iter_mut() {
        let keys: Vec<(usize, f64)> = (layer.iter())
            .map(|&v| {
                let ns = &neighbours[v];
                let key = if ns.is_empty() {
                    at[v]
                } else {
                    ns.iter().map(|&u| at[u]).sum::<f64>() / ns.len() as f64
                };
                (v, key)
            })
            .collect();
        let mut sorted = keys;
        sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
        *layer = sorted.into_iter().map(|(v, _)| v).collect();
        for (i, &v) in layer.iter().enumerate() {
            at[v] = (i as f64 + 0.5) / layer.len() as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weight_sits_just_above_its_consumer() {
        // x -> op1 -> t -> op2 -> y, with weight w read by op2 only.
        let edges = [(0, 1), (1, 2), (2, 4), (3, 4), (4, 5)];
        let l = layers(6, &edges);
        assert_eq!(l, vec![vec![0], vec![1], vec![2, 3], vec![4], vec![5]]);
        // a -> b -> c -> acc, and init -> buf -> acc: init and buf move down next to acc.
        let edges = [(0, 1), (1, 2), (2, 5), (3, 4), (4, 5)];
        let l = layers(6, &edges);
        let row = |v: usize| l.iter().position(|r| r.contains(&v)).unwrap();
        assert_eq!((row(3), row(4), row(5)), (1, 2, 3), "{l:?}");
    }

    #[test]
    fn every_edge_points_down_and_every_item_is_placed_once() {
        let edges = [(0, 2), (1, 2), (0, 3), (2, 4), (3, 4), (1, 5)];
        let l = layers(6, &edges);
        let row = |v: usize| l.iter().position(|r| r.contains(&v)).unwrap();
        for (a, b) in edges {
            assert!(row(a) < row(b), "{a} -> {b} in {l:?}");
        }
        let mut all: Vec<usize> = l.concat();
        all.sort();
        assert_eq!(all, (0..6).collect::<Vec<_>>());
    }
}
