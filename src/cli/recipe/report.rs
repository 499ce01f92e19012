//! The one-screen report of `dmove run`: what the recipe did (steps per rule, what it skipped
//! and why, the checks that ran and the layers it lowered), what it decided, whether its
//! expectations held, how much data movement it saved, and where the results are. `--json`
//! prints the same report as JSON.

use crate::bench::Row;
use crate::recipe::run::value::ParamValue;
use crate::recipe::run::{ExpectOutcome, RunReport};
use crate::recipe::{Diagnostic, Sources};
use crate::transform::engine::{TimeSummary, TimedStep};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Skip reasons and warnings shown in the text report (all are counted, and all are in
/// `--json`).
const SHOWN: usize = 3;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub recipe: String,
    pub version: Option<String>,
    pub model: String,
    pub model_sha256: String,
    #[serde(flatten)]
    pub run: RunPart,
    pub dmd: Figure,
    pub bytes: Figure,
    pub final_hash: String,
    pub outputs: Outputs,
    /// With `--bench`: baseline, optimized and ONNX Runtime, timed side by side.
    pub bench: Option<Vec<Row>>,
}

/// One `choose`: the values chosen, how, the best score and how many candidates were tried.
#[derive(Clone, Debug, Serialize)]
pub struct DecisionLine {
    pub chosen: BTreeMap<String, ParamValue>,
    pub by: String,
    pub best_score: Option<f64>,
    pub candidates: usize,
    /// Candidates that could not be scored (the recipe failed on them).
    pub failed: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExpectLine {
    /// `recipe.recipe:20`.
    pub at: String,
    pub text: String,
    pub held: bool,
    /// Why it was not checked (e.g. a time expectation without `--bench`).
    pub not_checked: Option<String>,
}

/// A measurement of the starting program and of the result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figure {
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// after / before.
    pub ratio: Option<f64>,
    /// Why a side could not be measured.
    pub error: Option<String>,
}

impl Figure {
    pub fn new(before: Result<f64, String>, after: Result<f64, String>) -> Figure {
        let error = match (&before, &after) {
            (Err(e), _) => Some(format!("before: {e}")),
            (_, Err(e)) => Some(format!("after: {e}")),
            _ => None,
        };
        let (before, after) = (before.ok(), after.ok());
        let ratio = match (before, after) {
            (Some(b), Some(a)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        Figure {
            before,
            after,
            ratio,
            error,
        }
    }
}

/// The files `dmove run` wrote.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outputs {
    pub ir: String,
    pub c: Option<String>,
    pub weights: Option<String>,
    /// Why no C was written (operators left unlowered, unbound symbols).
    pub c_skipped: Option<String>,
    pub lock: String,
}

/// `recipe.recipe:12`.
pub fn place(sources: &Sources, span: crate::recipe::Span) -> String {
    format!("{}:{}", sources.name(span.file), sources.line_col(span).0)
}

/// The parts of the report that come from the run itself; `checked` are the checker's warnings
/// (the run's own follow them).
pub fn from_run(r: &RunReport, checked: &[Diagnostic], sources: &Sources) -> RunPart {
    let mut steps_per_rule = BTreeMap::new();
    for s in &r.steps {
        let rule = s.rule.clone().unwrap_or_else(|| "main".into());
        *steps_per_rule.entry(rule).or_insert(0) += 1;
    }
    let steps: Vec<crate::transform::engine::Step> =
        r.steps.iter().map(|s| s.step.clone()).collect();
    RunPart {
        steps: r.steps.len(),
        steps_per_rule,
        skipped: (r.skipped.iter())
            .map(|s| format!("{}: {}", place(sources, s.span), s.reason))
            .collect(),
        warnings: (checked.iter().chain(&r.warnings))
            .map(|w| format!("{}: {}", place(sources, w.span), w.message))
            .collect(),
        checks: super::super::commands::layers_run(&steps),
        lowered: r.lowered.clone(),
        decisions: r.decisions.iter().map(decision_line).collect(),
        expectations: (r.expects.iter())
            .map(|e| ExpectLine {
                at: place(sources, e.span),
                text: e.text.clone(),
                held: matches!(e.outcome, ExpectOutcome::Held),
                not_checked: match &e.outcome {
                    ExpectOutcome::Held => None,
                    ExpectOutcome::NotChecked(why) => Some(why.clone()),
                },
            })
            .collect(),
        printed: r.printed.clone(),
        notes: r.notes.clone(),
        timing: TimeSummary::of(&r.step_times),
        search_timing: (r.search_time.steps > 0).then(|| r.search_time.clone()),
        step_times: r.step_times.clone(),
    }
}

/// What the run itself reported ([`from_run`]).
#[derive(Clone, Debug, Serialize)]
pub struct RunPart {
    pub steps: usize,
    /// Rule path → steps it issued (`main` for the steps of `main` itself).
    pub steps_per_rule: BTreeMap<String, usize>,
    /// Silenceable failures that `try`, `first` or `apply … everywhere` skipped:
    /// `recipe.recipe:12: MapTiling does not apply at n19: …`.
    pub skipped: Vec<String>,
    pub warnings: Vec<String>,
    /// Which check layers ran on how many steps (`structural 12, legality 12, numerics 12 …`).
    pub checks: String,
    /// Layers the recipe lowered with `unsafe`, and why.
    pub lowered: Vec<String>,
    pub decisions: Vec<DecisionLine>,
    pub expectations: Vec<ExpectLine>,
    pub printed: Vec<String>,
    pub notes: Vec<String>,
    /// Where the checked steps' time went (the final run).
    pub timing: TimeSummary,
    /// The same for the steps `choose` searches checked, when any ran.
    pub search_timing: Option<TimeSummary>,
    /// Each checked step with its time (in `--json` only).
    pub step_times: Vec<TimedStep>,
}

fn decision_line(d: &crate::recipe::run::choose::Decision) -> DecisionLine {
    let scores = d.candidates.iter().filter_map(|c| c.score);
    DecisionLine {
        chosen: d.chosen.clone(),
        by: d.by.clone(),
        best_score: scores.min_by(f64::total_cmp),
        candidates: d.candidates.len(),
        failed: d.candidates.iter().filter(|c| c.error.is_some()).count(),
    }
}

/// `1.23e6` for large and small figures, `1234.5` otherwise.
/// `x` to four significant digits: in scientific notation outside [0.01, 100000).
fn num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if !(1e-2..1e5).contains(&x.abs()) {
        format!("{x:.3e}")
    } else {
        let decimals = (3 - x.abs().log10().floor() as i64).max(0) as usize;
        format!("{x:.decimals$}")
    }
}

