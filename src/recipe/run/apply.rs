//! Calls: transformations (site roles → node ids, parameters → typed values, one engine
//! application), rules (parameters bound in a fresh scope of the rule's module) and the
//! refusals of the engine turned into recipe diagnostics in IR terms.
//!
//! A transformation that does not apply is silenceable; outside `try` its diagnostic names the
//! node, the engine's reason and the closest candidate (`transform::nearest`). A rewrite the
//! checks rolled back is definite and names the check and the engine's message (for numerics,
//! the first diverging output).

use super::describe::{describe, describe_all};
use super::env::{Env, Interp, MAX_DEPTH};
use super::eval::eval;
use super::failure::{
    classify, interrupted, layer_check, runtime, Failure, Flow, RefusalKind, BAD_ARGUMENT,
    NOT_APPLICABLE, REJECTED,
};
use super::value::Value;
use crate::ir::{NodeId, NodeKind};
use crate::pattern::Pattern;
use crate::recipe::ast::{self, Expr};
use crate::recipe::resolve::{self, Callee};
use crate::recipe::{Diagnostic, Span};
use crate::transform::engine::{Layer, Refusal};
use crate::transform::{self, ParamValue as TParam, Params, Transformation, Verdict};
use std::sync::Arc;

/// What a rule parameter accepts.
#[derive(Clone)]
pub enum ParamClass {
    /// A match of this pattern.
    Pattern(Arc<Pattern>),
    /// A node of this class (`None`: any node).
    Node(Option<crate::pattern::NodeClass>, &'static str),
    /// A plain value: `int`, `float`, `bool`, `string`, `list`.
    Value(&'static str),
}

impl Interp<'_> {
    /// A call statement: a transformation, a rule, or a built-in whose value is dropped.
    pub fn call_stmt(&mut self, call: &ast::Call) -> Flow<()> {
        match resolve::callee(self.l, self.env.module, &call.callee)? {
            Callee::Transformation(t) => {
                let (site, params) = self.transformation_args(t, &call.args, call.span)?;
                self.apply_at(t, &site, &params, call.span)
            }
            Callee::Rule { module, rule } => {
                let bound = self.rule_args(module, rule, &call.args, call.span)?;
                self.enter_rule(module, rule, bound, call.span)
            }
            Callee::Builtin(b) => self.builtin(b, call).map(|_| ()),
            Callee::Script {
                module,
                script,
                name,
                ..
            } => self.script_call(module, script, name, call).map(|_| ()),
        }
    }

    /// Site and parameters of a transformation call: positional arguments fill the roles in
    /// order, a named argument fills the role of that name or is a parameter.
    fn transformation_args(
        &mut self,
        t: &'static dyn Transformation,
        args: &[ast::Arg],
        span: Span,
    ) -> Flow<(Vec<NodeId>, Params)> {
        let roles = t.schema().site;
        let mut site: Vec<Option<NodeId>> = vec![None; roles.len()];
        let mut params = Params::new();
        let mut next = 0;
        for a in args {
            let role = match &a.name {
                None => {
                    if next >= roles.len() {
                        return Err(Failure::definite(bad(
                            a.span,
                            format!("`{}` takes {} site node(s)", t.name(), roles.len()),
                        )));
                    }
                    next += 1;
                    next - 1
                }
                Some(n) => match roles.iter().position(|r| r.name == n.name) {
                    Some(k) => k,
                    None => {
                        params.insert(n.name.clone(), self.param_value(&a.value)?);
                        continue;
                    }
                },
            };
            site[role] = Some(self.site_node(&a.value)?);
        }
        let given: Vec<NodeId> = site.iter().map_while(|s| *s).collect();
        if given.len() != site.iter().flatten().count() {
            let missing = roles[given.len()].name;
            return Err(Failure::definite(bad(
                span,
                format!("`{}`: the `{missing}` role is not given", t.name()),
            )));
        }
        Ok((given, params))
    }

    /// One node for a site role.
    fn site_node(&mut self, e: &Expr) -> Flow<NodeId> {
        match eval(self, e)? {
            Value::Node(id) => {
                let what = self.text(e.span);
                self.node(id, &what, e.span)?;
                Ok(id)
            }
            Value::Match(m) => {
                let first = m.pattern.captures().first().map_or("x", |c| *c).to_string();
                Err(Failure::definite(
                    bad(e.span, "a match where one node is expected").help(format!(
                        "pick a capture, e.g. `{}.{first}`",
                        self.text(e.span)
                    )),
                ))
            }
            Value::List(_) => Err(Failure::definite(
                bad(e.span, "a list is not a site: give one node per role")
                    .help("to rewrite several nodes, use `for each x in … { … }`"),
            )),
            other => Err(Failure::definite(bad(
                e.span,
                format!("expected a node, found {} ({other})", other.kind()),
            ))),
        }
    }

    /// A transformation parameter's value: an integer, a list of integers, a string or a
    /// boolean.
    fn param_value(&mut self, e: &Expr) -> Flow<TParam> {
        let v = eval(self, e)?;
        let ints = |items: &[Value]| -> Option<Vec<i64>> {
            (items.iter())
                .map(|i| match i {
                    Value::Int(k) => Some(*k),
                    _ => None,
                })
                .collect()
        };
        match &v {
            Value::Int(i) => Ok(TParam::Int(*i)),
            Value::Bool(b) => Ok(TParam::Bool(*b)),
            Value::Str(s) => Ok(TParam::Str(s.clone())),
            Value::List(items) => ints(items).map(TParam::Ints).ok_or_else(|| {
                Failure::definite(bad(
                    e.span,
                    format!("a parameter list holds integers, found {v}"),
                ))
            }),
            other => Err(Failure::definite(bad(
                e.span,
                format!(
                    "a transformation parameter is an integer, a list of integers, a string or a boolean; found {} ({other})",
                    other.kind()
                ),
            ))),
        }
    }

    /// Applies `t` at `site` through the run's engine; a refusal becomes a failure.
    pub fn apply_at(
        &mut self,
        t: &'static dyn Transformation,
        site: &[NodeId],
        params: &Params,
        span: Span,
    ) -> Flow<()> {
        for id in site {
            self.remember(&Value::Node(*id));
        }
        // Step boundaries are where Ctrl-C stops a run; a step it cut short (its compiler or
        // program killed) was rolled back by the engine like any refused one.
        if crate::interrupt::requested() {
            return Err(interrupted(span));
        }
        if self.progress.shown() {
            let at = describe_all(self.p, site);
            self.progress
                .step(&format!("checking {} at {at}", t.name()));
        }
        match self.engine.apply(self.p, t, site, params) {
            Ok(step) => {
                self.record(step, span);
                Ok(())
            }
            Err(_) if crate::interrupt::requested() => Err(interrupted(span)),
            Err(r) => Err(self.refused(t, site, params, &r, span)),
        }
    }

    /// The failure for a refusal of `t` at `site`.
    pub fn refused(
        &self,
        t: &dyn Transformation,
        site: &[NodeId],
        params: &Params,
        r: &Refusal,
        span: Span,
    ) -> Failure {
        // A fault in a scripted transformation's own code is definite wherever it happens.
        if let Some(d) = crate::recipe::scripts::fault(self.l, r, span) {
            return Failure::definite(d);
        }
        let at = match site {
            [] => refusal_node(r).map_or("its candidates".into(), |n| describe(self.p, n)),
            _ => describe_all(self.p, site),
        };
        match classify(r) {
            RefusalKind::Rejected(layer) => Failure::definite(rejected(t, &at, layer, r, span)),
            RefusalKind::Mismatch => Failure::silenceable(
                bad(span, format!("`{}` cannot be applied at {at}", t.name()))
                    .label("does not fit the transformation's schema")
                    .note(r.to_string()),
            ),
            RefusalKind::NotApplicable => {
                let reason = match r {
                    Refusal::NotApplicable(na) if site.contains(&na.node) || site.is_empty() => {
                        na.reason.clone()
                    }
                    Refusal::NotApplicable(na) => {
                        format!("at {}: {}", describe(self.p, na.node), na.reason)
                    }
                    other => other.to_string(),
                };
                let d = Diagnostic::error(
                    NOT_APPLICABLE,
                    span,
                    format!("`{}` does not apply at {at}", t.name()),
                )
                .label("does not apply here")
                .note(reason);
                // The nearest candidate is worth its cost only when the failure reaches the user.
                let d = match (self.silenced, site.first()) {
                    (0, Some(&anchor)) => match self.nearest(t, anchor, site, params) {
                        Some(help) => d.help(help),
                        None => d,
                    },
                    _ => d,
                };
                Failure::silenceable(d)
            }
        }
    }

    /// The closest candidate, for help: `transform::nearest`, or — when that is the site
    /// itself — the applying candidate nearest to it in program order.
    fn nearest(
        &self,
        t: &dyn Transformation,
        anchor: NodeId,
        site: &[NodeId],
        params: &Params,
    ) -> Option<String> {
        let e = transform::nearest(t, self.p, anchor, params)?;
        let e = match e.site == site {
            false => e,
            true => {
                let mut order = Vec::new();
                self.p.graph.walk(&mut |n| order.push(n.id));
                let at = |id: NodeId| order.iter().position(|n| *n == id).unwrap_or(usize::MAX);
                let here = at(anchor);
                (transform::explain(t, self.p, params).into_iter())
                    .filter(|c| c.applies() && c.site != site)
                    .min_by_key(|c| c.site.first().map_or(usize::MAX, |n| at(*n).abs_diff(here)))?
            }
        };
        let at = describe_all(self.p, &e.site);
        match e.verdict {
            Verdict::Applies => Some(format!("the nearest candidate where it applies: {at}")),
            Verdict::Refused(r) => Some(format!(
                "the nearest other candidate, {at}, does not apply either: {r}"
            )),
        }
    }

    /// The arguments of a rule call, bound to its parameters by position or name and checked
    /// against their types.
    pub fn rule_args(
        &mut self,
        module: usize,
        rule: &ast::Rule,
        args: &[ast::Arg],
        span: Span,
    ) -> Flow<Vec<(String, Value)>> {
        let mut bound: Vec<Option<Value>> = vec![None; rule.params.len()];
        let mut next = 0;
        for a in args {
            let k = match &a.name {
                None => {
                    next += 1;
                    next - 1
                }
                Some(n) => {
                    (rule.params.iter().position(|p| p.name.name == n.name)).ok_or_else(|| {
                        Failure::definite(bad(
                            n.span,
                            format!("rule `{}` has no parameter `{}`", rule.name.name, n.name),
                        ))
                    })?
                }
            };
            let Some(param) = rule.params.get(k) else {
                return Err(Failure::definite(bad(
                    a.span,
                    format!(
                        "rule `{}` takes {} argument(s)",
                        rule.name.name,
                        rule.params.len()
                    ),
                )));
            };
            let v = eval(self, &a.value)?;
            self.check_rule_arg(module, &rule.name.name, param, &v, a.value.span)?;
            bound[k] = Some(v);
        }
        (rule.params.iter().zip(bound))
            .map(|(p, v)| match v {
                Some(v) => Ok((p.name.name.clone(), v)),
                None => Err(Failure::definite(bad(
                    span,
                    format!(
                        "rule `{}`: parameter `{}` is not given",
                        rule.name.name, p.name.name
                    ),
                ))),
            })
            .collect()
    }

    /// What rule parameter `param` (declared in `module`) accepts.
    pub fn param_class(&mut self, module: usize, param: &ast::RuleParam) -> Flow<ParamClass> {
        use crate::pattern::NodeClass as C;
        Ok(match param.ty.text().as_str() {
            "map" => ParamClass::Node(Some(C::Map), "a map"),
            "op" => ParamClass::Node(Some(C::Library), "a library node"),
            "tasklet" => ParamClass::Node(Some(C::Tasklet), "a tasklet"),
            "data" => ParamClass::Node(Some(C::Access), "an access node"),
            "node" => ParamClass::Node(None, "a node"),
            "int" => ParamClass::Value("an integer"),
            "float" => ParamClass::Value("a float"),
            "bool" => ParamClass::Value("a boolean"),
            "string" => ParamClass::Value("a string"),
            "list" => ParamClass::Value("a list"),
            _ => {
                let (m, decl) = resolve::pattern(self.l, module, &param.ty)?;
                ParamClass::Pattern(self.pattern_of(m, decl)?)
            }
        })
    }

    fn check_rule_arg(
        &mut self,
        module: usize,
        rule: &str,
        param: &ast::RuleParam,
        v: &Value,
        span: Span,
    ) -> Flow<()> {
        let fits = match (self.param_class(module, param)?, v) {
            (ParamClass::Pattern(p), Value::Match(m)) => m.pattern.name() == p.name(),
            (ParamClass::Pattern(_), _) => false,
            (ParamClass::Node(class, _), Value::Node(id)) => {
                let what = self.text(span);
                let n = self.node(*id, &what, span)?;
                admits(class, &n.kind)
            }
            (ParamClass::Node(..), _) => false,
            (ParamClass::Value(kind), v) => {
                v.kind() == kind || (kind == "a float" && matches!(v, Value::Int(_)))
            }
        };
        if fits {
            return Ok(());
        }
        let found = match v {
            Value::Node(id) => describe(self.p, *id),
            Value::Match(m) => format!("a match of `{}`", m.pattern.name()),
            other => format!("{} ({other})", other.kind()),
        };
        Err(Failure::definite(bad(
            span,
            format!(
                "parameter `{}` of rule `{}` is a `{}`, found {found}",
                param.name.name,
                rule,
                param.ty.text()
            ),
        )))
    }

    /// Runs `rule` of `module` with its parameters bound, in a fresh scope.
    pub fn enter_rule(
        &mut self,
        module: usize,
        rule: &ast::Rule,
        bound: Vec<(String, Value)>,
        span: Span,
    ) -> Flow<()> {
        if self.rules.len() >= MAX_DEPTH {
            return Err(runtime(
                span,
                format!("rules call each other more than {MAX_DEPTH} levels deep"),
            ));
        }
        let saved = std::mem::replace(&mut self.env, Env::new(module));
        for (name, v) in bound {
            self.remember(&v);
            self.env.bind(&name, v);
        }
        self.rules.push(self.rule_path(module, &rule.name.name));
        let r = self.block(&rule.body);
        self.rules.pop();
        self.env = saved;
        r
    }

    /// The pattern `path` names from the running module.
    pub fn pattern_named(&mut self, path: &ast::Path) -> Flow<Arc<Pattern>> {
        let (m, decl) = resolve::pattern(self.l, self.env.module, path)?;
        self.pattern_of(m, decl)
    }

    /// The built pattern of `decl` (declared in `module`), built once per run.
    pub fn pattern_of(&mut self, module: usize, decl: &ast::PatternDecl) -> Flow<Arc<Pattern>> {
        let key = (module, decl.name.name.clone());
        if let Some(p) = self.patterns.get(&key) {
            return Ok(p.clone());
        }
        let built = crate::recipe::patterns::build(decl).map_err(|mut diags| {
            let first = match diags.is_empty() {
                true => runtime(decl.span, "the pattern could not be built").into_diagnostic(),
                false => diags.swap_remove(0),
            };
            Failure::definite(first)
        })?;
        let built = Arc::new(built);
        self.patterns.insert(key, built.clone());
        Ok(built)
    }
}

/// A `bad_argument` diagnostic.
pub fn bad(span: Span, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(BAD_ARGUMENT, span, message)
}

/// The `rejected` diagnostic: which check rolled the rewrite back, and the engine's words.
pub fn rejected(
    t: &dyn Transformation,
    at: &str,
    layer: Layer,
    r: &Refusal,
    span: Span,
) -> Diagnostic {
    let check = layer_check(layer);
    let d = Diagnostic::error(
        REJECTED,
        span,
        format!("`{}` at {at} was rolled back by {check}", t.name()),
    )
    .label(format!("rejected by {check}"))
    .note(r.to_string());
    match layer {
        Layer::Numerics => d.help(
            "if the difference is expected (e.g. reassociated sums), lower the layer explicitly: `unsafe(numerics) because \"…\" { … }`",
        ),
        Layer::Legality => d.help("a parallel map must not write one element from two iterations"),
        Layer::Structural => d.help("this is a bug in the transformation; please report it"),
    }
}

/// The node a post-rewrite refusal names.
pub fn refusal_node(r: &Refusal) -> Option<NodeId> {
    match r {
        Refusal::Invalid { node, .. }
        | Refusal::Race { node, .. }
        | Refusal::Numerics { node, .. }
        | Refusal::Unchecked { node, .. } => Some(*node),
        Refusal::NotApplicable(na) => Some(na.node),
        Refusal::Site(_) | Refusal::Params(_) => None,
    }
}

/// Whether a node is of the class a rule parameter accepts.
pub fn admits(class: Option<crate::pattern::NodeClass>, kind: &NodeKind) -> bool {
    class.is_none_or(|c| crate::pattern::NodeClass::of(kind) == c)
}
