//! What a script can see and change during one call from dmove, and nothing else.
//!
//! A script never holds the program. During a call, dmove lends it for the call's duration
//! through a scoped thread-local ([`scoped_tls`]): read-only while a transformation lists
//! candidates or checks its precondition ([`reading`]), mutable only while the engine runs a
//! scripted rewrite inside its transaction ([`rewriting`]), and as a [`Session`] when a recipe
//! calls a script function (actions go through the engine there). Views are ids looked up on
//! each access, so a view kept past its call finds nothing lent and says so; edits check that
//! they run inside a rewrite, which is how "a script cannot mutate the IR except through the
//! engine" is enforced rather than promised. The innermost loan wins: a plan running inside a
//! session action reads the program the action passed it.

use crate::ir::Program;
use crate::transform::engine::{Engine, Step};
use std::cell::RefCell;

scoped_tls::scoped_thread_local!(static READ: Program);
scoped_tls::scoped_thread_local!(static WRITE: RefCell<Program>);
scoped_tls::scoped_thread_local!(static SESSION: RefCell<Session>);

/// The state of a recipe run lent to a script function it calls: actions apply through the
/// engine and the steps are handed back to the recipe interpreter to record.
#[derive(Debug)]
pub struct Session {
    pub program: Program,
    pub engine: Engine,
    /// Steps applied by the script during this call, in order.
    pub steps: Vec<Step>,
    /// Whether `bench()` may run (false while `dmove check` replays a lock).
    pub measure: bool,
}

/// Runs `f` with `p` lent read-only.
pub fn reading<R>(p: &Program, f: impl FnOnce() -> R) -> R {
    READ.set(p, f)
}

/// Runs `f` with `p` lent for editing (the engine's transaction around it restores `p` when
/// the rewrite or a check fails).
pub fn rewriting<R>(p: &mut Program, f: impl FnOnce() -> R) -> R {
    let cell = RefCell::new(std::mem::replace(p, Program::new("")));
    let r = WRITE.set(&cell, f);
    *p = cell.into_inner();
    r
}

/// Runs `f` with `session` lent; returns the session (with the steps the script applied).
pub fn in_session<R>(session: Session, f: impl FnOnce() -> R) -> (R, Session) {
    let cell = RefCell::new(session);
    let r = SESSION.set(&cell, f);
    (r, cell.into_inner())
}

/// Reads the program lent to the current call.
pub fn with_program<R>(f: impl FnOnce(&Program) -> R) -> Result<R, String> {
    if READ.is_set() {
        return Ok(READ.with(f));
    }
    if WRITE.is_set() {
        return WRITE.with(|c| match c.try_borrow() {
            Ok(p) => Ok(f(&p)),
            Err(_) => Err(BUSY.to_string()),
        });
    }
    if SESSION.is_set() {
        return SESSION.with(|c| match c.try_borrow() {
            Ok(s) => Ok(f(&s.program)),
            Err(_) => Err(BUSY.to_string()),
        });
    }
    Err("no program is lent to the script here: views are valid only during the call that made them".into())
}

const BUSY: &str = "the program is being changed by this call and cannot be read at this point";

/// Edits the program lent to the current rewrite; refused anywhere else.
pub fn with_edit<R>(f: impl FnOnce(&mut Program) -> R) -> Result<R, String> {
    if READ.is_set() || !WRITE.is_set() {
        return Err(
            "edits are allowed only in a transformation's rewrite, which the engine runs and checks"
                .into(),
        );
    }
    WRITE.with(|c| match c.try_borrow_mut() {
        Ok(mut p) => Ok(f(&mut p)),
        Err(_) => Err(BUSY.to_string()),
    })
}

/// Runs an action on the session lent to the current call; refused inside transformations
/// (a precondition or rewrite that applied other steps would escape the engine's transaction).
pub fn with_session<R>(f: impl FnOnce(&mut Session) -> R) -> Result<R, String> {
    if READ.is_set() || WRITE.is_set() || !SESSION.is_set() {
        return Err("actions (apply, bench) are available only in script functions a recipe calls, not inside a transformation's precondition or rewrite".into());
    }
    SESSION.with(|c| match c.try_borrow_mut() {
        Ok(mut s) => Ok(f(&mut s)),
        Err(_) => Err("an action is already running".to_string()),
    })
}
