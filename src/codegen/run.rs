//! Running a compiled program: inputs are checked, written as raw little-endian files into a
//! temporary directory, the binary is run, and outputs and timings are read back.

use super::compile::{head, Compiled};
use super::{CArg, CodegenError};
use crate::ir::{Buffer, DType, Tensor};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Lines of the program's stderr kept in an error.
const STDERR_LINES: usize = 20;

/// An OpenMP setting the generated program runs with unless the environment makes its own
/// choice (any of `unless` is set): the runner, and the Makefile `dmove build` ships, apply
/// these.
pub struct OmpDefault {
    pub var: &'static str,
    pub value: &'static str,
    pub unless: &'static [&'static str],
    /// Applied only when the program runs one thread on every CPU it may use: libgomp binds
    /// the first thread of every process to the first CPU, so bound programs with fewer
    /// threads (tests and checks side by side, one thread each) would all share that CPU.
    pub whole_machine: bool,
}

/// The settings, measured on this 2-vCPU virtual machine (a 4×128×128 softmax, 2 threads):
/// - `GOMP_SPINCOUNT`: how long an idle thread spins at a barrier before it sleeps (a few
///   microseconds). libgomp's default spins about thirty times longer, which is cheap on an
///   idle machine but on a loaded one burns the time slice a descheduled sibling needs to
///   reach the barrier.
/// - `OMP_PROC_BIND` (with a thread per CPU): unbound, the scheduler wakes the second thread on the CPU of the first
///   in about one run in five; that run then waits a scheduler tick (1.06 ms instead of
///   0.04 ms). Beside a busy process, unbound threads also meet on one CPU: a 3×3 convolution
///   took 4.5 ms unbound and 1.5 ms bound.
pub const OMP_DEFAULTS: [OmpDefault; 2] = [
    OmpDefault {
        var: "GOMP_SPINCOUNT",
        value: "10000",
        unless: &["OMP_WAIT_POLICY", "GOMP_SPINCOUNT"],
        whole_machine: false,
    },
    OmpDefault {
        var: "OMP_PROC_BIND",
        value: "true",
        unless: &["OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"],
        whole_machine: true,
    },
];

