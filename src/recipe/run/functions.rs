//! The built-in functions (every entry of [`crate::recipe::builtins::BUILTINS`]; selections
//! are in [`super::select`]) and what names, fields and calls mean in the interpreter's
//! expressions.

use super::describe::describe;
use super::env::Interp;
use super::eval::{eval, Scope};
use super::failure::{runtime, Flow, BAD_ARGUMENT, UNKNOWN_NAME};
use super::measure;
use super::select::Select;
use super::value::{MatchValue, Value};
use crate::ir::{Graph, MapNode, NodeId, NodeKind, Program};
use crate::recipe::ast::{self, Expr, ExprKind};
use crate::recipe::builtins::Builtin;
use crate::recipe::resolve::{self, Callee};
use crate::recipe::Diagnostic;
use crate::transform::queries::{is_contraction, longest_param, loop_order, reduction_params};

/// Repetitions of `time()` and `baseline.time` (the median is taken).
const TIME_REPS: usize = 5;

/// The longest list `range` and `zeros` build.
const MAX_LIST: i64 = 1 << 20;

impl Scope for Interp<'_> {
    fn name(&mut self, path: &ast::Path) -> Flow<Value> {
        if let Some(v) = self.lookup(path) {
            return Ok(v);
        }
        let mut known = self.env.names();
        known.extend(resolve::visible(
            self.l,
            self.env.module,
            path.segments.len() == 1,
        ));
        let d = resolve::unknown(
            path,
            format!("no variable or parameter is named `{}`", path.text()),
            "not a variable or parameter",
            &known,
        );
        Err(d.note("strings are written in quotes: `\"im2col\"`").into())
    }

    fn field(&mut self, base: &Expr, field: &ast::Ident) -> Flow<Value> {
        if let ExprKind::Name(p) = &base.kind {
            if p.text() == "baseline" && self.lookup(p).is_none() {
                return self.baseline(field);
            }
        }
        match eval(self, base)? {
            Value::Match(m) => match m.pattern.get(&m.found, &field.name) {
                Some(id) => Ok(Value::Node(id)),
                None => {
                    let captures: Vec<String> =
                        m.pattern.captures().iter().map(|c| c.to_string()).collect();
                    let d = Diagnostic::error(
                        UNKNOWN_NAME,
                        field.span,
                        format!(
                            "pattern `{}` has no capture `{}`",
                            m.pattern.name(),
                            field.name
                        ),
                    )
                    .label("not a capture")
                    .note(format!("its captures: {}", captures.join(", ")));
                    Err(resolve::with_suggestion(d, &field.name, &captures).into())
                }
            },
            other => Err(runtime(
                field.span,
                format!(
                    "{} has no field `{}` (only matches have fields: their captures)",
                    other.kind(),
                    field.name
                ),
            )),
        }
    }

    fn call(&mut self, call: &ast::Call) -> Flow<Value> {
        match resolve::callee(self.l, self.env.module, &call.callee)? {
            Callee::Builtin(b) => self.builtin(b, call),
            Callee::Script {
                module,
                script,
                name,
                ..
            } => self
                .script_call(module, script, name, call)?
                .ok_or_else(|| {
                    runtime(
                        call.span,
                        format!(
                            "the script function `{name}` returned nothing; a value is needed here"
                        ),
                    )
                }),
            Callee::Rule { .. } | Callee::Transformation(_) => Err(runtime(
                call.span,
                format!(
                    "`{}` rewrites the program and has no value; call it as a statement",
                    call.callee.text()
                ),
            )),
        }
    }
}

