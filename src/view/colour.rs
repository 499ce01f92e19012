//! Arrays coloured by their data movement: bytes moved (Σ over the top-level memlets of a
//! container: volume × element size; cheap) or DMD per array (the analysis of `analysis`,
//! sampled as the recipe metric `dmd()` is; costs a trace of the program). Five classes on a log
//! scale between the smallest and largest value, from pale yellow to dark red, with a legend.

use crate::ir::Program;
use crate::plot::scale::Unit;
use std::collections::BTreeMap;

/// What colours the arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    // (Plain comments: the `--color` help lists the values in one line.)
    // Bytes moved by the memlets that read or write the array.
    Bytes,
    // Data movement distance of the array's accesses (runs the analysis).
    Dmd,
}

/// Fills of the five classes, light to dark, and the text colour each needs.
const CLASSES: [(&str, &str); 5] = [
    ("#ffffb2", "black"),
    ("#fecc5c", "black"),
    ("#fd8d3c", "black"),
    ("#f03b20", "white"),
    ("#bd0026", "white"),
];
/// Arrays the metric says nothing about (nothing moved, or not measured).
const NONE: &str = "#eeeeee";

/// The value of every array and the class bounds shared by every picture coloured with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Colouring {
    /// `bytes moved` or `DMD`.
    pub metric: &'static str,
    pub unit: Unit,
    pub values: BTreeMap<String, f64>,
    /// log10 of the smallest and largest positive value over every program measured.
    range: Option<(f64, f64)>,
}

impl Colouring {
    /// Measures `programs` (e.g. every step of a recipe) so their pictures share one legend;
    /// `values` are the last program's.
    pub fn measure(metric: Metric, programs: &[&Program]) -> Result<Vec<Colouring>, String> {
        let per: Vec<BTreeMap<String, f64>> = (programs.iter())
            .map(|p| match metric {
                Metric::Bytes => Ok(bytes_per_array(p)),
                Metric::Dmd => dmd_per_array(p),
            })
            .collect::<Result<_, _>>()?;
        let positive = per.iter().flat_map(|m| m.values()).filter(|v| **v > 0.0);
        let lo = positive.clone().copied().reduce(f64::min);
        let hi = positive.copied().reduce(f64::max);
        let range = lo.zip(hi).map(|(a, b)| (a.log10(), b.log10()));
        let (name, unit) = match metric {
            Metric::Bytes => ("bytes moved", Unit::Bytes),
            Metric::Dmd => ("DMD", Unit::Count),
        };
        Ok(per
            .into_iter()
            .map(|values| Colouring {
                metric: name,
                unit,
                values,
                range,
            })
            .collect())
    }

    pub fn value(&self, array: &str) -> Option<f64> {
        self.values.get(array).copied()
    }

    fn class(&self, v: f64) -> Option<usize> {
        let (lo, hi) = self.range?;
        if v <= 0.0 {
            return None;
        }
        let f = if hi > lo {
            (v.log10() - lo) / (hi - lo)
        } else {
            1.0
        };
        Some(((f * CLASSES.len() as f64) as usize).min(CLASSES.len() - 1))
    }

    /// The fill of an access node of `array`, and the text colour readable on it.
    pub fn fill(&self, array: &str) -> (&'static str, &'static str) {
        match self.value(array).and_then(|v| self.class(v)) {
            Some(c) => CLASSES[c],
            None => (NONE, "black"),
        }
    }

    /// The legend's entries: fill, text colour and the range of values it stands for.
    pub fn legend(&self) -> Vec<(&'static str, &'static str, String)> {
        let Some((lo, hi)) = self.range else {
            return vec![(NONE, "black", "nothing measured".into())];
        };
        let n = CLASSES.len() as f64;
        let mut out: Vec<_> = (CLASSES.iter().enumerate())
            .map(|(k, (fill, text))| {
                let at = |f: f64| self.unit.format(10f64.powf(lo + (hi - lo) * f));
                let range = if hi > lo {
                    format!("{} – {}", at(k as f64 / n), at((k + 1) as f64 / n))
                } else {
                    at(1.0)
                };
                (*fill, *text, range)
            })
            .collect();
        if hi <= lo {
            out.drain(..CLASSES.len() - 1);
        }
        out.push((NONE, "black", "none".into()));
        out
    }
}

/// Σ volume × element size over the top-level memlets of each container (a map's outer memlets
/// already cover every iteration).
pub fn bytes_per_array(p: &Program) -> BTreeMap<String, f64> {
    let env = p.symbol_values();
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for e in p.graph.edges() {
        let m = e.memlet;
        let (Ok(volume), Some(desc)) = (m.subset.volume().eval(&env), p.data.get(&m.data)) else {
            continue;
        };
        *out.entry(m.data.clone()).or_default() += volume as f64 * desc.dtype.size_bytes() as f64;
    }
    out
}

/// The analysis' DMD of each array (of a lowered copy when `p` has library nodes).
fn dmd_per_array(p: &Program) -> Result<BTreeMap<String, f64>, String> {
    let report = crate::recipe::run::measure::report(p)?;
    Ok(report.arrays.into_iter().map(|a| (a.name, a.dmd)).collect())
}
