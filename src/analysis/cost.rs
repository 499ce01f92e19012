//! A time estimate from the cache model and the shape of the innermost loops: every element
//! access costs `access_ns`; every FLOP costs `vector_flop_ns` or `scalar_flop_ns` as its loop
//! can run as SIMD lanes or not (see `analysis::walk`); every innermost-loop run costs
//! `loop_run_ns`; every miss at a level costs that level's `miss_ns` (the transfer of a line
//! from the level below), so a DRAM access pays for each level it passes; and every data-TLB
//! miss costs `tlb_miss_ns`. The costs are
//! per machine, measured by [`crate::bench::calibrate`] on programs dmove itself generates, and
//! kept with the machine's fingerprint. The estimate is a sum: it assumes no overlap of
//! arithmetic and transfers, models no prefetcher or write-back, and judges vectorization
//! the way `analysis::walk` does, not by the compiler's actual decision.

use super::caches::Caches;
use super::report::Entry;
use serde::{Deserialize, Serialize};

/// The measured costs of one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// What identifies the machine the costs were measured on (CPU, caches, compiler, flags).
    pub fingerprint: String,
    pub caches: Caches,
    /// Nanoseconds per element access that hits the innermost level.
    pub access_ns: f64,
    /// Nanoseconds per FLOP in a loop that runs as SIMD lanes.
    pub vector_flop_ns: f64,
    /// Nanoseconds per FLOP in a loop that does not.
    pub scalar_flop_ns: f64,
    /// Nanoseconds per run of an innermost loop.
    pub loop_run_ns: f64,
    /// Nanoseconds per miss at each level, innermost first.
    pub miss_ns: Vec<f64>,
    /// Nanoseconds per data-TLB miss (0 when the caches describe no TLB).
    pub tlb_miss_ns: f64,
    /// The measurements the costs were fitted to, and what the costs make of them.
    pub probes: Vec<Probe>,
}

/// One calibration measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// What the probe exercises (`stream`, `reduction`, `short loops`).
    pub kind: String,
    pub working_set_bytes: u64,
    pub measured_ns: f64,
    pub modelled_ns: f64,
}

/// What the estimate multiplies by the costs, in [`CostModel::costs`]' order: accesses,
/// vector FLOPs, scalar FLOPs, loop runs, misses per level (`levels` of them), TLB misses.
pub fn features(e: &Entry, levels: usize) -> Vec<f64> {
    let x = e.execution.unwrap_or_default();
    let mut f = vec![
        e.stats.accesses as f64,
        x.vector_flops as f64,
        x.scalar_flops as f64,
        x.loop_runs,
    ];
    f.extend((0..levels).map(|k| e.stats.level_misses.get(k).copied().unwrap_or(0) as f64));
    f.push(e.stats.tlb_misses as f64);
    f
}

impl CostModel {
    /// A model with these costs, in [`features`]' order.
    pub fn new(fingerprint: String, caches: Caches, costs: &[f64], probes: Vec<Probe>) -> Self {
        let levels = caches.levels.len();
        CostModel {
            fingerprint,
            caches,
            access_ns: costs[0],
            vector_flop_ns: costs[1],
            scalar_flop_ns: costs[2],
            loop_run_ns: costs[3],
            miss_ns: costs[4..4 + levels].to_vec(),
            tlb_miss_ns: costs[4 + levels],
            probes,
        }
    }

    /// The costs in [`features`]' order.
    pub fn costs(&self) -> Vec<f64> {
        let mut c = vec![
            self.access_ns,
            self.vector_flop_ns,
            self.scalar_flop_ns,
            self.loop_run_ns,
        ];
        c.extend(&self.miss_ns);
        c.push(self.tlb_miss_ns);
        c
    }

    /// The costs in one line: `access 0.008, vector FLOP 0, …, miss L1d 0.11, …, TLB miss 2.1`.
    pub fn describe(&self) -> String {
        let misses = (self.caches.levels.iter().zip(&self.miss_ns))
            .map(|(l, ns)| format!("{} {ns:.3}", l.name))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "access {:.4}, vector FLOP {:.4}, scalar FLOP {:.4}, loop run {:.3}, miss {misses}, TLB miss {:.3}",
            self.access_ns, self.vector_flop_ns, self.scalar_flop_ns, self.loop_run_ns, self.tlb_miss_ns
        )
    }

    /// The modelled time of `e` (analyzed with [`Self::caches`]), in milliseconds.
    pub fn estimate_ms(&self, e: &Entry) -> f64 {
        let f = features(e, self.miss_ns.len());
        f.iter().zip(self.costs()).map(|(x, c)| x * c).sum::<f64>() / 1e6
    }

    /// The costs that make each row's `features` (accesses, then misses per level) add up to its
    /// measured nanoseconds: least squares of the *relative* errors (each row divided by its
    /// time, so a probe of microseconds counts as much as one of milliseconds), with any cost
    /// that comes out negative (noise on a level whose traffic barely differs between rows) set
    /// to zero and the others fitted again. A feature no row has (TLB misses where the machine
    /// does not say how big its TLB is, so no probe walks pages) costs zero: nothing measured
    /// says otherwise. `None` when the rows do not determine the costs.
    pub fn fit(rows: &[(Vec<f64>, f64)]) -> Option<Vec<f64>> {
        let n = rows.first()?.0.len();
        let rows: Vec<(Vec<f64>, f64)> = (rows.iter())
            .filter(|(_, y)| *y > 0.0)
            .map(|(x, y)| (x.iter().map(|v| v / y).collect(), 1.0))
            .collect();
        let mut free: Vec<usize> = (0..n)
            .filter(|&c| rows.iter().any(|(x, _)| x[c] != 0.0))
            .collect();
        loop {
            let sol = least_squares(&rows, &free)?;
            let Some(worst) = (0..free.len()).min_by(|&a, &b| sol[a].total_cmp(&sol[b])) else {
                return Some(vec![0.0; n]);
            };
            if sol[worst] >= 0.0 {
                let mut costs = vec![0.0; n];
                for (k, &f) in free.iter().enumerate() {
                    costs[f] = sol[k];
                }
                return Some(costs);
            }
            free.remove(worst);
        }
    }
}

