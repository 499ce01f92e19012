//! `dmove run --bench`: the baseline (the model lowered with every operator's default
//! implementation, no recipe), the recipe's result and the peers, timed side by side in one run
//! through the benchmark pipeline the demo and `dmove bench` use
//! ([`crate::bench::variants::measure`]), on the same random inputs.

use super::super::CliError;
use crate::bench::peer::Peer;
use crate::bench::variants::{measure, require_agreement, steps, Settings};
use crate::bench::workload::Workload;
use crate::bench::Row;
use crate::ir::Program;
use crate::progress::{Mode, Progress};

/// Timed repetitions per variant (the median is reported) and untimed warm-up runs.
const REPS: usize = 10;
const WARMUP: usize = 2;

/// The rows of the side-by-side table. `start` is the program as imported, `optimized` the
/// recipe's fully lowered result, `onnx` the model's bytes when it is an ONNX file (the peers
/// run the same file). Outputs are checked against the reference interpreter (or the
/// baseline's, for large models); a disagreement is an error.
pub fn side_by_side(
    start: &Program,
    optimized: &Program,
    onnx: Option<&[u8]>,
    seed: u64,
    progress: Mode,
) -> Result<Vec<Row>, CliError> {
    let workload = Workload::new("model", start.clone(), onnx.map(<[u8]>::to_vec), seed)?;
    let settings = Settings {
        warmup: WARMUP,
        reps: REPS,
        threads: crate::codegen::available_cpus(),
    };
    let peers = [Peer::OnnxRuntime, Peer::OpenVino];
    let variants = [("baseline", &workload.baseline), ("optimized", optimized)];
    let bar = Progress::new(progress, "benchmark", steps(variants.len(), peers.len()));
    let rows = measure(&workload, &variants, &peers, &settings, &bar)?;
    require_agreement(&rows)?;
    Ok(rows)
}
