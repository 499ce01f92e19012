//! `dmove run --bench`: the baseline (the model lowered with every operator's default
//! implementation, no recipe), the recipe's result and ONNX Runtime, timed side by side in one
//! run with the demo's timing code ([`crate::bench::variants::time_variants`]) on the same random inputs.

use super::super::CliError;
use crate::bench::variants::{time_variants, Timing};
use crate::bench::Row;
use crate::ir::Program;
use crate::ops::expand::expand_all;

/// Timed repetitions per variant (the median is reported) and untimed warm-up runs.
const REPS: usize = 10;
const WARMUP: usize = 2;

/// The rows of the side-by-side table. `start` is the program as imported, `optimized` the
/// recipe's fully lowered result, `onnx` the model's bytes when it is an ONNX file (the peer
/// runs the same file). Outputs are checked against the baseline's.
pub fn side_by_side(
    start: &Program,
    optimized: &Program,
    onnx: Option<&[u8]>,
    seed: u64,
) -> Result<Vec<Row>, CliError> {
    let mut baseline = start.clone();
    expand_all(&mut baseline)?;
    let inputs = crate::check::random_inputs(&baseline, seed)
        .map_err(|e| CliError::Usage(format!("cannot make inputs to benchmark the model: {e}")))?;
    let timing = Timing {
        warmup: WARMUP,
        reps: REPS,
        peer: onnx,
        flops: crate::ops::flops::program_flops(start),
    };
    let variants = [("baseline", &baseline), ("optimized", optimized)];
    let timed = time_variants(&variants, &inputs, None, &timing, &mut |msg| {
        eprintln!("· {msg}")
    })?;
    Ok(timed.rows)
}
