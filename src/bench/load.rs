//! The CPU time other processes take while a variant runs, and a competing load to test with.
//!
//! A benchmark on a shared machine measures the machine as much as the program: a median taken
//! while a compiler ran beside it says little. So every timed run is bracketed by two readings
//! of `/proc/stat` (CPU time of the whole machine) and `/proc/self/stat` (this process and the
//! children it has waited for — the benchmarked binary or Python peer, which is waited for
//! before the second reading). What the machine was busy with beyond our own tree, over the
//! run's wall time, is the *foreign load*, in cores: 1.0 means one core's worth of other work
//! ran throughout. Time stolen by the hypervisor counts as foreign too (we did not get it).
//!
//! The readings tick at the kernel's clock (usually 100 Hz per CPU), so a run of a few
//! milliseconds reads as 0 or a multiple of a tick; runs of many repetitions average it out.

use crate::codegen::available_cpus;
use serde::Serialize;
use std::process::{Child, Command, Stdio};

/// Above this many cores of foreign load a run is reported as taken on a busy machine.
pub const BUSY_CORES: f64 = 0.10;

/// One reading of the CPU counters, in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCounters {
    /// Non-idle time of all CPUs (user, nice, system, irq, softirq, steal).
    pub busy: u64,
    /// All time of all CPUs (busy plus idle and iowait).
    pub total: u64,
    /// This process's user and system time plus its waited-for children's.
    pub own: u64,
}

/// Foreign load over one measured interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ForeignLoad {
    /// Cores' worth of CPU time other processes used, averaged over the interval.
    pub cores: f64,
    /// CPUs of the machine.
    pub cpus: usize,
    /// Clock ticks of all CPUs the interval lasted: below [`COARSE_TICKS`] the figure is a
    /// multiple of a large step (one tick of one CPU is 1/ticks of all the time).
    pub ticks: u64,
}

/// Intervals shorter than this many ticks (all CPUs together; 100 ms on 2 CPUs at 100 Hz) give
/// a coarse foreign load.
pub const COARSE_TICKS: u64 = 20;

impl ForeignLoad {
    /// Whether other processes used more than [`BUSY_CORES`].
    pub fn busy(&self) -> bool {
        self.cores > BUSY_CORES
    }

    /// Whether the interval was too short for a fine figure (see [`COARSE_TICKS`]).
    pub fn coarse(&self) -> bool {
        self.ticks < COARSE_TICKS
    }
}

/// Measures the foreign load between [`LoadMeter::start`] and [`LoadMeter::stop`].
pub struct LoadMeter {
    start: Option<CpuCounters>,
}

impl LoadMeter {
    pub fn start() -> LoadMeter {
        LoadMeter { start: read() }
    }

    /// The foreign load since `start`; `None` where `/proc` cannot be read (not Linux).
    pub fn stop(self) -> Option<ForeignLoad> {
        let (start, end) = (self.start?, read()?);
        Some(ForeignLoad {
            cores: foreign_cores(&start, &end, available_cpus()),
            cpus: available_cpus(),
            ticks: end.total.saturating_sub(start.total),
        })
    }
}

/// Cores of foreign load between two readings: the machine's busy time minus our own, as a
/// share of all CPU time that passed, times the CPUs. Never negative (our own time and the
/// machine's are read at slightly different instants and tick separately).
pub fn foreign_cores(start: &CpuCounters, end: &CpuCounters, cpus: usize) -> f64 {
    let total = end.total.saturating_sub(start.total);
    if total == 0 {
        return 0.0;
    }
    let busy = end.busy.saturating_sub(start.busy) as f64;
    let own = end.own.saturating_sub(start.own) as f64;
    ((busy - own) / total as f64 * cpus as f64).max(0.0)
}

/// The counters now; `None` where `/proc` cannot be read (not Linux).
pub fn read() -> Option<CpuCounters> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (busy, total) = parse_machine(&stat)?;
    Some(CpuCounters {
        busy,
        total,
        own: parse_own(&own)?,
    })
}

/// Busy and total ticks from the aggregate `cpu` line of `/proc/stat`.
pub fn parse_machine(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    Some((busy, busy + at(3) + at(4)))
}

/// utime + stime + cutime + cstime from `/proc/self/stat` (fields 14–17; the command name in
/// parentheses may contain spaces, so fields are counted after its closing parenthesis).
pub fn parse_own(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state), so field k is f[k - 3].
    (14..=17).map(|k| f.get(k - 3)?.parse::<u64>().ok()).sum()
}

/// A process that keeps one core busy until dropped: the competing load of `dmove bench --load`.
pub struct BusyProcess {
    child: Child,
}

impl BusyProcess {
    /// Starts `sh -c 'while :; do :; done'` (a shell loop on a builtin: pure CPU, no I/O).
    pub fn start() -> std::io::Result<BusyProcess> {
        let child = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(BusyProcess { child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for BusyProcess {
    /// Stops the loop and reaps it, so no busy process outlives the benchmark.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_counters_read_the_aggregate_line() {
        let stat = "cpu  100 5 20 800 10 1 2 3 0 0\ncpu0 50 0 10 400 5 0 1 1 0 0\n";
        assert_eq!(parse_machine(stat), Some((131, 941)));
        assert_eq!(parse_machine("intr 1 2 3\n"), None);
    }

    #[test]
    fn own_times_skip_a_command_name_with_spaces() {
        let stat = "42 (a b) R 1 1 1 0 -1 0 0 0 0 0 7 3 11 13 20 0 1 0 5";
        assert_eq!(parse_own(stat), Some(7 + 3 + 11 + 13));
        assert_eq!(parse_own("42 (x) R 1"), None);
    }

    #[test]
    fn foreign_load_is_busy_time_not_ours() {
        let start = CpuCounters {
            busy: 0,
            total: 0,
            own: 0,
        };
        // 200 ticks passed on 2 CPUs; 150 busy, 50 of them ours: 100 ticks = one core.
        let end = CpuCounters {
            busy: 150,
            total: 200,
            own: 50,
        };
        assert_eq!(foreign_cores(&start, &end, 2), 1.0);
        let idle = CpuCounters { own: 150, ..end };
        assert_eq!(foreign_cores(&start, &idle, 2), 0.0);
        assert_eq!(foreign_cores(&start, &start, 2), 0.0);
    }

    #[test]
    fn a_busy_process_shows_as_foreign_load() {
        let Some(_) = read() else {
            eprintln!("SKIPPED: /proc is not readable here");
            return;
        };
        let busy = BusyProcess::start().expect("sh starts");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let meter = LoadMeter::start();
        std::thread::sleep(std::time::Duration::from_millis(400));
        let load = meter.stop().expect("readable");
        drop(busy);
        // The loop had a core to itself for 400 ms unless the machine is saturated; at least a
        // third of a core must show (other processes only add to it).
        assert!(load.cores > 0.3, "foreign load {:?}", load);
    }
}
