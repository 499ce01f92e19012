//! Keeping matches current across rewrites without re-enumerating the program.
//!
//! A rewrite changes a few nodes; a match can only appear or disappear near them. Whether a
//! match holds depends on its nodes, the edges between them and the readers of what they write
//! (one more hop), and every node of a match lies within the pattern's size in hops of any
//! other. So after a [`Change`], [`Matcher::update`] re-checks only matches with a node within
//! that radius of a changed node and searches for new ones only from anchors in that region.
//!
//! Node locations (scope path and petgraph index) are cached by id. `StableDiGraph` keeps the
//! indices of untouched nodes, so the cache stays right except where the change was; every
//! cached location is verified on use, and a miss falls back to re-indexing the whole program
//! once — slower, never wrong.

use super::search::{anchor_fits, holds, scopes, search_from};
use super::{Match, Pattern};
use crate::ir::{Graph, NodeId, NodeKind, Program};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};

/// What one rewrite changed, by stable id. `touched` is what the transformation reported;
/// `added`, `removed` and `modified` (content, edges or scope changed) come from comparing the
/// program before and after (see `transform::engine::Step`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub touched: Vec<NodeId>,
    pub added: Vec<NodeId>,
    pub removed: Vec<NodeId>,
    pub modified: Vec<NodeId>,
}

/// What an update did, for benchmarks and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// Existing matches re-checked because they were near a change.
    pub rechecked: usize,
    /// Matches that no longer hold.
    pub dropped: usize,
    /// Matches found that were not there before.
    pub found: usize,
    /// Anchors searched from.
    pub anchors: usize,
    /// Whether the location cache had to be rebuilt from scratch.
    pub reindexed: bool,
}

/// Where a node is: the map indices leading to its scope, and its index there.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Loc {
    path: Vec<NodeIndex>,
    idx: NodeIndex,
}

/// The matches of one pattern, kept current as the program is rewritten.
#[derive(Clone, Debug)]
pub struct Matcher {
    pattern: Pattern,
    matches: BTreeSet<Match>,
    /// For each node, the matches it takes part in.
    involving: BTreeMap<NodeId, BTreeSet<Match>>,
    locs: BTreeMap<NodeId, Loc>,
}

impl Matcher {
    /// Enumerates every match of `pattern` in `p`.
    pub fn new(pattern: Pattern, p: &Program) -> Matcher {
        let mut m = Matcher {
            pattern,
            matches: BTreeSet::new(),
            involving: BTreeMap::new(),
            locs: BTreeMap::new(),
        };
        m.index_all(p);
        for found in super::search::find_all(&m.pattern, p) {
            m.insert(found);
        }
        m
    }

    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    /// The current matches, sorted by their captures' ids.
    pub fn matches(&self) -> Vec<Match> {
        self.matches.iter().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.matches.len()
    }

    pub fn is_empty(&self) -> bool {
        self.matches.is_empty()
    }

    /// Brings the matches up to date with `p` after `change`.
    pub fn update(&mut self, p: &Program, change: &Change) -> UpdateStats {
        let mut stats = UpdateStats::default();
        for id in &change.removed {
            self.locs.remove(id);
        }
        let removed: BTreeSet<NodeId> = change.removed.iter().copied().collect();
        let seeds: BTreeSet<NodeId> = (change.touched.iter())
            .chain(&change.added)
            .chain(&change.modified)
            .copied()
            .filter(|id| !removed.contains(id))
            .collect();
        stats.reindexed = self.refresh(p, &seeds);
        let region = self.region(p, &seeds);
        let suspects: BTreeSet<Match> = (removed.iter().chain(region.keys()))
            .filter_map(|id| self.involving.get(id))
            .flatten()
            .cloned()
            .collect();
        for m in suspects {
            stats.rechecked += 1;
            let still = m.nodes.iter().all(|id| !removed.contains(id))
                && match self.scope_of(p, &m) {
                    Some(found) => found,
                    None if !stats.reindexed => {
                        stats.reindexed = true;
                        self.index_all(p);
                        self.scope_of(p, &m).unwrap_or(false)
                    }
                    None => false,
                };
            if !still {
                self.remove(&m);
                stats.dropped += 1;
            }
        }
        for loc in region.values() {
            let Some(g) = resolve_scope(p, &loc.path) else {
                continue;
            };
            if !anchor_fits(&self.pattern, p, g, loc.idx) {
                continue;
            }
            stats.anchors += 1;
            for m in search_from(&self.pattern, p, g, loc.idx) {
                if !self.matches.contains(&m) {
                    stats.found += 1;
                    self.insert(m);
                }
            }
        }
        stats
    }

    /// `Some(holds)` when every node of `m` is located in one scope, `None` when a location is
    /// stale or the nodes are in different scopes.
    fn scope_of(&self, p: &Program, m: &Match) -> Option<bool> {
        let mut path: Option<&Vec<NodeIndex>> = None;
        let mut idxs = Vec::with_capacity(m.nodes.len());
        for id in &m.nodes {
            let loc = self.locs.get(id)?;
            resolve(p, *id, loc)?;
            if path.is_some_and(|q| *q != loc.path) {
                return Some(false);
            }
            path = Some(&loc.path);
            idxs.push(loc.idx);
        }
        let g = resolve_scope(p, path?)?;
        Some(holds(&self.pattern, p, g, &idxs))
    }