/// Least squares over the columns `cols` of the rows' features: the normal equations solved by
/// Gaussian elimination with partial pivoting (a handful of unknowns).
fn least_squares(rows: &[(Vec<f64>, f64)], cols: &[usize]) -> Option<Vec<f64>> {
    let m = cols.len();
    let mut a = vec![vec![0.0; m + 1]; m];
    for (x, y) in rows {
        for (i, &ci) in cols.iter().enumerate() {
            for (j, &cj) in cols.iter().enumerate() {
                a[i][j] += x[ci] * x[cj];
            }
            a[i][m] += x[ci] * y;
        }
    }
    for c in 0..m {
        let p = (c..m).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        a.swap(c, p);
        if a[c][c].abs() < 1e-300 {
            return None;
        }
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..m).map(|i| a[i][m] / a[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rows_give_back_the_costs() {
        let costs = [0.2, 1.5, 4.0];
        let rows: Vec<(Vec<f64>, f64)> = [[10.0, 0.0, 0.0], [10.0, 5.0, 0.0], [10.0, 5.0, 5.0]]
            .iter()
            .map(|x| (x.to_vec(), x.iter().zip(&costs).map(|(a, b)| a * b).sum()))
            .collect();
        let got = CostModel::fit(&rows).expect("determined");
        for (g, c) in got.iter().zip(costs) {
            assert!((g - c).abs() < 1e-9, "{got:?}");
        }
    }

    #[test]
    fn a_feature_no_row_has_costs_zero() {
        // No probe walked pages (the machine did not say how big its TLB is): the last column is
        // zero everywhere, and the others are still determined.
        let rows = vec![(vec![1.0, 0.0, 0.0], 2.0), (vec![1.0, 1.0, 0.0], 5.0)];
        let got = CostModel::fit(&rows).expect("determined");
        assert_eq!(got[2], 0.0);
        assert!(
            (got[0] - 2.0).abs() < 1e-9 && (got[1] - 3.0).abs() < 1e-9,
            "{got:?}"
        );
    }

    #[test]
    fn a_negative_cost_is_dropped_and_the_rest_refitted() {
        // The second feature only explains noise that pulls its cost below zero.
        let rows = vec![
            (vec![1.0, 0.0], 1.0),
            (vec![2.0, 1.0], 1.9),
            (vec![3.0, 0.0], 3.0),
        ];
        let got = CostModel::fit(&rows).expect("determined");
        assert_eq!(got[1], 0.0);
        assert!((got[0] - 1.0).abs() < 0.05, "{got:?}");
    }

    #[test]
    fn estimates_add_every_feature_times_its_cost() {
        let level = |name: &str, size_bytes| crate::analysis::caches::CacheLevel {
            name: name.into(),
            size_bytes,
            line_bytes: 64,
            ways: None,
            shared_by: None,
        };
        let caches = Caches {
            source: String::new(),
            levels: vec![level("L1d", 1 << 15), level("L2", 1 << 20)],
            tlb: None,
        };
        let costs = [0.5, 0.1, 1.0, 3.0, 2.0, 10.0, 30.0];
        let model = CostModel::new(String::new(), caches, &costs, vec![]);
        let mut e = Entry::new("p", None, Default::default(), None, None);
        e.stats.accesses = 1000;
        e.stats.level_misses = vec![100, 10];
        e.stats.tlb_misses = 2;
        e.execution = Some(crate::analysis::Execution {
            vector_flops: 50,
            scalar_flops: 7,
            loop_runs: 2.0,
        });
        let want = 500.0 + 5.0 + 7.0 + 6.0 + 200.0 + 100.0 + 60.0;
        assert!((model.estimate_ms(&e) - want / 1e6).abs() < 1e-15);
        assert_eq!(model.costs(), costs);
    }
}
