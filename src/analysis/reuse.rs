//! Exact LRU reuse distances in O(log M) per access (Olken's algorithm).
//!
//! Every location's most recent access time is marked with a 1 in a Fenwick tree indexed by time.
//! The reuse distance of an access to a location last touched at time `p` is one plus the number
//! of marks after `p` (each is a distinct other location touched since), a range count whose
//! cost grows with the log of the distance. Only the latest access of each location stays marked, so at most M times are live;
//! when the time window fills up, the live marks are renumbered `0..M` in order (compaction), so
//! memory stays O(M) however long the trace is and every access costs O(log M) amortized.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The reuse distance of one access, with the cold-access convention of [`super`] applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reuse {
    /// Distinct locations touched since the previous access to this one, counting itself; for a
    /// first access, the number of distinct locations touched so far, counting itself.
    pub distance: u64,
    /// True when the location had never been accessed before.
    pub first: bool,
}

/// Sentinel for "never accessed" (dense table) and "no location" (time slot owners).
const NONE32: u32 = u32::MAX;
const NONE64: u64 = u64::MAX;
/// Smallest time window, so tiny traces do not compact constantly.
const MIN_WINDOW: usize = 1 << 12;

/// Where each location was last accessed: a flat table for a known, bounded address space (the
/// fast path), or a hash map for sparse addresses (sampled traces, arbitrary addresses).
enum LastAccess {
    Dense(Vec<u32>),
    Sparse(HashMap<u64, u32, BuildHasherDefault<MixHasher>>),
}

impl LastAccess {
    #[inline]
    fn get(&self, addr: u64) -> Option<u32> {
        match self {
            LastAccess::Dense(v) => Some(v[addr as usize]).filter(|&t| t != NONE32),
            LastAccess::Sparse(m) => m.get(&addr).copied(),
        }
    }

    #[inline]
    fn set(&mut self, addr: u64, time: u32) {
        match self {
            LastAccess::Dense(v) => v[addr as usize] = time,
            LastAccess::Sparse(m) => {
                m.insert(addr, time);
            }
        }
    }
}

/// Computes exact reuse distances of a stream of addresses.
pub struct ReuseEngine {
    last: LastAccess,
    /// Fenwick tree over time slots (1-based internally): 1 where a location's latest access is.
    tree: Vec<u32>,
    /// The location whose latest access is at each time slot, or `NONE64`.
    owner: Vec<u64>,
    /// The next time slot.
    now: usize,
    /// Distinct locations seen so far (= marks in the tree).
    live: u64,
}

impl ReuseEngine {
    /// An engine for addresses `0..space` (a flat last-access table of `space` entries).
    pub fn dense(space: u64) -> Self {
        let window = window_for(space);
        ReuseEngine::with(LastAccess::Dense(vec![NONE32; space as usize]), window)
    }

    /// An engine for arbitrary 64-bit addresses.
    pub fn sparse() -> Self {
        ReuseEngine::with(LastAccess::Sparse(HashMap::default()), MIN_WINDOW)
    }

    fn with(last: LastAccess, window: usize) -> Self {
        ReuseEngine {
            last,
            tree: vec![0; window + 1],
            owner: vec![NONE64; window],
            now: 0,
            live: 0,
        }
    }

    /// Distinct locations seen so far.
    pub fn footprint(&self) -> u64 {
        self.live
    }

    /// Records an access to `addr` and returns its reuse distance. Dense engines require
    /// `addr < space`.
    #[inline]
    pub fn access(&mut self, addr: u64) -> Reuse {
        if self.now == self.owner.len() {
            self.compact();
        }
        let reuse = match self.last.get(addr) {
            Some(prev) => {
                let prev = prev as usize;
                // Marks in slots (prev, now): distinct other locations touched since.
                let since = self.between(prev + 1, self.now);
                self.add(prev, u32::MAX); // wrapping −1
                self.owner[prev] = NONE64;
                Reuse {
                    distance: u64::from(since) + 1,
                    first: false,
                }
            }
            None => {
                self.live += 1;
                Reuse {
                    distance: self.live,
                    first: true,
                }
            }
        };
        let t = self.now;
        self.add(t, 1);
        self.owner[t] = addr;
        self.last.set(addr, t as u32);
        self.now += 1;
        reuse
    }