fn figure(name: &str, f: &Figure) -> String {
    match (f.before, f.after, &f.error) {
        (Some(b), Some(a), _) => {
            let ratio = f.ratio.map_or(String::new(), |r| format!(" ({r:.2}x)"));
            format!("{name:<7} {} → {}{ratio}\n", num(b), num(a))
        }
        (_, _, Some(e)) => format!("{name:<7} not measured: {e}\n"),
        _ => format!("{name:<7} not measured\n"),
    }
}

/// `skipped 5 (silenceable failures)` and the first few of them, one a line.
fn listed(out: &mut String, label: &str, what: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "{label:<7} {} ({what})", items.len());
    for s in items.iter().take(SHOWN) {
        let _ = writeln!(out, "        {s}");
    }
    if items.len() > SHOWN {
        let _ = writeln!(out, "        … {} more", items.len() - SHOWN);
    }
}

fn values(m: &BTreeMap<String, ParamValue>) -> String {
    let v: Vec<String> = m.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    v.join(", ")
}

impl Report {
    /// The report as text, one screen for an ordinary run.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let version = self
            .version
            .as_deref()
            .map_or(String::new(), |v| format!(" {v}"));
        let _ = writeln!(out, "recipe {}{version} on {}", self.recipe, self.model);
        let per_rule: Vec<String> = (self.run.steps_per_rule.iter())
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        let _ = write!(out, "steps   {}", self.run.steps);
        if !per_rule.is_empty() {
            let _ = write!(out, " ({})", per_rule.join(", "));
        }
        out.push('\n');
        listed(
            &mut out,
            "skipped",
            "silenceable failures",
            &self.run.skipped,
        );
        listed(&mut out, "warned", "warnings", &self.run.warnings);
        let _ = writeln!(out, "{}", self.run.checks);
        if self.run.timing.steps > 0 {
            let _ = writeln!(out, "time    {}", self.run.timing.render());
        }
        if let Some(search) = &self.run.search_timing {
            let _ = writeln!(out, "search  {} (choose)", search.render());
        }
        for l in &self.run.lowered {
            let _ = writeln!(out, "lowered {l}");
        }
        for d in &self.run.decisions {
            let _ = write!(out, "chose   {} by {}", values(&d.chosen), d.by);
            if let Some(s) = d.best_score {
                let _ = write!(out, ", best score {}", num(s));
            }
            if d.candidates > 0 {
                let _ = write!(out, ", {} candidate(s)", d.candidates);
            }
            if d.failed > 0 {
                let _ = write!(out, " ({} failed)", d.failed);
            }
            out.push('\n');
        }
        for e in &self.run.expectations {
            let verdict = match &e.not_checked {
                None => "held".to_string(),
                Some(why) => format!("not checked ({why})"),
            };
            let _ = writeln!(out, "expect  {} at {}: {verdict}", e.text, e.at);
        }
        for p in &self.run.printed {
            let _ = writeln!(out, "print   {p}");
        }
        for n in &self.run.notes {
            let _ = writeln!(out, "note    {n}");
        }
        out.push_str(&figure("dmd", &self.dmd));
        out.push_str(&figure("bytes", &self.bytes));
        let _ = writeln!(out, "wrote   {}", self.outputs.ir);
        match (&self.outputs.c, &self.outputs.c_skipped) {
            (Some(c), _) => {
                let w = self.outputs.weights.as_deref().unwrap_or("");
                let _ = writeln!(out, "wrote   {c} and {w}");
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "no C    {why}");
            }
            (None, None) => {}
        }
        let _ = writeln!(
            out,
            "locked  {} (final IR {})",
            self.outputs.lock, self.final_hash
        );
        if let Some(rows) = &self.bench {
            out.push('\n');
            out.push_str(&crate::bench::report::render_table(rows, None));
            out.push_str(&crate::bench::report::load_note(rows));
        }
        out
    }
}
