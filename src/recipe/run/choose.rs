//! `choose P, Q by dmd | by bench(reps = K) | fixed`: deciding parameter values by running
//! `main` on a copy of the program for every combination of their domains and scoring it.
//!
//! # Order
//!
//! `choose` items run in file order, the used modules' first (in load order, so a module's own
//! decisions are made before anything that uses it, as a library's would be), the root's last.
//! Each search sees the values every earlier decision made.
//!
//! # What is searched
//!
//! A parameter given by `--set` is not searched (its decision says `by = "set"`), nor is one
//! whose decision a lock replays (`by = "locked"`). The others are searched together: the
//! cartesian product of their domains, first parameter outermost, without the combinations
//! that break a constraint whose parameters all have values. More than [`MAX_COMBINATIONS`]
//! combinations (before the constraints prune them, so the limit is known before anything runs)
//! is an error. Each candidate runs with the structural and legality checks; numerics are
//! lowered for candidates only, because the run with the chosen values checks them in full.
//! The lowest score wins, ties going to the first combination in domain order, and every
//! candidate's values and score (or why it failed) is recorded in the [`Decision`].

use super::domain::show_domain;
use super::failure::Failure;
use super::measure;
use super::params::{violation, ParamSpace, CODE};
use super::value::{ParamValue, Value};
use super::RunOptions;
use crate::ir::Program;
use crate::recipe::ast;
use crate::recipe::diag::{Diagnostic, Span};
use crate::recipe::modules::Loaded;
use crate::transform::engine::{Checks, Layer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The largest search a `choose` may ask for.
pub const MAX_COMBINATIONS: usize = 256;

/// `bench` without `reps = K`.
pub const DEFAULT_REPS: usize = 5;

/// The reason recorded on every candidate's lowered numerics layer.
const CANDIDATE_NUMERICS: &str =
    "scoring a search candidate; the chosen values are checked in full";

/// Runs the recipe's `main` on a program with the given parameter values and checks.
pub type RunMain<'a> =
    dyn FnMut(&mut Program, &BTreeMap<String, ParamValue>, &Checks) -> Result<(), Diagnostic> + 'a;

/// How one `choose` decided its parameters (one per `choose`, or more when some of its
/// parameters were given by `--set` or replayed from a lock: one decision per way).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Keys of the parameters decided.
    pub params: Vec<String>,
    /// `"dmd"`, `"estimate"`, `"bench(reps = 5)"`, `"fixed"`, `"locked"` or `"set"`.
    pub by: String,
    /// Every combination tried, in domain order (empty when nothing was searched).
    pub candidates: Vec<Candidate>,
    pub chosen: BTreeMap<String, ParamValue>,
}

/// One combination a search tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub values: BTreeMap<String, ParamValue>,
    /// Lower is better; `None` when the candidate failed.
    pub score: Option<f64>,
    /// Why the candidate could not be scored.
    pub error: Option<String>,
}

/// What a search scores by.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scorer {
    Dmd,
    Estimate,
    Bench(usize),
}

impl Scorer {
    fn name(self) -> String {
        match self {
            Scorer::Dmd => "dmd".into(),
            Scorer::Estimate => "estimate".into(),
            Scorer::Bench(reps) => format!("bench(reps = {reps})"),
        }
    }

    fn score(self, p: &Program) -> Result<f64, String> {
        let score = match self {
            Scorer::Dmd => measure::dmd(p)?,
            Scorer::Estimate => measure::estimate_ms(p)?,
            Scorer::Bench(reps) => measure::time_ms(p, reps)?,
        };
        match score.is_finite() {
            true => Ok(score),
            false => Err(format!("the score {score} is not a finite number")),
        }
    }
}

/// Runs every `choose` of `l` (see the module docs for the order), updating `values` with each
/// decision, and checks the constraints on the final values. `run_main` runs the recipe's
/// `main` on a program with the given values and checks.
pub fn decide(
    l: &Loaded,
    space: &ParamSpace,
    values: &mut BTreeMap<String, ParamValue>,
    p: &Program,
    opts: &RunOptions,
    run_main: &mut RunMain<'_>,
) -> Result<Vec<Decision>, Diagnostic> {
    let mut decisions = Vec::new();
    for (module, c) in choose_items(l) {
        let ctx = Search { l, space, p, opts };
        decisions.extend(ctx.one(module, c, values, run_main)?);
    }
    if let Some(v) = space.violated(values)? {
        return Err(violation(&v, "the chosen values"));
    }
    Ok(decisions)
}

/// Every `choose` with its module index, in the order [`decide`] runs them.
pub fn choose_items(l: &Loaded) -> Vec<(usize, &ast::Choose)> {
    let order = (1..l.modules.len()).chain((!l.modules.is_empty()).then_some(0));
    order
        .flat_map(|m| {
            (l.modules[m].ast.items.iter()).filter_map(move |item| match item {
                ast::Item::Choose(c) => Some((m, c)),
                _ => None,
            })
        })
        .collect()
}