    /// Marks in slots `lo..hi` (`lo ≤ hi`): the two prefix walks run together and stop where
    /// they meet, so a short reuse costs O(log distance) tree reads, not O(log window).
    #[inline]
    fn between(&self, lo: usize, hi: usize) -> u32 {
        let (mut i, mut j) = (hi, lo);
        let mut s = 0u32;
        while i != j {
            if i > j {
                s = s.wrapping_add(self.tree[i]);
                i &= i - 1;
            } else {
                s = s.wrapping_sub(self.tree[j]);
                j &= j - 1;
            }
        }
        s
    }

    #[inline]
    fn add(&mut self, t: usize, delta: u32) {
        let n = self.tree.len();
        let mut i = t + 1;
        while i < n {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Renumbers the live marks to `0..live` (keeping their order) and, when they would fill
    /// more than half of the window, doubles it, so compactions stay amortized O(1) per access.
    fn compact(&mut self) {
        let live = self.live as usize;
        if 2 * live > self.owner.len() {
            let window = (2 * live).next_power_of_two().max(MIN_WINDOW);
            self.owner.resize(window, NONE64);
            self.tree.resize(window + 1, 0);
        }
        // In place: the j-th live mark moves to slot j ≤ its old slot.
        let mut j = 0usize;
        for t in 0..self.now {
            let addr = self.owner[t];
            if addr != NONE64 {
                self.owner[j] = addr;
                self.last.set(addr, j as u32);
                j += 1;
            }
        }
        self.owner[j..].fill(NONE64);
        // Fenwick node i covers slots (i − lowbit(i), i]; the marks are exactly slots 1..=live.
        for (i, node) in self.tree.iter_mut().enumerate() {
            let low = i - (i & i.wrapping_neg());
            *node = i.min(live).saturating_sub(low) as u32;
        }
        self.now = live;
    }
}

/// A time window that holds twice the address space, so a dense engine never has to grow.
fn window_for(space: u64) -> usize {
    (2 * space as usize).next_power_of_two().max(MIN_WINDOW)
}

/// A fast 64-bit mixer (the SplitMix64 finalizer): spreads consecutive addresses over the whole
/// range, for hashing and for spatial sampling.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hasher for the sparse last-access map (keys are already integers; SipHash would dominate).
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distances(engine: &mut ReuseEngine, trace: &[u64]) -> Vec<(u64, bool)> {
        trace
            .iter()
            .map(|&a| {
                let r = engine.access(a);
                (r.distance, r.first)
            })
            .collect()
    }

    #[test]
    fn issue_example_a_b_b_c_a() {
        // a b b c a: the second b has distance 1, the second a distance 3; first accesses
        // count the distinct locations so far.
        let trace = [0, 1, 1, 2, 0];
        let expected = vec![(1, true), (2, true), (1, false), (3, true), (3, false)];
        assert_eq!(distances(&mut ReuseEngine::dense(3), &trace), expected);
        assert_eq!(distances(&mut ReuseEngine::sparse(), &trace), expected);
    }

    #[test]
    fn compaction_keeps_distances_exact() {
        // A cyclic sweep over 3000 locations, far longer than the initial window: every
        // re-access has distance 3000.
        let mut e = ReuseEngine::sparse();
        let m = 3000u64;
        for round in 0..5 {
            for a in 0..m {
                let r = e.access(a * 7919);
                assert_eq!(r.first, round == 0);
                assert_eq!(r.distance, if round == 0 { a + 1 } else { m });
            }
        }
        assert_eq!(e.footprint(), m);
    }
}
