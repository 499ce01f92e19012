//! Streaming a compiled program's accesses in the interpreter's order, fast.
//!
//! The order is [`crate::interp::plan::walk`]'s: map parameters nested in order, body steps in
//! order, and per tasklet execution its plain reads, then its element reads (at the first
//! element of their window), then its writes (a write with conflict resolution is a read and a
//! write). A trace has ~10⁹ accesses per GFLOP-sized program, so how each one's address is found
//! decides how long an analysis takes: evaluating every index expression per access took about
//! 10 ns, more than the sampled reuse engine itself.
//!
//! The innermost loop of a map whose body is only tasklets is therefore strength-reduced: an
//! access whose indices are each affine or independent of the loop's parameter (`i_tile / 8` in
//! a packed block, for a loop over `k`) has a flat offset that is affine in the loop's counter,
//! so it is evaluated (and bounds-checked) at the first and the last iteration only — such an
//! index is monotone in the counter, so both ends in bounds means every iteration is — and
//! stepped by a constant in between. Everything else (indices with `min`, `floor`, `mod` of the
//! loop's parameter, element reads, loops that reach out of bounds) is evaluated per execution
//! exactly as before, so the stream and its errors are the same access for access.

use super::{simd, ArrayInfo, Sink};
use crate::interp::plan::{flat_offset, CAccess, CIdx, Step, TaskletStep};
use crate::interp::InterpError;
use crate::ir::NodeId;
use std::collections::BTreeMap;

/// A loop: `slot = lo, lo + st, …`, `count` iterations.
#[derive(Clone, Copy)]
struct Loop {
    slot: usize,
    lo: i64,
    st: i64,
    count: i64,
}

/// Streams one top-level node's steps into a sink.
pub(super) struct Walker<'a> {
    pub(super) arrays: &'a [ArrayInfo],
    pub(super) shapes: &'a [Vec<usize>],
    /// FLOPs of one execution of each tasklet.
    pub(super) tasklet_flops: &'a BTreeMap<NodeId, u64>,
    /// The top-level node every access is attributed to.
    pub(super) node: usize,
    pub(super) sink: &'a mut dyn Sink,
    /// Per access of the innermost loop's tasklets (inputs then outputs, tasklet after
    /// tasklet): its offset at the first iteration and its step, when it is affine.
    linear: Vec<Option<(u64, i64)>>,
}

impl<'a> Walker<'a> {
    pub(super) fn new(
        arrays: &'a [ArrayInfo],
        shapes: &'a [Vec<usize>],
        tasklet_flops: &'a BTreeMap<NodeId, u64>,
        node: usize,
        sink: &'a mut dyn Sink,
    ) -> Self {
        Walker {
            arrays,
            shapes,
            tasklet_flops,
            node,
            sink,
            linear: Vec::new(),
        }
    }

    /// Streams every access of `step` with the parameter slots `s`.
    pub(super) fn step(&mut self, step: &Step, s: &mut [i64]) -> Result<(), InterpError> {
        match step {
            Step::Map { params, body } => self.params(params, body, 0, s),
            Step::Tasklet(t) => {
                self.execution(t, s)?;
                let flops = self.flops(t, 1);
                if self.sink.counts_loops() {
                    self.sink.loop_run(self.node, flops, false, 1.0);
                }
                Ok(())
            }
        }
    }

    fn params(
        &mut self,
        params: &[(usize, [CIdx; 3])],
        body: &[Step],
        k: usize,
        s: &mut [i64],
    ) -> Result<(), InterpError> {
        let Some((slot, [start, end, step])) = params.get(k) else {
            return body.iter().try_for_each(|st| self.step(st, s));
        };
        let (Some(lo), Some(hi), Some(st)) = (start.eval(s), end.eval(s), step.eval(s)) else {
            return Ok(());
        };
        let st = st.max(1);
        if hi <= lo {
            return Ok(());
        }
        let count = (hi - lo - 1) / st + 1;
        if k + 1 == params.len() {
            // The loop around this one in the same map, which a compiler may interchange with it
            // when this loop's range does not depend on it.
            let outer = k.checked_sub(1).and_then(|o| {
                let (oslot, [ostart, oend, ostep]) = &params[o];
                let free = ![start, end, step].iter().any(|b| b.uses(*oslot));
                let (lo, hi, st) = (ostart.eval(s)?, oend.eval(s)?, ostep.eval(s)?.max(1));
                (free && hi > lo).then(|| Loop {
                    slot: *oslot,
                    lo,
                    st,
                    count: (hi - lo - 1) / st + 1,
                })
            });
            let lp = Loop {
                slot: *slot,
                lo,
                st,
                count,
            };
            if self.strided(lp, outer, body, s)? {
                return Ok(());
            }
        }
        for i in 0..count {
            s[*slot] = lo + i * st;
            self.params(params, body, k + 1, s)?;
        }
        Ok(())
    }

