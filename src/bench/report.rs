//! How benchmark rows are shown: the fixed-width table every benchmarking command prints, the
//! ratios of every variant against every other, the note that says when the machine was not
//! idle, and the JSON figures of `dmove bench --json`.

use super::load::{ForeignLoad, BUSY_CORES};
use super::workload::Reference;
use super::Row;
use serde::Serialize;
use std::collections::BTreeMap;

/// The table: one line per row (figures, or why there are none), then a line per disagreement.
/// `peak_gflops` adds the "% peak" column.
pub fn render_table(rows: &[Row], peak_gflops: Option<f64>) -> String {
    let mut out = format!(
        "{:<12} {:>10} {:>10} {:>10} {:>8} {:>6} {:>9} {:>8} {:>10}\n",
        "variant",
        "median ms",
        "min ms",
        "max ms",
        "GFLOP/s",
        "%peak",
        "MB moved",
        "foreign",
        "max err"
    );
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for r in rows {
        let Some(s) = &r.stats else {
            out.push_str(&format!(
                "{:<12} {}\n",
                r.variant,
                r.note.as_deref().unwrap_or("not measured")
            ));
            continue;
        };
        let peak = r
            .gflops
            .zip(peak_gflops)
            .map(|(g, p)| format!("{:.1}", 100.0 * g / p));
        let load = r.foreign_load.map(|l| {
            let coarse = if l.coarse() { "~" } else { "" };
            format!("{coarse}{:.2}{}", l.cores, if l.busy() { "*" } else { "" })
        });
        out.push_str(&format!(
            "{:<12} {:>10.3} {:>10.3} {:>10.3} {:>8} {:>6} {:>9} {:>8} {:>10}\n",
            r.variant,
            s.median_ms,
            s.min_ms,
            s.max_ms,
            opt(r.gflops.map(|g| format!("{g:.2}"))),
            opt(peak),
            opt(r.bytes_moved.map(|b| format!("{:.2}", b as f64 / 1e6))),
            opt(load),
            opt(r.max_abs_error.map(|e| format!("{e:.2e}"))),
        ));
    }
    for r in rows {
        if let Some(why) = &r.disagreement {
            out.push_str(&format!("DISAGREES: {}: {why}\n", r.variant));
        }
    }
    out
}

/// `row / column` speed ratios: how many times faster the row's variant is than the column's
/// (the column's median over the row's), for every measured pair.
pub fn render_ratios(rows: &[Row]) -> String {
    let timed: Vec<(&str, f64)> = (rows.iter())
        .filter_map(|r| Some((r.variant.as_str(), r.median_ms()?)))
        .collect();
    if timed.len() < 2 {
        return String::new();
    }
    let mut out = format!("{:<12}", "faster than");
    for (name, _) in &timed {
        out.push_str(&format!(" {name:>12}"));
    }
    out.push('\n');
    for (name, ms) in &timed {
        out.push_str(&format!("{name:<12}"));
        for (_, other) in &timed {
            out.push_str(&format!(" {:>11}x", ratio(other / ms)));
        }
        out.push('\n');
    }
    out
}

/// `x` with three significant digits (at least two decimals): `4.00`, `0.00123`, `1817`.
fn ratio(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return format!("{x}");
    }
    let decimals = (2.0 - x.log10().floor()).clamp(0.0, 8.0) as usize;
    format!("{x:.*}", decimals.max(usize::from(x < 100.0) * 2))
}

/// Lines saying that other processes used the CPU during some runs (more than
/// [`BUSY_CORES`], naming the worst) and that some runs were too short to measure that finely;
/// empty when every run saw an idle machine over a long enough interval.
pub fn load_note(rows: &[Row]) -> String {
    let loads: Vec<(&str, ForeignLoad)> = (rows.iter())
        .filter_map(|r| Some((r.variant.as_str(), r.foreign_load?)))
        .collect();
    let busy: Vec<&(&str, ForeignLoad)> = loads.iter().filter(|(_, l)| l.busy()).collect();
    let mut note = String::new();
    if let Some((worst, load)) =
        busy.iter()
            .copied()
            .reduce(|a, b| if b.1.cores > a.1.cores { b } else { a })
    {
        note.push_str(&format!(
            "* the machine was not idle: other processes used more than {BUSY_CORES} of a core during {} of {} runs (up to {:.2} cores, during {worst}); times are inflated and ratios less reliable\n",
            busy.len(),
            loads.len(),
            load.cores,
        ));
    }
    if loads.iter().any(|(_, l)| l.coarse()) {
        note.push_str("~ a run too short for the kernel's CPU clock to measure its foreign load finely (more --reps help)\n");
    }
    note
}

