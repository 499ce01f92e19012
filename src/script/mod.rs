//! Rhai scripts: functions a recipe calls, and user-defined transformations the engine checks
//! exactly like the built-ins.
//!
//! One concept per module: [`sandbox`] (the engine and its limits), [`world`] (what a call may
//! see or change, lent for the call's duration), [`views`] (read-only IR types), [`edits`] (the
//! primitive rewrites a scripted transformation is built from), [`declare`] (reading a
//! declaration into a [`crate::transform::Schema`]), [`scripted`] (the [`Transformation`]
//! behind a declaration), [`actions`] (what a script function called from a recipe may do:
//! apply through the engine, measure), [`convert`] (values across the boundary) and [`error`]
//! (positions mapped to spans).
//!
//! Loading a script compiles it, runs its top level once — where `transformation(#{…})` calls
//! declare transformations — and registers those with the process-wide registry, so the
//! engine, `dmove transforms`, traces and locks see them by name. A script is interned by the
//! hash of its text: loading the same text again returns the same [`Script`]. Its *owner* (the
//! file's canonical path, or `std::NAME`) says what a new text replaces: the same file edited
//! and loaded again replaces its transformations, while two files declaring the same name are
//! refused.

pub mod actions;
pub mod convert;
pub mod declare;
pub mod edits;
pub mod error;
pub mod sandbox;
pub mod scripted;
pub mod views;
pub mod world;

pub use error::{ErrorKind, Limit, ScriptError};
pub use sandbox::Limits;

use crate::transform::{self, Transformation};
use rhai::{Dynamic, Engine, FuncArgs, Map, NativeCallContext, Scope, AST};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A loaded script: its text, compiled form, engine and the transformations it declared.
pub struct Script {
    /// How the script was named when loaded (`./fusions.rhai`, `std::tiles`).
    pub name: String,
    pub text: String,
    /// SHA-256 (hex) of the text: what traces and locks record.
    pub hash: String,
    pub limits: Limits,
    engine: Engine,
    ast: AST,
    /// The transformations the script declared, in declaration order.
    pub transformations: Vec<&'static scripted::Scripted>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("name", &self.name)
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The owner of the script whose top level runs, and the declarations it made so far.
    static DECLARED: RefCell<Option<(String, Vec<declare::Declaration>)>> = const { RefCell::new(None) };
}

/// Loaded scripts by text hash and limits (the limits are part of a script's engine).
type Interned = Mutex<HashMap<(String, Limits), Arc<Script>>>;

/// Every script loaded by this process.
fn interned() -> &'static Interned {
    static SCRIPTS: OnceLock<Interned> = OnceLock::new();
    SCRIPTS.get_or_init(Default::default)
}

/// The SHA-256 (hex) of a script's text.
pub fn hash_text(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Compiles and loads `text` (named `name` in messages) of the script at `owner` (see the
/// module docs), declaring its transformations.
pub fn load(
    name: &str,
    owner: &str,
    text: &str,
    limits: Limits,
) -> Result<Arc<Script>, ScriptError> {
    let hash = hash_text(text);
    let key = (hash.clone(), limits);
    let mut scripts = interned().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = scripts.get(&key) {
        let s = s.clone();
        register(owner, &s)?;
        return Ok(s);
    }
    let mut engine = sandbox::engine(&limits);
    register_api(&mut engine);
    let ast = engine
        .compile(text)
        .map_err(|e| ScriptError::from_parse(&e))?;
    let declarations = declare_all(&engine, &ast, owner, &limits)?;
    let script = Arc::new_cyclic(|weak| Script {
        name: name.to_string(),
        text: text.to_string(),
        hash: hash.clone(),
        limits,
        engine,
        ast,
        transformations: declarations
            .into_iter()
            .map(|d| scripted::Scripted::leak(d, weak.clone(), hash.clone()))
            .collect(),
    });
    register(owner, &script)?;
    scripts.insert(key, script.clone());
    Ok(script)
}

/// Makes `script`'s transformations the ones registered for `owner`.
fn register(owner: &str, script: &Script) -> Result<(), ScriptError> {
    let declared: Vec<&'static dyn Transformation> = (script.transformations.iter())
        .map(|t| *t as &'static dyn Transformation)
        .collect();
    transform::register(owner, &declared).map_err(|e| ScriptError::new(ErrorKind::Declaration, e))
}

/// Runs the script's top level with a collector for `transformation(#{…})` declarations.
fn declare_all(
    engine: &Engine,
    ast: &AST,
    owner: &str,
    limits: &Limits,
) -> Result<Vec<declare::Declaration>, ScriptError> {
    DECLARED.with(|d| *d.borrow_mut() = Some((owner.to_string(), Vec::new())));
    let run = sandbox::timed(limits.time, || engine.run_ast(ast));
    let declared = (DECLARED.with(|d| d.borrow_mut().take()))
        .map(|(_, v)| v)
        .unwrap_or_default();
    run.map_err(|e| ScriptError::from_eval(*e))?;
    Ok(declared)
}

/// `transformation(#{…})`: valid only while a script's top level runs.
fn declare_one(ctx: NativeCallContext, decl: Map) -> Result<(), Box<rhai::EvalAltResult>> {
    let taken = |name: &str| {
        DECLARED.with(|d| match d.borrow().as_ref() {
            Some((owner, earlier)) => {
                transform::taken(name, owner) || earlier.iter().any(|x| x.schema.name == name)
            }
            None => transform::lookup(name).is_some(),
        })
    };
    let d = declare::declaration(decl, &taken).map_err(|m| {
        let refused = Dynamic::from(error::Refused(m));
        Box::new(rhai::EvalAltResult::ErrorRuntime(
            refused,
            ctx.call_position(),
        ))
    })?;
    DECLARED.with(|slot| match slot.borrow_mut().as_mut() {
        Some((_, v)) => {
            v.push(d);
            Ok(())
        }
        None => Err("transformation(…) declares a transformation and is valid only at the top level of a script, when it loads".into()),
    })
}

fn register_api(e: &mut Engine) {
    views::register(e);
    edits::register(e);
    actions::register(e);
    e.register_fn("transformation", declare_one);
}

impl Script {
    /// Calls the script function `name` with `args` under the script's limits.
    pub fn call(&self, name: &str, args: impl FuncArgs) -> Result<Dynamic, ScriptError> {
        let options = rhai::CallFnOptions::new()
            .eval_ast(false)
            .rewind_scope(true);
        sandbox::timed(self.limits.time, || {
            self.engine.call_fn_with_options::<Dynamic>(
                options,
                &mut Scope::new(),
                &self.ast,
                name,
                args,
            )
        })
        .map_err(|e| ScriptError::from_eval(*e))
    }

    /// Calls a function value (`Fn("name")` or a closure) the script declared.
    pub fn call_ptr(&self, f: &rhai::FnPtr, args: impl FuncArgs) -> Result<Dynamic, ScriptError> {
        sandbox::timed(self.limits.time, || {
            f.call::<Dynamic>(&self.engine, &self.ast, args)
        })
        .map_err(|e| ScriptError::from_eval(*e))
    }

    /// The script functions a recipe may call: name and number of parameters.
    pub fn functions(&self) -> Vec<(String, usize)> {
        (self.ast.iter_functions())
            .filter(|f| !f.name.starts_with("anon$"))
            .map(|f| (f.name.to_string(), f.params.len()))
            .collect()
    }

    pub fn transformation_names(&self) -> Vec<&'static str> {
        self.transformations.iter().map(|t| t.name()).collect()
    }
}