impl Interp<'_> {
    /// Evaluates built-in `b` at `call`.
    pub fn builtin(&mut self, b: &Builtin, call: &ast::Call) -> Flow<Value> {
        let pos: Vec<&Expr> = (call.args.iter())
            .filter(|a| a.name.is_none())
            .map(|a| &a.value)
            .collect();
        if pos.len() < b.required || pos.len() > b.args.len() {
            let d = Diagnostic::error(
                BAD_ARGUMENT,
                call.span,
                format!(
                    "`{}` takes {} argument(s) ({}), {} given",
                    b.name,
                    b.args.len(),
                    b.args.join(", "),
                    pos.len()
                ),
            );
            return Err(d.into());
        }
        let arg = |k: usize| pos[k];
        let s = call.span;
        match b.name {
            "bytes" => self.measured(measure::bytes(self.p), s),
            "dmd" => self.measured(measure::dmd(self.p), s),
            "estimate" => self.measured(measure::estimate_ms(self.p), s),
            "time" => {
                if !self.opts.measure {
                    return Err(runtime(s, "`time()` is not measured in this run (`dmove check` replays without timing); use it only inside `expect`, which then reports it as not checked"));
                }
                self.measured(measure::time_ms(self.p, TIME_REPS), s)
            }
            "exists" => Ok(Value::Bool(match eval(self, arg(0))? {
                Value::Node(id) => self.p.node(id).is_some(),
                Value::Match(m) => m.found.nodes.iter().all(|id| self.p.node(*id).is_some()),
                other => return Err(expected("a node", &other, arg(0))),
            })),
            "extent" => {
                let (id, at) = self.map_arg(arg(0))?;
                let k = self.int_arg(arg(1))?;
                let m = self.map_of(id, at)?;
                let q =
                    (usize::try_from(k).ok().and_then(|k| m.params.get(k))).ok_or_else(|| {
                        runtime(
                            arg(1).span,
                            format!("the map has {} parameter(s), not {k}", m.params.len()),
                        )
                    })?;
                let len = q.range.len();
                match (len.as_int(), pos.get(2)) {
                    (Some(n), _) => Ok(Value::Int(n)),
                    (None, Some(otherwise)) => Ok(Value::Int(self.int_arg(otherwise)?)),
                    (None, None) => Err(runtime(
                        s,
                        format!("parameter `{}` has the symbolic length {len}", q.name),
                    )),
                }
            }
            "innermost" => {
                let (mut id, _) = self.map_arg(arg(0))?;
                while let Some(NodeKind::Map(m)) = self.p.node(id).map(|n| &n.kind) {
                    match first_map(&m.body) {
                        Some(inner) => id = inner,
                        None => break,
                    }
                }
                Ok(Value::Node(id))
            }
            "outermost" => {
                let (id, _) = self.map_arg(arg(0))?;
                let g = &self.p.graph;
                let top = (g.ordered().into_iter()).map(|i| g.node(i)).find(|n| {
                    n.id == id || matches!(&n.kind, NodeKind::Map(m) if m.body.locate(id).is_some())
                });
                Ok(Value::Node(top.map_or(id, |n| n.id)))
            }
            "len" => match eval(self, arg(0))? {
                Value::List(items) => Ok(Value::Int(items.len() as i64)),
                Value::Str(t) => Ok(Value::Int(t.chars().count() as i64)),
                other => Err(expected("a list", &other, arg(0))),
            },
            "longest" => {
                let (id, at) = self.map_arg(arg(0))?;
                let m = self.map_of(id, at)?;
                // -1 when no parameter has a constant length, so a recipe can test for it.
                Ok(Value::Int(longest_param(m).map_or(-1, |(k, _)| k as i64)))
            }
            "loop_order" | "output_params" => {
                let (id, at) = self.map_arg(arg(0))?;
                let order = loop_order(self.map_of(id, at)?, self.p);
                Ok(match b.name {
                    "loop_order" => {
                        Value::List(order.order.iter().map(|k| Value::Int(*k as i64)).collect())
                    }
                    _ => Value::Int(order.outputs as i64),
                })
            }
            "maps" => self.select(Select::Maps, call),
            "ops" => self.select(Select::Ops, call),
            "tasklets" => self.select(Select::Tasklets, call),
            "matches" => {
                let ExprKind::Name(path) = &arg(0).kind else {
                    return Err(runtime(arg(0).span, "`matches` takes a pattern name"));
                };
                let pattern = self.pattern_named(path)?;
                let found = crate::pattern::find_all(&pattern, self.p);
                let values = found.into_iter().map(|m| {
                    Value::Match(MatchValue {
                        pattern: pattern.clone(),
                        found: m,
                    })
                });
                Ok(Value::List(values.collect()))
            }
            "max" | "min" => {
                let (a, z) = (eval(self, arg(0))?, eval(self, arg(1))?);
                let less = super::eval::binary(ast::BinaryOp::Lt, &a, &z, s)?;
                let a_first = (less == Value::Bool(true)) == (b.name == "min");
                Ok(if a_first { a } else { z })
            }
            "name" => {
                let id = self.handle(arg(0))?;
                Ok(Value::Str(describe(self.p, id)))
            }
            "node" => {
                let text = match eval(self, arg(0))? {
                    Value::Str(t) => t,
                    other => return Err(expected("a node id such as \"n12\"", &other, arg(0))),
                };
                let id = (text.parse::<NodeId>().ok()).filter(|id| self.p.node(*id).is_some());
                id.map(Value::Node).ok_or_else(|| {
                    runtime(
                        arg(0).span,
                        format!("the program has no node `{text}` (ids as the IR prints them, e.g. n12)"),
                    )
                })
            }
            "params" => {
                let (id, at) = self.map_arg(arg(0))?;
                Ok(Value::Int(self.map_of(id, at)?.params.len() as i64))
            }
            "range" | "zeros" => {
                let n = self.int_arg(arg(0))?;
                if !(0..=MAX_LIST).contains(&n) {
                    return Err(runtime(
                        arg(0).span,
                        format!("`{}` needs 0 ≤ n ≤ {MAX_LIST}, found {n}", b.name),
                    ));
                }
                let item = |k: i64| Value::Int(if b.name == "range" { k } else { 0 });
                Ok(Value::List((0..n).map(item).collect()))
            }
            "set" => {
                let mut list = match eval(self, arg(0))? {
                    Value::List(items) => items,
                    other => return Err(expected("a list", &other, arg(0))),
                };
                let k = self.int_arg(arg(1))?;
                let v = eval(self, arg(2))?;
                let len = list.len();
                let slot =
                    (usize::try_from(k).ok().and_then(|k| list.get_mut(k))).ok_or_else(|| {
                        runtime(
                            arg(1).span,
                            format!("index {k} is out of range for a list of {len} entries"),
                        )
                    })?;
                *slot = v;
                Ok(Value::List(list))
            }
            "contraction" => {
                let (id, at) = self.map_arg(arg(0))?;
                Ok(Value::Bool(is_contraction(self.map_of(id, at)?, self.p)))
            }
            "reductions" => {
                let (id, at) = self.map_arg(arg(0))?;
                let count = reduction_params(self.map_of(id, at)?, self.p);
                Ok(Value::Int(count as i64))
            }
            "reads" | "writes" => {
                let (id, _) = self.map_arg(arg(0))?;
                let names = moved(self.p, id, b.name == "writes");
                Ok(Value::List(names.into_iter().map(Value::Str).collect()))
            }
            "uses" => {
                let id = self.handle(arg(0))?;
                Ok(Value::Int(self.uses(id) as i64))
            }
            other => Err(runtime(
                s,
                format!("the built-in `{other}` is not implemented by this interpreter"),
            )),
        }
    }

    fn measured(&self, r: Result<f64, String>, span: crate::recipe::Span) -> Flow<Value> {
        r.map(Value::Float)
            .map_err(|e| runtime(span, format!("the measurement failed: {e}")))
    }

    /// `baseline.dmd`, `baseline.bytes`, `baseline.time`: measured once, on first use.
    fn baseline(&mut self, field: &ast::Ident) -> Flow<Value> {
        let measure_time = self.opts.measure;
        let b = &mut *self.baseline;
        let start = &b.start;
        let r = match field.name.as_str() {
            "dmd" => b.dmd.get_or_insert_with(|| measure::dmd(start)),
            "bytes" => b.bytes.get_or_insert_with(|| measure::bytes(start)),
            "time" if measure_time => b
                .time
                .get_or_insert_with(|| measure::time_ms(start, TIME_REPS)),
            "time" => {
                return Err(runtime(
                    field.span,
                    "`baseline.time` is not measured in this run (`dmove check` replays without timing); use it only inside `expect`, which then reports it as not checked",
                ))
            }
            other => {
                let d = Diagnostic::error(
                    UNKNOWN_NAME,
                    field.span,
                    format!("`baseline` has no `{other}`"),
                )
                .label("not a baseline metric")
                .note("the baseline has `dmd`, `bytes` and `time`");
                return Err(d.into());
            }
        };
        let r = r.clone();
        self.measured(r, field.span)
    }

    /// The node an expression's handle refers to (checked to exist).
    pub fn handle(&mut self, e: &Expr) -> Flow<NodeId> {
        match eval(self, e)? {
            Value::Node(id) => {
                let what = self.text(e.span);
                self.node(id, &what, e.span)?;
                Ok(id)
            }
            other => Err(expected("a node", &other, e)),
        }
    }

    /// A handle that must be a map; the map itself is re-borrowed with [`Self::map_of`].
    pub(super) fn map_arg(&mut self, e: &Expr) -> Flow<(NodeId, crate::recipe::Span)> {
        let id = self.handle(e)?;
        self.map_of(id, e.span)?;
        Ok((id, e.span))
    }

    fn map_of(&self, id: NodeId, span: crate::recipe::Span) -> Flow<&MapNode> {
        match self.p.node(id).map(|n| &n.kind) {
            Some(NodeKind::Map(m)) => Ok(m),
            _ => Err(runtime(
                span,
                format!("{} is not a map", describe(self.p, id)),
            )),
        }
    }

    pub(super) fn int_arg(&mut self, e: &Expr) -> Flow<i64> {
        match eval(self, e)? {
            Value::Int(i) => Ok(i),
            other => Err(expected("an integer", &other, e)),
        }
    }

    /// A word argument: a string, or a bare word that is not a variable (`sequential`).
    pub(super) fn word(&mut self, e: &Expr) -> Flow<String> {
        if let ExprKind::Name(p) = &e.kind {
            if p.segments.len() == 1 && self.lookup(p).is_none() {
                return Ok(p.text());
            }
        }
        match eval(self, e)? {
            Value::Str(s) => Ok(s),
            other => Err(expected("a name", &other, e)),
        }
    }
}