/// One variant's figures in `dmove bench --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub available: bool,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub reps: usize,
    pub gflops: Option<f64>,
    /// GFLOP/s as a percentage of the machine's assumed peak.
    pub peak_percent: Option<f64>,
    /// Cores of other processes' CPU time during the run.
    pub foreign_load: Option<f64>,
    /// Whether `foreign_load` exceeded [`BUSY_CORES`].
    pub machine_busy: Option<bool>,
    /// Whether the run was too short to measure the foreign load finely.
    pub foreign_load_coarse: Option<bool>,
    pub bytes_moved: Option<u64>,
    pub max_abs_error: Option<f64>,
    /// Whether the outputs agreed with the reference (`None` when not run).
    pub agrees: Option<bool>,
    pub disagreement: Option<String>,
    /// How many times faster than each other measured variant (their median over this one's).
    pub speedup_vs: BTreeMap<String, f64>,
    pub version: Option<String>,
    /// Why there are no figures (a peer that is not installed, does not apply, or failed).
    pub note: Option<String>,
}

/// One workload in `dmove bench --json`.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadFigures {
    pub name: String,
    pub title: String,
    pub flops: u64,
    pub reference: Reference,
    /// By variant name: `baseline`, `dmove`, `onnxruntime`, `openvino`, `numpy`.
    pub variants: BTreeMap<String, Figures>,
}

impl WorkloadFigures {
    pub fn new(
        (name, title): (&str, &str),
        flops: u64,
        reference: Reference,
        rows: &[Row],
        peak: Option<f64>,
    ) -> Self {
        let variants = rows
            .iter()
            .map(|r| (r.variant.clone(), figures(r, rows, peak)))
            .collect();
        WorkloadFigures {
            name: name.to_string(),
            title: title.to_string(),
            flops,
            reference,
            variants,
        }
    }
}

fn figures(r: &Row, rows: &[Row], peak: Option<f64>) -> Figures {
    let speedup_vs = match r.median_ms() {
        Some(ms) => (rows.iter())
            .filter(|o| o.variant != r.variant)
            .filter_map(|o| Some((o.variant.clone(), o.median_ms()? / ms)))
            .collect(),
        None => BTreeMap::new(),
    };
    Figures {
        available: r.stats.is_some(),
        median_ms: r.median_ms(),
        min_ms: r.stats.as_ref().map(|s| s.min_ms),
        max_ms: r.stats.as_ref().map(|s| s.max_ms),
        reps: r.stats.as_ref().map_or(0, |s| s.reps),
        gflops: r.gflops,
        peak_percent: r.gflops.zip(peak).map(|(g, p)| 100.0 * g / p),
        foreign_load: r.foreign_load.map(|l| l.cores),
        machine_busy: r.foreign_load.map(|l| l.busy()),
        foreign_load_coarse: r.foreign_load.map(|l| l.coarse()),
        bytes_moved: r.bytes_moved,
        max_abs_error: r.max_abs_error,
        agrees: r.stats.as_ref().map(|_| r.disagreement.is_none()),
        disagreement: r.disagreement.clone(),
        speedup_vs,
        version: r.version.clone(),
        note: r.note.clone(),
    }
}

/// Most a loaded run of `dmove` may take relative to its idle run and still count as degrading
/// gracefully (issue 12's target).
pub const GRACEFUL_SLOWDOWN: f64 = 2.0;

/// One workload measured idle and again beside a competing busy process.
#[derive(Clone, Debug, Serialize)]
pub struct UnderLoad {
    pub name: String,
    pub dmove_idle_ms: f64,
    pub dmove_loaded_ms: f64,
    pub baseline_loaded_ms: Option<f64>,
    pub onnxruntime_loaded_ms: Option<f64>,
    /// Whether the optimized program stayed faster than the baseline under load.
    pub faster_than_baseline: Option<bool>,
    /// Whether it stayed within [`GRACEFUL_SLOWDOWN`] of its idle time.
    pub within_2x_of_idle: bool,
}

