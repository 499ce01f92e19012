//! Whether an innermost loop runs as SIMD lanes, judged as gcc's vectorizer does for the code
//! dmove emits, from how far each access moves per iteration (what `analysis::walk` finds).
//!
//! A loop vectorizes when every read steps by one element or stays put, every write steps by
//! one element or is a plain write that stays put (a temporary the compiler keeps per lane),
//! and no element is read at a computed index. A write with conflict resolution that stays put
//! is a reduction, which strict IEEE arithmetic keeps scalar. The walk also tries the enclosing
//! loop of the same map in the inner one's place, as gcc's loop interchange does (it turns a
//! naive `i, j, k` matmul into `i, k, j` and vectorizes that), and then counts the runs of the
//! interchanged inner loop; other compiler decisions (cost models, outer-loop vectorization,
//! gathers) are not foreseen.

use crate::interp::plan::TaskletStep;

/// Whether a loop of `count` iterations over `tasklets` runs as lanes, given each access's step
/// in elements (inputs then outputs, tasklet after tasklet; `None` when it is not affine).
pub(super) fn lanes<'a>(
    mut tasklets: impl Iterator<Item = &'a TaskletStep>,
    steps: impl IntoIterator<Item = Option<i64>>,
    count: i64,
) -> bool {
    if count < 2 {
        return false;
    }
    let mut step = steps.into_iter();
    tasklets.all(|t| {
        let reads = (t.inputs.iter()).all(|_| matches!(step.next(), Some(Some(0 | 1))));
        let writes = (t.outputs.iter()).all(|(_, wcr, _)| match step.next() {
            Some(Some(1)) => true,
            Some(Some(0)) => wcr.is_none(),
            _ => false,
        });
        t.windows.is_empty() && reads && writes
    })
}
