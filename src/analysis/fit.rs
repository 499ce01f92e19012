//! Leading terms: evaluating a program family at several sizes and fitting `c·n^k` or
//! `c·n^k·log2 n`.
//!
//! Both forms are fitted by least squares on logarithms (linear in log c and k); the form with
//! the smaller largest relative error over the sample points is reported, with that error.

use super::{analyze, AccessSource, AnalysisError, Options};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The shape of a leading term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Form {
    /// `c·n^k`
    Power,
    /// `c·n^k·log2 n`
    PowerLog,
}

/// A fitted leading term.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub form: Form,
    pub c: f64,
    pub k: f64,
    /// Largest |fit − value| / value over the points.
    pub max_rel_error: f64,
}

impl Fit {
    pub fn eval(&self, n: f64) -> f64 {
        let base = self.c * n.powf(self.k);
        match self.form {
            Form::Power => base,
            Form::PowerLog => base * n.log2(),
        }
    }
}

impl fmt::Display for Fit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.4}·n^{:.3}", self.c, self.k)?;
        if self.form == Form::PowerLog {
            f.write_str("·log2 n")?;
        }
        write!(
            f,
            " (max relative error {:.2}%)",
            100.0 * self.max_rel_error
        )
    }
}

/// Fits both forms to `(n, value)` points (n ≥ 2, value > 0) and returns the better one.
pub fn fit(points: &[(f64, f64)]) -> Result<Fit, AnalysisError> {
    if points.len() < 2 {
        return Err(AnalysisError::ShortSweep(points.len()));
    }
    if let Some((n, v)) = points.iter().find(|(n, v)| *n < 2.0 || *v <= 0.0) {
        return Err(AnalysisError::BadOption(format!(
            "cannot fit a leading term through n = {n}, value = {v} (need n ≥ 2 and a positive value)"
        )));
    }
    let power = fit_form(points, Form::Power);
    let power_log = fit_form(points, Form::PowerLog);
    Ok(if power_log.max_rel_error < power.max_rel_error {
        power_log
    } else {
        power
    })
}

fn fit_form(points: &[(f64, f64)], form: Form) -> Fit {
    let xs: Vec<f64> = points.iter().map(|(n, _)| n.ln()).collect();
    let ys: Vec<f64> = points
        .iter()
        .map(|(n, v)| match form {
            Form::Power => v.ln(),
            Form::PowerLog => (v / n.log2()).ln(),
        })
        .collect();
    let m = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / m, ys.iter().sum::<f64>() / m);
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let k = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let c = (my - k * mx).exp();
    let mut f = Fit {
        form,
        c,
        k,
        max_rel_error: 0.0,
    };
    f.max_rel_error = points
        .iter()
        .map(|&(n, v)| (f.eval(n) - v).abs() / v)
        .fold(0.0, f64::max);
    f
}

/// One size of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub n: u64,
    pub accesses: u64,
    pub first_accesses: u64,
    pub dmd_warm: f64,
    pub dmd_cold: f64,
    pub dmd: f64,
}

/// A program family evaluated at several sizes, with leading-term fits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub param: String,
    pub points: Vec<SweepPoint>,
    /// Fit of the DMD with the cold-access convention (`None` when no fit is possible, e.g. a
    /// sweep over a parameter with the value 1; `note` says why).
    pub dmd: Option<Fit>,
    /// Fit of the DMD without first accesses.
    pub dmd_warm: Option<Fit>,
    pub accesses: Option<Fit>,
    pub note: Option<String>,
}

/// Analyzes `make(n)` for every `n` in `values` and fits the leading terms.
pub fn sweep(
    param: &str,
    values: &[u64],
    opts: &Options,
    make: &dyn Fn(u64) -> Result<Box<dyn AccessSource>, AnalysisError>,
) -> Result<Sweep, AnalysisError> {
    if values.len() < 2 {
        return Err(AnalysisError::ShortSweep(values.len()));
    }
    let mut points = Vec::new();
    for &n in values {
        let r = analyze(make(n)?.as_ref(), opts)?;
        points.push(SweepPoint {
            n,
            accesses: r.total.stats.accesses,
            first_accesses: r.total.stats.first_accesses,
            dmd_warm: r.total.stats.dmd_warm,
            dmd_cold: r.total.stats.dmd_cold,
            dmd: r.total.dmd,
        });
    }
    let fits = fit_points(&points);
    let (dmd, dmd_warm, accesses, note) = match fits {
        Ok((d, w, a)) => (Some(d), Some(w), Some(a), None),
        Err(e) => (None, None, None, Some(e.to_string())),
    };
    Ok(Sweep {
        param: param.to_string(),
        dmd,
        dmd_warm,
        accesses,
        note,
        points,
    })
}

/// Leading terms of DMD, warm DMD and accesses over the sweep's points.
fn fit_points(points: &[SweepPoint]) -> Result<(Fit, Fit, Fit), AnalysisError> {
    let of = |f: &dyn Fn(&SweepPoint) -> f64| {
        fit(&points
            .iter()
            .map(|p| (p.n as f64, f(p)))
            .collect::<Vec<_>>())
    };
    Ok((
        of(&|p| p.dmd)?,
        of(&|p| p.dmd_warm)?,
        of(&|p| p.accesses as f64)?,
    ))
}

impl Sweep {
    pub fn render(&self) -> String {
        let mut out = format!(
            "{:>8} {:>14} {:>12} {:>14} {:>14} {:>14}\n",
            self.param, "accesses", "first", "dmd_warm", "dmd_cold", "dmd"
        );
        for p in &self.points {
            out.push_str(&format!(
                "{:>8} {:>14} {:>12} {:>14.6e} {:>14.6e} {:>14.6e}\n",
                p.n, p.accesses, p.first_accesses, p.dmd_warm, p.dmd_cold, p.dmd
            ));
        }
        out.push('\n');
        for (what, fit) in [
            ("accesses", &self.accesses),
            ("dmd     ", &self.dmd),
            ("dmd_warm", &self.dmd_warm),
        ] {
            if let Some(f) = fit {
                out.push_str(&format!("{what} ≈ {f}\n"));
            }
        }
        if let Some(note) = &self.note {
            out.push_str(&format!("no leading-term fit: {note}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_exact_power_and_power_log() {
        let pts: Vec<(f64, f64)> = [8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n: &f64| (n, 3.0 * n.powf(2.5)))
            .collect();
        let f = fit(&pts).expect("fits");
        assert_eq!(f.form, Form::Power);
        assert!((f.k - 2.5).abs() < 1e-9 && (f.c - 3.0).abs() < 1e-9);
        let pts: Vec<(f64, f64)> = [8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n: &f64| (n, 5.0 * n * n.log2()))
            .collect();
        let f = fit(&pts).expect("fits");
        assert_eq!(f.form, Form::PowerLog);
        assert!((f.k - 1.0).abs() < 1e-9 && f.max_rel_error < 1e-9);
        assert!(fit(&pts[..1]).is_err());
    }
}
