//! `apply R everywhere | once | at X`, for a transformation or a rule with one pattern- or
//! node-typed parameter.
//!
//! For a transformation, `everywhere` is the engine's own repeated application and `once` the
//! first candidate whose plan holds. For a rule over a pattern, the matches are kept current by
//! an incremental [`Matcher`] updated with each step's change — never a re-enumeration of the
//! program per step — and the body runs once per match, in order, as a transaction: a match
//! whose body fails silenceably is rolled back, recorded as skipped and not retried. A rule over
//! a node class walks the nodes of that class, re-listed after each body that changed the
//! program, skipping nodes already tried.

use super::apply::{admits, bad, refusal_node, rejected, ParamClass};
use super::describe::{describe, describe_all, show};
use super::env::Interp;
use super::eval::eval;
use super::failure::{classify, interrupted, Failure, Flow, RefusalKind, NOT_APPLICABLE, NO_MATCH};
use super::value::{MatchValue, Value};
use crate::ir::NodeId;
use crate::pattern::{Match, Matcher, NodeClass, Pattern, Pred};
use crate::recipe::ast::{self, ApplyMode};
use crate::recipe::resolve::{self, Callee};
use crate::recipe::{Diagnostic, Span};
use crate::transform::engine::{Budget, StopReason};
use crate::transform::{Params, Transformation};
use std::collections::HashSet;
use std::sync::Arc;

/// The most bodies (or steps) one `apply … everywhere` runs.
const MAX_BODIES: usize = 10_000;

/// How many nodes the "nearest miss" of a rule that matched nothing looks at.
const MISS_CANDIDATES: usize = 256;

impl Interp<'_> {
    /// `apply target mode`.
    pub fn apply(&mut self, target: &ast::Path, mode: &ApplyMode, span: Span) -> Flow<()> {
        match resolve::callee(self.l, self.env.module, target)? {
            Callee::Transformation(t) => self.apply_transformation(t, mode, span),
            Callee::Rule { module, rule } => {
                let [param] = rule.params.as_slice() else {
                    return Err(Failure::definite(bad(
                        target.span,
                        format!(
                            "`apply` needs a rule with one pattern or node parameter; `{}` has {}",
                            rule.name.name,
                            rule.params.len()
                        ),
                    )));
                };
                let class = self.param_class(module, param)?;
                let r = Rule {
                    module,
                    rule,
                    class,
                    span,
                };
                match mode {
                    ApplyMode::At(x) => {
                        let bound = self.rule_args(
                            module,
                            rule,
                            &[ast::Arg {
                                name: None,
                                value: x.clone(),
                                span: x.span,
                            }],
                            span,
                        );
                        self.enter_rule(module, rule, bound?, span)
                    }
                    ApplyMode::Once(_) => self.rule_once(&r),
                    ApplyMode::Everywhere(_) => self.rule_everywhere(&r),
                }
            }
            Callee::Builtin(b) => Err(not_applicable_function(target, b.name)),
            Callee::Script { name, .. } => Err(not_applicable_function(target, name)),
        }
    }
}

/// `apply f …` where `f` is a function (built-in or scripted).
fn not_applicable_function(target: &ast::Path, name: &str) -> Failure {
    Failure::definite(bad(
        target.span,
        format!("`{name}` is a function; `apply` takes a rule or a transformation"),
    ))
}