    /// Re-indexes the changed nodes and everything nested in them; returns whether the whole
    /// program had to be re-indexed because a changed node could not be found nearby.
    fn refresh(&mut self, p: &Program, seeds: &BTreeSet<NodeId>) -> bool {
        let mut lost = Vec::new();
        let mut found = Vec::new();
        for &id in seeds {
            match self.locs.get(&id).filter(|l| resolve(p, id, l).is_some()) {
                Some(loc) => found.push(loc.clone()),
                None => lost.push(id),
            }
        }
        for loc in &found {
            self.index_subtree(p, loc);
        }
        if lost.is_empty() {
            return false;
        }
        // New nodes sit near a changed one (or inside a changed map).
        let reach = self.pattern.reach();
        for loc in &found {
            let Some(g) = resolve_scope(p, &loc.path) else {
                continue;
            };
            for idx in neighborhood(g, loc.idx, reach) {
                self.index_subtree(
                    p,
                    &Loc {
                        path: loc.path.clone(),
                        idx,
                    },
                );
            }
        }
        let still_lost = lost.iter().any(|id| {
            self.locs
                .get(id)
                .is_none_or(|l| resolve(p, *id, l).is_none())
        });
        if still_lost {
            self.index_all(p);
        }
        still_lost
    }

    /// Nodes within the pattern's reach of any seed, in the seed's scope.
    fn region(&self, p: &Program, seeds: &BTreeSet<NodeId>) -> BTreeMap<NodeId, Loc> {
        let reach = self.pattern.reach();
        let mut region: BTreeMap<NodeId, Loc> = BTreeMap::new();
        for id in seeds {
            let Some(start) = self.locs.get(id) else {
                continue;
            };
            let Some(g) = resolve_scope(p, &start.path) else {
                continue;
            };
            for idx in neighborhood(g, start.idx, reach) {
                region.insert(
                    g.node(idx).id,
                    Loc {
                        path: start.path.clone(),
                        idx,
                    },
                );
            }
        }
        region
    }

    fn index_all(&mut self, p: &Program) {
        self.locs.clear();
        for (path, g) in scopes(p) {
            for idx in g.node_indices() {
                self.locs.insert(
                    g.node(idx).id,
                    Loc {
                        path: path.clone(),
                        idx,
                    },
                );
            }
        }
    }

    /// Records `loc` for the node there and, for a map, every node nested in it.
    fn index_subtree(&mut self, p: &Program, loc: &Loc) {
        let Some(g) = resolve_scope(p, &loc.path) else {
            return;
        };
        let Some(node) = g.get_node(loc.idx) else {
            return;
        };
        self.locs.insert(node.id, loc.clone());
        if let NodeKind::Map(_) = &node.kind {
            let mut inner = loc.path.clone();
            inner.push(loc.idx);
            if let Some(body) = resolve_scope(p, &inner) {
                let idxs: Vec<NodeIndex> = body.node_indices().collect();
                for idx in idxs {
                    self.index_subtree(
                        p,
                        &Loc {
                            path: inner.clone(),
                            idx,
                        },
                    );
                }
            }
        }
    }

    fn insert(&mut self, m: Match) {
        for id in &m.nodes {
            self.involving.entry(*id).or_default().insert(m.clone());
        }
        self.matches.insert(m);
    }

    fn remove(&mut self, m: &Match) {
        for id in &m.nodes {
            if let Some(set) = self.involving.get_mut(id) {
                set.remove(m);
                if set.is_empty() {
                    self.involving.remove(id);
                }
            }
        }
        self.matches.remove(m);
    }
}

/// Nodes within `radius` hops of `start` (either direction), `start` included.
fn neighborhood(g: &Graph, start: NodeIndex, radius: usize) -> BTreeSet<NodeIndex> {
    let mut seen: BTreeSet<NodeIndex> = BTreeSet::from([start]);
    let mut frontier = vec![start];
    for _ in 0..radius {
        let mut next = Vec::new();
        for idx in frontier {
            for n in g.successors(idx).chain(g.predecessors(idx)) {
                if seen.insert(n) {
                    next.push(n);
                }
            }
        }
        frontier = next;
    }
    seen
}

/// The scope reached by following `path` (map indices) from the top-level graph.
fn resolve_scope<'p>(p: &'p Program, path: &[NodeIndex]) -> Option<&'p Graph> {
    let mut g = &p.graph;
    for &idx in path {
        match &g.get_node(idx)?.kind {
            NodeKind::Map(m) => g = &m.body,
            _ => return None,
        }
    }
    Some(g)
}

/// The scope of node `id` if the cached location still holds it.
fn resolve<'p>(p: &'p Program, id: NodeId, loc: &Loc) -> Option<&'p Graph> {
    let g = resolve_scope(p, &loc.path)?;
    (g.get_node(loc.idx)?.id == id).then_some(g)
}