/// The combinations a search over `keys` tries, in domain order (first key outermost), before
/// constraints: an error at `span` when a key has no domain or there are more than
/// [`MAX_COMBINATIONS`]. The checker calls this too, so an oversized search is reported before
/// anything runs.
pub fn combinations(
    space: &ParamSpace,
    keys: &[String],
    span: Span,
) -> Result<Vec<BTreeMap<String, ParamValue>>, Diagnostic> {
    let mut domains = Vec::new();
    for key in keys {
        let info = space.get(key);
        match info.and_then(|p| p.domain.as_ref()) {
            Some(d) => domains.push(d),
            None => {
                return Err(Diagnostic::error(
                    CODE,
                    span,
                    format!("`{key}` has no domain to search"),
                )
                .label("searched here")
                .help(format!(
                    "declare one, e.g. `param {}: int in pow2(8..64) = 16`",
                    key.rsplit("::").next().unwrap_or(key)
                )))
            }
        }
    }
    let total = (domains.iter()).try_fold(1usize, |n, d| n.checked_mul(d.len()));
    if total.is_none_or(|n| n > MAX_COMBINATIONS) {
        let sizes: Vec<String> = (keys.iter().zip(&domains))
            .map(|(k, d)| format!("`{k}` ({} values)", d.len()))
            .collect();
        return Err(Diagnostic::error(
            CODE,
            span,
            format!("this search has more than {MAX_COMBINATIONS} combinations"),
        )
        .label(format!(
            "{} = {}",
            sizes.join(" × "),
            total.map_or("too many".into(), |n| n.to_string())
        ))
        .help("narrow the domains, or split the search into several `choose` items"));
    }
    let mut out = Vec::new();
    let mut index = vec![0usize; domains.len()];
    loop {
        out.push(
            (keys.iter().zip(&domains).zip(&index))
                .map(|((k, d), &i)| (k.clone(), d[i].clone()))
                .collect(),
        );
        // An odometer: the last key turns fastest, so the first key is the outermost.
        let mut pos = domains.len();
        loop {
            if pos == 0 {
                return Ok(out);
            }
            pos -= 1;
            index[pos] += 1;
            if index[pos] < domains[pos].len() {
                break;
            }
            index[pos] = 0;
        }
    }
}

/// What every search of one [`decide`] shares.
struct Search<'a> {
    l: &'a Loaded,
    space: &'a ParamSpace,
    p: &'a Program,
    opts: &'a RunOptions,
}

impl Search<'_> {
    /// The decisions of one `choose` in `module`.
    fn one(
        &self,
        module: usize,
        c: &ast::Choose,
        values: &mut BTreeMap<String, ParamValue>,
        run_main: &mut RunMain<'_>,
    ) -> Result<Vec<Decision>, Diagnostic> {
        let keys = self.space.choose_keys(module, c)?;
        let scorer = match &c.by {
            ast::ChooseBy::Fixed(_) => return Ok(vec![recorded(keys, "fixed", values, c.span)?]),
            ast::ChooseBy::Dmd(_) => Scorer::Dmd,
            ast::ChooseBy::Estimate(_) => Scorer::Estimate,
            ast::ChooseBy::Bench { reps, .. } => Scorer::Bench(reps_of(reps.as_ref())?),
        };
        let (set, rest): (Vec<String>, Vec<String>) = keys
            .into_iter()
            .partition(|k| self.opts.set.contains_key(k));
        let (locked, searched): (Vec<String>, Vec<String>) = rest
            .into_iter()
            .partition(|k| self.opts.fixed.contains_key(k));
        let mut out = Vec::new();
        for (keys, by) in [(set, "set"), (locked, "locked")] {
            if !keys.is_empty() {
                out.push(recorded(keys, by, values, c.span)?);
            }
        }
        if searched.is_empty() {
            return Ok(out);
        }
        if matches!(scorer, Scorer::Bench(_)) && !self.opts.measure {
            return Err(Diagnostic::error(
                CODE,
                c.span,
                "`choose … by bench` needs measurements; run `dmove run` to record a decision in the lock",
            )
            .label(format!("no recorded value for {}", quoted(&searched))));
        }
        let combos = combinations(self.space, &searched, c.span)?;
        let checks = (self.opts.checks.clone()).lower(Layer::Numerics, CANDIDATE_NUMERICS);
        let mut candidates = Vec::new();
        for combo in combos {
            let mut trial = values.clone();
            trial.extend(combo.clone());
            if self.space.violated(&trial)?.is_some() {
                continue;
            }
            let mut copy = self.p.clone();
            let outcome = run_main(&mut copy, &trial, &checks)
                .map_err(|d| self.brief(d))
                .and_then(|()| scorer.score(&copy));
            candidates.push(Candidate {
                values: combo,
                score: outcome.as_ref().ok().copied(),
                error: outcome.err(),
            });
        }
        let chosen =
            best(&candidates).ok_or_else(|| self.none_scored(c, &searched, &candidates))?;
        let chosen = candidates[chosen].values.clone();
        values.extend(chosen.clone());
        out.push(Decision {
            params: searched,
            by: scorer.name(),
            candidates,
            chosen,
        });
        Ok(out)
    }

    /// A candidate's failure in one line, with the recipe line it happened at.
    fn brief(&self, d: Diagnostic) -> String {
        let (line, _) = self.l.sources.line_col(d.span);
        let file = self.l.sources.name(d.span.file).to_string();
        let reason = Failure::from(d).reason();
        let first = reason.lines().next().unwrap_or_default();
        format!("{first} ({file}:{line})")
    }

    fn none_scored(
        &self,
        c: &ast::Choose,
        keys: &[String],
        candidates: &[Candidate],
    ) -> Diagnostic {
        let d = Diagnostic::error(
            CODE,
            c.span,
            format!("no combination of {} could be scored", quoted(keys)),
        );
        if candidates.is_empty() {
            let domains: Vec<String> = (keys.iter())
                .filter_map(|k| {
                    Some(format!(
                        "{k} in {}",
                        show_domain(self.space.get(k)?.domain.as_ref()?)
                    ))
                })
                .collect();
            return d
                .label("every combination breaks a constraint")
                .note(format!("searched {}", domains.join(", ")));
        }
        let failures: Vec<String> = (candidates.iter())
            .map(|cand| {
                format!(
                    "{}: {}",
                    show_values(&cand.values),
                    cand.error.as_deref().unwrap_or("no score")
                )
            })
            .collect();
        d.label(format!("all {} candidates failed", candidates.len()))
            .note(failures.join("\n"))
    }
}