impl Compiled {
    /// Runs the program once on `inputs` (by name) and returns its outputs by name.
    pub fn run(
        &self,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>, CodegenError> {
        self.run_threads(inputs, None)
    }

    /// [`Compiled::run`] with `OMP_NUM_THREADS=threads` for the program (the environment's
    /// setting, or OpenMP's default, when `None`).
    pub fn run_threads(
        &self,
        inputs: &BTreeMap<String, Tensor>,
        threads: Option<usize>,
    ) -> Result<BTreeMap<String, Tensor>, CodegenError> {
        Ok(self.execute(inputs, 0, 1, threads)?.0)
    }

    /// Runs `warmup` untimed then `reps` timed calls of the entry point in one process and
    /// returns the wall time of each timed call in milliseconds (start-up and I/O excluded).
    pub fn bench(
        &self,
        inputs: &BTreeMap<String, Tensor>,
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f64>, CodegenError> {
        Ok(self.execute(inputs, warmup, reps, None)?.1)
    }

    /// [`Compiled::bench`] with `OMP_NUM_THREADS=threads` for the program (the environment's
    /// setting, or OpenMP's default, when `None`).
    pub fn bench_threads(
        &self,
        inputs: &BTreeMap<String, Tensor>,
        warmup: usize,
        reps: usize,
        threads: Option<usize>,
    ) -> Result<Vec<f64>, CodegenError> {
        Ok(self.execute(inputs, warmup, reps, threads)?.1)
    }

    fn execute(
        &self,
        inputs: &BTreeMap<String, Tensor>,
        warmup: usize,
        reps: usize,
        threads: Option<usize>,
    ) -> Result<(BTreeMap<String, Tensor>, Vec<f64>), CodegenError> {
        check_inputs(&self.program.inputs, inputs)?;
        let dir = tempfile::Builder::new()
            .prefix("dmove-run-")
            .tempdir()
            .map_err(CodegenError::io("creating a run directory"))?;
        for (k, arg) in self.program.inputs.iter().enumerate() {
            let path = dir.path().join(format!("in{k}.bin"));
            std::fs::write(&path, inputs[&arg.name].to_le_bytes())
                .map_err(CodegenError::io(format!("writing {}", path.display())))?;
        }
        let mut command = Command::new(&self.binary);
        if let Some(n) = threads {
            command.env("OMP_NUM_THREADS", n.to_string());
        }
        command.envs(omp_settings(threads));
        let result = crate::interrupt::output(
            command
                .arg(&self.weights)
                .arg(dir.path())
                .arg(warmup.to_string())
                .arg(reps.to_string()),
        )
        .map_err(CodegenError::io(format!(
            "running {}",
            self.binary.display()
        )))?;
        if !result.status.success() {
            return Err(CodegenError::Run {
                status: result.status.to_string(),
                stderr: head(&String::from_utf8_lossy(&result.stderr), STDERR_LINES),
            });
        }
        let mut outputs = BTreeMap::new();
        for (k, arg) in self.program.outputs.iter().enumerate() {
            let bytes = read(&dir.path().join(format!("out{k}.bin")))?;
            outputs.insert(arg.name.clone(), decode(arg, &bytes)?);
        }
        let times = String::from_utf8_lossy(&read(&dir.path().join("times.txt"))?).into_owned();
        let times: Vec<f64> = times
            .lines()
            .map(|l| {
                l.trim()
                    .parse::<f64>()
                    .map_err(|_| CodegenError::BadOutput(format!("timing line `{l}`")))
            })
            .collect::<Result<_, _>>()?;
        if times.len() != reps {
            return Err(CodegenError::BadOutput(format!(
                "{} timings for {reps} repetitions",
                times.len()
            )));
        }
        Ok((outputs, times))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CodegenError> {
    std::fs::read(path).map_err(CodegenError::io(format!("reading {}", path.display())))
}

/// `f32[2, 3]`: a dtype and shape as messages and generated documentation write them.
pub(crate) fn describe(dtype: DType, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{dtype}[{}]", dims.join(", "))
}

/// Every expected input present with its dtype and shape, and nothing else.
fn check_inputs(expected: &[CArg], given: &BTreeMap<String, Tensor>) -> Result<(), CodegenError> {
    if let Some(extra) = given
        .keys()
        .find(|n| !expected.iter().any(|a| &a.name == *n))
    {
        let names: Vec<&str> = expected.iter().map(|a| a.name.as_str()).collect();
        return Err(CodegenError::UnexpectedInput {
            name: extra.clone(),
            expected: names.join(", "),
        });
    }
    for arg in expected {
        let t = given
            .get(&arg.name)
            .ok_or_else(|| CodegenError::MissingInput {
                name: arg.name.clone(),
            })?;
        if t.dtype() != arg.dtype || t.shape != arg.shape || t.len() != arg.elements() {
            return Err(CodegenError::InputMismatch {
                name: arg.name.clone(),
                expected: describe(arg.dtype, &arg.shape),
                got: describe(t.dtype(), &t.shape),
            });
        }
    }
    Ok(())
}

/// A tensor from the raw little-endian bytes the harness wrote.
fn decode(arg: &CArg, bytes: &[u8]) -> Result<Tensor, CodegenError> {
    if bytes.len() != arg.bytes() {
        return Err(CodegenError::BadOutput(format!(
            "output `{}` has {} bytes, expected {}",
            arg.name,
            bytes.len(),
            arg.bytes()
        )));
    }
    let data = Buffer::from_le_bytes(arg.dtype, bytes).ok_or_else(|| {
        CodegenError::BadOutput(format!(
            "output `{}` is not a whole number of {} elements",
            arg.name, arg.dtype
        ))
    })?;
    Ok(Tensor {
        shape: arg.shape.clone(),
        data,
    })
}

/// The [`OMP_DEFAULTS`] a program run with `threads` threads (the environment's
/// `OMP_NUM_THREADS`, or every CPU, when `None`) gets on top of this process's environment:
/// those the environment does not choose itself. `make run` in a `dmove build` directory
/// exports the same, so a benchmark measures what the deliverable runs.
pub fn omp_settings(threads: Option<usize>) -> Vec<(&'static str, &'static str)> {
    let chosen = |var: &&str| std::env::var_os(var).is_some();
    let whole_machine = threads
        .or_else(|| std::env::var("OMP_NUM_THREADS").ok()?.trim().parse().ok())
        .is_none_or(|n| n == available_cpus());
    (OMP_DEFAULTS.iter())
        .filter(|d| !d.unless.iter().any(chosen) && (whole_machine || !d.whole_machine))
        .map(|d| (d.var, d.value))
        .collect()
}

/// The CPUs this process may run on (its affinity mask), the default OpenMP thread count.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