/// The first map of a scope in program order.
fn first_map(g: &Graph) -> Option<NodeId> {
    (g.ordered().into_iter())
        .map(|i| g.node(i))
        .find(|n| matches!(n.kind, NodeKind::Map(_)))
        .map(|n| n.id)
}

/// The containers map `id` writes (`writes`), or reads except those it writes: a map that
/// accumulates into its output has an edge from the output's earlier version only to order the
/// accumulation after it. Each name once, in edge order.
fn moved(p: &Program, id: NodeId, writes: bool) -> Vec<String> {
    let Some((g, idx)) = p.graph.locate(id) else {
        return Vec::new();
    };
    let written: Vec<String> = (g.out_edges(idx).iter())
        .map(|e| e.memlet.data.clone())
        .collect();
    let mut names: Vec<String> = match writes {
        true => written,
        false => (g.in_edges(idx).iter())
            .map(|e| e.memlet.data.clone())
            .filter(|d| !written.contains(d))
            .collect(),
    };
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|d| seen.insert(d.clone()));
    names
}

fn expected(what: &str, found: &Value, e: &Expr) -> super::failure::Failure {
    runtime(
        e.span,
        format!("expected {what}, found {} ({found})", found.kind()),
    )
}

#[cfg(test)]
mod tests {
    use crate::check::fixtures::matmul;
    use crate::ir::{Schedule, SymExpr};
    use crate::recipe::builtins::BUILTINS;
    use crate::recipe::load_source;
    use crate::recipe::run::{run, RunOptions};