/// Index of the lowest score, the first on ties.
fn best(candidates: &[Candidate]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in candidates.iter().enumerate() {
        if let Some(s) = c.score {
            if best.is_none_or(|(_, b)| s < b) {
                best = Some((i, s));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// A decision that records the current values of `keys` without searching.
fn recorded(
    keys: Vec<String>,
    by: &str,
    values: &BTreeMap<String, ParamValue>,
    span: Span,
) -> Result<Decision, Diagnostic> {
    let mut chosen = BTreeMap::new();
    for k in &keys {
        let v = values.get(k).ok_or_else(|| {
            Diagnostic::error(CODE, span, format!("`{k}` has no value to record"))
                .label(format!("`{by}` keeps the current value"))
                .help("give the parameter a default, or search it with `by dmd`")
        })?;
        chosen.insert(k.clone(), v.clone());
    }
    Ok(Decision {
        params: keys,
        by: by.to_string(),
        candidates: Vec::new(),
        chosen,
    })
}

/// `reps = K` of `bench(…)`: a constant integer from 1 to 1000 (default [`DEFAULT_REPS`]).
fn reps_of(reps: Option<&ast::Expr>) -> Result<usize, Diagnostic> {
    let Some(e) = reps else {
        return Ok(DEFAULT_REPS);
    };
    match super::eval::eval_const(e, &|_| None)? {
        Value::Int(k) if (1..=1000).contains(&k) => Ok(k as usize),
        other => Err(
            Diagnostic::error(CODE, e.span, "`reps` must be an integer from 1 to 1000")
                .label(format!("this is {other}")),
        ),
    }
}

/// `tile = 16, cols = 64`.
fn show_values(values: &BTreeMap<String, ParamValue>) -> String {
    let parts: Vec<String> = values.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    parts.join(", ")
}

/// `` `tile`, `cols` ``.
fn quoted(keys: &[String]) -> String {
    let parts: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(score: Option<f64>) -> Candidate {
        Candidate {
            values: BTreeMap::new(),
            score,
            error: score.is_none().then(|| "failed".to_string()),
        }
    }

    #[test]
    fn the_lowest_score_wins_and_ties_go_to_the_first() {
        let c = [
            cand(Some(3.0)),
            cand(None),
            cand(Some(1.0)),
            cand(Some(1.0)),
        ];
        assert_eq!(best(&c), Some(2));
        assert_eq!(best(&[cand(None), cand(None)]), None);
        assert_eq!(best(&[]), None);
    }

    #[test]
    fn decisions_round_trip_through_json() {
        let d = Decision {
            params: vec!["tile".into()],
            by: "dmd".into(),
            candidates: vec![
                Candidate {
                    values: BTreeMap::from([("tile".into(), ParamValue::Int(8))]),
                    score: Some(12.5),
                    error: None,
                },
                cand(None),
            ],
            chosen: BTreeMap::from([("tile".into(), ParamValue::Int(8))]),
        };
        let text = serde_json::to_string(&d).expect("serializes");
        assert_eq!(serde_json::from_str::<Decision>(&text).expect("parses"), d);
    }

    #[test]
    fn reps_default_and_range() {
        let int = |i| ast::Expr {
            kind: ast::ExprKind::Int(i),
            span: Span::default(),
        };
        assert_eq!(reps_of(None), Ok(DEFAULT_REPS));
        assert_eq!(reps_of(Some(&int(3))), Ok(3));
        for bad in [0, 1001] {
            let err = reps_of(Some(&int(bad))).expect_err("out of range");
            assert_eq!(err.code, CODE);
        }
    }
}