impl Interp<'_> {
    fn apply_transformation(
        &mut self,
        t: &'static dyn Transformation,
        mode: &ApplyMode,
        span: Span,
    ) -> Flow<()> {
        let none = Params::new();
        match mode {
            ApplyMode::At(x) => {
                let site = match eval(self, x)? {
                    Value::Match(m) => self.roles_from_match(t, &m, x.span)?,
                    Value::Node(id) => {
                        let what = self.text(x.span);
                        self.node(id, &what, x.span)?;
                        vec![id]
                    }
                    other => {
                        return Err(Failure::definite(bad(
                            x.span,
                            format!(
                                "`apply … at` needs a node or a match, found {}",
                                other.kind()
                            ),
                        )))
                    }
                };
                self.apply_at(t, &site, &none, span)
            }
            ApplyMode::Once(_) => {
                let mut first_reason = None;
                for site in t.candidates(self.p) {
                    match self.engine.plan(self.p, t, &site, &none) {
                        Ok(planned) => {
                            site.iter().for_each(|id| self.remember(&Value::Node(*id)));
                            if crate::interrupt::requested() {
                                return Err(interrupted(span));
                            }
                            return match self.engine.commit(self.p, t, planned) {
                                Ok(step) => {
                                    self.record(step, span);
                                    Ok(())
                                }
                                Err(r) => Err(self.refused(t, &site, &none, &r, span)),
                            };
                        }
                        Err(r) if r.is_script_fault() => {
                            return Err(self.refused(t, &site, &none, &r, span))
                        }
                        Err(r) => {
                            first_reason.get_or_insert_with(|| {
                                format!("at {}: {r}", describe_all(self.p, &site))
                            });
                        }
                    }
                }
                let d = Diagnostic::error(
                    NOT_APPLICABLE,
                    span,
                    format!("`{}` applies nowhere in the program", t.name()),
                )
                .label("no candidate applies");
                Err(Failure::silenceable(match first_reason {
                    Some(r) => d.note(format!("the first candidate: {r}")),
                    None => d.note("the program has no candidate sites"),
                }))
            }
            ApplyMode::Everywhere(_) => {
                let budget = Budget::steps(MAX_BODIES);
                let done = self.engine.apply_repeatedly(self.p, t, &none, &budget);
                for step in done.steps {
                    self.record(step, span);
                }
                if done.stop == StopReason::Interrupted {
                    return Err(interrupted(span));
                }
                if let Some(r) = done.refused.first() {
                    let at = refusal_node(r).map_or("a candidate".into(), |n| describe(self.p, n));
                    return Err(match classify(r) {
                        RefusalKind::Rejected(layer) => {
                            Failure::definite(rejected(t, &at, layer, r, span))
                        }
                        _ => self.refused(t, &[], &none, r, span),
                    });
                }
                if done.stop != StopReason::Fixpoint {
                    self.report.warnings.push(
                        Diagnostic::warning(
                            super::failure::NO_FIXPOINT,
                            span,
                            format!("`{}` stopped after {} steps", t.name(), MAX_BODIES),
                        )
                        .label("still applicable"),
                    );
                }
                Ok(())
            }
        }
    }

    /// A match as a site: each role filled by the capture of the same name.
    fn roles_from_match(
        &self,
        t: &dyn Transformation,
        m: &MatchValue,
        span: Span,
    ) -> Flow<Vec<NodeId>> {
        let mut site = Vec::new();
        for role in t.schema().site {
            match m.pattern.get(&m.found, role.name) {
                Some(id) => site.push(id),
                None if role.optional => break,
                None => {
                    let roles: Vec<&str> = t.schema().site.iter().map(|r| r.name).collect();
                    return Err(Failure::definite(
                        bad(span, format!("pattern `{}` has no capture `{}` for the role of that name", m.pattern.name(), role.name))
                            .note(format!(
                                "`apply {} at` a match fills each role ({}) with the capture of the same name; captures: {}",
                                t.name(),
                                roles.join(", "),
                                m.pattern.captures().join(", ")
                            ))
                            .help(format!("call it with the captures: `{}(m.…)`", t.name())),
                    ));
                }
            }
        }
        Ok(site)
    }

    /// Runs the rule's body on one value as a transaction; `Ok(false)` when it failed
    /// silenceably (rolled back and recorded as skipped).
    fn body_on(&mut self, r: &Rule, v: Value) -> Flow<bool> {
        let mark = self.mark(self.may_commit_many(&r.rule.body));
        let name = r.rule.params[0].name.name.clone();
        let shown = show(self.p, &v);
        let out = self.silenced(|it| it.enter_rule(r.module, r.rule, vec![(name, v)], r.span));
        match out {
            Ok(()) => Ok(true),
            Err(f) if f.is_silenceable() => {
                self.rollback(mark, r.span)?;
                self.skip(f.diagnostic().span, format!("{shown}: {}", f.reason()));
                Ok(false)
            }
            Err(f) => Err(f),
        }
    }

    fn rule_once(&mut self, r: &Rule) -> Flow<()> {
        let mut last = None;
        for v in self.candidates_of(r) {
            let before = self.report.skipped.len();
            if self.body_on(r, v)? {
                return Ok(());
            }
            last = self.report.skipped.drain(before..).next_back();
        }
        let d = Diagnostic::error(
            NOT_APPLICABLE,
            r.span,
            format!("rule `{}` applies nowhere", r.rule.name.name),
        )
        .label("no match or node where its body succeeds");
        Err(Failure::silenceable(match last {
            Some(s) => d.note(format!("the last one tried: {}", s.reason)),
            None => d.note("nothing to apply it to"),
        }))
    }

    /// Every value the rule's parameter could take now, in order.
    fn candidates_of(&mut self, r: &Rule) -> Vec<Value> {
        match &r.class {
            ParamClass::Pattern(p) => (crate::pattern::find_all(p, self.p).into_iter())
                .map(|m| match_value(p, m))
                .collect(),
            ParamClass::Node(class, _) => {
                self.nodes_of(*class).into_iter().map(Value::Node).collect()
            }
            ParamClass::Value(_) => Vec::new(),
        }
    }

    fn nodes_of(&self, class: Option<NodeClass>) -> Vec<NodeId> {
        let mut v = Vec::new();
        self.p.graph.walk(&mut |n| {
            if admits(class, &n.kind) {
                v.push(n.id);
            }
        });
        v
    }

    fn rule_everywhere(&mut self, r: &Rule) -> Flow<()> {
        let (any, bodies) = match &r.class {
            ParamClass::Pattern(p) => self.everywhere_pattern(r, p.clone())?,
            ParamClass::Node(class, _) => self.everywhere_nodes(r, *class)?,
            ParamClass::Value(kind) => {
                return Err(Failure::definite(bad(
                    r.span,
                    format!(
                        "`apply` needs a rule over a pattern or a node class; `{}` takes {kind}",
                        r.rule.name.name
                    ),
                )))
            }
        };
        if bodies >= MAX_BODIES {
            self.report.warnings.push(
                Diagnostic::warning(
                    super::failure::NO_FIXPOINT,
                    r.span,
                    format!(
                        "`apply {}` stopped after {MAX_BODIES} bodies",
                        r.rule.name.name
                    ),
                )
                .label("still matching"),
            );
        }
        if !any {
            let w = self.no_match(r);
            self.report.warnings.push(w);
        }
        Ok(())
    }

    /// Returns whether anything matched, and how many bodies ran.
    fn everywhere_pattern(&mut self, r: &Rule, pattern: Arc<Pattern>) -> Flow<(bool, usize)> {
        let mut matcher = Matcher::new((*pattern).clone(), self.p);
        let mut tried: HashSet<Match> = HashSet::new();
        let mut bodies = 0;
        while bodies < MAX_BODIES {
            let Some(m) = matcher.matches().into_iter().find(|m| !tried.contains(m)) else {
                break;
            };
            tried.insert(m.clone());
            bodies += 1;
            let before = self.report.steps.len();
            if self.body_on(r, match_value(&pattern, m))? {
                for k in before..self.report.steps.len() {
                    let change = self.report.steps[k].step.change();
                    matcher.update(self.p, &change);
                }
            }
        }
        Ok((!tried.is_empty(), bodies))
    }

    fn everywhere_nodes(&mut self, r: &Rule, class: Option<NodeClass>) -> Flow<(bool, usize)> {
        let mut tried: HashSet<NodeId> = HashSet::new();
        let mut bodies = 0;
        let mut list = self.nodes_of(class);
        let mut k = 0;
        while bodies < MAX_BODIES && k < list.len() {
            let id = list[k];
            k += 1;
            if tried.contains(&id) || self.p.node(id).is_none() {
                continue;
            }
            tried.insert(id);
            bodies += 1;
            let before = self.report.steps.len();
            if self.body_on(r, Value::Node(id))? && self.report.steps.len() > before {
                list = self.nodes_of(class);
                k = 0;
            }
        }
        Ok((!tried.is_empty(), bodies))
    }

    /// The `no_match` warning, with the mismatch that got furthest among the nodes of the first
    /// capture's kind.
    fn no_match(&self, r: &Rule) -> Diagnostic {
        let name = &r.rule.name.name;
        let ParamClass::Pattern(p) = &r.class else {
            let what = match &r.class {
                ParamClass::Node(_, what) => *what,
                _ => "node",
            };
            return Diagnostic::warning(NO_MATCH, r.span, format!("`{name}` matched nothing"))
                .label(format!(
                    "the program has no {}",
                    what.trim_start_matches("a ").trim_start_matches("an ")
                ));
        };
        let d = Diagnostic::warning(NO_MATCH, r.span, format!("`{name}` matched nothing"))
            .label(format!("no match of pattern `{}`", p.name()));
        let captures = p.captures();
        let kind = (p.capture_preds(captures.first().copied().unwrap_or(""))).and_then(|preds| {
            preds.iter().find_map(|pr| match pr {
                Pred::Kind(c) => Some(*c),
                _ => None,
            })
        });
        let mut candidates = self.nodes_of(kind);
        candidates.truncate(MISS_CANDIDATES);
        let reach = |at: &str| {
            (captures.iter())
                .position(|c| at.starts_with(&format!("`{c}`")))
                .unwrap_or(0)
        };
        let best = (candidates.iter())
            .filter_map(|id| {
                crate::pattern::explain(p, self.p, *id)
                    .err()
                    .map(|m| (*id, m))
            })
            .fold(
                None,
                |best: Option<(NodeId, crate::pattern::Mismatch)>, (id, m)| match &best {
                    Some((_, b)) if reach(&b.at) >= reach(&m.at) => best,
                    _ => Some((id, m)),
                },
            );
        match best {
            Some((id, m)) => d.note(format!(
                "the nearest miss, at {}: {m}",
                describe(self.p, id)
            )),
            None => d.note(format!(
                "the program has no {} node to start a match from",
                kind.map_or("", |k| k.name())
            )),
        }
    }
}

/// A rule applied with `apply`, with what its one parameter accepts.
struct Rule<'r> {
    module: usize,
    rule: &'r ast::Rule,
    class: ParamClass,
    span: Span,
}

fn match_value(p: &Arc<Pattern>, m: Match) -> Value {
    Value::Match(MatchValue {
        pattern: p.clone(),
        found: m,
    })
}