    /// One call of every built-in on the matmul fixture, with what it prints.
    const CALLS: &[(&str, &str, &str)] = &[
        ("bytes", "bytes() > 0", "true"),
        (
            "contraction",
            "[contraction(maps()[1]), contraction(maps()[0])]",
            "[true, false]",
        ),
        ("dmd", "dmd() > 0", "true"),
        ("estimate", "estimate() > 0", "true"),
        ("exists", "exists(maps()[0])", "true"),
        ("extent", "extent(maps()[1], 2)", "4"),
        ("innermost", "innermost(maps()[1]) == maps()[1]", "true"),
        ("len", "len([1, 2, 3])", "3"),
        ("longest", "longest(maps()[1])", "0"),
        ("loop_order", "loop_order(maps()[1])", "[0, 2, 1]"),
        (
            "maps",
            "len(maps(depth = 0, params = 3, schedule = sequential))",
            "1",
        ),
        ("matches", "len(matches(acc))", "1"),
        ("max", "max(2, 3.5)", "3.5"),
        ("min", "min(2, 3.5)", "2"),
        ("name", "name(maps()[0])", "map \"init\" (n"),
        ("node", "exists(node(\"n0\"))", "true"),
        ("ops", "len(ops()) + len(ops(\"MatMul\"))", "0"),
        ("outermost", "outermost(maps()[1]) == maps()[1]", "true"),
        ("output_params", "output_params(maps()[1])", "1"),
        ("params", "params(maps()[0])", "2"),
        ("range", "range(3)", "[0, 1, 2]"),
        ("reads", "reads(maps()[1])", "[A, B]"),
        ("reductions", "reductions(maps()[1])", "1"),
        ("set", "set(zeros(3), 1, 7)", "[0, 7, 0]"),
        (
            "tasklets",
            "len(tasklets()) + len(tasklets(in = maps()[1]))",
            "3",
        ),
        ("uses", "uses(maps()[1])", "0"),
        ("writes", "writes(maps()[1])", "[C]"),
        ("zeros", "zeros(2)", "[0, 0]"),
    ];

