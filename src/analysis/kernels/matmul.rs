//! Matrix multiplication C += L·R of n×n matrices: naive in any loop order, tiled, recursive.
//!
//! Every inner iteration (i, j, k) reads L[i][k], reads R[k][j], then reads and writes C[i][j].

use super::{array, Reader, F32};
use crate::analysis::{AnalysisError, ArrayInfo, Sink};

const L: usize = 0;
const R: usize = 1;
const C: usize = 2;

fn arrays(n: u64) -> Vec<ArrayInfo> {
    vec![
        array("L", n * n, F32),
        array("R", n * n, F32),
        array("C", n * n, F32),
    ]
}

/// The accesses of one inner iteration.
#[inline]
fn body(sink: &mut dyn Sink, n: u64, i: u64, j: u64, k: u64) {
    sink.access(0, L, i * n + k, false);
    sink.access(0, R, k * n + j, false);
    sink.access(0, C, i * n + j, false);
    sink.access(0, C, i * n + j, true);
}

/// Naive triple loop; `order` gives the loop variables outermost first (0 = i, 1 = j, 2 = k).
pub struct Naive {
    n: u64,
    order: [usize; 3],
}

impl Naive {
    pub(super) fn new(r: &mut Reader) -> Result<Self, AnalysisError> {
        let n = r.int("n", 64)?;
        let text = r.text("order", "ijk");
        let idx: Vec<usize> = text.chars().filter_map(|c| "ijk".find(c)).collect();
        let mut sorted = idx.clone();
        sorted.sort_unstable();
        if text.chars().count() != 3 || sorted != [0, 1, 2] {
            return Err(r.error("order", &format!("`{text}` is not a permutation of ijk")));
        }
        let order = [idx[0], idx[1], idx[2]];
        Ok(Naive { n, order })
    }

    pub(super) fn arrays(&self) -> Vec<ArrayInfo> {
        arrays(self.n)
    }

    pub(super) fn stream(&self, sink: &mut dyn Sink) {
        let n = self.n;
        let mut v = [0u64; 3];
        for a in 0..n {
            v[self.order[0]] = a;
            for b in 0..n {
                v[self.order[1]] = b;
                for c in 0..n {
                    v[self.order[2]] = c;
                    body(sink, n, v[0], v[1], v[2]);
                }
            }
        }
        sink.flops(0, 2 * n * n * n);
    }
}

/// Tiled loop nest jj, kk, i, j, k: a B×B tile of R is reused across all rows i.
pub struct Tiled {
    n: u64,
    tile: u64,
}

impl Tiled {
    pub(super) fn new(r: &mut Reader) -> Result<Self, AnalysisError> {
        Ok(Tiled {
            n: r.int("n", 64)?,
            tile: r.int("tile", 8)?,
        })
    }

    pub(super) fn arrays(&self) -> Vec<ArrayInfo> {
        arrays(self.n)
    }

    pub(super) fn stream(&self, sink: &mut dyn Sink) {
        let (n, b) = (self.n, self.tile);
        for jj in (0..n).step_by(b as usize) {
            for kk in (0..n).step_by(b as usize) {
                for i in 0..n {
                    for j in jj..(jj + b).min(n) {
                        for k in kk..(kk + b).min(n) {
                            body(sink, n, i, j, k);
                        }
                    }
                }
            }
        }
        sink.flops(0, 2 * n * n * n);
    }
}

/// Divide and conquer: halve i, j and k until every extent is at most `base`, then loop
/// naively (ijk); the eight sub-products run in (i, j, k) order.
pub struct Recursive {
    n: u64,
    base: u64,
}

/// A block of the iteration space: start and extent per loop variable.
#[derive(Clone, Copy)]
struct Block {
    start: [u64; 3],
    len: [u64; 3],
}

impl Recursive {
    pub(super) fn new(r: &mut Reader) -> Result<Self, AnalysisError> {
        Ok(Recursive {
            n: r.int("n", 64)?,
            base: r.int("base", 4)?,
        })
    }

    pub(super) fn arrays(&self) -> Vec<ArrayInfo> {
        arrays(self.n)
    }

    pub(super) fn stream(&self, sink: &mut dyn Sink) {
        let n = self.n;
        self.block(
            sink,
            Block {
                start: [0; 3],
                len: [n; 3],
            },
        );
        sink.flops(0, 2 * n * n * n);
    }

    fn block(&self, sink: &mut dyn Sink, b: Block) {
        if b.len.iter().all(|&l| l <= self.base) {
            for i in b.start[0]..b.start[0] + b.len[0] {
                for j in b.start[1]..b.start[1] + b.len[1] {
                    for k in b.start[2]..b.start[2] + b.len[2] {
                        body(sink, self.n, i, j, k);
                    }
                }
            }
            return;
        }
        // Each dimension splits into a lower and an upper half (the upper one empty when the
        // extent is already at most the base).
        let halves = |d: usize| {
            let l = b.len[d];
            let lo = if l > self.base { l / 2 } else { l };
            [(b.start[d], lo), (b.start[d] + lo, l - lo)]
        };
        let (hi, hj, hk) = (halves(0), halves(1), halves(2));
        for &(si, li) in &hi {
            for &(sj, lj) in &hj {
                for &(sk, lk) in &hk {
                    if li > 0 && lj > 0 && lk > 0 {
                        self.block(
                            sink,
                            Block {
                                start: [si, sj, sk],
                                len: [li, lj, lk],
                            },
                        );
                    }
                }
            }
        }
    }
}