    /// Streams the innermost loop `lp` over `body` with affine accesses stepped; false (nothing
    /// streamed) when the body holds a map or an affine access leaves its container at either
    /// end of the loop, so the caller walks it plainly. `outer` is the enclosing loop of the
    /// same map when the two could be interchanged.
    fn strided(
        &mut self,
        lp: Loop,
        outer: Option<Loop>,
        body: &[Step],
        s: &mut [i64],
    ) -> Result<bool, InterpError> {
        let Loop {
            slot,
            lo,
            st,
            count,
        } = lp;
        if body.iter().any(|b| matches!(b, Step::Map { .. })) {
            return Ok(false);
        }
        // Every step of the body is a tasklet (no allocation: this runs per loop entry).
        let tasklets = || {
            body.iter().filter_map(|b| match b {
                Step::Tasklet(t) => Some(t),
                Step::Map { .. } => None,
            })
        };
        self.linear.clear();
        let last = lo + (count - 1) * st;
        for t in tasklets() {
            let accesses = t.inputs.iter().chain(t.outputs.iter().map(|(a, _, _)| a));
            for a in accesses {
                let stepped = |d: &CIdx| matches!(d, CIdx::Affine { .. }) || !d.uses(slot);
                let lin = if a.dims.iter().all(stepped) {
                    let Some(ends) = self.ends(a, slot, lo, last, s) else {
                        return Ok(false);
                    };
                    let (first, end) = ends;
                    let step = if count > 1 {
                        (end as i64 - first as i64) / (count - 1)
                    } else {
                        0
                    };
                    Some((first, step))
                } else {
                    None
                };
                self.linear.push(lin);
            }
        }
        let linear = std::mem::take(&mut self.linear);
        let result = (|| {
            for i in 0..count {
                s[slot] = lo + i * st;
                let mut probe = linear.iter();
                for t in tasklets() {
                    for a in &t.inputs {
                        let off = self.at(probe.next(), i, t.node, a, s)?;
                        self.sink.access(self.node, a.data, off, false);
                    }
                    self.windows(t, s)?;
                    for (a, wcr, _) in &t.outputs {
                        let off = self.at(probe.next(), i, t.node, a, s)?;
                        if wcr.is_some() {
                            self.sink.access(self.node, a.data, off, false);
                        }
                        self.sink.access(self.node, a.data, off, true);
                    }
                }
            }
            Ok(())
        })();
        self.linear = linear;
        result?;
        let flops = tasklets().map(|t| self.flops(t, count as u64)).sum();
        if self.sink.counts_loops() {
            let (vector, runs) = self.vectorizes(tasklets, lp, outer, s);
            self.sink.loop_run(self.node, flops, vector, runs);
        }
        Ok(true)
    }

    /// Whether the innermost loop `lp` over `tasklets` runs as SIMD lanes, and how many loop
    /// runs it stands for: 1 as written, or — when only the nest interchanged with `outer`
    /// vectorizes — its share of the interchanged inner loop's runs (`lp.count` of them per
    /// `outer.count` of these).
    fn vectorizes<'b, I: Iterator<Item = &'b TaskletStep>>(
        &self,
        tasklets: impl Fn() -> I,
        lp: Loop,
        outer: Option<Loop>,
        s: &mut [i64],
    ) -> (bool, f64) {
        let inner = self.linear.iter().map(|l| l.map(|(_, step)| step));
        if simd::lanes(tasklets(), inner, lp.count) {
            return (true, 1.0);
        }
        let swapped = outer.filter(|o| {
            s[lp.slot] = lp.lo;
            let steps = self.steps_along(tasklets(), o.slot, o.st, s);
            simd::lanes(tasklets(), steps, o.count)
        });
        swapped.map_or((false, 1.0), |o| (true, lp.count as f64 / o.count as f64))
    }

