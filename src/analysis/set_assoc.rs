//! An exact set-associative LRU cache of lines, for the innermost level.
//!
//! Reuse distances model a fully associative cache, which misses the conflicts that dominate
//! some real programs: a column of a 512×512 `f32` matrix is 512 lines 2 KiB apart, which a
//! fully associative 48 KiB cache holds, but which fall into 2 of the 64 sets of a 12-way L1, so
//! every access of the next column misses. The innermost data cache is indexed by address bits
//! inside the page (virtually indexed), so the trace's addresses decide its sets exactly, given
//! where arrays start; outer levels are indexed by physical addresses the trace cannot know, so
//! they stay fully associative.

/// A set-associative cache with LRU replacement in each set.
pub struct SetAssoc {
    ways: usize,
    sets: u64,
    /// `sets × ways` line tags, most recently used first within each set; `u64::MAX` is empty.
    tags: Vec<u64>,
}

impl SetAssoc {
    /// A cache of `sets` sets of `ways` lines; `None` unless both are positive.
    pub fn new(sets: u64, ways: u64) -> Option<SetAssoc> {
        let len = usize::try_from(sets.checked_mul(ways)?).ok()?;
        (len > 0).then(|| SetAssoc {
            ways: ways as usize,
            sets,
            tags: vec![u64::MAX; len],
        })
    }

    /// Accesses `line`; true on a hit.
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        let start = (line % self.sets) as usize * self.ways;
        let set = &mut self.tags[start..start + self.ways];
        match set.iter().position(|&t| t == line) {
            Some(k) => {
                set[..=k].rotate_right(1);
                true
            }
            None => {
                set.rotate_right(1);
                set[0] = line;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_one_set_evict_each_other_beyond_its_ways() {
        let mut c = SetAssoc::new(4, 2).expect("a cache");
        // 0, 4 and 8 share set 0; 1 is alone in set 1.
        assert!(!c.access(0));
        assert!(!c.access(4));
        assert!(c.access(0));
        assert!(!c.access(8)); // evicts 4, the least recently used of set 0
        assert!(c.access(0));
        assert!(!c.access(4));
        assert!(!c.access(1));
        assert!(c.access(1));
        assert!(SetAssoc::new(0, 8).is_none());
    }
}
