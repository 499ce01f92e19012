//! Where the time of checked steps goes.
//!
//! On a large program a checked step costs far more than its rewrite: the numerics layer runs
//! both sides, often as compiled C. Users tuning a recipe need to see that cost per step and in
//! total (to lower a check explicitly, shrink a search, or report a slow check to us), so the
//! engine times every phase of every step it commits or refuses and keeps the log.

use serde::{Serialize, Serializer};
use std::time::Duration;

/// The phases of one checked step, and the C builds its numerics check ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepTime {
    /// Site and parameter validation and the transformation's preconditions.
    #[serde(serialize_with = "seconds")]
    pub plan: Duration,
    /// Running the planned rewrite, the rollback snapshot included.
    #[serde(serialize_with = "seconds")]
    pub rewrite: Duration,
    /// Hashing the program before and after, and finding which nodes changed.
    #[serde(serialize_with = "seconds")]
    pub hash: Duration,
    /// The structural invariants.
    #[serde(serialize_with = "seconds")]
    pub validate: Duration,
    /// The engine's race check on parallel maps.
    #[serde(serialize_with = "seconds")]
    pub races: Duration,
    /// The numerics comparison, C builds included.
    #[serde(serialize_with = "seconds")]
    pub numerics: Duration,
    /// C programs compiled for the numerics check (cached binaries not counted).
    pub c_builds: u32,
    /// Time spent in those compiles (part of `numerics`).
    #[serde(serialize_with = "seconds")]
    pub c_build_time: Duration,
}

impl StepTime {
    pub fn total(&self) -> Duration {
        self.plan + self.rewrite + self.hash + self.validate + self.races + self.numerics
    }
}

/// One step the engine tried past its preconditions, with its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimedStep {
    /// `MapTiling at n19 (tiles=16,0,0)`.
    pub step: String,
    /// Whether it was refused (by a check layer or a failed rewrite; the program was restored).
    pub refused: bool,
    #[serde(flatten)]
    pub time: StepTime,
}

/// The totals over a run's steps.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TimeSummary {
    pub steps: usize,
    pub refused: usize,
    #[serde(flatten)]
    pub time: StepTime,
    /// The step that took longest, and its time in seconds.
    pub slowest: Option<(String, f64)>,
}

impl TimeSummary {
    pub fn of(steps: &[TimedStep]) -> TimeSummary {
        let mut sum = TimeSummary {
            steps: steps.len(),
            ..TimeSummary::default()
        };
        for s in steps {
            let (t, x) = (&mut sum.time, &s.time);
            t.plan += x.plan;
            t.rewrite += x.rewrite;
            t.hash += x.hash;
            t.validate += x.validate;
            t.races += x.races;
            t.numerics += x.numerics;
            t.c_builds += x.c_builds;
            t.c_build_time += x.c_build_time;
            sum.refused += usize::from(s.refused);
        }
        sum.slowest = (steps.iter())
            .max_by_key(|s| s.time.total())
            .map(|s| (s.step.clone(), s.time.total().as_secs_f64()));
        sum
    }

    /// `checked 205 steps (3 refused) in 27.3 s: numerics 22.1 s (41 C builds, 19.8 s), …`.
    pub fn render(&self) -> String {
        let t = &self.time;
        let refused = match self.refused {
            0 => String::new(),
            n => format!(" ({n} refused)"),
        };
        let builds = match t.c_builds {
            0 => String::new(),
            1 => format!(" (1 C build, {})", secs(t.c_build_time)),
            n => format!(" ({n} C builds, {})", secs(t.c_build_time)),
        };
        let mut line = format!(
            "checked {}{refused} in {}: numerics {}{builds}, races {}, validation {}, \
             hashing {}, planning and rewrites {}",
            plural(self.steps, "step"),
            secs(t.total()),
            secs(t.numerics),
            secs(t.races),
            secs(t.validate),
            secs(t.hash),
            secs(t.plan + t.rewrite),
        );
        if let Some((step, s)) = &self.slowest {
            line.push_str(&format!("; slowest {step}, {s:.2} s"));
        }
        line
    }
}

fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, refused: bool, numerics_ms: u64, builds: u32) -> TimedStep {
        TimedStep {
            step: name.into(),
            refused,
            time: StepTime {
                plan: Duration::from_millis(10),
                numerics: Duration::from_millis(numerics_ms),
                c_builds: builds,
                c_build_time: Duration::from_millis(numerics_ms / 2),
                ..StepTime::default()
            },
        }
    }

    #[test]
    fn the_summary_adds_phases_counts_refusals_and_names_the_slowest_step() {
        let log = [
            step("A at n1", false, 100, 1),
            step("B at n2", true, 900, 2),
        ];
        let sum = TimeSummary::of(&log);
        assert_eq!((sum.steps, sum.refused, sum.time.c_builds), (2, 1, 3));
        assert_eq!(sum.time.total(), Duration::from_millis(1020));
        assert_eq!(
            sum.render(),
            "checked 2 steps (1 refused) in 1.02 s: numerics 1.00 s (3 C builds, 0.50 s), \
             races 0.00 s, validation 0.00 s, hashing 0.00 s, planning and rewrites 0.02 s; \
             slowest B at n2, 0.91 s"
        );
    }
}
