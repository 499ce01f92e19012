//! Neural-network kernels: attention (MHA / GQA / MQA) and batched 2-D convolution.

use super::{array, node, Reader, F32};
use crate::analysis::{AnalysisError, ArrayInfo, NodeInfo, Sink};

/// Attention of `heads` query heads over `heads / group` key/value heads (group 1 is multi-head,
/// group = heads is multi-query attention), sequence `seq`, head dimension `dim`.
///
/// Loop nest: for each K/V head, for each query head of its group, for each query row i:
/// scores S[j] = Σ_e Q[h][i][e]·K[g][j][e] (node `scores`), a three-pass softmax over the row
/// (max; exp and sum; normalize — node `softmax`), and O[h][i][e] = Σ_j S[j]·V[g][j][e] (node
/// `output`, accumulated in a register). Query heads of one group run back to back, so they share
/// the K/V head while it is recent.
pub struct Attention {
    seq: u64,
    dim: u64,
    heads: u64,
    group: u64,
}

const Q: usize = 0;
const K: usize = 1;
const V: usize = 2;
const S: usize = 3;
const O: usize = 4;

impl Attention {
    pub(super) fn new(r: &mut Reader) -> Result<Self, AnalysisError> {
        let a = Attention {
            seq: r.int("seq", 128)?,
            dim: r.int("dim", 32)?,
            heads: r.int("heads", 8)?,
            group: r.int("group", 1)?,
        };
        if !a.heads.is_multiple_of(a.group) {
            return Err(r.error(
                "group",
                &format!("{} does not divide heads = {}", a.group, a.heads),
            ));
        }
        Ok(a)
    }

    pub(super) fn arrays(&self) -> Vec<ArrayInfo> {
        let kv = self.heads / self.group;
        vec![
            array("Q", self.heads * self.seq * self.dim, F32),
            array("K", kv * self.seq * self.dim, F32),
            array("V", kv * self.seq * self.dim, F32),
            array("S", self.seq, F32),
            array("O", self.heads * self.seq * self.dim, F32),
        ]
    }

    pub(super) fn nodes() -> Vec<NodeInfo> {
        vec![node("scores"), node("softmax"), node("output")]
    }

    pub(super) fn stream(&self, sink: &mut dyn Sink) {
        let (s, d) = (self.seq, self.dim);
        for g in 0..self.heads / self.group {
            for h in g * self.group..(g + 1) * self.group {
                for i in 0..s {
                    let q = (h * s + i) * d;
                    for j in 0..s {
                        for e in 0..d {
                            sink.access(0, Q, q + e, false);
                            sink.access(0, K, (g * s + j) * d + e, false);
                        }
                        sink.access(0, S, j, true);
                    }
                    for j in 0..s {
                        sink.access(1, S, j, false);
                    }
                    for _pass in 0..2 {
                        for j in 0..s {
                            sink.access(1, S, j, false);
                            sink.access(1, S, j, true);
                        }
                    }
                    for e in 0..d {
                        for j in 0..s {
                            sink.access(2, S, j, false);
                            sink.access(2, V, (g * s + j) * d + e, false);
                        }
                        sink.access(2, O, q + e, true);
                    }
                }
            }
        }
        let rows = self.heads * s;
        sink.flops(0, rows * s * 2 * d);
        sink.flops(1, rows * s * 4);
        sink.flops(2, rows * s * 2 * d);
    }
}

/// Batched 2-D convolution (valid padding, stride 1) of `batch` images with `channels` channels
/// of `image`×`image` pixels by `filters` filters of `kernel`×`kernel`, processed in blocks of
/// `block` images.
///
/// Loop nest: for each block of images, for each filter k, output row y and column x, for each
/// image n of the block: O[n][k][y][x] = Σ_{c,r,s} I[n][c][y+r][x+s]·W[k][c][r][s]
/// (accumulated in a register). The block trades reuse of the filter slice W[k] (larger blocks
/// reuse it across more images) against reuse of the input windows (smaller blocks keep them).
pub struct Conv {
    batch: u64,
    channels: u64,
    filters: u64,
    image: u64,
    kernel: u64,
    block: u64,
}

impl Conv {
    pub(super) fn new(r: &mut Reader) -> Result<Self, AnalysisError> {
        let batch = r.int("batch", 8)?;
        let c = Conv {
            batch,
            channels: r.int("channels", 8)?,
            filters: r.int("filters", 8)?,
            image: r.int("image", 16)?,
            kernel: r.int("kernel", 3)?,
            block: r.int("block", batch)?,
        };
        if c.kernel > c.image {
            return Err(r.error(
                "kernel",
                &format!("{} is larger than the image ({})", c.kernel, c.image),
            ));
        }
        Ok(c)
    }

    fn out(&self) -> u64 {
        self.image - self.kernel + 1
    }

    pub(super) fn arrays(&self) -> Vec<ArrayInfo> {
        let (n, c, k) = (self.batch, self.channels, self.filters);
        vec![
            array("I", n * c * self.image * self.image, F32),
            array("W", k * c * self.kernel * self.kernel, F32),
            array("O", n * k * self.out() * self.out(), F32),
        ]
    }

    pub(super) fn stream(&self, sink: &mut dyn Sink) {
        let (hw, rs, out) = (self.image, self.kernel, self.out());
        for n0 in (0..self.batch).step_by(self.block as usize) {
            for k in 0..self.filters {
                for y in 0..out {
                    for x in 0..out {
                        for n in n0..(n0 + self.block).min(self.batch) {
                            for c in 0..self.channels {
                                for r in 0..rs {
                                    for s in 0..rs {
                                        let i = ((n * self.channels + c) * hw + y + r) * hw + x + s;
                                        sink.access(0, 0, i, false);
                                        let w = ((k * self.channels + c) * rs + r) * rs + s;
                                        sink.access(0, 1, w, false);
                                    }
                                }
                            }
                            sink.access(0, 2, ((n * self.filters + k) * out + y) * out + x, true);
                        }
                    }
                }
            }
        }
        let macs = self.batch * self.filters * out * out * self.channels * rs * rs;
        sink.flops(0, 2 * macs);
    }
}