    #[test]
    fn every_builtin_of_the_table_is_implemented() {
        let mut covered: Vec<&str> = CALLS.iter().map(|c| c.0).collect();
        covered.push("time");
        covered.sort();
        let table: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        assert_eq!(covered, table, "a built-in without a test call");
        let prints: Vec<String> = CALLS.iter().map(|c| format!("  print {}", c.1)).collect();
        let text = format!(
            "pattern acc {{\n  m = map[params = 3]\n}}\nmain {{\n{}\n}}\n",
            prints.join("\n")
        );
        let l = load_source("builtins.recipe", &text, None);
        assert!(
            !l.has_errors(),
            "{}",
            l.sources.render_plain(&l.diagnostics)
        );
        let mut p = matmul(
            SymExpr::int(8),
            SymExpr::int(4),
            SymExpr::int(8),
            Schedule::Sequential,
        );
        let r = run(&l, &mut p, &RunOptions::default())
            .unwrap_or_else(|e| panic!("{}", l.sources.render_plain(&[e.diagnostic])));
        for ((name, _, want), got) in CALLS.iter().zip(&r.printed) {
            assert!(
                got.starts_with(want),
                "{name}: printed {got}, expected {want}"
            );
        }
        let l = load_source("time.recipe", "main {\n  print time()\n}\n", None);
        let e = run(&l, &mut p, &RunOptions::default()).expect_err("not measured");
        assert!(
            e.diagnostic.message.contains("not measured"),
            "{}",
            e.diagnostic.message
        );
    }

    #[test]
    fn a_symbolic_extent_is_an_error_or_the_fallback_given() {
        let mut p = matmul(
            SymExpr::sym("M"),
            SymExpr::int(4),
            SymExpr::int(8),
            Schedule::Sequential,
        );
        let text = "main {\n  print extent(maps()[1], 1, -1), extent(maps()[1], 0, -1)\n}\n";
        let l = load_source("extent.recipe", text, None);
        let r = run(&l, &mut p, &RunOptions::default())
            .unwrap_or_else(|e| panic!("{}", l.sources.render_plain(&[e.diagnostic])));
        assert_eq!(r.printed, ["8 -1"]);
        let l = load_source(
            "extent.recipe",
            "main {\n  print extent(maps()[1], 0)\n}\n",
            None,
        );
        let e = run(&l, &mut p, &RunOptions::default()).expect_err("symbolic");
        assert!(
            e.diagnostic.message.contains("symbolic length"),
            "{}",
            e.diagnostic.message
        );
    }
}
