//! The embedded Rhai engine: only the packages a script needs, and limits that are always set.
//!
//! `Engine::new_raw()` starts with no functions and no module resolver (the crate is built
//! with `no_module`, so `import` does not even parse); we add the language core, arithmetic,
//! logic, strings, arrays, maps and math, and nothing that reaches files, the network,
//! processes or the clock. `eval` is disabled, so a script cannot compile code at run time
//! around the limits. Every call into a script runs under [`Limits`]: operations, call depth,
//! expression depth, sizes, and a wall-clock deadline checked from `on_progress`.

use rhai::debugger::{DebuggerCommand, DebuggerEvent};
use rhai::packages::{
    BasicArrayPackage, BasicMapPackage, BasicMathPackage, CorePackage, LogicPackage,
    MoreStringPackage, Package,
};
use rhai::{Dynamic, Engine, Position};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The limits every call into a script runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Rhai operations per call (an operation is roughly one expression step).
    pub operations: u64,
    /// Nested function calls.
    pub call_depth: usize,
    /// Nesting of expressions (at top level, and inside functions).
    pub expr_depth: usize,
    /// Bytes of one string.
    pub string_size: usize,
    /// Entries of one array (a program's node list must fit: 100,000-node programs are normal).
    pub array_size: usize,
    /// Entries of one object map.
    pub map_size: usize,
    /// Wall-clock time of one call from dmove into the script.
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            operations: 200_000_000,
            call_depth: 64,
            expr_depth: 64,
            string_size: 1 << 20,
            array_size: 4_000_000,
            map_size: 100_000,
            time: Duration::from_secs(60),
        }
    }
}

/// The limits scripts load with in this process unless a caller gives its own: the
/// command line sets them once (`--script-time`, `--script-ops`) before loading a recipe.
static CONFIGURED: std::sync::RwLock<Option<Limits>> = std::sync::RwLock::new(None);

impl Limits {
    /// The limits this process loads scripts with ([`Limits::configure`], else the defaults).
    pub fn configured() -> Limits {
        (*CONFIGURED.read().unwrap_or_else(|e| e.into_inner())).unwrap_or_default()
    }

    /// Sets the limits later script loads in this process use.
    pub fn configure(self) {
        *CONFIGURED.write().unwrap_or_else(|e| e.into_inner()) = Some(self);
    }
}

/// The value `on_progress` terminates a script with when its time is up; the error carries
/// it back so [`super::error`] can say "time limit" rather than "terminated".
pub const TIME_UP: &str = "dmove: time limit";

/// How many operations pass between two looks at the clock (reading it costs more than an
/// operation).
const CLOCK_EVERY: u64 = 4096;

thread_local! {
    /// The deadline of the innermost call running on this thread.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The position of the last step a script took on this thread (see [`last_position`]).
    static LAST: Cell<Position> = const { Cell::new(Position::NONE) };
}

/// Where the script running on this thread was when it stopped: Rhai reports limits hit
/// inside functions without a position, so a debugger hook records each step's position.
pub fn last_position() -> Position {
    LAST.with(Cell::get)
}

/// A sandboxed engine with `limits`; the caller registers the dmove API on it.
pub fn engine(limits: &Limits) -> Engine {
    let mut e = Engine::new_raw();
    e.register_global_module(CorePackage::new().as_shared_module());
    e.register_global_module(LogicPackage::new().as_shared_module());
    e.register_global_module(BasicArrayPackage::new().as_shared_module());
    e.register_global_module(BasicMapPackage::new().as_shared_module());
    e.register_global_module(BasicMathPackage::new().as_shared_module());
    e.register_global_module(MoreStringPackage::new().as_shared_module());
    e.disable_symbol("eval");
    e.set_strict_variables(true);
    e.set_fail_on_invalid_map_property(true);
    e.set_max_operations(limits.operations);
    e.set_max_call_levels(limits.call_depth);
    e.set_max_expr_depths(limits.expr_depth, limits.expr_depth);
    e.set_max_string_size(limits.string_size);
    e.set_max_array_size(limits.array_size);
    e.set_max_map_size(limits.map_size);
    e.on_progress(|ops| {
        if ops % CLOCK_EVERY != 0 {
            return None;
        }
        let late = DEADLINE.with(|d| d.get().is_some_and(|t| Instant::now() >= t));
        late.then(|| Dynamic::from(TIME_UP))
    });
    #[allow(deprecated)] // "not deprecated, but considered volatile" (Rhai's words)
    e.register_debugger(
        |_, debugger| debugger,
        |_, event, _, _, pos| {
            // Only steps: the exit events of an unwinding call carry the position of its end.
            if matches!(event, DebuggerEvent::Start | DebuggerEvent::Step) && !pos.is_none() {
                LAST.with(|l| l.set(pos));
            }
            Ok(DebuggerCommand::StepInto)
        },
    );
    e.on_print(|text| eprintln!("script: {text}"));
    e.on_debug(|text, _, pos| eprintln!("script (line {}): {text}", pos.line().unwrap_or(0)));
    e
}

/// Runs `f`, native work a script asked for (an engine step, a benchmark), without counting
/// its duration against the script's time limit: the limit bounds the script's own work, and a
/// script that applies many checked steps must not be stopped for the checks' time.
pub fn native<R>(f: impl FnOnce() -> R) -> R {
    // Scripts the native work calls (a scripted check inside an engine step) get their own
    // full limit rather than what is left of this one.
    let outer = DEADLINE.with(|d| d.replace(None));
    let started = Instant::now();
    let r = f();
    let spent = started.elapsed();
    DEADLINE.with(|d| d.set(outer.and_then(|t| t.checked_add(spent))));
    r
}

/// Runs `f` (one call into a script) with the deadline `time` from now, or the enclosing
/// call's deadline when that is sooner; the previous deadline is restored afterwards.
pub fn timed<R>(time: Duration, f: impl FnOnce() -> R) -> R {
    let outer = DEADLINE.with(Cell::get);
    let mine = Instant::now().checked_add(time);
    let deadline = match (outer, mine) {
        (Some(o), Some(m)) => Some(o.min(m)),
        (o, m) => o.or(m),
    };
    DEADLINE.with(|d| d.set(deadline));
    LAST.with(|l| l.set(Position::NONE));
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(outer);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_work_does_not_count_against_the_time_limit() {
        let limits = Limits {
            time: Duration::from_millis(150),
            ..Limits::default()
        };
        let e = engine(&limits);
        let ast = e
            .compile("fn spin() { let x = 0; while x < 20000 { x += 1; } x }")
            .unwrap();
        let run = || {
            e.call_fn_with_options::<rhai::INT>(
                rhai::CallFnOptions::new().eval_ast(false),
                &mut rhai::Scope::new(),
                &ast,
                "spin",
                (),
            )
        };
        let after_native = timed(limits.time, || {
            native(|| std::thread::sleep(Duration::from_millis(300)));
            run()
        });
        assert_eq!(
            after_native.expect("native time is not the script's"),
            20000
        );
        let after_script_sleep = timed(limits.time, || {
            std::thread::sleep(Duration::from_millis(300));
            run()
        });
        assert!(
            after_script_sleep.is_err(),
            "the script's own time still counts"
        );
    }
}
