//! A time estimate from the cache model: every element access costs `access_ns`, and every miss
//! at a level costs that level's `miss_ns` (the transfer of a line from the level below), so a
//! DRAM access pays for each level it passes. The costs are per machine, measured by
//! [`crate::bench::calibrate`] on programs dmove itself generates, and kept with the machine's
//! fingerprint; the model adds nothing for arithmetic, loop overhead or vectorization, which
//! is what its ranking studies measure against.

use super::caches::Caches;
use super::stats::Dmd;
use serde::{Deserialize, Serialize};

/// The measured costs of one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// What identifies the machine the costs were measured on (CPU, caches, compiler, flags).
    pub fingerprint: String,
    pub caches: Caches,
    /// Nanoseconds per element access that hits the innermost level.
    pub access_ns: f64,
    /// Nanoseconds per miss at each level, innermost first.
    pub miss_ns: Vec<f64>,
    /// The measurements the costs were fitted to, and what the costs make of them.
    pub probes: Vec<Probe>,
}

/// One calibration measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub working_set_bytes: u64,
    pub measured_ns: f64,
    pub modelled_ns: f64,
}

impl CostModel {
    /// The modelled time of accesses `d` (counted with [`Self::caches`]), in milliseconds.
    pub fn estimate_ms(&self, d: &Dmd) -> f64 {
        let misses: f64 = (self.miss_ns.iter().zip(&d.level_misses))
            .map(|(ns, &m)| ns * m as f64)
            .sum();
        (d.accesses as f64 * self.access_ns + misses) / 1e6
    }

    /// The costs that make each row's `features` (accesses, then misses per level) add up to its
    /// measured nanoseconds: least squares of the *relative* errors (each row divided by its
    /// time, so a probe of microseconds counts as much as one of milliseconds), with any cost
    /// that comes out negative (noise on a level whose traffic barely differs between rows) set
    /// to zero and the others fitted again. `None` when the rows do not determine the costs.
    pub fn fit(rows: &[(Vec<f64>, f64)]) -> Option<Vec<f64>> {
        let n = rows.first()?.0.len();
        let rows: Vec<(Vec<f64>, f64)> = (rows.iter())
            .filter(|(_, y)| *y > 0.0)
            .map(|(x, y)| (x.iter().map(|v| v / y).collect(), 1.0))
            .collect();
        let mut free: Vec<usize> = (0..n).collect();
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
    fn estimates_add_accesses_and_misses() {
        let model = CostModel {
            fingerprint: String::new(),
            caches: Caches {
                source: String::new(),
                levels: Vec::new(),
            },
            access_ns: 0.5,
            miss_ns: vec![2.0, 10.0],
            probes: Vec::new(),
        };
        let d = Dmd {
            accesses: 1000,
            level_misses: vec![100, 10],
            ..Dmd::default()
        };
        assert!((model.estimate_ms(&d) - (500.0 + 200.0 + 100.0) / 1e6).abs() < 1e-15);
    }
}
