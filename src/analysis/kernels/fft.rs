//! Iterative radix-2 FFT (Cooley–Tukey, decimation in time) of n complex numbers in place.
//!
//! A bit-reversal permutation (node `bit-reverse`: each swapped pair is read and written), then
//! log2 n stages of butterflies (node `butterflies`): for span m = 2, 4, …, n, each butterfly
//! reads X[a], X[b] and the twiddle W[k·n/m], then writes X[a], X[b].

use super::{array, node, Reader};
use crate::analysis::{AnalysisError, ArrayInfo, NodeInfo, Sink};

/// A complex single-precision number.
const COMPLEX: u64 = 8;
const X: usize = 0;
const W: usize = 1;

pub struct Fft {
    n: u64,
}

impl Fft {
    pub(super) fn new(r: &mut Reader) -> Result<Self, AnalysisError> {
        let n = r.int("n", 1024)?;
        if !n.is_power_of_two() || n < 2 {
            return Err(r.error("n", &format!("{n} is not a power of two ≥ 2")));
        }
        Ok(Fft { n })
    }

    pub(super) fn arrays(&self) -> Vec<ArrayInfo> {
        vec![array("X", self.n, COMPLEX), array("W", self.n / 2, COMPLEX)]
    }

    pub(super) fn nodes() -> Vec<NodeInfo> {
        vec![node("bit-reverse"), node("butterflies")]
    }

    pub(super) fn stream(&self, sink: &mut dyn Sink) {
        let n = self.n;
        let bits = n.trailing_zeros();
        for i in 0..n {
            let j = i.reverse_bits() >> (64 - bits);
            if i < j {
                sink.access(0, X, i, false);
                sink.access(0, X, j, false);
                sink.access(0, X, i, true);
                sink.access(0, X, j, true);
            }
        }
        let mut m = 2;
        while m <= n {
            let half = m / 2;
            for start in (0..n).step_by(m as usize) {
                for k in 0..half {
                    let (a, b) = (start + k, start + k + half);
                    sink.access(1, X, a, false);
                    sink.access(1, X, b, false);
                    sink.access(1, W, k * (n / m), false);
                    sink.access(1, X, a, true);
                    sink.access(1, X, b, true);
                }
            }
            m *= 2;
        }
        // A butterfly: one complex multiplication (6 flops) and two complex additions (4).
        sink.flops(1, 10 * (n / 2) * u64::from(bits));
    }
}