impl UnderLoad {
    /// The comparison of `dmove`'s rows, `None` when it was not timed in both runs.
    pub fn new(name: &str, idle: &[Row], loaded: &[Row]) -> Option<UnderLoad> {
        let median = |rows: &[Row], v: &str| {
            (rows.iter())
                .find(|r| r.variant == v)
                .and_then(Row::median_ms)
        };
        let (idle_ms, loaded_ms) = (median(idle, "dmove")?, median(loaded, "dmove")?);
        let baseline = median(loaded, "baseline");
        Some(UnderLoad {
            name: name.to_string(),
            dmove_idle_ms: idle_ms,
            dmove_loaded_ms: loaded_ms,
            baseline_loaded_ms: baseline,
            onnxruntime_loaded_ms: median(loaded, "onnxruntime"),
            faster_than_baseline: baseline.map(|b| loaded_ms < b),
            within_2x_of_idle: loaded_ms <= GRACEFUL_SLOWDOWN * idle_ms,
        })
    }
}

/// The under-load table: dmove idle and loaded, the baseline and ONNX Runtime loaded, and
/// whether each target held.
pub fn render_under_load(rows: &[UnderLoad]) -> String {
    let mut out = format!(
        "{:<20} {:>10} {:>10} {:>7} {:>12} {:>12} {:>15} {:>10}\n",
        "workload",
        "dmove idle",
        "loaded",
        "×idle",
        "baseline",
        "onnxruntime",
        "beats baseline",
        "within 2×"
    );
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
    let yes = |b: bool| if b { "yes" } else { "NO" };
    for u in rows {
        out.push_str(&format!(
            "{:<20} {:>10.3} {:>10.3} {:>7.2} {:>12} {:>12} {:>15} {:>10}\n",
            u.name,
            u.dmove_idle_ms,
            u.dmove_loaded_ms,
            u.dmove_loaded_ms / u.dmove_idle_ms,
            ms(u.baseline_loaded_ms),
            ms(u.onnxruntime_loaded_ms),
            u.faster_than_baseline.map_or("-", yes),
            yes(u.within_2x_of_idle),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Stats;
    use super::*;

    fn row(name: &str, ms: f64, load: f64) -> Row {
        let s = Stats::from_samples(&[ms]).expect("one sample");
        Row {
            foreign_load: Some(ForeignLoad {
                cores: load,
                cpus: 2,
                ticks: 100,
            }),
            ..Row::measured(name, s, 4_000_000, Some(8.0))
        }
    }

    #[test]
    fn table_ratios_and_load_note() {
        let rows = [
            row("baseline", 8.0, 0.0),
            row("dmove", 2.0, 0.5),
            Row::unavailable("onnxruntime", "onnxruntime is not available"),
        ];
        let table = render_table(&rows, Some(4.0));
        assert!(
            table.contains("onnxruntime  onnxruntime is not available"),
            "{table}"
        );
        // 4 MFLOP in 2 ms = 2 GFLOP/s = 50% of a 4 GFLOP/s peak; the busy run is starred.
        assert!(table.contains("2.00"), "{table}");
        assert!(table.contains("50.0"), "{table}");
        assert!(table.contains("0.50*"), "{table}");
        let ratios = render_ratios(&rows);
        assert!(ratios.contains("4.00x"), "{ratios}");
        assert!(ratios.contains("0.250x"), "{ratios}");
        assert_eq!(
            (ratio(1817.24), ratio(0.00055), ratio(12.34)),
            ("1817".into(), "0.000550".into(), "12.34".into())
        );
        let note = load_note(&rows);
        assert!(
            note.contains("1 of 2 runs") && note.contains("during dmove"),
            "{note}"
        );
        assert!(load_note(&rows[..1]).is_empty());
        let json = WorkloadFigures::new(
            ("w", "a workload"),
            4_000_000,
            Reference::Baseline,
            &rows,
            Some(4.0),
        );
        let dmove = &json.variants["dmove"];
        assert_eq!(dmove.speedup_vs["baseline"], 4.0);
        assert_eq!(dmove.machine_busy, Some(true));
        assert!(!json.variants["onnxruntime"].available);
    }

    #[test]
    fn under_load_compares_loaded_with_idle_and_baseline() {
        let idle = [row("baseline", 8.0, 0.0), row("dmove", 2.0, 0.0)];
        let loaded = [row("baseline", 9.0, 1.0), row("dmove", 5.0, 1.0)];
        let u = UnderLoad::new("w", &idle, &loaded).expect("both timed");
        assert_eq!(u.faster_than_baseline, Some(true));
        assert!(!u.within_2x_of_idle);
        let table = render_under_load(&[u]);
        assert!(table.contains("2.50") && table.contains("NO"), "{table}");
        assert!(UnderLoad::new("w", &idle[..1], &loaded).is_none());
    }
}