    /// How far each access of `tasklets` (inputs, then outputs) moves when slot `slot` moves by
    /// `step` from `s`, in elements; `None` for an access not affine in it or out of bounds.
    fn steps_along<'b>(
        &self,
        tasklets: impl Iterator<Item = &'b TaskletStep>,
        slot: usize,
        step: i64,
        s: &mut [i64],
    ) -> Vec<Option<i64>> {
        let at = s[slot];
        let mut out = Vec::new();
        for t in tasklets {
            for a in t.inputs.iter().chain(t.outputs.iter().map(|(a, _, _)| a)) {
                let affine =
                    (a.dims.iter()).all(|d| matches!(d, CIdx::Affine { .. }) || !d.uses(slot));
                let shape = &self.shapes[a.data];
                let from = flat_offset(a.dims.iter(), s, shape).ok();
                s[slot] = at + step;
                let to = flat_offset(a.dims.iter(), s, shape).ok();
                s[slot] = at;
                out.push(match (affine, from, to) {
                    (true, Some(f), Some(t)) => Some(t as i64 - f as i64),
                    _ => None,
                });
            }
        }
        out
    }

    /// The offsets of `a` at the loop's first and last iteration, or `None` when either is out
    /// of bounds.
    fn ends(
        &self,
        a: &CAccess,
        slot: usize,
        lo: i64,
        last: i64,
        s: &mut [i64],
    ) -> Option<(u64, u64)> {
        let shape = &self.shapes[a.data];
        s[slot] = lo;
        let first = flat_offset(a.dims.iter(), s, shape).ok()?;
        s[slot] = last;
        let end = flat_offset(a.dims.iter(), s, shape).ok()?;
        Some((first as u64, end as u64))
    }

    /// The offset of access `a` at iteration `i`: stepped when it is affine, else evaluated.
    #[inline]
    fn at(
        &self,
        linear: Option<&Option<(u64, i64)>>,
        i: i64,
        node: NodeId,
        a: &CAccess,
        s: &[i64],
    ) -> Result<u64, InterpError> {
        match linear {
            Some(Some((first, step))) => Ok(first.wrapping_add_signed(i * step)),
            _ => self.offset(node, a.data, a.dims.iter(), s),
        }
    }

    /// One execution of `t` at slots `s`, every index evaluated.
    fn execution(&mut self, t: &TaskletStep, s: &[i64]) -> Result<(), InterpError> {
        for a in &t.inputs {
            let off = self.offset(t.node, a.data, a.dims.iter(), s)?;
            self.sink.access(self.node, a.data, off, false);
        }
        self.windows(t, s)?;
        for (a, wcr, _) in &t.outputs {
            let off = self.offset(t.node, a.data, a.dims.iter(), s)?;
            if wcr.is_some() {
                self.sink.access(self.node, a.data, off, false);
            }
            self.sink.access(self.node, a.data, off, true);
        }
        Ok(())
    }

    /// The element reads of one execution of `t`: one read of each non-empty window's first
    /// element (see the module docs of `analysis`).
    fn windows(&mut self, t: &TaskletStep, s: &[i64]) -> Result<(), InterpError> {
        for w in t.windows.iter().filter(|w| !w.is_empty(s)) {
            let off = self.offset(t.node, w.data, w.start(), s)?;
            self.sink.access(self.node, w.data, off, false);
        }
        Ok(())
    }

    /// Reports the FLOPs of `executions` executions of `t`, and returns them.
    fn flops(&mut self, t: &TaskletStep, executions: u64) -> u64 {
        let flops = self.tasklet_flops.get(&t.node).copied().unwrap_or(0) * executions;
        self.sink.flops(self.node, flops);
        flops
    }

    /// The flat offset of the element of container `data` at indices `dims`.
    fn offset<'d>(
        &self,
        node: NodeId,
        data: usize,
        dims: impl ExactSizeIterator<Item = &'d CIdx> + Clone,
        s: &[i64],
    ) -> Result<u64, InterpError> {
        let shape = &self.shapes[data];
        flat_offset(dims, s, shape)
            .map(|o| o as u64)
            .map_err(|index| InterpError::OutOfBounds {
                node,
                data: self.arrays[data].name.clone(),
                index,
                shape: shape.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::analysis::trace::IrTrace;
    use crate::analysis::{AccessSource, Sink};
    use crate::interp::plan::{flat_offset, walk, CAccess, Compiler, MAX_SLOTS};
    use crate::ir::text::parse;
    use crate::ir::NodeKind;
    use crate::ops::expand::expand_all;

    /// Records every access and the FLOPs per node.
    #[derive(Default, PartialEq, Debug)]
    struct Recorder {
        accesses: Vec<(usize, usize, u64, bool)>,
        flops: Vec<u64>,
    }

    impl Sink for Recorder {
        fn access(&mut self, node: usize, array: usize, index: u64, write: bool) {
            self.accesses.push((node, array, index, write));
        }
        fn flops(&mut self, node: usize, flops: u64) {
            if self.flops.len() <= node {
                self.flops.resize(node + 1, 0);
            }
            self.flops[node] += flops;
        }
    }

    /// The accesses of `src` visited the plain way: every execution, every index evaluated; and
    /// the compiled plans, printed.
    fn plain(src: &str) -> (Vec<(usize, usize, u64, bool)>, String) {
        let mut p = parse(src).expect("parses").program;
        expand_all(&mut p).expect("lowers");
        let env = p.symbol_values();
        let shapes: Vec<Vec<usize>> = (p.data.values())
            .map(|d| {
                d.shape
                    .iter()
                    .map(|x| x.eval(&env).unwrap() as usize)
                    .collect()
            })
            .collect();
        let mut out = Vec::new();
        let mut plans = String::new();
        let mut slots = vec![0i64; MAX_SLOTS];
        let g = &p.graph;
        let tops = g.ordered().into_iter();
        let tops = tops.filter(|&i| !matches!(g.node(i).kind, NodeKind::Access(_)));
        for (k, idx) in tops.enumerate() {
            let step = Compiler::new(&env, &p.data).node(g, idx).expect("compiles");
            plans += &format!("{step:?}");
            walk(&step, &mut slots, &mut |t, s| {
                let at =
                    |a: &CAccess| flat_offset(a.dims.iter(), s, &shapes[a.data]).unwrap() as u64;
                for a in &t.inputs {
                    out.push((k, a.data, at(a), false));
                }
                for w in t.windows.iter().filter(|w| !w.is_empty(s)) {
                    let off = flat_offset(w.start(), s, &shapes[w.data]).unwrap() as u64;
                    out.push((k, w.data, off, false));
                }
                for (a, wcr, _) in &t.outputs {
                    if wcr.is_some() {
                        out.push((k, a.data, at(a), false));
                    }
                    out.push((k, a.data, at(a), true));
                }
                Ok::<(), ()>(())
            })
            .unwrap();
        }
        (out, plans)
    }

    fn strided(src: &str) -> Recorder {
        let p = parse(src).expect("parses").program;
        let mut r = Recorder::default();
        IrTrace::new(&p)
            .expect("traces")
            .stream(&mut r)
            .expect("streams");
        r
    }

    const CONV: &str = r#"program "conv"
data X: f32[1, 3, 7, 6] input
data W: f32[4, 3, 3, 3] input
data Y: f32[1, 4, 4, 3] output
signature (X, W) -> (Y)
graph {
  n0 access X
  n1 access W
  n2 library "c" Conv { pads = [1, 0, 1, 1], strides = [2, 2] }
  n3 access Y
  n0 -> n2 X[0:1, 0:3, 0:7, 0:6] -> in0
  n1 -> n2 W[0:4, 0:3, 0:3, 0:3] -> in1
  n2 -> n3 out0 -> Y[0:1, 0:4, 0:4, 0:3]
}
"#;

    #[test]
    fn clamped_padded_convolution_streams_as_the_plain_walk() {
        let r = strided(CONV);
        let (want, plans) = plain(CONV);
        assert!(
            plans.contains("Clamped"),
            "the padded reads are clamped: {plans}"
        );
        assert_eq!(r.accesses, want);
        // Per window element: `select(inside_h and inside_w, x·w, 0)` (two tests, `and`, the
        // select, the product) and the accumulation into y.
        assert_eq!(r.flops.iter().sum::<u64>(), 6 * (4 * 4 * 3) * (3 * 3 * 3));
    }

    #[test]
    fn matmul_streams_as_the_plain_walk() {
        let src = include_str!("../../docs/examples/matmul.ir").replace("n = 256", "n = 9");
        assert_eq!(strided(&src).accesses, plain(&src).0);
    }
}
