//! The machine a benchmark ran on, and the peak its GFLOP/s are a share of.
//!
//! The peak is an assumption, stated with every report: CPUs × clock × FLOP per cycle per core,
//! where FLOP per cycle is two FMA pipes × the widest f32 vector the CPU flags advertise × 2
//! (AVX-512: 64; AVX2 + FMA: 32; otherwise SSE without FMA: 8). The clock is the one
//! `/proc/cpuinfo` reports (nominal, not turbo; a virtual machine shows its host's base clock).

use serde::Serialize;
use std::process::Command;

/// What a report says about the machine.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cpus: usize,
    pub mhz: Option<f64>,
    /// The widest vector extension the flags advertise (`avx512f`, `avx2+fma`, `sse`).
    pub vector: String,
    pub flop_per_cycle_per_core: u32,
    /// CPUs × clock × FLOP per cycle, in GFLOP/s (`None` without a clock).
    pub peak_gflops: Option<f64>,
    pub peak_assumption: String,
    pub kernel: String,
    /// The first line of `$CC --version` (or `cc`'s).
    pub compiler: String,
}

impl Machine {
    /// The machine this process runs on.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpus = crate::codegen::available_cpus();
        let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let banner = Command::new(compiler.split_whitespace().next().unwrap_or("cc"))
            .arg("--version")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .unwrap_or_default();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        Machine::from_cpuinfo(&cpuinfo, cpus, kernel.trim(), &banner)
    }

    /// The description `cpuinfo` (the text of `/proc/cpuinfo`) gives for `cpus` CPUs.
    pub fn from_cpuinfo(cpuinfo: &str, cpus: usize, kernel: &str, compiler: &str) -> Machine {
        let field = |key: &str| {
            cpuinfo
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().to_string())
        };
        let flags = field("flags").unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        let (vector, flop) = if has("avx512f") {
            ("avx512f", 64)
        } else if has("avx2") && has("fma") {
            ("avx2+fma", 32)
        } else {
            ("sse", 8)
        };
        let mhz = field("cpu MHz").and_then(|m| m.parse::<f64>().ok());
        let peak_gflops = mhz.map(|m| cpus as f64 * m / 1e3 * flop as f64);
        Machine {
            cpu: field("model name").unwrap_or_else(|| "unknown CPU".into()),
            cpus,
            mhz,
            vector: vector.to_string(),
            flop_per_cycle_per_core: flop,
            peak_gflops,
            peak_assumption: format!(
                "{cpus} CPUs × {} MHz × {flop} f32 FLOP/cycle ({vector}: 2 FMA pipes × {} lanes × 2)",
                mhz.map_or("?".into(), |m| format!("{m:.0}")),
                flop / 4
            ),
            kernel: kernel.to_string(),
            compiler: compiler.to_string(),
        }
    }

    /// One line for a report's header.
    pub fn describe(&self) -> String {
        let peak = self.peak_gflops.map_or("peak unknown".into(), |p| {
            format!("assumed f32 peak {p:.0} GFLOP/s")
        });
        format!(
            "{} ({} CPUs, {}), {}; Linux {}; {}",
            self.cpu, self.cpus, self.vector, peak, self.kernel, self.compiler
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_follows_the_widest_vector_and_the_clock() {
        let info =
            "model name\t: Some CPU\ncpu MHz\t\t: 2600.000\nflags\t\t: fpu sse avx2 fma avx512f\n";
        let m = Machine::from_cpuinfo(info, 2, "6.1", "cc 12");
        assert_eq!(
            (m.vector.as_str(), m.flop_per_cycle_per_core),
            ("avx512f", 64)
        );
        assert_eq!(m.peak_gflops, Some(2.0 * 2.6 * 64.0));
        let m = Machine::from_cpuinfo("flags : sse avx2 fma\n", 4, "", "");
        assert_eq!((m.flop_per_cycle_per_core, m.peak_gflops), (32, None));
        assert_eq!(m.cpu, "unknown CPU");
    }
}
