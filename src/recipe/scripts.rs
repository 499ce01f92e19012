//! Scripts seen from recipes.
//!
//! `use "./x.rhai"` (or `use std::NAME` for an embedded script) loads a Rhai script as a
//! module: its transformations join the registry, so the recipe calls them by name like
//! built-ins, and `x::f(…)` calls one of its functions — to compute a parameter, or to apply
//! steps through the engine (every step is recorded in the run's report and lock as if the
//! recipe had issued it at the call). `dmove run x.rhai` runs a script as the whole recipe
//! through a two-line wrapper whose `main` calls the script's `main()`, so locks, reports and
//! `dmove check` work for scripts unchanged. A script's error, or a fault of a scripted
//! transformation, is rendered at its line in the `.rhai` file with the recipe's call site as
//! a second label.

use super::ast;
use super::diag::{Diagnostic, Span};
use super::modules::Loaded;
use super::run::apply::bad;
use super::run::env::Interp;
use super::run::eval::eval;
use super::run::failure::{Failure, Flow};
use super::run::value::{MatchValue, Value};
use crate::ir::Program;
use crate::script::views::NodeRef;
use crate::script::world::{in_session, Session};
use crate::script::{Script, ScriptError};
use crate::transform::engine::Refusal;
use rhai::{Array, Dynamic, Map};
use std::sync::Arc;

/// The code of a script error reported through a recipe (the script's own code is in the
/// note-free primary label: `dmove::script::…`).
pub const SCRIPT: &str = "dmove::recipe::script";

/// Whether a `use`d file is a script.
pub fn is_script(path: &str) -> bool {
    path.ends_with(".rhai")
}

/// The recipe that runs the script `file_name` (in the same directory) as a whole recipe.
pub fn wrapper(stem: &str, file_name: &str) -> String {
    let quoted = crate::ir::text::lex::quote(file_name);
    format!(
        "recipe {} version \"0.0.0\"\nuse {quoted} as script\n\nmain {{\n    script::main()\n}}\n",
        crate::ir::text::lex::quote(stem)
    )
}

/// A recipe value as a script receives it: nodes as `Node` handles, matches as maps from
/// capture name to node.
pub fn to_script(v: &Value) -> Dynamic {
    match v {
        Value::Int(i) => Dynamic::from_int(*i),
        Value::Float(f) => Dynamic::from_float(*f),
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::Str(s) => Dynamic::from(s.clone()),
        Value::List(items) => Dynamic::from_array(items.iter().map(to_script).collect()),
        Value::Node(id) => Dynamic::from(NodeRef(*id)),
        Value::Match(MatchValue { pattern, found }) => {
            let m: Map = (pattern.captures().iter().zip(&found.nodes))
                .map(|(name, id)| ((*name).into(), Dynamic::from(NodeRef(*id))))
                .collect();
            Dynamic::from_map(m)
        }
    }
}

/// A script's result as a recipe value (`None` for `()`).
pub fn from_script(d: &Dynamic) -> Result<Option<Value>, String> {
    if d.is_unit() {
        return Ok(None);
    }
    if let Ok(b) = d.as_bool() {
        return Ok(Some(Value::Bool(b)));
    }
    if let Ok(i) = d.as_int() {
        return Ok(Some(Value::Int(i)));
    }
    if let Ok(f) = d.as_float() {
        return Ok(Some(Value::Float(f)));
    }
    if let Some(s) = d.clone().try_cast::<rhai::ImmutableString>() {
        return Ok(Some(Value::Str(s.to_string())));
    }
    if let Some(n) = d.clone().try_cast::<NodeRef>() {
        return Ok(Some(Value::Node(n.0)));
    }
    if let Some(items) = d.clone().try_cast::<Array>() {
        let values = (items.iter())
            .map(|i| from_script(i)?.ok_or_else(|| "a list holding ()".to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Some(Value::List(values)));
    }
    Err(format!(
        "a script returned {}, which a recipe has no value for (it takes integers, floats, booleans, strings, nodes and lists of them)",
        d.type_name()
    ))
}

/// The diagnostic for `error` in the script of module `m`, called at `call`.
pub fn script_diagnostic(l: &Loaded, m: usize, error: &ScriptError, call: Span) -> Diagnostic {
    let file = l.modules[m].file;
    error
        .diagnostic(file, l.sources.text(file))
        .also(call, "called here")
}

/// The definite diagnostic for a refusal caused by a fault in a scripted transformation's own
/// code (`None` for every other refusal).
pub fn fault(l: &Loaded, r: &Refusal, call: Span) -> Option<Diagnostic> {
    let Refusal::NotApplicable(na) = r else {
        return None;
    };
    let fault = na.fault.as_ref()?;
    let owner = (l.modules.iter())
        .position(|m| (m.script.as_ref()).is_some_and(|s| s.hash == fault.script_hash));
    let message = format!("`{}` at {}: {}", na.transformation, na.node, na.reason);
    Some(match owner {
        Some(m) => {
            let mut d = script_diagnostic(l, m, &fault.error, call);
            d.message = message;
            d
        }
        None => Diagnostic::error(SCRIPT, call, message).label("applied here"),
    })
}

impl Interp<'_> {
    /// Calls the function `name` of the script of module `m`, lending it the run (program
    /// and engine) so its actions apply through the engine; the steps it applied are recorded
    /// at `call`.
    pub fn script_call(
        &mut self,
        m: usize,
        script: &Arc<Script>,
        name: &str,
        call: &ast::Call,
    ) -> Flow<Option<Value>> {
        let mut args = Vec::new();
        for a in &call.args {
            if a.name.is_some() {
                return Err(Failure::definite(bad(
                    a.span,
                    "script functions take positional arguments only",
                )));
            }
            let v = eval(self, &a.value)?;
            self.remember(&v);
            args.push(to_script(&v));
        }
        let session = Session {
            program: std::mem::replace(self.p, Program::new("")),
            engine: std::mem::take(self.engine),
            steps: Vec::new(),
            measure: self.opts.measure,
        };
        let (result, session) = in_session(session, || script.call(name, args));
        *self.p = session.program;
        *self.engine = session.engine;
        for step in session.steps {
            self.record(step, call.span);
        }
        let value =
            result.map_err(|e| Failure::definite(script_diagnostic(self.l, m, &e, call.span)))?;
        from_script(&value).map_err(|e| Failure::definite(bad(call.span, e)))
    }
}
